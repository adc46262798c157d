// Data: the audit of the market-data cache (GET /api/data-cache): for each
// MANTIS window (60 … 365 days) whether a fetched version is there, how many
// of the 29 assets it holds, what share of the expected 1-minute candles it
// has (and so how many are missing: gaps), how old it is, and the version
// label and dataset hash that pin it; per asset, the candles stored against
// those expected. Admins fetch a window (POST /api/data-cache/prefetch: a
// runner job) and watch its progress (GET /api/data-cache/status, polled
// while it runs, also after a reload), and delete a window
// (POST /api/data-cache/delete, confirmed; pinned versions are kept).
import { api, post, qs } from '../api.js';
import { h, clear, table, field } from '../dom.js';
import { num } from '../format.js';
import { pageHead } from './common.js';
import { poll } from '../poll.js';
import { announce, confirmDialog, whoAmI, isAdmin } from '../app.js';
import { percent } from '../metrics.js';

/** ageText(hours) -> "35 min", "5.2 h", "3.1 d" (how long since the label moved). */
export function ageText(hours) {
  const v = Number(hours);
  if (hours === null || hours === undefined || !Number.isFinite(v)) return '—';
  if (v < 1) return `${Math.max(0, Math.round(v * 60))} min`;
  if (v < 48) return `${num(v, 1)} h`;
  return `${num(v / 24, 1)} d`;
}

/** coverage(w) -> the stored share of expected candles as a percentage text. */
function coverage(pctValue) {
  const v = Number(pctValue);
  return Number.isFinite(v) ? percent(v / 100) : '—';
}

/** windowRows(data) -> [[days, entry]] sorted by the number of days. */
function windowRows(data) {
  return Object.entries(data || {}).sort((a, b) => Number(a[0]) - Number(b[0]));
}

/** summaryTable(rows): one row per window. */
function summaryTable(rows) {
  return table([
    { label: 'Window', cell: ([d]) => `${d} days` },
    { label: 'State', cell: ([, w]) => (!w.cached ? h('span', { class: 'badge st-unknown' }, 'not fetched')
      : w.complete ? h('span', { class: 'badge st-completed' }, 'complete') : h('span', { class: 'badge st-queued' }, 'partial')) },
    { label: 'Assets', num: true, cell: ([, w]) => (w.cached ? `${num(w.assets)} of ${num(w.expected_assets)}` : '—') },
    { label: 'Coverage', num: true, title: 'Candles stored / (29 assets × days × 1,440 one-minute candles)', cell: ([, w]) => (w.cached ? coverage(w.row_pct) : '—') },
    { label: 'Age', num: true, title: 'Time since the window\'s label last moved to a new version', cell: ([, w]) => (w.cached ? ageText(w.age_hours) : '—') },
    { label: 'Source', cell: ([, w]) => (w.cached ? String(w.source || '—') : '—') },
    { label: 'Version', cell: ([, w]) => (w.cached && w.version ? h('code', null, String(w.version)) : '—') },
    { label: 'Dataset hash', cell: ([, w]) => (w.cached && w.dataset_hash ? h('code', { class: 'hash', title: String(w.dataset_hash) }, `${String(w.dataset_hash).slice(0, 12)}…`) : '—') },
  ], rows, { caption: 'Cached windows', rowAttrs: ([d]) => ({ 'data-window': d }) });
}

/** assetTable(days, w): candles stored, expected and missing per asset. */
function assetTable(days, w) {
  const per = Object.entries(w.per_asset || {}).sort((a, b) => a[0].localeCompare(b[0]));
  return table([
    { label: 'Asset', cell: ([a]) => a },
    { label: 'Candles', num: true, cell: ([, r]) => num(r.rows) },
    { label: 'Expected', num: true, cell: ([, r]) => num(r.expected) },
    { label: 'Missing (gaps)', num: true, cell: ([, r]) => num(Math.max(0, Number(r.expected) - Number(r.rows))) },
    { label: 'Coverage', num: true, cell: ([, r]) => coverage(r.pct) },
  ], per, { caption: `Assets of the ${days}-day window`, empty: 'No asset stored.', rowAttrs: ([a]) => ({ 'data-asset': a }) });
}

const WINDOWS = [60, 90, 120, 180, 365];

/** progressPanel(ctx, onDone) -> {el, follow(days)}: the live state of a
 * prefetch: a progress bar of assets done, the step, candles fetched, and
 * the outcome; onDone() after a job ends (the page then redraws its audit). */
function progressPanel(ctx, onDone) {
  const bar = h('progress', { max: 1, value: 0, 'aria-labelledby': 'data-progress-label', 'data-testid': 'fetch-progress' });
  const label = h('p', { id: 'data-progress-label' });
  const detail = h('p', { class: 'small muted', 'data-testid': 'fetch-step' });
  const outcome = h('p', { role: 'status', 'data-testid': 'fetch-outcome' });
  const el = h('section', { class: 'panel', 'aria-labelledby': 'data-progress-title', hidden: true },
    h('h2', { id: 'data-progress-title' }, 'Fetch progress'), label, bar, detail, outcome);
  let following = null;
  function show(st) {
    el.hidden = false;
    const total = Number(st.total_assets || st.total_steps) || 0;
    const done = Number(st.assets_done ?? st.progress) || 0;
    bar.max = Math.max(total, 1);
    bar.value = Math.min(done, bar.max);
    label.textContent = `${st.window || `${st.days_back}-day window`}: ${num(done)} of ${num(total)} assets, ${st.status}`;
    // the runner's step repeats its counts after a colon ("fetching 1m candles: 2/6
    // assets, 529808 candles"): the phase only, the counts are written above and here
    const phase = String(st.step || '').replace(/:[^]*$/, '');
    detail.textContent = [phase, st.rows_fetched !== undefined && st.rows_fetched !== null ? `${num(st.rows_fetched)} candles fetched` : null]
      .filter(Boolean).join(' · ');
    bar.dataset.rows = String(st.rows_fetched ?? 0);
  }
  /** follow(days): polls the status of the window's newest prefetch until it ends. */
  function follow(days) {
    if (following === days) return;
    following = days;
    clear(outcome);
    poll(async () => {
      const st = await api(`/api/data-cache/status${qs({ days_back: days })}`, { signal: ctx.signal });
      if (ctx.signal.aborted || following !== days) return 'done';
      show(st);
      if (st.status === 'queued' || st.status === 'running') return 'changed';
      following = null;
      if (st.status === 'completed') {
        outcome.textContent = `Done: version ${st.dataset_version} is registered and the ${days}-day window points to it.`;
        outcome.className = 'ok';
      } else {
        outcome.textContent = `The fetch ${st.status}${st.error_code ? ` (${st.error_code})` : ''}${st.error ? `: ${st.error}` : ''}.`;
        outcome.className = 'error';
      }
      announce(outcome.textContent);
      onDone();
      return 'done';
    }, { min: 500, max: 2000, factor: 1.2, signal: ctx.signal });
  }
  return { el, follow, show };
}

/** fetchForm(prog) -> the admin's form that queues a prefetch of a window. */
function fetchForm(prog) {
  const days = h('select', { name: 'days_back' }, WINDOWS.map((d) => h('option', { value: d }, `${d} days`)));
  const assets = h('input', { type: 'text', name: 'assets', autocomplete: 'off', spellcheck: 'false', placeholder: 'all 29' });
  const err = h('p', { class: 'error', role: 'alert' });
  const btn = h('button', { type: 'submit', class: 'primary' }, 'Fetch data');
  const form = h('form', { class: 'stack panel', 'aria-labelledby': 'data-fetch', novalidate: true },
    h('h2', { id: 'data-fetch' }, 'Fetch data'),
    h('p', { class: 'small muted' }, 'A runner downloads the window\'s 1-minute candles from Binance, stores a new version, registers it and moves the window to it.'),
    h('div', { class: 'fields top' }, field('Window', days), field('Assets (optional)', assets, 'Comma-separated, e.g. BTC,ETH; empty: all 29.')),
    err, h('div', { class: 'actions' }, btn));
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    err.textContent = '';
    const body = { days_back: Number(days.value) };
    const list = assets.value.split(',').map((a) => a.trim().toUpperCase()).filter(Boolean);
    if (list.length) body.assets = list;
    btn.disabled = true;
    try {
      await post('/api/data-cache/prefetch', body);
      announce(`Fetching the ${body.days_back}-day window`);
      prog.follow(body.days_back);
    } catch (e) {
      if (e.status === 401) return;
      if (e.status === 409) {
        err.textContent = `A fetch of the ${body.days_back}-day window is already queued or running; its progress is shown below.`;
        prog.follow(body.days_back);
      } else {
        err.textContent = `${e.message}${e.code ? ` (${e.code})` : ''}`;
      }
    } finally {
      btn.disabled = false;
    }
  });
  return form;
}

/** deleteWindow(days, w, box): confirmed removal of a window's label and unpinned versions. */
async function deleteWindow(ctx, days, w, box) {
  if (!await confirmDialog(`Delete the ${days}-day window?`,
    `The label and every version of the window that no run or evaluation uses are removed (now ${w.version}). Pinned versions stay.`, 'Delete', { danger: true })) return;
  try {
    const r = await post('/api/data-cache/delete', { days_back: Number(days) });
    announce(`Deleted ${(r.deleted || []).join(', ') || 'nothing'}`);
    ctx.rerender();
  } catch (e) {
    if (e.status === 401) return;
    box.append(h('p', { class: 'error', role: 'alert' }, e.status === 409
      ? `Not deleted: ${e.message}` : `${e.message}${e.code ? ` (${e.code})` : ''}`));
  }
}

export async function render(ctx) {
  const root = clear(ctx.main);
  root.append(pageHead(ctx, 'Data'));
  const [data] = await Promise.all([api('/api/data-cache'), whoAmI()]);
  if (ctx.signal.aborted) return;
  const admin = isAdmin();
  const rows = windowRows(data);
  root.append(h('p', { class: 'muted' },
    'Market data fetched from Binance (1-minute candles of the 29 MANTIS assets) per history window. ',
    'A window is complete at 90 % coverage or more; the version label and the dataset hash pin what an evaluation used.'));
  root.append(h('section', { 'aria-label': 'Cached windows' }, summaryTable(rows)));
  const prog = progressPanel(ctx, () => ctx.rerender());
  if (admin) root.append(fetchForm(prog));
  root.append(prog.el);
  for (const [d, w] of rows) {
    if (!w.cached) continue;
    const hid = `data-w-${d}`;
    const sec = h('section', { class: 'panel', 'aria-labelledby': hid, 'data-testid': `window-${d}` },
      h('h2', { id: hid }, `${d}-day window`),
      h('p', { class: 'small' }, `Version ${w.version}, ${num(w.assets)} of ${num(w.expected_assets)} assets, coverage ${coverage(w.row_pct)}, fetched ${ageText(w.age_hours)} ago.`,
        w.has_coinglass ? ` CoinGlass derivatives for ${num(w.coinglass_assets)} assets.` : ' No CoinGlass derivatives layer.'),
      h('p', { class: 'small' }, 'Dataset hash ', h('code', { class: 'hash full' }, String(w.dataset_hash || '—'))),
      assetTable(d, w));
    if (admin) {
      sec.append(h('p', { class: 'actions' }, h('button', { type: 'button', class: 'danger', on: { click: () => deleteWindow(ctx, d, w, sec) } },
        `Delete the ${d}-day window`)));
    }
    root.append(sec);
  }
  if (!admin) root.append(h('p', { class: 'muted small' }, 'Fetching and deleting data is for admins.'));
  // a fetch already under way (started elsewhere, or before a reload) is followed
  const st = await api('/api/data-cache/status').catch(() => null);
  if (ctx.signal.aborted || !st) return;
  if (st.status === 'queued' || st.status === 'running') {
    prog.show(st);
    prog.follow(Number(st.days_back));
  }
}

// Overview: stack health, registered datasets, the job queue over the last
// hour, and the latest runs and evaluations. Refreshes itself while jobs are
// moving and slows down when nothing changes.
import { api, qs, rows } from '../api.js';
import { h, clear, table, link } from '../dom.js';
import { num, hash, when, statusBadge, ago, toDate, isActive } from '../format.js';
import { poll } from '../poll.js';
import { pageHead, pick, runsTable, unavailable, intervalText, datasetList, shortId, evalScore } from './common.js';

const HOUR = 3600 * 1000;

/** queueCounts(runs): queued/running now, completed/failed in the last hour. */
function queueCounts(list) {
  const c = { queued: 0, running: 0, completed: 0, failed: 0 };
  const since = Date.now() - HOUR;
  for (const r of list) {
    if (r.status === 'queued' || r.status === 'running') c[r.status] += 1;
    else if (r.status === 'completed' || r.status === 'failed') {
      const d = toDate(pick(r, 'completed_at', 'queued_at', 'created_at'));
      if (d && d.getTime() >= since) c[r.status] += 1;
    }
  }
  return c;
}

function healthPanel(hl, err) {
  const p = h('section', { class: 'panel', 'aria-labelledby': 'ov-health' }, h('h2', { id: 'ov-health' }, 'Health'));
  if (err) {
    p.append(h('p', { class: 'error' }, `The API is not answering: ${err.message}`));
    return p;
  }
  const ok = hl && (hl.ok === true || hl.status === 'healthy');
  p.append(h('dl', { class: 'stats' },
    h('div', null, h('dt', null, 'API'), h('dd', { class: ok ? 'ok' : 'error' }, ok ? 'healthy' : String(hl && hl.status || 'down'))),
    h('div', null, h('dt', null, 'Database'), h('dd', { class: hl && hl.db === 'ok' ? 'ok' : 'error' }, hl && hl.db ? hl.db : '—')),
    h('div', null, h('dt', null, 'Version'), h('dd', null, hl && hl.version ? String(hl.version) : '—'))));
  return p;
}

function queuePanel(counts, err) {
  const p = h('section', { class: 'panel', 'aria-labelledby': 'ov-queue' }, h('h2', { id: 'ov-queue' }, 'Queue'));
  if (err) { p.append(h('p', { class: 'error' }, err.message)); return p; }
  p.append(h('dl', { class: 'stats', 'data-testid': 'queue' },
    ...[['Queued', counts.queued], ['Running', counts.running], ['Completed (1 h)', counts.completed], ['Failed (1 h)', counts.failed]]
      .map(([k, v]) => h('div', null, h('dt', null, k), h('dd', null, num(v))))));
  return p;
}

function datasetsPanel(list, def, err) {
  const p = h('section', { class: 'panel', 'aria-labelledby': 'ov-datasets' }, h('h2', { id: 'ov-datasets' }, 'Datasets'));
  if (err) {
    p.append(err.status === 404 ? unavailable('Datasets') : h('p', { class: 'error' }, err.message));
    return p;
  }
  p.append(table([
    { label: 'Version', cell: (d) => link(`#/leaderboards/dataset/${encodeURIComponent(pick(d, 'version', 'dataset_version'))}`, String(pick(d, 'version', 'dataset_version'))) },
    { label: 'Hash', cell: (d) => hash(pick(d, 'dataset_hash', 'hash')) },
    { label: 'Assets', cell: (d) => { const a = pick(d, 'assets'); return Array.isArray(a) ? `${a.length} (${a.slice(0, 4).join(', ')}${a.length > 4 ? ', …' : ''})` : num(a); } },
    { label: 'Interval', cell: (d) => intervalText(d) },
    { label: 'Bars', num: true, cell: (d) => num(pick(d, 'bars', 'bar_count', 'n_bars')) },
    { label: 'Registered', cell: (d) => when(pick(d, 'registered_at', 'created_at')) },
  ], list, { caption: 'Registered dataset versions', empty: 'No dataset is registered yet.' }));
  if (def) p.append(h('p', { class: 'small muted' }, 'Default dataset version: ', h('strong', null, def), '.'));
  return p;
}

function evaluationsPanel(list, err) {
  const p = h('section', { class: 'panel', 'aria-labelledby': 'ov-evals' }, h('h2', { id: 'ov-evals' }, 'Latest evaluations'));
  if (err) {
    // 404: no evaluations at all; 405: evaluations exist but cannot be listed
    p.append(err.status === 404 ? unavailable('Challenge evaluations')
      : err.status === 405 ? h('p', { class: 'unavailable', 'data-testid': 'unavailable' },
        'A list of evaluations is not available on this server yet; each challenge page submits and opens them.')
        : h('p', { class: 'error' }, err.message));
    return p;
  }
  p.append(table([
    { label: 'Evaluation', cell: (e) => link(`#/evaluations/${encodeURIComponent(pick(e, 'evaluation_id', 'id'))}`, e.name ? String(e.name) : shortId(pick(e, 'evaluation_id', 'id'))) },
    { label: 'Challenge', cell: (e) => (pick(e, 'challenge') ? link(`#/challenges/${encodeURIComponent(e.challenge)}`, String(e.challenge)) : '—') },
    { label: 'Status', cell: (e) => statusBadge(e.status) },
    { label: 'Score', num: true, cell: (e) => evalScore(e) },
    { label: 'Queued', cell: (e) => ago(pick(e, 'queued_at', 'created_at')) },
  ], list, { caption: 'Latest challenge evaluations', empty: 'No evaluations yet.' }));
  return p;
}

const settle = (p) => p.then((v) => [v, null], (e) => { if (e.status === 401) throw e; return [null, e]; });

/** render(ctx): draws the overview and keeps it fresh while jobs move. */
export async function render(ctx) {
  const root = clear(ctx.main);
  root.append(pageHead(ctx, 'Overview',
    h('a', { class: 'button primary', href: '#/strategies/new' }, 'Submit a strategy')));
  const top = h('div', { class: 'grid' });
  const data = h('div');
  const latest = h('div');
  root.append(top, data, latest);

  let last = '';
  let ceiling = 60000;
  let evalsAbsent = null;
  async function load() {
    const [[hl, hErr], [ds, dErr], [rl, rErr], [ev, eErr]] = await Promise.all([
      settle(api('/health')),
      settle(api('/datasets')),
      settle(api(`/runs${qs({ limit: 100 })}`)),
      // a server without evaluations answers 404 once; not asked again on this page
      evalsAbsent ? Promise.resolve([null, evalsAbsent]) : settle(api(`/api/evaluations${qs({ limit: 8 })}`)),
    ]);
    if (eErr && (eErr.status === 404 || eErr.status === 405)) evalsAbsent = eErr;
    if (ctx.signal.aborted) return 'done';
    const runList = rows(rl, 'runs');
    const evList = rows(ev, 'evaluations');
    const key = JSON.stringify([hl, ds, [hErr, dErr, rErr, eErr].map((e) => e && e.message), runList.map((r) => [r.run_id ?? r.id, r.status]), evList.map((e) => [e.id ?? e.evaluation_id, e.status])]);
    const active = runList.some((r) => isActive(r.status)) || evList.some((e) => isActive(e.status));
    ceiling = active ? 10000 : 60000;
    // Redraw only on change (keeps the reader's focus and place), then poll
    // fast again; otherwise slow down, with a lower ceiling while jobs move.
    if (key === last) return 'same';
    last = key;
    clear(top).append(healthPanel(hl, hErr), queuePanel(queueCounts(runList), rErr));
    const dl0 = datasetList(ds);
    clear(data).append(datasetsPanel(dl0.list, dl0.defaultVersion, dErr));
    const runsP = h('section', { class: 'panel', 'aria-labelledby': 'ov-runs' },
      h('div', { class: 'spread' }, h('h2', { id: 'ov-runs' }, 'Latest runs'), link('#/runs', 'All runs')));
    runsP.append(rErr ? h('p', { class: 'error' }, rErr.message) : runsTable(runList.slice(0, 8), { caption: 'Latest runs', empty: 'No runs yet. Submit a strategy and run it.' }));
    clear(latest).append(runsP, evaluationsPanel(evList, eErr));
    return 'changed';
  }
  await load();
  poll(load, { min: 3000, max: () => ceiling, signal: ctx.signal });
}

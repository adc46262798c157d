// One run: live status while it is queued or running (polled with back-off,
// paused in a hidden tab), then everything the API records about it: all
// metrics, the equity and drawdown charts, the causality audit, the error
// with its log tail, the resources the sandbox used, the hashes that make it
// reproducible, and the equity download.
import { api, post } from '../api.js';
import { h, clear, table, dl, link } from '../dom.js';
import { num, pct, when, secs, statusBadge, isActive, fullHash, label, bytes, toDate, elapsedSince } from '../format.js';
import { chart, drawdown } from '../chart.js';
import { poll } from '../poll.js';
import { announce, confirmDialog } from '../app.js';
import { pageHead, pick, versionId, shortId } from './common.js';
import { parseEquity } from '../results.js';
import { metricName, metricValue, metricFormula, historyYears } from '../metrics.js';

/** metricsTable(m): every metric with its reader's name, its value in the
 * unit people read it in, and how it is computed. */
function metricsTable(m) {
  const keys = Object.keys(m || {});
  const primary = ['score', 'total_return', 'cagr', 'sharpe', 'max_drawdown', 'volatility'];
  keys.sort((a, b) => {
    const ia = primary.indexOf(a); const ib = primary.indexOf(b);
    return (ia < 0 ? 99 : ia) - (ib < 0 ? 99 : ib) || a.localeCompare(b);
  });
  return table([
    { label: 'Metric', cell: (k) => h('span', { title: metricFormula(k) || null, dataset: { metric: k } }, metricName(k)) },
    { label: 'Value', num: true, cell: (k) => metricValue(k, m[k]) },
    { label: 'How it is computed', class: 'wrap small muted', cell: (k) => metricFormula(k) || '—' },
  ], keys, { caption: 'Metrics', empty: 'No metrics recorded.', rowHeader: true });
}

/** annualCaveat(metrics, ds): a warning when annualised metrics rest on
 * less than a year of bars (ds: the run's dataset from GET /datasets/V). */
function annualCaveat(metrics, ds) {
  const years = historyYears(metrics.n_bars, ds && ds.interval_ms);
  if (years === null || years >= 1) return null;
  const days = years * 365;
  return h('p', { class: 'warn', 'data-testid': 'annual-caveat' },
    `CAGR, volatility and the Sharpe, Sortino and Calmar ratios are annualised from ${days < 2 ? `${num(days * 24, 1)} hours` : `${num(days, 1)} days`} of history: `,
    'over so short a span they swing widely and say little about a year (a 1 % gain in 10 days annualises to 44 %).');
}

/** fmtValue(key, v): a value for people: sizes in bytes, durations in
 * seconds, nested objects as "key value" pairs, null as a dash. */
export function fmtValue(k, v) {
  if (v === null || v === undefined) return '—';
  if (typeof v === 'boolean') return v ? 'yes' : 'no';
  if (typeof v === 'number') {
    if (/mem|rss|bytes/.test(k)) return bytes(v);
    if (/(^|_)s$|seconds|_secs?$/.test(k)) return secs(v);
    return num(v, 6);
  }
  if (Array.isArray(v)) return v.length ? v.map((x) => (typeof x === 'object' ? JSON.stringify(x) : String(x))).join(', ') : 'none';
  if (typeof v === 'object') return Object.entries(v).map(([kk, vv]) => `${label(kk.replace(/_s$/, '')).toLowerCase()} ${fmtValue(kk, vv)}`).join('; ');
  return String(v);
}

/** objectList(obj): a definition list of an object's keys, values for people. */
function objectList(obj) {
  return dl(Object.entries(obj || {}).map(([k, v]) => [label(k), fmtValue(k, v)]));
}

function auditPanel(audit) {
  const p = h('section', { class: 'panel', 'aria-labelledby': 'run-audit' }, h('h2', { id: 'run-audit' }, 'Causality audit'));
  if (!audit || (audit.requested === false && (audit.passed === null || audit.passed === undefined))) {
    p.append(h('p', { class: 'muted', 'data-testid': 'audit-verdict' }, 'Not requested for this run.'));
    return p;
  }
  if (typeof audit !== 'object') { p.append(h('p', null, String(audit))); return p; }
  const passed = pick(audit, 'passed', 'ok');
  const st = pick(audit, 'status', 'result', 'verdict');
  const verdict = passed === true || st === 'passed' || st === 'pass' ? 'passed'
    : passed === false || st === 'failed' || st === 'fail' || st === 'lookahead_detected' ? 'failed' : String(st ?? 'not run');
  p.append(h('p', { 'data-testid': 'audit-verdict' }, h('span', { class: `badge ${verdict === 'passed' ? 'st-completed' : verdict === 'failed' ? 'st-failed' : 'st-unknown'}` },
    verdict === 'passed' ? 'passed: no look-ahead found' : verdict === 'failed' ? 'failed: past outputs change when the future is removed' : verdict)));
  const rest = { ...audit };
  delete rest.passed; delete rest.requested;
  const report = rest.report;
  delete rest.report;
  if (Object.keys(rest).length) p.append(objectList(rest));
  if (report && typeof report === 'object') p.append(h('h3', null, 'Report'), objectList(report));
  else if (report) p.append(h('p', null, String(report)));
  return p;
}

function errorPanel(err) {
  const e = typeof err === 'object' && err ? err : { message: String(err) };
  return h('section', { class: 'panel error-panel', 'aria-labelledby': 'run-error', 'data-testid': 'run-error' },
    h('h2', { id: 'run-error' }, 'Why it failed'),
    dl([['Code', e.code ? h('code', null, String(e.code)) : null], ['Message', e.message ? String(e.message) : null]]),
    e.log_tail ? h('div', null, h('h3', null, 'Log tail'), h('pre', { tabindex: 0, 'aria-label': 'Log tail' }, String(e.log_tail))) : null);
}

function resourcesPanel(r) {
  if (!r || typeof r !== 'object') return null;
  const rest = { ...r };
  delete rest.limits;
  const p = h('section', { class: 'panel', 'aria-labelledby': 'run-res' }, h('h2', { id: 'run-res' }, 'Resources'), objectList(rest));
  if (r.limits && typeof r.limits === 'object') p.append(h('h3', null, 'Limits that applied'), objectList(r.limits));
  return p;
}

/** barTimes(n, ds) -> the bar times in epoch seconds of an n-bar curve over
 * dataset ds, or null: only when the curve spans every bar of the dataset
 * and the dataset's bars lie on a gap-free grid, so bar i is exactly
 * first_ts + i × interval_ms (otherwise the x-axis stays the bar index). */
export function barTimes(n, ds) {
  if (!ds || n < 2 || Number(ds.bars) !== n || !(ds.interval_ms > 0)) return null;
  if (Number(ds.last_ts) - Number(ds.first_ts) !== (n - 1) * ds.interval_ms) return null;
  return Array.from({ length: n }, (_, i) => (Number(ds.first_ts) + i * ds.interval_ms) / 1000);
}

async function chartsPanel(ctx, id, box, run) {
  clear(box).append(h('h2', { id: 'run-charts' }, 'Equity and drawdown'), h('p', { class: 'loading' }, 'Loading the equity curve…'));
  let data;
  try {
    data = await api(`/runs/${encodeURIComponent(id)}/equity`, { accept: 'application/json' });
  } catch (e) {
    if (ctx.signal.aborted) return;
    box.querySelector('.loading').replaceWith(h('p', { class: 'error' }, `The equity curve could not be loaded: ${e.message}`));
    return;
  }
  if (ctx.signal.aborted) return;
  const eq = parseEquity(data);
  if (!eq.time) {
    const t = barTimes(eq.equity.length, await datasetOf(run.dataset_version));
    if (ctx.signal.aborted) return;
    if (t) { eq.x = t; eq.time = true; }
  }
  box.querySelector('.loading').remove();
  if (!eq.equity.length) {
    box.append(h('p', { class: 'muted' }, 'This run has no equity curve.'));
    return;
  }
  const finite = eq.equity.filter((v) => Number.isFinite(v));
  // the runner's buy-and-hold of the asset over the same bars (runs
  // completed before it was computed have none)
  const bench = data && Array.isArray(data.benchmark) && data.benchmark.length === eq.equity.length ? data.benchmark : null;
  const dd = drawdown(eq.equity);
  const minDd = Math.min(...dd.filter((v) => v !== null));
  let ddPlot = null; // the drawdown chart follows the equity chart's zoom
  let posPlot = null; // and so does the position chart of a positions run
  const eqChart = chart({
    title: 'Equity curve', testid: 'equity-chart', x: eq.x, time: eq.time, xUnit: 'bars', signal: ctx.signal,
    onXScale: (min, max) => {
      if (ddPlot) ddPlot.setScale('x', { min, max });
      if (posPlot) posPlot.setScale('x', { min, max });
    },
    series: [{ label: 'Equity', values: eq.equity, color: '#1d5bb8', fill: 'rgba(29,91,184,0.08)' },
      ...(bench ? [{ label: `Buy and hold${run.asset ? ` ${run.asset}` : ''}`, values: bench, color: '#4b5563', dash: [6, 4], width: 1.25 }] : [])],
    summary: `Equity over ${eq.equity.length} bars, from ${num(eq.equity[0])} to ${num(eq.equity[eq.equity.length - 1])}; lowest ${num(Math.min(...finite))}, highest ${num(Math.max(...finite))}.`
      + (bench ? ` Buy and hold of the asset over the same bars ends at ${num(bench[bench.length - 1])}.` : ''),
  });
  const ddChart = chart({
    title: 'Drawdown', testid: 'drawdown-chart', x: eq.x, time: eq.time, xUnit: 'bars', signal: ctx.signal, height: 180,
    series: [{ label: 'Drawdown', values: dd, color: '#b42318', fill: 'rgba(180,35,24,0.12)' }],
    yFormat: (v) => `${(v * 100).toFixed(1)} %`,
    summary: `Drawdown from the running peak; deepest ${(minDd * 100).toFixed(2)} %.`,
  });
  box.append(eqChart.figure, ddChart.figure);
  const [eqPlot, ddReady] = await Promise.all([eqChart.ready, ddChart.ready]);
  ddPlot = ddReady;
  if (eqPlot && ddPlot) ddPlot.setScale('x', { min: eqPlot.scales.x.min, max: eqPlot.scales.x.max });
  const trades = await tradesFirstPage(ctx, id);
  if (!trades || ctx.signal.aborted) return;
  if (Array.isArray(trades.positions) && trades.positions.length === eq.equity.length) {
    const posChart = chart({
      title: 'Position', testid: 'position-chart', x: eq.x, time: eq.time, xUnit: 'bars', signal: ctx.signal, height: 150,
      series: [{ label: 'Exposure', values: trades.positions, color: '#6b3fa0', fill: 'rgba(107,63,160,0.10)' }],
      yFormat: (v) => `${(v * 100).toFixed(0)} %`,
      summary: `Exposure held after each bar's close (fraction of equity; negative is short), from ${pct(Math.min(...trades.positions))} to ${pct(Math.max(...trades.positions))}.`,
    });
    box.append(posChart.figure);
    posPlot = await posChart.ready;
    if (eqPlot && posPlot) posPlot.setScale('x', { min: eqPlot.scales.x.min, max: eqPlot.scales.x.max });
  }
  box.after(tradesPanel(ctx, id, trades));
}

/** tradesFirstPage(ctx, id) -> the first page of GET /runs/{id}/trades, or
 * null when the run has none (a simulate run answers 409) or it failed. */
async function tradesFirstPage(ctx, id) {
  try {
    return await api(`/runs/${encodeURIComponent(id)}/trades?limit=${TRADES_PAGE}`);
  } catch (e) {
    return null;
  }
}

const TRADES_PAGE = 100;

/** fmtPrice(v): a price with the decimals a quote usually carries. */
function fmtPrice(v) {
  if (!Number.isFinite(v)) return '—';
  const a = Math.abs(v);
  const d = a >= 1000 ? 2 : a >= 1 ? 4 : 6;
  return v.toLocaleString('en-US', { minimumFractionDigits: d, maximumFractionDigits: d });
}

/** fmtTime(iso): "2026-01-02 03:04 UTC" (seconds shown only when not :00). */
function fmtTime(iso) {
  if (!iso) return '—';
  const s = iso.replace('T', ' ').replace('Z', '');
  return `${s.endsWith(':00') ? s.slice(0, -3) : s} UTC`;
}

/** tradesPanel(ctx, id, first): the fills table, later pages on demand. */
function tradesPanel(ctx, id, first) {
  const cols = [
    { label: 'Time', cell: (f) => h('time', { datetime: f.time }, fmtTime(f.time)) },
    { label: 'Bar', num: true, cell: (f) => num(f.bar) },
    { label: 'Side', cell: (f) => h('span', { class: `side side-${f.side}` }, f.side === 'buy' ? 'Buy' : 'Sell') },
    { label: 'Quantity', num: true, title: 'units of the asset', cell: (f) => num(f.quantity, 6) },
    { label: 'Price', num: true, cell: (f) => fmtPrice(f.price) },
    { label: 'Fee', num: true, title: 'in units of the initial capital (1.0); in basis points of it', cell: (f) => `${(f.fee * 1e4).toFixed(2)} bp` },
    { label: 'Position after', num: true, title: 'exposure as a fraction of equity (negative: short)', cell: (f) => pct(f.position) },
    { label: 'Equity after', num: true, title: 'after the fee, initial capital = 1.0', cell: (f) => num(f.equity, 6) },
  ];
  const sec = h('section', { class: 'panel', 'aria-labelledby': 'run-trades' });
  const total = first.fills_total;
  sec.append(h('h2', { id: 'run-trades' }, 'Trades'),
    h('p', { class: 'muted small' }, `${num(total)} fills over ${num(first.bars)} bars${first.truncated ? ` (the first ${num(first.fills_stored)} are stored)` : ''}. A fill is a change of target exposure at a bar's close; between fills the engine keeps the exposure at its fraction of equity without a fee.`));
  const rows = [...first.fills];
  let cursor = first.next_cursor;
  const wrap = h('div');
  const more = h('button', { type: 'button', class: 'button' }, 'Show more trades');
  function draw() {
    clear(wrap).append(table(cols, rows, { caption: 'Fills', empty: 'This run made no trades.' }));
    more.hidden = cursor === null;
  }
  more.addEventListener('click', async () => {
    more.disabled = true;
    try {
      const page = await api(`/runs/${encodeURIComponent(id)}/trades?limit=${TRADES_PAGE}&cursor=${encodeURIComponent(cursor)}`);
      if (ctx.signal.aborted) return;
      rows.push(...page.fills);
      cursor = page.next_cursor;
      draw();
      announce(`${rows.length} of ${total} trades shown`);
    } catch (e) {
      announce(`More trades could not be loaded: ${e.message}`);
    } finally {
      more.disabled = false;
    }
  });
  draw();
  sec.append(wrap, more);
  return sec;
}

const datasets = new Map();
/** datasetOf(version) -> GET /datasets/{version} (once per page load), or null. */
export function datasetOf(version) {
  if (!version) return Promise.resolve(null);
  if (!datasets.has(version)) datasets.set(version, api(`/datasets/${encodeURIComponent(version)}`).catch(() => null));
  return datasets.get(version);
}

export async function render(ctx) {
  const root = clear(ctx.main);
  const id = ctx.params.id;
  let run = await api(`/runs/${encodeURIComponent(id)}`);
  if (ctx.signal.aborted) return;
  // the run names its version only by id; the version knows the strategy's name
  let versionName = pick(run, 'strategy_name');
  if (!versionName && versionId(run) !== undefined) {
    const v = await api(`/strategies/versions/${encodeURIComponent(versionId(run))}`).catch(() => null);
    if (ctx.signal.aborted) return;
    if (v) versionName = pick(v, 'name', 'strategy_name');
  }

  const badge = h('span', { 'data-testid': 'run-status', role: 'status' });
  const checked = h('span', { class: 'muted small' });
  const actions = h('div', { class: 'actions' });
  const head = pageHead(ctx, `Run ${shortId(id)}`);
  head.querySelector('h1').title = id;
  head.querySelector('h1').append(' ', badge);
  root.append(head, h('div', { class: 'row' }, actions, checked));
  const body = h('div');
  root.append(body);

  function drawActions() {
    clear(actions);
    if (isActive(run.status)) {
      actions.append(h('button', { type: 'button', class: 'danger', on: { click: cancel } }, 'Cancel run'));
    }
    if (run.status === 'completed') {
      actions.append(h('a', { class: 'button', href: `/runs/${encodeURIComponent(id)}/equity`, download: `run-${id}-equity.csv` }, 'Download equity (CSV)'));
      actions.append(h('button', { type: 'button', on: { click: verify } }, 'Verify reproducibility'));
      if (run.dataset_version && !run.verify_of) {
        actions.append(h('a', { class: 'button', href: `#/leaderboards/dataset/${encodeURIComponent(run.dataset_version)}` },
          'Leaderboard'));
      }
    }
  }

  async function cancel() {
    if (!await confirmDialog('Cancel this run?', `Run #${id} will be stopped; a running sandbox is killed.`, 'Cancel run', { danger: true })) return;
    try {
      run = await post(`/runs/${encodeURIComponent(id)}/cancel`);
      if (!run || !run.status) run = await api(`/runs/${encodeURIComponent(id)}`);
      announce(`Run ${run.status}`);
      draw();
    } catch (e) {
      if (e.status !== 401) body.prepend(h('p', { class: 'error', role: 'alert' }, `Cancel failed: ${e.message}`));
    }
  }

  async function verify(ev) {
    const btn = ev.currentTarget;
    btn.disabled = true;
    btn.textContent = 'Verifying…';
    try {
      const res = await post(`/runs/${encodeURIComponent(id)}/verify`, { wait: 30 });
      const vrun = pick(res, 'verification_run_id');
      // the recorded result of *this* verification (an older one may be on the run)
      const result = (r) => {
        const v = r.verification || r.verify;
        return v && typeof v === 'object' && (!vrun || !v.verification_run_id || v.verification_run_id === vrun) ? v : null;
      };
      const tell = (v) => announce(v.identical ? 'Verified: identical results' : 'Verification found a difference');
      run = await api(`/runs/${encodeURIComponent(id)}`);
      if (result(run)) {
        tell(result(run));
        draw();
        return;
      }
      // not finished within the wait: show it pending and follow the verification run
      run.verification = { verification_run_id: vrun, pending: true };
      draw();
      poll(async () => {
        const r = await api(`/runs/${encodeURIComponent(id)}`, { signal: ctx.signal });
        if (result(r)) { run = r; tell(result(r)); draw(); return 'done'; }
        if (vrun) {
          const vr = await api(`/runs/${encodeURIComponent(vrun)}`, { signal: ctx.signal });
          if (vr.status === 'failed' || vr.status === 'cancelled') {
            run.verification = { verification_run_id: vrun, failed: vr.error || { code: vr.status } };
            announce('The verification run failed');
            draw();
            return 'done';
          }
        }
        return 'same';
      }, { min: 1000, max: 5000, signal: ctx.signal });
    } catch (e) {
      btn.disabled = false;
      btn.textContent = 'Verify reproducibility';
      if (e.status !== 401) body.prepend(h('p', { class: 'error', role: 'alert' }, `Verify failed: ${e.message}`));
    }
  }

  function draw() {
    clear(badge).append(statusBadge(run.status));
    drawActions();
    clear(body);
    const vid = versionId(run);
    const started = toDate(run.started_at);
    body.append(h('section', { class: 'panel', 'aria-label': 'Run details' }, dl([
      ['Strategy', vid !== undefined ? link(`#/versions/${encodeURIComponent(vid)}`, `${versionName || 'version'} #${vid}`) : null],
      ['Run id', h('code', { class: 'hash full' }, String(run.run_id ?? id))],
      ['Dataset version', pick(run, 'dataset_version') !== undefined ? String(run.dataset_version) : null],
      ['Asset', pick(run, 'asset') !== undefined ? String(run.asset) : null],
      ['Attempts', run.attempts > 1 ? String(run.attempts) : null],
      ['Verification of', run.verify_of ? link(`#/runs/${encodeURIComponent(run.verify_of)}`, shortId(run.verify_of)) : null],
      ['Params', run.params ? h('code', null, JSON.stringify(run.params)) : null],
      ['Queued', when(pick(run, 'queued_at', 'created_at'))],
      ['Started', run.started_at ? when(run.started_at) : null],
      ['Completed', run.completed_at ? when(run.completed_at) : null],
      ['Runtime', pick(run, 'runtime_s') !== undefined && run.runtime_s !== null ? secs(run.runtime_s)
        : isActive(run.status) && started ? elapsedSince(run.started_at) : null],
    ])));

    if (isActive(run.status)) {
      body.append(h('p', { class: 'panel notice', 'data-testid': 'run-waiting' },
        run.status === 'queued' ? 'Waiting for a runner to pick this run up… this page updates by itself.'
          : 'Running in the sandbox… this page updates by itself.'));
    }
    if (run.error && (run.error.code || run.error.message || typeof run.error === 'string')) body.append(errorPanel(run.error));

    if (run.metrics && Object.keys(run.metrics).length) {
      const sec = h('section', { 'aria-label': 'Metrics' }, metricsTable(run.metrics));
      body.append(sec);
      datasetOf(run.dataset_version).then((ds) => {
        const c = annualCaveat(run.metrics, ds);
        if (c && !ctx.signal.aborted) sec.prepend(c);
      });
    }
    if (run.status === 'completed') {
      const cbox = h('section', { class: 'panel', 'aria-labelledby': 'run-charts' });
      body.append(cbox);
      chartsPanel(ctx, id, cbox, run);
    }
    if (!isActive(run.status)) body.append(auditPanel(run.audit));
    if (run.status === 'completed' && run.audit && run.audit.passed !== true && !run.verify_of) {
      body.append(h('p', { class: 'warn' }, 'Only runs that passed the causality audit are ranked on the leaderboard.'));
    }
    const ver = run.verify || run.verification;
    if (ver && typeof ver === 'object') {
      const same = pick(ver, 'identical', 'reproducible', 'match');
      const vrun = pick(ver, 'verification_run_id');
      body.append(h('section', { class: 'panel', 'aria-labelledby': 'run-verify', 'data-testid': 'verification' },
        h('h2', { id: 'run-verify' }, 'Reproducibility check'),
        h('p', { role: 'status' }, h('span', { class: `badge ${same === true ? 'st-completed' : same === false || ver.failed ? 'st-failed' : 'st-running'}` },
          same === true ? 'identical' : same === false ? 'different' : ver.failed ? 'failed' : 'running'), ' ',
        same === true ? 'Re-executed from the pinned code, dataset and config: metrics and equity curve are byte-identical.'
          : same === false ? 'Re-executed from the pinned code, dataset and config: the results differ.'
            : ver.failed ? `The verification run failed${ver.failed.code ? ` (${ver.failed.code})` : ''}${ver.failed.message ? `: ${ver.failed.message}` : ''}.`
              : 'The verification run is executing… this updates by itself.'),
        dl([
          ['First difference', ver.first_difference ? fmtValue('first_difference', ver.first_difference) : null],
          ['Verification run', vrun ? link(`#/runs/${encodeURIComponent(vrun)}`, shortId(vrun), { title: String(vrun) }) : null],
          ['Verified', ver.verified_at ? when(ver.verified_at) : null],
        ])));
    }
    const res = resourcesPanel(run.resources);
    if (res) body.append(res);
    body.append(h('section', { class: 'panel', 'aria-labelledby': 'run-hashes' },
      h('h2', { id: 'run-hashes' }, 'Reproducibility'),
      h('p', { class: 'muted small' }, 'The same dataset, code and config hashes give bit-identical metrics and equity.'),
      dl([
        ['Dataset hash', fullHash(run.dataset_hash)],
        ['Code hash', fullHash(run.code_hash)],
        ['Config hash', fullHash(run.config_hash)],
        // artifacts by their API routes (the server's directory is never shown)
        ['Artifacts', run.artifacts_error ? h('span', { class: 'error' }, 'not written: ' + String(run.artifacts_error.detail))
          : run.artifacts ? h('span', null,
            h('a', { href: String(run.artifacts.equity), download: `run-${id}-equity.csv` }, 'equity.csv'),
            run.artifacts.trades ? [' · ', h('a', { href: String(run.artifacts.trades) }, 'trades (JSON)')] : null)
          : null],
      ])));
  }

  draw();
  if (isActive(run.status)) {
    let lastStatus = run.status;
    poll(async () => {
      const r = await api(`/runs/${encodeURIComponent(id)}`, { signal: ctx.signal });
      if (ctx.signal.aborted) return 'done';
      checked.textContent = `checked ${new Date().toISOString().slice(11, 19)} UTC`;
      run = r;
      if (r.status !== lastStatus) {
        lastStatus = r.status;
        announce(`Run ${r.status}`);
        draw();
        return isActive(r.status) ? 'changed' : 'done';
      }
      return 'same';
    }, { min: 700, max: 10000, factor: 1.4, signal: ctx.signal });
  }
}

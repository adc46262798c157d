// Compare runs (#/compare?runs=A,B,C&base=A), the MLflow habit: what the
// runs were (strategy, dataset, asset, params, hashes) with only the rows
// that differ, every metric side by side with its delta against a baseline
// run, the equity curves overlaid on one chart, and the comparison as CSV
// or JSON. Runs come from GET /runs/{id} and /runs/{id}/equity.
import { api } from '../api.js';
import { h, clear, table, field, link } from '../dom.js';
import { num, statusBadge } from '../format.js';
import { chart } from '../chart.js';
import { setQuery } from '../app.js';
import { pageHead, pick, shortId } from './common.js';
import { metricName, metricValue, metricFormula, metricDelta } from '../metrics.js';
import { parseEquity } from '../results.js';
import { download, toCsv } from '../export.js';
import { barTimes, datasetOf } from './run.js';

const MAX_RUNS = 8;
const COLORS = ['#1d5bb8', '#b42318', '#067647', '#7a2e0b', '#6941c6', '#0e7490', '#a15c07', '#344054'];

/** describe(run) -> [[label, text]] of what defines a run, for the differences table. */
function describe(run) {
  return [
    ['Strategy', `${run.strategy_name || 'version'} #${run.strategy_version_id}`],
    ['Dataset', String(run.dataset_version ?? '—')],
    ['Asset', String(run.asset ?? '—')],
    ['Params', JSON.stringify(run.params ?? {})],
    ['Status', String(run.status)],
    ['Code hash', String(run.code_hash ?? '—')],
    ['Config hash', String(run.config_hash ?? '—')],
    ['Dataset hash', String(run.dataset_hash ?? '—')],
  ];
}

export async function render(ctx) {
  const root = clear(ctx.main);
  root.append(pageHead(ctx, 'Compare runs'));
  const ids = [...new Set((ctx.query.get('runs') || '').split(',').map((s) => s.trim()).filter(Boolean))].slice(0, MAX_RUNS);
  if (ids.length < 2) {
    root.append(h('p', null, 'Pick two or more runs to compare: tick them in the ', link('#/runs', 'runs list'), '.'));
    return;
  }
  const runs = await Promise.all(ids.map((id) => api(`/runs/${encodeURIComponent(id)}`)));
  if (ctx.signal.aborted) return;
  const baseId = ids.includes(ctx.query.get('base')) ? ctx.query.get('base') : ids[0];
  const base = runs[ids.indexOf(baseId)];
  const name = (r) => `${shortId(r.run_id)}${r.run_id === baseId ? ' (baseline)' : ''}`;

  const baseSel = h('select', { name: 'base' }, runs.map((r) => h('option', { value: r.run_id, selected: r.run_id === baseId }, `${shortId(r.run_id)} · ${r.strategy_name || ''}`)));
  baseSel.addEventListener('change', () => {
    setQuery({ runs: ids.join(','), base: baseSel.value });
    ctx.rerender();
  });
  root.append(h('div', { class: 'fields panel' }, field('Baseline run', baseSel, 'Deltas are the other runs minus this one.')));

  // What differs between the runs (rows equal across all of them are left out).
  const desc = runs.map(describe);
  const diffRows = desc[0].map(([label], i) => ({ label, values: desc.map((d) => d[i][1]) }))
    .filter((row) => new Set(row.values).size > 1);
  root.append(h('section', { 'aria-labelledby': 'cmp-diff' }, h('h2', { id: 'cmp-diff' }, 'What differs'),
    diffRows.length ? table([
      { label: 'Field', cell: (row) => row.label },
      ...runs.map((r, j) => ({ label: name(r), cell: (row) => (row.label.endsWith('hash') ? h('code', { class: 'hash', title: row.values[j] }, `${row.values[j].slice(0, 12)}…`) : row.values[j]) })),
    ], diffRows, { caption: 'Fields that differ between the runs', rowHeader: true })
      : h('p', { class: 'muted' }, 'The runs agree on strategy, dataset, asset, params and every hash.')));

  // Metrics side by side, with the delta against the baseline.
  const keys = [...new Set(runs.flatMap((r) => Object.keys(r.metrics || {})))];
  const order = ['score', 'total_return', 'cagr', 'sharpe', 'max_drawdown', 'volatility'];
  keys.sort((a, b) => ((order.indexOf(a) + 1 || 99) - (order.indexOf(b) + 1 || 99)) || a.localeCompare(b));
  const cols = [{ label: 'Metric', cell: (k) => h('span', { title: metricFormula(k) || null }, metricName(k)) }];
  runs.forEach((r) => {
    cols.push({ label: name(r), num: true, cell: (k) => metricValue(k, (r.metrics || {})[k]) });
    if (r.run_id !== baseId) {
      cols.push({ label: `Δ ${shortId(r.run_id)}`, num: true, cell: (k) => metricDelta(k, (r.metrics || {})[k], (base.metrics || {})[k]) });
    }
  });
  root.append(h('section', { 'aria-labelledby': 'cmp-metrics', 'data-testid': 'compare-metrics' }, h('h2', { id: 'cmp-metrics' }, 'Metrics'),
    table(cols, keys, { caption: `Metrics, deltas against ${shortId(baseId)}`, rowHeader: true, empty: 'No metrics: none of the runs completed.' })));

  // Export of the comparison.
  const flat = runs.map((r) => ({
    run_id: r.run_id, strategy_name: r.strategy_name, strategy_version_id: r.strategy_version_id, dataset_version: r.dataset_version,
    asset: r.asset, status: r.status, params: JSON.stringify(r.params ?? {}), ...Object.fromEntries(keys.map((k) => [k, (r.metrics || {})[k] ?? null])),
  }));
  root.append(h('p', { class: 'actions' },
    h('button', { type: 'button', on: { click: () => download('runs-compared.csv', 'text/csv', toCsv(flat)) } }, 'Export as CSV'),
    h('button', { type: 'button', on: { click: () => download('runs-compared.json', 'application/json', JSON.stringify(runs, null, 2)) } }, 'Export as JSON')));

  // Equity curves overlaid: by date when every curve spans every bar of one
  // gap-free dataset (as on the run page), else by bar (curves of other
  // lengths end where they end).
  const box = h('section', { class: 'panel', 'aria-labelledby': 'cmp-eq' }, h('h2', { id: 'cmp-eq' }, 'Equity curves'));
  root.append(box);
  const done = runs.filter((r) => r.status === 'completed');
  if (done.length < 1) { box.append(h('p', { class: 'muted' }, 'No run has completed: there is no curve to draw.')); return; }
  const curves = await Promise.all(done.map((r) => api(`/runs/${encodeURIComponent(r.run_id)}/equity`, { accept: 'application/json' }).then(parseEquity, () => null)));
  if (ctx.signal.aborted) return;
  const ok = done.map((r, i) => [r, curves[i]]).filter(([, c]) => c && c.equity.length);
  const n = Math.max(...ok.map(([, c]) => c.equity.length));
  const versions = new Set(ok.map(([r]) => r.dataset_version));
  const aligned = versions.size === 1 && ok.every(([, c]) => c.equity.length === n);
  const times = !aligned ? null : ok[0][1].time ? ok[0][1].x : barTimes(n, await datasetOf(ok[0][0].dataset_version));
  if (ctx.signal.aborted) return;
  const x = times || Array.from({ length: n }, (_, i) => i);
  const series = ok.map(([r, c], i) => ({
    label: name(r), color: COLORS[i % COLORS.length],
    values: x.map((_, j) => (j < c.equity.length ? c.equity[j] : null)),
  }));
  const fig = chart({
    title: 'Equity curves, overlaid', testid: 'compare-chart', x, time: Boolean(times), xLabel: 'bar', xUnit: 'bars', signal: ctx.signal, series,
    summary: ok.map(([r, c]) => `${name(r)}: ${num(c.equity[0])} to ${num(c.equity[c.equity.length - 1])} over ${num(c.equity.length)} bars`).join('; '),
  });
  box.append(fig.figure, h('ul', { class: 'small' }, ok.map(([r]) => h('li', null, link(`#/runs/${encodeURIComponent(r.run_id)}`, name(r)), ' ', statusBadge(r.status)))));
  await fig.ready;
}

// One strategy: its versions and the latest run on each dataset.
import { api } from '../api.js';
import { h, clear, table, link, dl } from '../dom.js';
import { ago, hash, statusBadge } from '../format.js';
import { metricValue, metricFormula } from '../metrics.js';
import { pageHead, pick, score, shortId } from './common.js';
import { versionsOf } from './strategies.js';

export async function render(ctx) {
  const root = clear(ctx.main);
  const id = ctx.params.id;
  ctx.title(`Strategy ${id}`);
  const s = await api(`/strategies/${encodeURIComponent(id)}`);
  if (ctx.signal.aborted) return;
  const name = pick(s, 'name') || `Strategy ${id}`;
  const versions = versionsOf(s);
  const latest = versions.length ? pick(versions[versions.length - 1], 'strategy_version_id', 'id') : undefined;
  root.append(pageHead(ctx, name,
    h('a', { class: 'button primary', href: `#/strategies/new?name=${encodeURIComponent(name)}${latest !== undefined ? `&from=${encodeURIComponent(latest)}` : ''}` }, 'New version')));
  root.append(h('section', { class: 'panel' }, dl([
    ['Strategy id', String(pick(s, 'strategy_id', 'id') ?? id)],
    ['Owner', pick(s, 'owner', 'user', 'owner_name') !== undefined ? String(pick(s, 'owner', 'user', 'owner_name')) : null],
    ['Created', pick(s, 'created_at') ? ago(s.created_at) : null],
  ])));

  root.append(h('h2', null, 'Versions'));
  // v1, v2, … in the order this strategy's versions were stored (their ids ascend)
  const ordinal = new Map([...versions].sort((a, b) => Number(pick(a, 'strategy_version_id', 'id')) - Number(pick(b, 'strategy_version_id', 'id')))
    .map((v, i) => [v, pick(v, 'version', 'number') ?? i + 1]));
  root.append(table([
    { label: 'Version', title: 'The version id (#, numbered across all strategies) and the version of this strategy (v1 its first)',
      cell: (v) => link(`#/versions/${encodeURIComponent(pick(v, 'strategy_version_id', 'id'))}`, `#${pick(v, 'strategy_version_id', 'id')} (v${ordinal.get(v)})`) },
    { label: 'Kind', cell: (v) => String(pick(v, 'kind') ?? '—') },
    { label: 'Code hash', cell: (v) => hash(pick(v, 'code_hash')) },
    { label: 'Submitted', cell: (v) => ago(pick(v, 'created_at', 'submitted_at')) },
  ], [...versions].reverse(), { caption: `Versions of ${name}`, empty: 'No versions.' }));

  const latestRuns = pick(s, 'latest_runs', 'runs_by_dataset', 'latest_run_per_dataset');
  const lr = Array.isArray(latestRuns) ? latestRuns
    : latestRuns && typeof latestRuns === 'object' ? Object.entries(latestRuns).map(([k, v]) => ({ dataset_version: k, ...v })) : [];
  root.append(h('h2', null, 'Latest run per dataset'));
  root.append(table([
    { label: 'Dataset', cell: (r) => String(pick(r, 'dataset_version') ?? '—') },
    { label: 'Run', cell: (r) => { const rid = pick(r, 'run_id', 'id'); return rid === undefined ? '—' : link(`#/runs/${encodeURIComponent(rid)}`, shortId(rid), { title: String(rid) }); } },
    { label: 'Version', cell: (r) => { const v = pick(r, 'strategy_version_id'); return v === undefined ? '—' : link(`#/versions/${encodeURIComponent(v)}`, `#${v}`); } },
    { label: 'Status', cell: (r) => statusBadge(r.status) },
    { label: 'Score', num: true, title: metricFormula('score'), cell: (r) => metricValue('score', score(r)) },
    { label: 'When', cell: (r) => ago(pick(r, 'completed_at', 'queued_at')) },
  ], lr, { caption: 'Latest run per dataset', empty: 'Not run yet: open a version and press Run.' }));
}

// Leaderboards: one per dataset version (ranked by score, the current
// default strategy marked, admins can promote with a confirmation) and one
// per challenge (ranked by the challenge's primary metric in its direction,
// with the baseline shown among the rows).
import { api, post, qs, rows, available } from '../api.js';
import { h, clear, table, link } from '../dom.js';
import { num, ago, when, hash } from '../format.js';
import { metricName, metricValue, metricFormula } from '../metrics.js';
import { download, toCsv } from '../export.js';
import { announce, confirmDialog, whoAmI, isAdmin } from '../app.js';
import { pageHead, pick, score, unavailable, versionId, runId, challengeMap, datasetList, shortId } from './common.js';

/** currentDefaults(data) -> {byDataset: Map(dsv -> entry), history: []}. */
export function currentDefaults(data) {
  const byDataset = new Map();
  let history = [];
  if (!data) return { byDataset, history };
  const cur = Array.isArray(data) ? null : pick(data, 'defaults', 'current');
  history = Array.isArray(data) ? data : (pick(data, 'history', 'promotions') || []);
  if (Array.isArray(cur)) for (const d of cur) byDataset.set(String(pick(d, 'dataset_version')), d);
  else if (cur && typeof cur === 'object') for (const [k, d] of Object.entries(cur)) if (d) byDataset.set(k, d);
  if (!byDataset.size) {
    // derive "current" as the latest promotion per dataset version
    const sorted = [...history].sort((a, b) => String(pick(a, 'promoted_at', 'created_at')).localeCompare(String(pick(b, 'promoted_at', 'created_at'))));
    for (const d of sorted) byDataset.set(String(pick(d, 'dataset_version') ?? ''), d);
  }
  return { byDataset, history };
}

async function tabs(ctx, active) {
  const [ds, chOk] = await Promise.all([
    api('/datasets').catch((e) => { if (e.status === 401) throw e; return []; }),
    available('/api/challenges'),
  ]);
  let challenges = {};
  if (chOk) challenges = challengeMap(await api('/api/challenges').catch(() => ({})));
  const { list: dsObjs, defaultVersion } = datasetList(ds);
  const dsList = dsObjs.map((d) => String(pick(d, 'version', 'dataset_version')));
  const nav = h('nav', { 'aria-label': 'Leaderboards' });
  const ul = h('ul', { class: 'tabs' });
  for (const v of dsList) {
    const href = `#/leaderboards/dataset/${encodeURIComponent(v)}`;
    ul.append(h('li', null, h('a', { href, 'aria-current': active === `dataset:${v}` ? 'page' : null }, `Dataset ${v}`)));
  }
  const names = Object.keys(challenges);
  for (const n of names) {
    const href = `#/leaderboards/challenge/${encodeURIComponent(n)}`;
    ul.append(h('li', null, h('a', { href, 'aria-current': active === `challenge:${n}` ? 'page' : null }, n)));
  }
  nav.append(ul);
  return { nav, dsList, defaultVersion, challenges, chOk };
}

async function datasetBoard(ctx, root, dsv, defaultVersion) {
  const [lb, defs] = await Promise.all([
    api(`/leaderboard${qs({ dataset_version: dsv, limit: 100 })}`),
    api('/defaults').catch((e) => { if (e.status === 401) throw e; return null; }),
    whoAmI(),
  ]);
  if (ctx.signal.aborted) return;
  const list = rows(lb, 'rows', 'leaderboard');
  // GET /leaderboard without a version answers for the server's default
  const effective = String(dsv || (lb && !Array.isArray(lb) && lb.dataset_version) || defaultVersion || '');
  const { byDataset, history } = currentDefaults(defs);
  const cur = byDataset.get(effective) || null;
  const curVid = cur ? String(versionId(cur)) : null;
  const admin = isAdmin();

  root.append(h('p', { class: 'muted' },
    'Completed runs that passed the causality audit, best run per strategy version, ranked by score (higher is better; ties go to the earlier run).'));
  if (cur) {
    root.append(h('p', { class: 'panel notice', 'data-testid': 'current-default' },
      'Current default for ', h('strong', null, effective || 'this dataset'), ': ',
      link(`#/versions/${encodeURIComponent(curVid)}`, `${pick(cur, 'strategy_name', 'name') || 'version'} #${curVid}`),
      pick(cur, 'promoted_by') ? ` (promoted by ${cur.promoted_by}` : ' (promoted', pick(cur, 'promoted_at') ? [' ', ago(cur.promoted_at), ')'] : ')'));
  }

  const cols = [
    { label: 'Rank', num: true, cell: (r) => num(pick(r, 'rank') ?? list.indexOf(r) + 1) },
    {
      label: 'Strategy',
      class: 'wrap',
      cell: (r) => {
        const v = versionId(r);
        const nm = pick(r, 'strategy_name', 'name') || 'version';
        const cell = h('span', null, link(`#/versions/${encodeURIComponent(v)}`, `${nm} #${v}`));
        if (curVid !== null && String(v) === curVid) cell.append(' ', h('span', { class: 'badge mark-default', 'data-testid': 'default-mark' }, 'default'));
        return cell;
      },
    },
    // the score right after the name, so a phone shows it without scrolling sideways
    ...['score', 'total_return', 'cagr', 'sharpe', 'max_drawdown'].map((k) => {
      const val = (r) => (k === 'score' ? score(r) : pick(r, k) ?? (r.metrics || {})[k]);
      return {
        label: metricName(k),
        title: metricFormula(k),
        num: true,
        sort: (r) => (val(r) === null || val(r) === undefined ? null : Number(val(r))),
        cell: (r) => metricValue(k, val(r)),
      };
    }),
    { label: 'Owner', cell: (r) => String(pick(r, 'owner', 'user', 'owner_name') ?? '—') },
    { label: 'Run', cell: (r) => link(`#/runs/${encodeURIComponent(runId(r))}`, shortId(runId(r)), { title: String(runId(r)) }) },
  ];
  if (admin !== false) {
    cols.push({
      label: 'Default',
      cell: (r) => {
        const v = versionId(r);
        if (curVid !== null && String(v) === curVid) return h('span', { class: 'muted' }, 'current');
        return h('button', {
          type: 'button', class: 'small', 'data-testid': 'promote',
          'aria-label': `Promote ${pick(r, 'strategy_name', 'name') || 'version'} #${v} to default`,
          on: { click: () => promote(ctx, r, effective) },
        }, 'Promote');
      },
    });
  }
  const file = `leaderboard-${effective || 'default'}`;
  root.append(h('p', { class: 'actions' },
    h('button', { type: 'button', on: { click: () => download(`${file}.csv`, 'text/csv', toCsv(list)) } }, 'Export as CSV'),
    h('button', { type: 'button', on: { click: () => download(`${file}.json`, 'application/json', JSON.stringify(list, null, 2)) } }, 'Export as JSON')));
  root.append(table(cols, list, {
    caption: `Leaderboard for dataset ${effective || 'default'}`,
    rowClass: (r) => (curVid !== null && String(versionId(r)) === curVid ? 'is-default' : null),
    empty: 'No ranked runs yet: a completed, audit-passed run appears here.',
  }));

  const hist = history.filter((d) => !effective || String(pick(d, 'dataset_version') ?? effective) === effective);
  if (hist.length) {
    root.append(h('h2', null, 'Promotion history'));
    root.append(table([
      { label: 'When', cell: (d) => when(pick(d, 'promoted_at', 'created_at')) },
      { label: 'Version', cell: (d) => link(`#/versions/${encodeURIComponent(versionId(d))}`, `#${versionId(d)}`) },
      { label: 'By', cell: (d) => String(pick(d, 'promoted_by', 'user', 'by') ?? '—') },
    ], [...hist].reverse(), { caption: 'Promotion history' }));
  }
  return effective;
}

async function promote(ctx, row, dsv) {
  const v = versionId(row);
  const nm = pick(row, 'strategy_name', 'name') || 'version';
  const ok = await confirmDialog('Promote to default?',
    `${nm} #${v} becomes the default strategy for dataset ${dsv}. The promotion is recorded with your name.`, 'Promote');
  if (!ok) return;
  try {
    const body = { strategy_version_id: Number.isNaN(Number(v)) ? v : Number(v) };
    if (dsv) body.dataset_version = dsv;
    await post('/defaults/promote', body);
    announce(`${nm} #${v} is now the default`);
    ctx.rerender();
  } catch (e) {
    if (e.status === 401) return;
    const msg = e.status === 403 ? 'Only admins can promote a strategy.' : `${e.message}${e.code ? ` (${e.code})` : ''}`;
    await confirmDialog('Promotion refused', msg, 'OK');
  }
}

async function challengeBoard(ctx, root, name, challenges) {
  const ch = challenges[name] || {};
  const info = ch.metric_info || {};
  const lb = await api(`/api/challenges/${encodeURIComponent(name)}/leaderboard`);
  if (ctx.signal.aborted) return;
  const list = rows(lb, 'entries', 'rows', 'leaderboard');
  const metric = info.primary || (lb && lb.metric) || ch.metric || 'score';
  const dir = info.direction || (lb && lb.direction) || 'higher';
  const val = (r) => pick(r, metric, 'value', 'metric', 'score') ?? (r.result || r.metrics || {})[metric];
  const baseline = info.baseline;
  const withBase = [...list];
  if (baseline !== undefined && baseline !== null) {
    const b = { baseline: true, value: Number(baseline) };
    let i = withBase.findIndex((r) => (dir === 'lower' ? val(r) > b.value : val(r) < b.value));
    if (i < 0) i = withBase.length;
    withBase.splice(i, 0, b);
  }
  const what = String(ch.short || ch.desc || '').replace(/[.\s]*$/, '');
  root.append(h('p', { class: 'muted' },
    `${what ? `${what}. ` : ''}Ranked by ${info.label || metric} (${dir} is better) on the holdout windows.`));
  let rank = 0;
  root.append(table([
    { label: 'Rank', num: true, cell: (r) => (r.baseline ? '—' : num(pick(r, 'rank') ?? (rank += 1))) },
    { label: 'Submission', cell: (r) => (r.baseline ? h('span', { 'data-testid': 'baseline-row' }, 'Baseline (uninformed guess)') : link(`#/evaluations/${encodeURIComponent(pick(r, 'evaluation_id', 'id'))}`, r.name ? String(r.name) : `evaluation ${shortId(pick(r, 'evaluation_id', 'id'))}`, r.name ? { title: `evaluation ${pick(r, 'evaluation_id', 'id')}` } : {})) },
    { label: 'Owner', cell: (r) => (r.baseline ? '' : String(pick(r, 'owner', 'user') ?? '—')) },
    // which code it was: rows of one owner are told apart by their code hash
    { label: 'Code', cell: (r) => (r.baseline ? '' : h('span', null, hash(pick(r, 'code_hash'), 10), r.dev_only ? h('span', { class: 'badge dev' }, ' dev only') : null)) },
    { label: info.label || metric, num: true, cell: (r) => num(r.baseline ? r.value : val(r), 5) },
    { label: 'Completed', cell: (r) => (r.baseline ? '' : ago(pick(r, 'completed_at', 'created_at'))) },
  ], withBase, {
    caption: `Leaderboard for ${name}`,
    rowClass: (r) => (r.baseline ? 'is-baseline' : null),
    empty: 'No evaluations yet.',
  }));
}

export async function render(ctx) {
  const root = clear(ctx.main);
  const kind = ctx.params.kind;
  const name = ctx.params.name;
  root.append(pageHead(ctx, kind === 'challenge' ? `Leaderboard · ${name}` : `Leaderboard${name ? ` · ${name}` : ''}`));
  const t = await tabs(ctx, kind ? `${kind}:${name}` : `dataset:${''}`);
  if (ctx.signal.aborted) return;
  root.append(t.nav);
  if (!t.chOk) root.append(unavailable('Challenge leaderboards'));
  const box = h('div');
  root.append(box);
  if (kind === 'challenge') {
    if (!t.chOk) return;
    await challengeBoard(ctx, box, name, t.challenges);
  } else if (!kind || kind === 'dataset') {
    const effective = await datasetBoard(ctx, box, name || '', t.defaultVersion);
    if (!kind && effective) {
      // no version in the URL: the API answered for its default; mark its tab
      const a = t.nav.querySelector(`a[href="#/leaderboards/dataset/${encodeURIComponent(effective)}"]`);
      if (a) a.setAttribute('aria-current', 'page');
    }
  } else {
    box.append(h('p', null, 'Unknown leaderboard kind.'));
  }
}

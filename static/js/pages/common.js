// Pieces shared by several pages: reading API objects, the runs table, page
// headings and "not on this server yet" notices.
import { h, link, table } from '../dom.js';
import { num, statusBadge, ago, secs } from '../format.js';

export { pick } from '../pick.js';
import { pick } from '../pick.js';
import { metricValue, metricFormula } from '../metrics.js';

/** pageHead(ctx, title, ...actions): sets the title and draws <h1> plus actions. */
export function pageHead(ctx, title, ...actions) {
  ctx.title(title);
  const head = h('div', { class: 'spread' }, h('h1', { tabindex: -1 }, title));
  if (actions.length) head.append(h('div', { class: 'actions' }, actions));
  return head;
}

/** unavailable(what): the clear notice for an API this server lacks. */
export function unavailable(what) {
  return h('p', { class: 'unavailable', 'data-testid': 'unavailable' },
    `${what} ${/s$/.test(what) ? 'are' : 'is'} not available on this server yet.`);
}

/** runId(r): a run's id, whatever the key. */
export const runId = (r) => pick(r, 'run_id', 'id');

/** shortId(id): run ids are UUIDs; their first 8 characters name them on screen. */
export function shortId(id) {
  const s = String(id ?? '');
  return /^[0-9a-f]{8}-[0-9a-f]{4}-/.test(s) ? s.slice(0, 8) : s;
}

/** intervalText(d): a dataset's bar interval ("1 min", "1 h", "1 d"). */
export function intervalText(d) {
  const ms = pick(d, 'interval_ms');
  if (typeof ms === 'number' && ms > 0) {
    if (ms % 86400000 === 0) return `${ms / 86400000} d`;
    if (ms % 3600000 === 0) return `${ms / 3600000} h`;
    if (ms % 60000 === 0) return `${ms / 60000} min`;
    if (ms % 1000 === 0) return `${ms / 1000} s`;
    return `${ms} ms`;
  }
  const v = pick(d, 'interval', 'bar_interval');
  return v === undefined ? '—' : String(v);
}

/** datasetList(data) -> {list, defaultVersion} from GET /datasets. */
export function datasetList(data) {
  const list = Array.isArray(data) ? data : (data && data.datasets) || [];
  const def = data && !Array.isArray(data) ? pick(data, 'default_version', 'default') : undefined;
  const marked = list.find((d) => d.default === true || d.is_default === true);
  return { list, defaultVersion: def !== undefined && def !== null ? String(def) : marked ? String(pick(marked, 'version', 'dataset_version')) : '' };
}
/** versionId(r): a strategy version id from a run/leaderboard/version object. */
export const versionId = (r) => pick(r, 'strategy_version_id', 'version_id');

/** score(r): the score of a run or leaderboard row. */
export function score(r) {
  const m = r.metrics || {};
  return pick(r, 'score') ?? pick(m, 'score');
}

/** runsTable(list, opts): the standard table of runs. */
export function runsTable(list, opts = {}) {
  const cols = [
    {
      label: 'Run',
      cell: (r) => {
        const a = link(`#/runs/${encodeURIComponent(runId(r))}`, shortId(runId(r)), { title: String(runId(r)) });
        // a verification re-execution is not a second run of the same thing
        const of = pick(r, 'verify_of');
        return of ? h('span', null, a, ' ', h('span', { class: 'badge tag-verify', title: `re-execution of run ${of}`, 'data-testid': 'verify-mark' }, `verifies ${shortId(of)}`)) : a;
      },
    },
    {
      label: 'Status',
      cell: (r) => {
        const code = pick(r, 'error_code');
        return code && r.status !== 'completed'
          ? h('span', null, statusBadge(r.status), ' ', h('code', { class: 'small', 'data-testid': 'error-code' }, String(code)))
          : statusBadge(r.status);
      },
    },
  ];
  if (!opts.noStrategy) {
    cols.push({
      label: 'Strategy',
      cell: (r) => {
        // GET /runs names the strategy of each row (strategy_name, strategy_id)
        const name = pick(r, 'strategy_name', 'name');
        const v = versionId(r);
        if (!v) return name || '—';
        if (!name) return link(`#/versions/${encodeURIComponent(v)}`, `version #${v}`);
        return h('span', { class: 'strategy-cell' },
          link(`#/versions/${encodeURIComponent(v)}`, String(name), { title: `${name}, version id ${v}` }),
          h('span', { class: 'muted small', title: 'version id (numbered across all strategies)' }, ` #${v}`));
      },
    });
  }
  cols.push(
    { label: 'Dataset', cell: (r) => pick(r, 'dataset_version') || '—' },
    { label: 'Score', num: true, title: metricFormula('score'), cell: (r) => metricValue('score', score(r)) },
    { label: 'Runtime', num: true, cell: (r) => secs(pick(r, 'runtime_s') ?? (r.metrics || {}).runtime_s) },
    { label: 'Queued', cell: (r) => ago(pick(r, 'queued_at', 'created_at')) },
  );
  if (opts.owner) cols.splice(3, 0, { label: 'Owner', cell: (r) => pick(r, 'owner', 'user') || '—' });
  if (opts.selected) {
    // opts.selected: a Set of run ids the reader ticked (kept by the page
    // across redraws); opts.onSelect() after each change.
    cols.unshift({
      label: h('span', { class: 'visually-hidden' }, 'Compare'),
      cell: (r) => {
        const id = String(runId(r));
        return h('input', {
          type: 'checkbox', class: 'pick', checked: opts.selected.has(id), 'aria-label': `Select run ${shortId(id)} to compare`,
          on: { change: (ev) => { if (ev.target.checked) opts.selected.add(id); else opts.selected.delete(id); if (opts.onSelect) opts.onSelect(); } },
        });
      },
    });
  }
  return table(cols, list, { caption: opts.caption, label: opts.caption || 'Runs', empty: opts.empty || 'No runs yet.' });
}

/** evalScore(e): an evaluation's headline value with its metric ("0.5123 mean_auc"), or "—". */
export function evalScore(e) {
  const v = pick(e, 'score');
  if (v === null || v === undefined) return '—';
  const m = pick(e, 'metric');
  return m ? `${num(v)} ${m}` : num(v);
}

/** paramsInput(value): a labelled JSON textarea for strategy params. */
export function parseParams(text) {
  const t = text.trim();
  if (!t) return {};
  let v;
  try {
    v = JSON.parse(t);
  } catch (e) {
    throw new Error(`Params must be a JSON object: ${e.message}`);
  }
  if (!v || typeof v !== 'object' || Array.isArray(v)) throw new Error('Params must be a JSON object, like {"window": 20}.');
  return v;
}

/** challengeMap(data): /api/challenges as {name: info}, from the original's
 * object shape or from a list of {name, ...}. */
export function challengeMap(data) {
  if (Array.isArray(data) || (data && Array.isArray(data.challenges))) {
    const out = {};
    for (const c of Array.isArray(data) ? data : data.challenges) out[c.name] = c;
    return out;
  }
  return data && typeof data === 'object' ? data : {};
}

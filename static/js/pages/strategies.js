// Strategies: every strategy the caller may see, with its versions and the
// way to submit a new one.
import { api, rows } from '../api.js';
import { h, clear, table, link } from '../dom.js';
import { ago, hash, num } from '../format.js';
import { pageHead, pick } from './common.js';

/** versionsOf(s): the version list of a strategy object (array or absent). */
export function versionsOf(s) {
  const v = pick(s, 'versions');
  return Array.isArray(v) ? v : [];
}

export async function render(ctx) {
  const root = clear(ctx.main);
  root.append(pageHead(ctx, 'Strategies',
    h('a', { class: 'button primary', href: '#/strategies/new' }, 'New strategy')));
  const data = await api('/strategies');
  if (ctx.signal.aborted) return;
  const list = rows(data, 'strategies');
  root.append(h('p', { class: 'muted' },
    'A strategy is a name and its versions: submitting new code under the same name adds a version; the same code again reuses its version.'));
  root.append(table([
    { label: 'Strategy', cell: (s) => link(`#/strategies/${encodeURIComponent(pick(s, 'strategy_id', 'id'))}`, String(pick(s, 'name') || `strategy ${pick(s, 'strategy_id', 'id')}`)) },
    { label: 'Owner', cell: (s) => String(pick(s, 'owner', 'user', 'owner_name') ?? '—') },
    { label: 'Kind', cell: (s) => String(pick(s, 'kind', 'latest_kind') ?? (versionsOf(s).at(-1) || {}).kind ?? '—') },
    { label: 'Versions', num: true, cell: (s) => num(typeof s.versions === 'number' ? s.versions : pick(s, 'version_count', 'n_versions') ?? versionsOf(s).length) },
    {
      label: 'Latest version',
      cell: (s) => {
        const vs = versionsOf(s);
        const latest = pick(s, 'latest_version_id', 'latest_strategy_version_id') ??
          (vs.length ? pick(vs[vs.length - 1], 'strategy_version_id', 'id') : undefined);
        const code = pick(s, 'latest_code_hash') ?? (vs.length ? pick(vs[vs.length - 1], 'code_hash') : undefined);
        if (latest === undefined) return '—';
        return h('span', null, link(`#/versions/${encodeURIComponent(latest)}`, `#${latest}`), ' ', code ? hash(code, 8) : '');
      },
    },
    { label: 'Updated', cell: (s) => ago(pick(s, 'updated_at', 'latest_at', 'created_at')) },
  ], list, { caption: 'Strategies', empty: 'No strategies yet. Submit one with “New strategy”.' }));
}

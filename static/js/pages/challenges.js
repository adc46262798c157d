// Challenges: what each prediction challenge asks for (asset, horizon,
// embedding format, metric and its baseline), with links to submit a signal
// and to its leaderboard.
import { api, available } from '../api.js';
import { h, clear, link } from '../dom.js';
import { num } from '../format.js';
import { pageHead, unavailable, challengeMap } from './common.js';

/** horizonText(minutes): "60 min", "6 h", "event driven". */
export function horizonText(ch) {
  const m = ch.horizon ?? ch.horizon_minutes;
  if (m === undefined || m === null) return null;
  if (Number(m) === 0) return 'event driven';
  if (m % 60 === 0 && m >= 120) return `${m / 60} h`;
  return `${m} min`;
}

/** embeddingText(ch): the embedding format told to strategy authors. */
export function embeddingText(ch) {
  const f = ch.embedding ?? ch.embedding_format ?? ch.format;
  const dim = ch.embedding_dim ?? ch.dim;
  if (f && dim) return `${dim} numbers: ${f}`;
  if (f) return String(f);
  if (dim) return `${dim} numbers`;
  return null;
}

/** metricText(ch): "AUC (mean_auc), higher is better, baseline 0.5". */
export function metricText(ch) {
  const i = ch.metric_info || {};
  const parts = [`${i.label || ch.metric || i.primary || 'metric'}${i.primary ? ` (${i.primary})` : ''}`];
  if (i.direction) parts.push(`${i.direction} is better`);
  if (i.baseline !== undefined && i.baseline !== null) parts.push(`baseline ${num(i.baseline, 4)}`);
  return parts.join(', ');
}

export async function render(ctx) {
  const root = clear(ctx.main);
  root.append(pageHead(ctx, 'Challenges'));
  if (!await available('/api/challenges')) {
    root.append(unavailable('Challenges'));
    return;
  }
  const data = challengeMap(await api('/api/challenges'));
  if (ctx.signal.aborted) return;
  root.append(h('p', { class: 'muted' },
    'Each challenge asks for a prediction signal. Your code sees the market one bar at a time (the future does not exist yet inside the sandbox) and is scored walk-forward; the headline number comes from the holdout period only.'));
  const ul = h('ul', { class: 'cards' });
  for (const [name, ch] of Object.entries(data)) {
    const hid = `ch-${name.replace(/[^A-Za-z0-9_-]/g, '_')}`;
    ul.append(h('li', { 'aria-labelledby': hid },
      h('h2', { id: hid }, link(`#/challenges/${encodeURIComponent(name)}`, name)),
      h('div', { class: 'tags' },
        ch.type ? h('span', { class: 'tag' }, ch.type) : null,
        ch.asset ? h('span', { class: 'tag' }, `asset ${ch.asset}`) : null,
        horizonText(ch) ? h('span', { class: 'tag' }, `horizon ${horizonText(ch)}`) : null),
      ch.short ? h('p', null, h('strong', null, ch.short)) : null,
      ch.desc ? h('p', null, ch.desc) : null,
      embeddingText(ch) ? h('p', { class: 'small' }, h('span', { class: 'muted' }, 'Embedding: '), embeddingText(ch)) : null,
      h('p', { class: 'small' }, h('span', { class: 'muted' }, 'Metric: '), metricText(ch)),
      h('p', { class: 'actions' },
        h('a', { class: 'button primary small', href: `#/challenges/${encodeURIComponent(name)}`, 'aria-label': `Submit a signal for ${name}` }, 'Submit a signal'),
        h('a', { class: 'button small', href: `#/leaderboards/challenge/${encodeURIComponent(name)}`, 'aria-label': `Leaderboard of ${name}` }, 'Leaderboard'))));
  }
  root.append(ul);
}

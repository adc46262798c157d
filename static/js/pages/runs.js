// Runs: a filterable, paginated list. Filters live in the fragment's query
// (#/runs?status=failed) so a filtered list can be bookmarked or shared.
// While runs on the first page are queued or running, it refreshes with
// back-off.
import { api, qs, rows } from '../api.js';
import { h, clear, field } from '../dom.js';
import { poll } from '../poll.js';
import { setQuery } from '../app.js';
import { pageHead, pick, runsTable } from './common.js';

const STATUSES = ['', 'queued', 'running', 'completed', 'failed', 'cancelled'];
const PAGE = 50;

export async function render(ctx) {
  const root = clear(ctx.main);
  root.append(pageHead(ctx, 'Runs'));
  const f = {
    status: ctx.query.get('status') || '',
    dataset_version: ctx.query.get('dataset_version') || '',
    strategy_version_id: ctx.query.get('strategy_version_id') || '',
    strategy_id: ctx.query.get('strategy_id') || '',
  };
  const status = h('select', { name: 'status' }, STATUSES.map((s) => h('option', { value: s, selected: s === f.status }, s || 'any')));
  const dsSel = h('select', { name: 'dataset_version' }, h('option', { value: '' }, 'any'));
  const ver = h('input', { type: 'text', name: 'strategy_version_id', inputmode: 'numeric', autocomplete: 'off', value: f.strategy_version_id });
  const form = h('form', { class: 'panel', role: 'search', 'aria-label': 'Filter runs' },
    h('div', { class: 'fields' },
      field('Status', status), field('Dataset', dsSel), field('Strategy version id', ver),
      h('div', { class: 'actions' }, h('button', { type: 'submit', class: 'primary' }, 'Filter'),
        h('button', { type: 'button', on: { click: () => { status.value = ''; dsSel.value = ''; ver.value = ''; form.requestSubmit(); } } }, 'Clear'))));
  const listBox = h('div', { 'aria-live': 'polite' });
  const more = h('button', { type: 'button', hidden: true }, 'Load more');
  // Runs ticked in the list open side by side on the compare page.
  const selected = new Set();
  const compare = h('a', { class: 'button', 'aria-disabled': 'true', 'data-testid': 'compare-link' }, 'Compare selected runs');
  const onSelect = () => {
    const ids = [...selected];
    compare.textContent = `Compare selected runs (${ids.length})`;
    if (ids.length >= 2) {
      compare.href = `#/compare?runs=${ids.map(encodeURIComponent).join(',')}`;
      compare.removeAttribute('aria-disabled');
    } else {
      compare.removeAttribute('href');
      compare.setAttribute('aria-disabled', 'true');
    }
  };
  root.append(form, h('p', { class: 'actions' }, compare, h('span', { class: 'muted small' }, 'Tick two or more runs to compare them.')), listBox, more);

  api('/datasets').then((d) => {
    for (const x of rows(d, 'datasets')) {
      const v = String(pick(x, 'version', 'dataset_version'));
      dsSel.append(h('option', { value: v, selected: v === f.dataset_version }, v));
    }
    if (f.dataset_version && dsSel.value !== f.dataset_version) {
      dsSel.append(h('option', { value: f.dataset_version, selected: true }, f.dataset_version));
    }
  }).catch(() => {
    if (f.dataset_version) dsSel.append(h('option', { value: f.dataset_version, selected: true }, f.dataset_version));
  });

  let all = [];
  let cursor = null;
  let lastKey = '';

  async function fetchPage(c) {
    const data = await api(`/runs${qs({ ...f, limit: PAGE, cursor: c })}`);
    const list = rows(data, 'runs');
    const next = data && !Array.isArray(data) ? pick(data, 'next_cursor', 'cursor_next', 'next') : null;
    return { list, next: next || null };
  }

  function draw() {
    clear(listBox).append(runsTable(all, { caption: 'Runs', owner: true, empty: 'No runs match these filters.', selected, onSelect }));
    more.hidden = !cursor;
  }

  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    setQuery({ status: status.value, dataset_version: dsSel.value, strategy_version_id: ver.value.trim() });
    ctx.rerender();
  });
  more.addEventListener('click', async () => {
    more.disabled = true;
    try {
      const p = await fetchPage(cursor);
      all = all.concat(p.list);
      cursor = p.next;
      draw();
    } finally {
      more.disabled = false;
    }
  });

  const first = await fetchPage(null);
  if (ctx.signal.aborted) return;
  all = first.list;
  cursor = first.next;
  lastKey = JSON.stringify(all.map((r) => [r.run_id ?? r.id, r.status]));
  draw();

  poll(async () => {
    if (all.length > PAGE) return 'same'; // the reader paged on; leave the list alone
    const p = await fetchPage(null);
    const key = JSON.stringify(p.list.map((r) => [r.run_id ?? r.id, r.status]));
    if (key === lastKey) return 'same';
    lastKey = key;
    all = p.list;
    cursor = p.next;
    draw();
    return 'changed';
  }, { min: 2000, max: 30000, signal: ctx.signal });
}

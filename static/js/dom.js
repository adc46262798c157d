// Small DOM helpers. Every page builds its elements with h(): text always
// goes in as text nodes, never as HTML, so data from the API cannot inject
// markup. No inline style attributes either (the CSP forbids them); layout
// lives in css/app.css and the few computed positions use the CSSOM.

/**
 * h(tag, attrs, ...children) -> Element.
 * attrs: plain attributes (string/number/true), `class`, `dataset` (object),
 * `on` (object event -> handler), `props` (object assigned as properties).
 * false/null/undefined attributes and children are skipped; arrays of
 * children are flattened; strings and numbers become text nodes.
 */
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  if (attrs) {
    for (const [k, v] of Object.entries(attrs)) {
      if (v === false || v === null || v === undefined) continue;
      if (k === 'on') {
        for (const [ev, fn] of Object.entries(v)) el.addEventListener(ev, fn);
      } else if (k === 'dataset') {
        for (const [dk, dv] of Object.entries(v)) {
          if (dv !== null && dv !== undefined) el.dataset[dk] = String(dv);
        }
      } else if (k === 'props') {
        Object.assign(el, v);
      } else if (k === 'style') {
        throw new Error('inline styles are not allowed by the CSP');
      } else {
        el.setAttribute(k, v === true ? '' : String(v));
      }
    }
  }
  append(el, children);
  return el;
}

/** append(parent, children): appends nodes/strings/arrays, skipping nullish. */
export function append(parent, children) {
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    parent.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return parent;
}

/** clear(el): removes every child of el and returns it. */
export function clear(el) {
  el.replaceChildren();
  return el;
}

let uid = 0;
/** nextId(prefix): a document-unique id for label/aria wiring. */
export function nextId(prefix = 'id') {
  uid += 1;
  return `${prefix}-${uid}`;
}

/** link(href, text, attrs): an <a> to an in-app route (href starts with #/). */
export function link(href, text, attrs = {}) {
  return h('a', { href, ...attrs }, text);
}

/** field(label, control, hint): a labelled form row; wires for/id and hint. */
export function field(label, control, hint) {
  if (!control.id) control.id = nextId('f');
  const row = h('div', { class: 'field' }, h('label', { for: control.id }, label), control);
  if (hint) {
    const hid = nextId('hint');
    row.append(h('p', { class: 'hint', id: hid }, hint));
    const prev = control.getAttribute('aria-describedby');
    control.setAttribute('aria-describedby', prev ? `${prev} ${hid}` : hid);
  }
  return row;
}

/** table(columns, rows, opts): a scrollable data table.
 * columns: [{label, cell(row) -> node|string, num?: bool, class?: string,
 * title?: string, headWrap?: bool, sort?: (row) -> number|string|null}]
 * (headWrap: the header may wrap onto more lines, for a long header over
 * narrow values that a phone should show without scrolling); a column with
 * `sort` gets a header button that orders the rows by it (descending
 * first, then ascending; nulls last either way) and the matching aria-sort.
 * opts: {caption, empty, rowClass(row), rowAttrs(row)} */
export function table(columns, rows, opts = {}) {
  const ths = columns.map((c) => h('th', { scope: 'col', class: [c.num ? 'num' : null, c.headWrap ? 'wrap' : null].filter(Boolean).join(' ') || null, title: c.title || null },
    c.sort ? h('button', { type: 'button', class: 'sort', on: { click: () => sortBy(c) } }, c.label) : c.label));
  const thead = h('thead', null, h('tr', null, ths));
  const tbody = h('tbody');
  const rowEls = new Map();
  /** sortBy(col): reorders the body rows by col, flipping the direction on a second press. */
  function sortBy(col) {
    const i = columns.indexOf(col);
    const dir = ths[i].getAttribute('aria-sort') === 'descending' ? 1 : -1;
    for (const th of ths) th.removeAttribute('aria-sort');
    ths[i].setAttribute('aria-sort', dir < 0 ? 'descending' : 'ascending');
    const key = (r) => { const v = col.sort(r); return v === null || v === undefined || Number.isNaN(v) ? null : v; };
    const sorted = [...rows].sort((a, b) => {
      const ka = key(a); const kb = key(b);
      if (ka === null || kb === null) return (ka === null) - (kb === null);
      return (ka < kb ? -1 : ka > kb ? 1 : 0) * dir;
    });
    tbody.append(...sorted.map((r) => rowEls.get(r)));
  }
  for (const r of rows) {
    const tr = h('tr', { class: opts.rowClass ? opts.rowClass(r) : null, ...(opts.rowAttrs ? opts.rowAttrs(r) : {}) });
    columns.forEach((c, i) => {
      const v = c.cell(r);
      const tag = i === 0 && opts.rowHeader ? 'th' : 'td';
      const cls = [c.num ? 'num' : null, c.class].filter(Boolean).join(' ');
      tr.append(h(tag, { class: cls || null, scope: tag === 'th' ? 'row' : null }, v));
    });
    tbody.append(tr);
    rowEls.set(r, tr);
  }
  const t = h('table', { class: 'data' }, opts.caption ? h('caption', null, opts.caption) : null, thead, tbody);
  if (!rows.length && opts.empty) {
    tbody.append(h('tr', null, h('td', { colspan: columns.length, class: 'empty' }, opts.empty)));
  }
  // A focusable, labelled scroll region: tables scroll sideways on their
  // own on a phone, never the page.
  const label = `${opts.caption || opts.label || 'Data'} (table)`;
  return h('div', { class: 'table-wrap', tabindex: 0, role: 'region', 'aria-label': label }, t);
}

/** dl(pairs): a definition list from [[term, value], ...], skipping null values. */
export function dl(pairs, cls = 'kv') {
  const el = h('dl', { class: cls });
  for (const [k, v] of pairs) {
    if (v === null || v === undefined) continue;
    el.append(h('div', null, h('dt', null, k), h('dd', null, v)));
  }
  return el;
}

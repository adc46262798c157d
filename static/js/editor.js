// A code editor made of a real <textarea> (so screen readers, spell-check
// off, undo, selection and mobile keyboards all behave as people expect), a
// line-number gutter, and an error mark that points at the line and column
// the API names in a syntax or contract error. A full editor library was
// weighed and left out: it needs a bundling step and brings its own
// accessibility model, while what users need here is numbered lines, sane
// indentation and errors at their line.
//
// Keys: Tab indents (4 spaces) and Shift+Tab removes indentation; Esc
// releases the Tab key for one press so keyboard users can leave the field;
// Enter keeps the indentation of the line (one level more after a colon).
import { h, nextId } from './dom.js';

const INDENT = '    ';

/**
 * editor({label, value, hint, name, rows}) -> {el, textarea, value(),
 * setValue(text), showError(err|null), focusLine(line, col)}
 * showError accepts an ApiError (reads .line/.column/.message/.code).
 */
export function editor(opts = {}) {
  const id = nextId('code');
  const hintId = `${id}-hint`;
  const errId = `${id}-err`;
  const gutter = h('pre', { class: 'editor-gutter', 'aria-hidden': 'true' });
  const mark = h('div', { class: 'editor-mark', 'aria-hidden': 'true' });
  const ta = h('textarea', {
    id, class: 'code', name: opts.name || 'code', spellcheck: 'false', autocapitalize: 'off',
    autocomplete: 'off', autocorrect: 'off', wrap: 'off', rows: opts.rows || 22,
    'aria-describedby': `${hintId} ${errId}`,
  });
  ta.value = opts.value || '';
  const errBox = h('div', { class: 'code-error', id: errId, role: 'alert' });
  const el = h('div', { class: 'editor' },
    h('label', { for: id }, opts.label || 'Code'),
    h('div', { class: 'editor-frame' }, gutter, h('div', { class: 'editor-text' }, mark, ta)),
    h('p', { class: 'hint', id: hintId }, opts.hint ||
      'Tab indents, Shift+Tab dedents. To move on with the keyboard, press Esc and then Tab.'),
    errBox);

  let errLine = 0;
  let tabReleased = false;

  let drawnErr = 0;
  function renderGutter() {
    const n = ta.value.split('\n').length;
    if (gutter.childElementCount !== n || errLine !== drawnErr) {
      drawnErr = errLine;
      const frag = document.createDocumentFragment();
      for (let i = 1; i <= n; i += 1) {
        const s = document.createElement('span');
        s.textContent = String(i);
        if (i === errLine) {
          s.className = 'err';
          s.dataset.errorLine = 'true';
        }
        frag.append(s);
      }
      gutter.replaceChildren(frag);
    }
    syncScroll();
  }

  function lineHeight() {
    return parseFloat(getComputedStyle(ta).lineHeight) || 20;
  }

  function syncScroll() {
    gutter.scrollTop = ta.scrollTop;
    if (errLine) {
      const pad = parseFloat(getComputedStyle(ta).paddingTop) || 0;
      mark.style.top = `${pad + (errLine - 1) * lineHeight() - ta.scrollTop}px`;
    }
  }

  /** lineStart(line) -> character offset of the 1-based line. */
  function lineStart(line) {
    const lines = ta.value.split('\n');
    let off = 0;
    for (let i = 0; i < Math.min(line - 1, lines.length); i += 1) off += lines[i].length + 1;
    return off;
  }

  function focusLine(line, col = 1) {
    const start = lineStart(line);
    const lines = ta.value.split('\n');
    const len = (lines[line - 1] || '').length;
    const pos = start + Math.min(Math.max(col - 1, 0), len);
    ta.focus();
    ta.setSelectionRange(pos, pos);
    const target = (line - 1) * lineHeight();
    if (target < ta.scrollTop || target > ta.scrollTop + ta.clientHeight - 2 * lineHeight()) {
      ta.scrollTop = Math.max(0, target - ta.clientHeight / 3);
    }
    syncScroll();
  }

  function insert(text) {
    // execCommand keeps the browser's undo history; setRangeText is the fallback.
    if (!document.execCommand || !document.execCommand('insertText', false, text)) {
      ta.setRangeText(text, ta.selectionStart, ta.selectionEnd, 'end');
      ta.dispatchEvent(new Event('input', { bubbles: true }));
    }
  }

  function dedent() {
    const start = lineStart(ta.value.slice(0, ta.selectionStart).split('\n').length);
    const head = ta.value.slice(start, start + INDENT.length);
    const n = head.length - head.replace(/^ {1,4}/, '').length;
    if (!n) return;
    const caret = ta.selectionStart;
    ta.setSelectionRange(start, start + n);
    insert('');
    const p = Math.max(start, caret - n);
    ta.setSelectionRange(p, p);
  }

  ta.addEventListener('keydown', (ev) => {
    if (ev.key === 'Escape') { tabReleased = true; return; }
    if (ev.key === 'Tab' && !ev.ctrlKey && !ev.altKey && !ev.metaKey) {
      if (tabReleased) { tabReleased = false; return; } // let focus move on
      ev.preventDefault();
      if (ev.shiftKey) dedent(); else insert(INDENT);
      return;
    }
    tabReleased = false;
    if (ev.key === 'Enter' && !ev.shiftKey && !ev.ctrlKey && !ev.altKey && !ev.metaKey) {
      const before = ta.value.slice(0, ta.selectionStart);
      const cur = before.slice(before.lastIndexOf('\n') + 1);
      let ind = /^[ \t]*/.exec(cur)[0];
      if (/:\s*(#.*)?$/.test(cur)) ind += INDENT;
      ev.preventDefault();
      insert(`\n${ind}`);
    }
  });
  ta.addEventListener('input', () => {
    if (errLine) clearMark();
    renderGutter();
  });
  ta.addEventListener('scroll', syncScroll);

  function clearMark() {
    errLine = 0;
    mark.classList.remove('on');
    ta.removeAttribute('aria-invalid');
    el.dataset.errorLine = '';
    renderGutter();
  }

  /** showError(err): shows err's message; marks its line when it has one. */
  function showError(err) {
    errBox.replaceChildren();
    clearMark();
    if (!err) return;
    const line = err.line || 0;
    const col = err.column || 0;
    // the API's message often names the place itself ("... at line 3, column 29: ...")
    const where = line && !/\bline \d+/i.test(err.message) ? `Line ${line}${col ? `, column ${col}` : ''}: ` : '';
    errBox.append(h('p', null, h('strong', null, where), err.message));
    if (err.detail) errBox.append(h('p', null, err.detail));
    if (err.code) errBox.append(h('p', { class: 'small' }, 'Code: ', h('code', null, err.code)));
    if (line) {
      errLine = Math.min(line, ta.value.split('\n').length);
      el.dataset.errorLine = String(errLine);
      ta.setAttribute('aria-invalid', 'true');
      mark.classList.add('on');
      renderGutter();
      errBox.append(h('button', { type: 'button', class: 'small', on: { click: () => focusLine(errLine, col || 1) } },
        `Go to line ${errLine}`));
      focusLine(errLine, col || 1);
    }
  }

  renderGutter();
  return {
    el,
    textarea: ta,
    value: () => ta.value,
    setValue(text) { ta.value = text; clearMark(); renderGutter(); },
    showError,
    focusLine,
  };
}

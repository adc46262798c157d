// The code editor: CodeMirror 6 (bundled from the pinned @codemirror/*
// packages into /vendor/codemirror.js by `npm ci`, see
// scripts/vendor/codemirror-entry.mjs), with Python highlighting, line
// numbers that are part of the editor's own scrolling, bracket matching,
// undo history and an error marker: the line the API names in a syntax or
// contract error gets a red line number, a tinted line and a lint
// diagnostic, and the caret moves there. Editing removes the marker.
//
// Keys: Tab indents and Shift+Tab dedents (CodeMirror's indentWithTab); Esc
// releases the Tab key so keyboard users can leave the editor, as
// CodeMirror documents for its tab handling.
import { h, nextId } from './dom.js';
import {
  EditorState, EditorView, StateField, StateEffect, RangeSet, GutterMarker, Decoration,
  lineNumberMarkers, keymap, lineNumbers, highlightActiveLine, highlightActiveLineGutter,
  drawSelection, highlightSpecialChars, defaultKeymap, history, historyKeymap, indentWithTab,
  syntaxHighlighting, defaultHighlightStyle, indentOnInput, bracketMatching, indentUnit, python,
  setDiagnostics, lintGutter,
} from '/vendor/codemirror.js';

/** The red line number of the error line. */
class ErrorNumber extends GutterMarker {
  get elementClass() { return 'cm-error-number'; }
}
const errorNumber = new ErrorNumber();
const errorLineDeco = Decoration.line({ class: 'cm-error-line' });

/** setErrorLine: effect carrying the 1-based line to mark (0: none). */
const setErrorLine = StateEffect.define();

/** errorLineField: the marked line (0: none); any edit clears it. */
const errorLineField = StateField.define({
  create: () => 0,
  update(line, tr) {
    for (const e of tr.effects) if (e.is(setErrorLine)) return e.value;
    return tr.docChanged ? 0 : line;
  },
});

/** Line decoration and gutter marker positions follow the marked line. */
const errorMarks = EditorView.decorations.compute([errorLineField, 'doc'], (state) => {
  const line = state.field(errorLineField);
  if (!line || line > state.doc.lines) return Decoration.none;
  return Decoration.set([errorLineDeco.range(state.doc.line(line).from)]);
});
const errorNumbers = lineNumberMarkers.compute([errorLineField, 'doc'], (state) => {
  const line = state.field(errorLineField);
  if (!line || line > state.doc.lines) return RangeSet.empty;
  return RangeSet.of([errorNumber.range(state.doc.line(line).from)]);
});

/**
 * editor({label, value, hint, name}) -> {el, view, value(), setValue(text),
 * onInput(fn), focus(), showError(err|null), focusLine(line, col)}
 * showError accepts an ApiError (reads .line/.column/.message/.code).
 */
export function editor(opts = {}) {
  const id = nextId('code');
  const labelId = `${id}-label`;
  const hintId = `${id}-hint`;
  const errId = `${id}-err`;
  const inputs = new Set();
  const errBox = h('div', { class: 'code-error', id: errId, role: 'alert' });
  const frame = h('div', { class: 'editor-frame' });
  const el = h('div', { class: 'editor' },
    h('label', { id: labelId, for: id }, opts.label || 'Code'),
    frame,
    h('p', { class: 'hint', id: hintId }, opts.hint ||
      'Tab indents, Shift+Tab dedents. To move on with the keyboard, press Esc and then Tab.'),
    errBox);

  const view = new EditorView({
    parent: frame,
    state: EditorState.create({
      doc: opts.value || '',
      extensions: [
        lineNumbers(), highlightActiveLineGutter(), highlightSpecialChars(), history(), drawSelection(),
        indentOnInput(), bracketMatching(), highlightActiveLine(), indentUnit.of('    '),
        syntaxHighlighting(defaultHighlightStyle, { fallback: true }), python(), lintGutter(),
        errorLineField, errorMarks, errorNumbers,
        keymap.of([...defaultKeymap, ...historyKeymap, indentWithTab]),
        EditorView.contentAttributes.of({
          id, 'aria-labelledby': labelId, 'aria-describedby': `${hintId} ${errId}`,
          'aria-multiline': 'true', spellcheck: 'false', autocapitalize: 'off', autocorrect: 'off',
          'data-name': opts.name || 'code',
          // An explicit tab stop: axe (scrollable-region-focusable) does not
          // count a bare contenteditable as the focusable content of the
          // scroller around it; the editor stays one stop in the tab order.
          tabindex: '0',
        }),
        EditorView.updateListener.of((u) => {
          if (!u.docChanged) return;
          if (el.dataset.errorLine) clearMark();
          for (const fn of inputs) fn();
        }),
      ],
    }),
  });

  function clearMark() {
    el.dataset.errorLine = '';
    view.contentDOM.removeAttribute('aria-invalid');
    view.dispatch({ effects: setErrorLine.of(0) });
    view.dispatch(setDiagnostics(view.state, []));
  }

  /** focusLine(line, col): caret to the 1-based line and column, scrolled into view. */
  function focusLine(line, col = 1) {
    const doc = view.state.doc;
    const l = doc.line(Math.min(Math.max(line, 1), doc.lines));
    const pos = l.from + Math.min(Math.max(col - 1, 0), l.length);
    view.dispatch({ selection: { anchor: pos }, effects: EditorView.scrollIntoView(pos, { y: 'center' }) });
    view.focus();
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
    if (!line) return;
    const errLine = Math.min(line, view.state.doc.lines);
    const l = view.state.doc.line(errLine);
    el.dataset.errorLine = String(errLine);
    view.contentDOM.setAttribute('aria-invalid', 'true');
    view.dispatch({ effects: setErrorLine.of(errLine) });
    view.dispatch(setDiagnostics(view.state, [{
      from: l.from, to: Math.max(l.from, l.to), severity: 'error', message: err.message, source: err.code || undefined,
    }]));
    errBox.append(h('button', { type: 'button', class: 'small', on: { click: () => focusLine(errLine, col || 1) } },
      `Go to line ${errLine}`));
    focusLine(errLine, col || 1);
  }

  const api = {
    el,
    view,
    value: () => view.state.doc.toString(),
    setValue(text) {
      view.dispatch({ changes: { from: 0, to: view.state.doc.length, insert: text } });
      clearMark();
    },
    onInput(fn) { inputs.add(fn); },
    focus() { view.focus(); },
    showError,
    focusLine,
  };
  el.codeEditor = api; // for the browser tests: the document and selection without the DOM
  return api;
}

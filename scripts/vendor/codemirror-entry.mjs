// Entry point of the dashboard's CodeMirror 6 bundle. `npm ci` (its
// postinstall "vendor" step) bundles this file and the pinned @codemirror/*
// packages it imports with esbuild into static/vendor/codemirror.js, one ES
// module served from our own origin: the browser needs no internet and no
// import map. static/js/editor.js is the only importer; it gets exactly the
// names re-exported here.
export { EditorState, Compartment, StateField, StateEffect, RangeSet } from '@codemirror/state';
export {
  EditorView, keymap, lineNumbers, highlightActiveLine, highlightActiveLineGutter,
  drawSelection, highlightSpecialChars, GutterMarker, Decoration, lineNumberMarkers,
} from '@codemirror/view';
export { defaultKeymap, history, historyKeymap, indentWithTab } from '@codemirror/commands';
export {
  syntaxHighlighting, defaultHighlightStyle, indentOnInput, bracketMatching, indentUnit,
} from '@codemirror/language';
export { python } from '@codemirror/lang-python';
export { linter, setDiagnostics, lintGutter, forceLinting } from '@codemirror/lint';

// Bundles the dashboard's CodeMirror 6 (scripts/vendor/codemirror-entry.mjs
// and the pinned @codemirror/* packages) into static/vendor/codemirror.js
// with esbuild; run by `npm ci` (package.json's "vendor" step).
//
// One patch: CodeMirror's style-mod injects its CSS into a document through
// a <style> element, which our Content-Security-Policy (style-src 'self', no
// 'unsafe-inline', no per-request nonce from a static server) refuses. Every
// browser the dashboard supports has constructable stylesheets on the
// document too, so the bundle uses document.adoptedStyleSheets, which the
// CSP allows. The build fails if style-mod's code no longer has the line it
// patches, rather than shipping an unstyled editor.
import { build } from 'esbuild';
import { readFile } from 'node:fs/promises';

const NEEDLE = 'if (!root.head && root.adoptedStyleSheets && win.CSSStyleSheet) {';

const adoptOnDocument = {
  name: 'style-mod-adopt-on-document',
  setup(b) {
    b.onLoad({ filter: /style-mod[\\/]src[\\/]style-mod\.js$/ }, async (args) => {
      const src = await readFile(args.path, 'utf8');
      if (!src.includes(NEEDLE)) throw new Error(`style-mod changed: "${NEEDLE}" not found in ${args.path}`);
      return { contents: src.replace(NEEDLE, 'if (root.adoptedStyleSheets && win.CSSStyleSheet) {'), loader: 'js' };
    });
  },
};

await build({
  entryPoints: ['scripts/vendor/codemirror-entry.mjs'],
  bundle: true,
  format: 'esm',
  minify: true,
  target: 'es2020',
  legalComments: 'none',
  logLevel: 'warning',
  outfile: 'static/vendor/codemirror.js',
  plugins: [adoptOnDocument],
});

// Pure helpers of the Agents pages (no DOM): a line diff of two iterations'
// code, the field a create error names, and reading an iteration's figures.
// Kept free of the DOM so node's test runner could check them directly.

/**
 * lineDiff(a, b) -> [{op: ' '|'-'|'+', text}] turning text a into text b,
 * or null when the two differ in too many lines to diff here (the common
 * prefix and suffix are cut first; the rest is a longest-common-subsequence
 * table of at most 4 million cells, a few MB, so a huge file never hangs
 * the tab).
 */
export function lineDiff(a, b) {
  const x = String(a).split('\n');
  const y = String(b).split('\n');
  let pre = 0;
  while (pre < x.length && pre < y.length && x[pre] === y[pre]) pre += 1;
  let suf = 0;
  while (suf < x.length - pre && suf < y.length - pre && x[x.length - 1 - suf] === y[y.length - 1 - suf]) suf += 1;
  const xs = x.slice(pre, x.length - suf);
  const ys = y.slice(pre, y.length - suf);
  const n = xs.length; const m = ys.length;
  if ((n + 1) * (m + 1) > 4e6) return null;
  // L[i][j]: LCS length of xs[i..] and ys[j..], row-major in one array
  const w = m + 1;
  const L = new Uint32Array((n + 1) * w);
  for (let i = n - 1; i >= 0; i -= 1) {
    for (let j = m - 1; j >= 0; j -= 1) {
      L[i * w + j] = xs[i] === ys[j] ? L[(i + 1) * w + j + 1] + 1 : Math.max(L[(i + 1) * w + j], L[i * w + j + 1]);
    }
  }
  const out = x.slice(0, pre).map((t) => ({ op: ' ', text: t }));
  let i = 0; let j = 0;
  while (i < n && j < m) {
    if (xs[i] === ys[j]) { out.push({ op: ' ', text: xs[i] }); i += 1; j += 1; }
    else if (L[(i + 1) * w + j] >= L[i * w + j + 1]) { out.push({ op: '-', text: xs[i] }); i += 1; }
    else { out.push({ op: '+', text: ys[j] }); j += 1; }
  }
  while (i < n) { out.push({ op: '-', text: xs[i] }); i += 1; }
  while (j < m) { out.push({ op: '+', text: ys[j] }); j += 1; }
  for (const t of x.slice(x.length - suf)) out.push({ op: ' ', text: t });
  return out;
}

/** The create form's fields, as the API's messages name them. */
export const CREATE_FIELDS = ['challenge', 'goal', 'driver', 'model', 'min_iterations', 'max_iterations',
  'days_back', 'wall_s', 'tokens', 'usd', 'requests', 'dataset_version', 'best_by', 'seed'];

/**
 * errorField(message) -> the create field a 400 message is about, or ''.
 * The API says "field 'max_iterations' must be ...", "unknown challenge
 * 'X'", "driver: ...", "model must be ...", "min_iterations (7) exceeds
 * max_iterations (3)" (the first name is the one to fix).
 */
export function errorField(message) {
  const s = String(message || '');
  const q = /field '([a-z_]+)'/.exec(s);
  if (q && CREATE_FIELDS.includes(q[1])) return q[1];
  if (/^unknown challenge/.test(s)) return 'challenge';
  const lead = /^([a-z_]+)\b/.exec(s);
  if (lead && CREATE_FIELDS.includes(lead[1])) return lead[1];
  return '';
}

/** iterTokens(it) -> the tokens an iteration spent (all kinds), or null. */
export function iterTokens(it) {
  const t = it && it.tokens;
  if (!t || typeof t !== 'object') return null;
  if (Number.isFinite(t.total)) return t.total;
  const parts = ['input', 'output', 'cache_write', 'cache_read'].map((k) => Number(t[k]) || 0);
  return parts.reduce((a, b) => a + b, 0);
}

/** iterCost(it) -> the iteration's USD cost, or null. */
export function iterCost(it) {
  const t = it && it.tokens;
  return t && Number.isFinite(Number(t.cost)) ? Number(t.cost) : null;
}

/** usd(v) -> "$0.0123" (four decimals below a dollar, two above and for nothing spent: "$0.00"), or '—'. */
export function usd(v) {
  const n = Number(v);
  if (v === null || v === undefined || !Number.isFinite(n)) return '—';
  // an LLM turn costs fractions of a cent, so four decimals below a dollar
  return `$${n.toFixed(n !== 0 && Math.abs(n) < 1 ? 4 : 2)}`;
}

/** devMetric(it, primary) -> the dev-walk-forward value the agent saw. */
export function devMetric(it, primary) {
  const m = (it && it.metrics) || {};
  if (Number.isFinite(Number(m[primary])) && m[primary] !== null) return Number(m[primary]);
  return it && Number.isFinite(Number(it.score)) && it.score !== null ? Number(it.score) : null;
}

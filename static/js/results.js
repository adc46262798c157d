// Pure helpers that read results from the API (equity curves, walk-forward
// windows): no DOM, no fetching, so node's test runner checks them directly
// (tests/browser/units.test.mjs).
import { pick } from './pick.js';

/** parseEquity(data) -> {x: number[], equity: number[], time: bool}. Accepts
 * the JSON shapes {timestamps|t|ts, equity|values} or [{t|ts|timestamp, equity}],
 * [[t, e]], a bare number array, or CSV text with a header row. */
export function parseEquity(data) {
  let ts = null;
  let eq = null;
  if (typeof data === 'string') {
    const lines = data.trim().split(/\r?\n/);
    const head = lines.shift().split(',').map((s) => s.trim().toLowerCase());
    let ei = head.findIndex((c) => c === 'equity' || c === 'value');
    if (ei < 0) ei = head.length - 1;
    const ti = head.findIndex((c) => ['ts', 't', 'timestamp', 'time', 'timestamp_ms'].includes(c));
    eq = [];
    ts = ti >= 0 ? [] : null;
    for (const l of lines) {
      const c = l.split(',');
      eq.push(Number(c[ei]));
      if (ts) ts.push(/^-?\d+(\.\d+)?$/.test(c[ti].trim()) ? Number(c[ti]) : Date.parse(c[ti]));
    }
  } else if (Array.isArray(data)) {
    if (data.length && typeof data[0] === 'number') eq = data;
    else if (data.length && Array.isArray(data[0])) { ts = data.map((r) => r[0]); eq = data.map((r) => r[1]); } else {
      eq = data.map((r) => pick(r, 'equity', 'value', 'e'));
      const t0 = data.length ? pick(data[0], 'ts', 't', 'timestamp', 'time') : undefined;
      if (t0 !== undefined) ts = data.map((r) => pick(r, 'ts', 't', 'timestamp', 'time'));
    }
  } else if (data && typeof data === 'object') {
    eq = pick(data, 'equity', 'values');
    ts = pick(data, 'timestamps', 'ts', 't', 'time') || null;
  }
  eq = (eq || []).map((v) => (v === null ? null : Number(v)));
  if (ts && ts.length === eq.length && ts.every((t) => Number.isFinite(t))) {
    // epoch ms (or s) -> seconds for uPlot's time scale
    const ms = ts.length && Math.abs(ts[0]) > 1e11;
    return { x: ts.map((t) => (ms ? t / 1000 : t)), equity: eq, time: true };
  }
  return { x: eq.map((_, i) => i), equity: eq, time: false };
}

/** windowKey(primary, windows): the per-window field of the headline metric. */
export function windowKey(primary, windows) {
  const w = windows.find((x) => x && typeof x === 'object') || {};
  const tries = [primary, primary && primary.replace(/^mean_/, ''), 'auc', 'direct_log_loss', 'balanced_accuracy', 'mean_spearman', 'spearman'];
  for (const k of tries) if (k && k in w) return k;
  return Object.keys(w).find((k) => !['start', 'end', 'in_holdout', 'n_timesteps'].includes(k) && !k.startsWith('n_') && typeof w[k] === 'number') || null;
}

/** verdict(value, baseline, direction) -> 'better' | 'worse' | 'equal' | null. */
export function verdict(v, b, dir) {
  if (!Number.isFinite(v) || !Number.isFinite(b)) return null;
  if (v === b) return 'equal';
  return (dir === 'lower' ? v < b : v > b) ? 'better' : 'worse';
}

const MINUTE_MS = 60000;

/** challengeAssets(ch) -> the assets a challenge streams (its list, else its one asset). */
export function challengeAssets(ch) {
  if (ch && Array.isArray(ch.assets) && ch.assets.length) return ch.assets.map(String);
  return ch && ch.asset ? [String(ch.asset)] : [];
}

/** datasetDays(d) -> the days a registered dataset spans (bars × interval), or 0. */
export function datasetDays(d) {
  const bars = Number(d && d.bars); const ms = Number(d && d.interval_ms);
  return bars > 0 && ms > 0 ? (bars * ms) / 86400000 : 0;
}

/**
 * datasetFit(d, ch) -> null when dataset d (a row of GET /datasets) can
 * serve challenge ch, else the reason it cannot: challenges score
 * 1-minute bars, of every asset they stream, over at least a day.
 */
export function datasetFit(d, ch) {
  if (Number(d.interval_ms) !== MINUTE_MS) return 'not 1-minute bars';
  const have = new Set(Array.isArray(d.assets) ? d.assets.map(String) : []);
  const missing = challengeAssets(ch).filter((a) => !have.has(a));
  if (missing.length) return `no ${missing.slice(0, 3).join(', ')}${missing.length > 3 ? ', …' : ''}`;
  if (datasetDays(d) < 1) return 'less than a day of bars';
  return null;
}

/**
 * historyUsed(ev) -> {bars, days} an evaluation actually streamed (its
 * result's dev_length plus eval_holdout_minutes, 1-minute bars), or null
 * before there is a result.
 */
export function historyUsed(ev) {
  const r = ev && ev.result;
  if (!r || !Number.isFinite(Number(r.dev_length))) return null;
  const bars = Number(r.dev_length) + (Number(r.eval_holdout_minutes) || 0);
  return { bars, days: bars / 1440 };
}

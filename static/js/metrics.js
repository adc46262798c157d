// What the evaluator's metrics mean to a reader: a name, the unit they are
// read in and the formula (docs/metrics.md), plus formatting at a precision
// a quant reads (returns and drawdowns in percent, ratios to two decimals,
// counts as integers, runtimes in ms/s). Pure functions returning strings;
// no DOM, so node's test runner checks them (tests/browser/units.test.mjs).
import { secs, fixed } from './format.js';

// kind: pct (a fraction shown as a percentage), ratio (dimensionless, two
// decimals), score (the leaderboard score, four decimals), count, times
// (multiples of equity), secs (a duration).
const S_NOTE = 'S is the dataset\'s bars per year (365 days / bar interval), N the number of bars − 1.';
export const METRICS = {
  score: { name: 'Score', kind: 'score', formula: 'CAGR − 0.7 × |max drawdown| (both as fractions; higher is better).' },
  total_return: { name: 'Total return', kind: 'pct', formula: 'E[last] / E[first] − 1, over the equity curve E.' },
  cagr: { name: 'CAGR', kind: 'pct', annual: true, formula: `Compound annual growth rate: (E[last] / E[first])^(S / N) − 1. ${S_NOTE}` },
  max_drawdown: { name: 'Max drawdown', kind: 'pct', formula: 'The deepest fall from a running peak: min over t of E[t] / max(E[0..t]) − 1.' },
  volatility: { name: 'Volatility (annualised)', kind: 'pct', annual: true, formula: `Population standard deviation of the bar returns × √S. ${S_NOTE}` },
  sharpe: { name: 'Sharpe ratio', kind: 'ratio', annual: true, formula: 'Mean bar return × S / volatility; risk-free rate 0; 0 when the volatility is 0.' },
  sortino: { name: 'Sortino ratio', kind: 'ratio', annual: true, formula: 'Annualised mean return / downside deviation; empty when no bar lost.' },
  calmar: { name: 'Calmar ratio', kind: 'ratio', annual: true, formula: 'CAGR / |max drawdown|; empty without a drawdown.' },
  annualized_return: { name: 'Mean return (annualised)', kind: 'pct', annual: true, formula: 'Arithmetic mean of the bar returns × S (the Sharpe numerator).' },
  downside_deviation: { name: 'Downside deviation (annualised)', kind: 'pct', annual: true, formula: '√(mean(min(r, 0)²)) × √S over all bar returns r.' },
  hit_rate: { name: 'Hit rate', kind: 'pct', formula: 'Winning bars / bars with a non-zero return.' },
  n_bars: { name: 'Bars', kind: 'count', formula: 'Length of the equity curve.' },
  turnover: { name: 'Turnover', kind: 'times', formula: 'Σ |w[t] − w[t−1]| over executed trades, in units of equity (2.0 is one full round trip).' },
  average_exposure: { name: 'Average exposure', kind: 'pct', formula: 'Mean |w| over the held bars, w the target exposure.' },
  fees_paid: { name: 'Fees paid', kind: 'pct', formula: 'Σ fee × |Δw| × equity before the trade, as a share of the initial capital.' },
  liquidation_events: { name: 'Liquidations', kind: 'count', formula: '1 if the account was wiped out (equity 0 from then on), else 0.' },
  capital_efficiency: { name: 'Capital efficiency', kind: 'ratio', formula: 'Total return / average exposure: return per unit of capital deployed.' },
  runtime_s: { name: 'Runtime', kind: 'secs', formula: 'Wall-clock time of the run in the runner (loading, the strategy, the metrics).' },
};

/** metricName(key) -> the reader's name of a metric ("cagr" -> "CAGR"). */
export function metricName(key) {
  const m = METRICS[key];
  if (m) return m.name;
  const s = String(key).replace(/_/g, ' ');
  return s.charAt(0).toUpperCase() + s.slice(1);
}

/** metricFormula(key) -> the formula text of a known metric, or ''. */
export function metricFormula(key) {
  return METRICS[key] ? METRICS[key].formula : '';
}

/** isAnnualised(key) -> true for metrics scaled to a year. */
export function isAnnualised(key) {
  return Boolean(METRICS[key] && METRICS[key].annual);
}

/**
 * percent(v) -> "−88.77 %": two decimals, up to four where two would round
 * a value that is not ±100 % to ±100.00 % (a CAGR of −0.999998 reads
 * "−99.9998 %", not "−100.00 %"); closer still, "≈ −100 %"; thousands
 * separated above 1,000 %.
 */
export function percent(v) {
  const n = Number(v) * 100;
  let d = 2;
  while (d < 4 && Math.abs(n) !== 100 && Math.abs(Number(n.toFixed(d))) === 100) d += 1;
  if (Math.abs(n) !== 100 && Math.abs(Number(n.toFixed(d))) === 100) return `≈ ${n < 0 ? '−' : ''}100 %`;
  const s = Math.abs(n).toLocaleString('en-US', { minimumFractionDigits: d, maximumFractionDigits: d });
  return `${n < 0 && Number(n.toFixed(d)) !== 0 ? '−' : ''}${s} %`;
}

/**
 * metricValue(key, v) -> the value as a reader expects it; '—' for null
 * (undefined for this run), the raw text for anything not a finite number.
 */
export function metricValue(key, v) {
  if (v === null || v === undefined || v === '') return '—';
  const n = Number(v);
  if (typeof v === 'object' || !Number.isFinite(n)) return typeof v === 'object' ? JSON.stringify(v) : String(v);
  const kind = METRICS[key] ? METRICS[key].kind : 'other';
  switch (kind) {
    case 'pct': return percent(n);
    case 'ratio': return fixed(n, 2);
    case 'score': return fixed(n, 4);
    case 'count': return Math.round(n).toLocaleString('en-US');
    case 'times': return `${fixed(n, 2)} ×`;
    case 'secs': return secs(n);
    default: return Number.isInteger(n) ? n.toLocaleString('en-US') : fixed(n, 4);
  }
}

/**
 * historyYears(nBars, intervalMs) -> the span of an equity curve of nBars
 * bars in years (365 days), or null when either is unknown.
 */
export function historyYears(nBars, intervalMs) {
  const n = Number(nBars); const ms = Number(intervalMs);
  if (!(n > 1) || !(ms > 0)) return null;
  return ((n - 1) * ms) / (365 * 86400000);
}

/**
 * metricDelta(key, v, base) -> v − base for a reader: percentage points for
 * percentages ("+1.23 pp"), the metric's own unit otherwise; '—' when either
 * is missing.
 */
export function metricDelta(key, v, base) {
  if (v === null || v === undefined || base === null || base === undefined) return '—';
  const d = Number(v) - Number(base);
  if (!Number.isFinite(d)) return '—';
  const kind = METRICS[key] ? METRICS[key].kind : 'other';
  const sign = d > 0 ? '+' : '';
  switch (kind) {
    case 'pct': return `${sign}${fixed(d * 100, 2)} pp`;
    case 'ratio': return `${sign}${fixed(d, 2)}`;
    case 'count': return `${sign}${Math.round(d).toLocaleString('en-US')}`;
    case 'times': return `${sign}${fixed(d, 2)} ×`;
    case 'secs': return `${d < 0 ? '−' : sign}${secs(Math.abs(d))}`;
    default: return `${sign}${fixed(d, 4)}`;
  }
}

// The dashboard's pure modules under node's test runner (no browser, no
// stack): API error parsing, query strings, list envelopes, formatting,
// drawdown, equity parsing in every shape the API may send, walk-forward
// window keys, baseline verdicts, and the starting code of the editors.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ApiError, qs, rows } from '../../static/js/api.js';
import { num, pct, secs, bytes, toDate, label, isActive } from '../../static/js/format.js';
import { drawdown } from '../../static/js/chart.js';
import { parseEquity, windowKey, verdict } from '../../static/js/results.js';
import { signalTemplate, STRATEGY_TEMPLATES } from '../../static/js/templates.js';
import { pick } from '../../static/js/pick.js';

test('ApiError reads the API error body, line and column', () => {
  const e = new ApiError(400, { error: "syntax error at line 3, column 29: expected ':'", code: 'invalid_field', detail: "syntax error at line 3, column 29: expected ':'", line: 3, column: 29 }, '/strategies/submit');
  assert.equal(e.status, 400);
  assert.equal(e.code, 'invalid_field');
  assert.equal(e.detail, '', 'a detail equal to the message is not repeated');
  assert.equal(e.line, 3);
  assert.equal(e.column, 29);
  // without fields, the place is read from the message
  const m = new ApiError(400, { error: 'bad', detail: 'invalid syntax (line 7, column 2)' });
  assert.equal(m.line, 7);
  assert.equal(m.column, 2);
  // no place at all
  assert.equal(new ApiError(400, { error: 'code must contain simulate' }).line, 0);
  // network failure and bodies that are not ours
  const n = new ApiError(0, null, '/x');
  assert.equal(n.code, 'network');
  assert.match(n.message, /could not be reached/);
  assert.equal(new ApiError(502, null).code, 'http_502');
});

test('qs skips empty values and encodes the rest', () => {
  assert.equal(qs({}), '');
  assert.equal(qs({ a: '', b: null, c: undefined }), '');
  assert.equal(qs({ status: 'failed', limit: 50 }), '?status=failed&limit=50');
  assert.equal(qs({ dataset_version: 'a b&c' }), '?dataset_version=a+b%26c');
});

test('rows finds the list in any envelope', () => {
  assert.deepEqual(rows([1, 2]), [1, 2]);
  assert.deepEqual(rows({ runs: [1], next_cursor: null }, 'runs'), [1]);
  assert.deepEqual(rows({ entries: [3] }, 'entries'), [3]);
  assert.deepEqual(rows({ items: [4] }), [4]);
  assert.deepEqual(rows(null), []);
  assert.deepEqual(rows('text'), []);
});

test('pick takes the first present key', () => {
  assert.equal(pick({ a: null, b: 0 }, 'a', 'b'), 0);
  assert.equal(pick({}, 'a'), undefined);
  assert.equal(pick(null, 'a'), undefined);
});

test('numbers, percentages, durations and sizes for people', () => {
  assert.equal(num(null), '—');
  assert.equal(num(86400), '86,400');
  assert.equal(num(0.123456789), '0.1235');
  assert.equal(num(1.5e-7), '1.500e-7');
  assert.equal(num('NaN'), 'NaN');
  assert.equal(pct(0.04), '4.00 %');
  assert.equal(secs(0.0421), '42 ms');
  assert.equal(secs(4.226), '4.23 s');
  assert.equal(secs(185), '3 min 5 s');
  assert.equal(bytes(1536), '1.5 KiB');
  assert.equal(bytes(512), '512 B');
  assert.equal(label('max_drawdown'), 'Max drawdown');
  assert.ok(isActive('queued') && isActive('running') && !isActive('failed'));
});

test('timestamps in the shapes the API uses', () => {
  assert.equal(toDate('2026-11-29T22:39:08.123000Z').toISOString(), '2026-11-29T22:39:08.123Z');
  assert.equal(toDate('2026-11-29 22:39:08.123').toISOString(), '2026-11-29T22:39:08.123Z', 'MariaDB text is UTC');
  assert.equal(toDate(1796000000).getTime(), 1796000000000, 'seconds');
  assert.equal(toDate(1796000000000).getTime(), 1796000000000, 'milliseconds');
  assert.equal(toDate(''), null);
  assert.equal(toDate('not a date'), null);
});

test('drawdown from the running peak', () => {
  assert.deepEqual(drawdown([1, 1.2, 0.9, 1.1]).map((v) => Number(v.toFixed(6))), [0, 0, -0.25, -0.083333]);
  assert.deepEqual(drawdown([1, null, 2]), [0, null, 0]);
  assert.deepEqual(drawdown([]), []);
});

test('equity curves in every shape', () => {
  // the API's JSON: {run_id, equity: [...]}
  let e = parseEquity({ run_id: 'x', equity: [1, 1.1, 1.2] });
  assert.deepEqual(e, { x: [0, 1, 2], equity: [1, 1.1, 1.2], time: false });
  // the API's CSV
  e = parseEquity('step,equity\n0,1.0\n1,1.5\n2,0.5\n');
  assert.deepEqual(e.equity, [1, 1.5, 0.5]);
  assert.equal(e.time, false);
  // with timestamps (ms -> s for the time axis)
  e = parseEquity({ timestamps: [1796000000000, 1796000060000], equity: [1, 2] });
  assert.deepEqual(e, { x: [1796000000, 1796000060], equity: [1, 2], time: true });
  e = parseEquity('ts,equity\n1796000000000,1\n1796000060000,2\n');
  assert.equal(e.time, true);
  // rows and pairs
  assert.deepEqual(parseEquity([{ t: 1, equity: 1 }, { t: 2, equity: 3 }]).equity, [1, 3]);
  assert.deepEqual(parseEquity([[1, 1], [2, 4]]).equity, [1, 4]);
  assert.deepEqual(parseEquity([1, 2, 3]).x, [0, 1, 2]);
  // nulls stay gaps
  assert.deepEqual(parseEquity({ equity: [1, null, 2] }).equity, [1, null, 2]);
  assert.deepEqual(parseEquity(null).equity, []);
});

test('the per-window field of each challenge metric', () => {
  assert.equal(windowKey('mean_auc', [{ start: 0, end: 1, auc: 0.5, in_holdout: false }]), 'auc');
  assert.equal(windowKey('direct_log_loss', [{ start: 0, end: 1, up_auc: 0.5, dn_auc: 0.5, direct_log_loss: 1 }]), 'direct_log_loss');
  assert.equal(windowKey('mean_balanced_accuracy', [{ start: 0, balanced_accuracy: 0.2, lift_over_random: 1 }]), 'balanced_accuracy');
  assert.equal(windowKey('mean_spearman', [{ start: 0, end: 1, mean_spearman: 0.1, n_timesteps: 10 }]), 'mean_spearman');
  assert.equal(windowKey('unknown', [{ start: 0, end: 1, n_samples: 5, foo: 0.3 }]), 'foo');
  assert.equal(windowKey('x', []), null);
});

test('headline against the baseline, in the metric direction', () => {
  assert.equal(verdict(0.53, 0.5, 'higher'), 'better');
  assert.equal(verdict(0.47, 0.5, 'higher'), 'worse');
  assert.equal(verdict(1.05, Math.log(3), 'lower'), 'better');
  assert.equal(verdict(1.2, Math.log(3), 'lower'), 'worse');
  assert.equal(verdict(0.5, 0.5, 'higher'), 'equal');
  assert.equal(verdict(NaN, 0.5, 'higher'), null);
});

test('starting code: the contract functions and the right embedding sizes', () => {
  assert.match(STRATEGY_TEMPLATES.simulate, /^def simulate\(prices, params\):/m);
  assert.match(STRATEGY_TEMPLATES.positions, /^def positions\(prices, params\):/m);
  for (const [type, dim] of [['binary', 2], ['hitfirst', 3], ['lbfgs', 17], ['breakout', 58], ['xsec_rank', 29]]) {
    const code = signalTemplate({ name: 'X', type, asset: 'BTC' });
    assert.match(code, /class TechFeaturizer\(Featurizer\)/);
    assert.match(code, /class TechPredictor\(Predictor\)/);
    assert.match(code, new RegExp(`\\(${dim} numbers\\)`), `${type}: ${dim} numbers`);
    assert.match(code, /view\.prices\("BTC"\)/);
  }
  assert.match(signalTemplate({ name: 'Y', type: 'xsec_rank', embedding_dim: 20 }), /np\.full\(20,/);
});

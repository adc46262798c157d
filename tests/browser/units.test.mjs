// The dashboard's pure modules under node's test runner (no browser, no
// stack): API error parsing, query strings, list envelopes, formatting,
// drawdown, equity parsing in every shape the API may send, walk-forward
// window keys, baseline verdicts, and the starting code of the editors.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ApiError, qs, rows } from '../../static/js/api.js';
import { num, pct, secs, bytes, toDate, label, isActive, fixed, tickLabels, timeTicks, isoMinute } from '../../static/js/format.js';
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
  // a column of one measure keeps its decimals; an axis writes its ticks alike
  assert.deepEqual([fixed(0.55826, 4), fixed(0.63, 4), fixed(null, 4)], ['0.5583', '0.6300', '—']);
  assert.deepEqual(tickLabels([0.56, 0.565, 0.5700000000000001, 0.575]), ['0.560', '0.565', '0.570', '0.575']);
  assert.deepEqual(tickLabels([0.4, 0.6, 0.8, 1]), ['0.4', '0.6', '0.8', '1.0']);
  assert.deepEqual(tickLabels([-2000, 0, 2000]), ['-2,000', '0', '2,000']);
});

test('timestamps in the shapes the API uses', () => {
  assert.equal(toDate('2026-11-29T22:39:08.123000Z').toISOString(), '2026-11-29T22:39:08.123Z');
  assert.equal(toDate('2026-11-29 22:39:08.123').toISOString(), '2026-11-29T22:39:08.123Z', 'MariaDB text is UTC');
  assert.equal(toDate(1796000000).getTime(), 1796000000000, 'seconds');
  assert.equal(toDate(1796000000000).getTime(), 1796000000000, 'milliseconds');
  assert.equal(toDate(''), null);
  assert.equal(toDate('not a date'), null);
});

test('dated axes and legends in ISO, UTC: yyyy-mm-dd, HH:MM for intraday ranges', () => {
  const day = Date.UTC(2026, 0, 30) / 1000;   // 2026-01-30 00:00 UTC
  assert.equal(isoMinute(day + 9 * 3600 + 5 * 60 + 59), '2026-01-30 09:05');
  assert.equal(isoMinute(null), '—');
  // ticks at midnight (a range of days or months): dates only
  assert.deepEqual(timeTicks([day, day + 86400, day + 3 * 86400]), ['2026-01-30', '2026-01-31', '2026-02-02']);
  // intraday: hours and minutes, the date with the first tick and where the day changes
  assert.deepEqual(timeTicks([day + 18 * 3600, day + 21 * 3600, day + 24 * 3600, day + 27 * 3600 + 30 * 60]),
    ['2026-01-30\n18:00', '21:00', '2026-01-31\n00:00', '03:30']);
  assert.deepEqual(timeTicks([null, day + 60]), ['', '2026-01-30\n00:01']);
  // never uPlot's m/d style
  assert.ok(timeTicks([day, day + 43200]).every((l) => !/\d{1,2}\/\d{1,2}/.test(l)));
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
    // single-asset challenges read their own asset; the cross-sectional
    // ones use ETH's planted effect and list the challenge's assets
    if (['binary', 'hitfirst', 'lbfgs'].includes(type)) assert.match(code, /view\.prices\("BTC"\)/);
    else assert.match(code, /view\.prices\("ETH"\)/);
  }
  const xs = signalTemplate({ name: 'Y', type: 'xsec_rank', embedding_dim: 3, assets: ['BTC', 'ETH', 'SOL'] });
  assert.match(xs, /^ASSETS = \["BTC","ETH","SOL"\]$/m);
  assert.match(xs, /np\.zeros\(len\(ASSETS\)\)/, 'one score per asset');
  assert.match(signalTemplate({ name: 'Z', type: 'lbfgs', asset: 'BTC', horizon: 360 }), /h = 360 /, 'the horizon is the challenge\'s');
});

test('metrics read as a quant reads them: percentages, ratios, names, formulas', async () => {
  const { metricValue, metricName, metricFormula, percent, historyYears, isAnnualised } = await import('../../static/js/metrics.js');
  assert.equal(metricValue('total_return', -0.88765), '−88.77 %');
  // two decimals would round it to −100.00 %, which it is not
  assert.equal(metricValue('cagr', -0.999998), '−99.9998 %');
  assert.equal(percent(-1), '−100.00 %');
  assert.equal(metricValue('cagr', -0.9999999998), '≈ −100 %', 'not a row of zeros after the point');
  assert.equal(metricValue('cagr', 12.5), '1,250.00 %');
  assert.equal(metricValue('total_return', -0.000001), '0.00 %', 'no minus sign on a rounded zero');
  assert.equal(metricValue('sharpe', 1.23456), '1.23');
  assert.equal(metricValue('score', -0.1), '−0.1000');
  assert.equal(metricValue('n_bars', 51822), '51,822');
  assert.equal(metricValue('runtime_s', 0.089), '89 ms');
  assert.equal(metricValue('turnover', 3.2), '3.20 ×');
  assert.equal(metricValue('sortino', null), '—', 'null is undefined for the run');
  assert.equal(metricValue('unknown_metric', 0.5), '0.5000');
  assert.equal(metricName('cagr'), 'CAGR');
  assert.equal(metricName('n_bars'), 'Bars');
  assert.equal(metricName('runtime_s'), 'Runtime');
  assert.equal(metricName('some_new_key'), 'Some new key');
  assert.match(metricFormula('score'), /CAGR − 0\.7 × \|max drawdown\|/);
  assert.ok(isAnnualised('sharpe') && !isAnnualised('total_return'));
  // 1,441 one-minute bars are one day; 366 daily bars are a year
  assert.ok(Math.abs(historyYears(1441, 60000) - 1 / 365) < 1e-12);
  assert.equal(historyYears(366, 86400000), 1);
  assert.equal(historyYears(1, 60000), null);
  assert.equal(historyYears(100, undefined), null);
});

test('datasets offered for a challenge, and the history an evaluation used', async () => {
  const { datasetFit, datasetDays, challengeAssets, historyUsed } = await import('../../static/js/results.js');
  const synth = { version: 'synth-v1', interval_ms: 60000, bars: 86400, assets: ['BTC', 'ETH', 'SOL'] };
  const daily = { version: 'v1', interval_ms: 86400000, bars: 5, assets: ['BTC'] };
  const short = { version: 's', interval_ms: 60000, bars: 600, assets: ['ETH'] };
  assert.equal(datasetDays(synth), 60);
  assert.equal(datasetDays({}), 0);
  assert.deepEqual(challengeAssets({ asset: 'ETH' }), ['ETH']);
  assert.deepEqual(challengeAssets({ asset: 'ETH', assets: ['BTC', 'ETH'] }), ['BTC', 'ETH']);
  assert.equal(datasetFit(synth, { asset: 'ETH' }), null);
  assert.equal(datasetFit(daily, { asset: 'BTC' }), 'not 1-minute bars');
  assert.equal(datasetFit(synth, { assets: ['BTC', 'XRP', 'DOGE'] }), 'no XRP, DOGE');
  assert.equal(datasetFit(short, { asset: 'ETH' }), 'less than a day of bars');
  assert.equal(historyUsed({ result: null }), null);
  assert.deepEqual(historyUsed({ result: { dev_length: 57600, eval_holdout_minutes: 28800 } }), { bars: 86400, days: 60 });
  assert.deepEqual(historyUsed({ result: { dev_length: 1440, eval_holdout_minutes: 0 } }), { bars: 1440, days: 1 });
});

test('exports: CSV fields quoted as RFC 4180 asks, metric deltas in the metric\'s unit', async () => {
  const { toCsv } = await import('../../static/js/export.js');
  const { metricDelta } = await import('../../static/js/metrics.js');
  assert.equal(toCsv([{ a: 1, b: 'x,y' }, { b: 'say "hi"', c: null, d: { k: 1 } }]),
    'a,b,c,d\r\n1,"x,y",,\r\n,"say ""hi""",,"{""k"":1}"\r\n');
  assert.equal(toCsv([]), '\r\n');
  assert.equal(metricDelta('total_return', 0.12, 0.1), '+2.00 pp');
  assert.equal(metricDelta('sharpe', -1, 0.5), '−1.50');
  assert.equal(metricDelta('n_bars', 10, 10), '0');
  assert.equal(metricDelta('score', 0.2, null), '—');
  // a runtime delta in the unit its values are read in
  assert.equal(metricDelta('runtime_s', 0.646, 0.28), '+366 ms');
  assert.equal(metricDelta('runtime_s', 0.28, 2.5), '−2.22 s');
});

test('agents pages: the line diff, the field a create error names, iteration figures', async () => {
  const { lineDiff, errorField, iterTokens, iterCost, usd, devMetric } = await import('../../static/js/pages/agents_diff.js');
  const d = lineDiff('a\nb\nc\nd', 'a\nB\nc\nd\ne');
  assert.deepEqual(d.map((r) => `${r.op}${r.text}`), [' a', '-b', '+B', ' c', ' d', '+e']);
  assert.deepEqual(lineDiff('x', 'x'), [{ op: ' ', text: 'x' }]);
  assert.deepEqual(lineDiff('', 'y').map((r) => r.op), ['-', '+']);
  // applying the diff to the old text gives the new one
  const a = 'p\nq\nr\ns\nt\nu'; const b = 'q\nr\nX\nt\nu\nv\nw';
  const rows = lineDiff(a, b);
  assert.equal(rows.filter((r) => r.op !== '+').map((r) => r.text).join('\n'), a);
  assert.equal(rows.filter((r) => r.op !== '-').map((r) => r.text).join('\n'), b);
  // too different to diff: refused, never a hang
  const big = (k) => Array.from({ length: 3000 }, (_, i) => `${k}${i}`).join('\n');
  assert.equal(lineDiff(big('a'), big('b')), null);
  assert.equal(errorField("field 'days_back' must be an integer from 60 to 365"), 'days_back');
  assert.equal(errorField('min_iterations (7) exceeds max_iterations (3)'), 'min_iterations');
  assert.equal(errorField("unknown challenge 'NOPE'; valid: ETH-1H-BINARY"), 'challenge');
  assert.equal(errorField('driver: the claude CLI is not installed'), 'driver');
  assert.equal(errorField('model must be sonnet, opus or haiku'), 'model');
  assert.equal(errorField("field 'tokens' must be an integer"), 'tokens');
  assert.equal(errorField('the request body must be a JSON object'), '');
  assert.equal(iterTokens({ tokens: { input: 10, output: 5, cache_write: 2, cache_read: 1 } }), 18);
  assert.equal(iterTokens({ tokens: { total: 7, input: 1 } }), 7);
  assert.equal(iterTokens({ tokens: null }), null);
  assert.equal(iterCost({ tokens: { cost: 0.0125 } }), 0.0125);
  assert.equal(usd(0.0125), '$0.0125');
  assert.equal(usd(12.5), '$12.50');
  assert.equal(usd(null), '—');
  assert.equal(usd(0), '$0.00', 'nothing spent reads in cents');
  assert.equal(devMetric({ metrics: { mean_auc: 0.57 }, score: 0.1 }, 'mean_auc'), 0.57);
  assert.equal(devMetric({ metrics: {}, score: 0.1 }, 'mean_auc'), 0.1);
  assert.equal(devMetric({ metrics: null, score: null }, 'mean_auc'), null);
});

test('agents chat: what an ask\'s error says, what an answer cost, who wrote a message and whether it reached the agent', async () => {
  const { askError, askUsage, chatWho, chatNote } = await import('../../static/js/pages/agents_ask.js');
  const err = (status, code, msg, retryAfter) => Object.assign(new ApiError(status, { error: msg, code, detail: msg }, '/api/agents/x/ask'), retryAfter ? { retryAfter } : {});
  const nokey = askError(err(409, 'no_api_key', "no Anthropic key for this agent's owner and no admin default: set one with POST /api/anthropic-key"));
  assert.equal(nokey.settings, true);
  assert.match(nokey.text, /^No Anthropic API key: .*Set a key in Settings\. \(409 no_api_key\)$/);
  const budget = askError(err(402, 'budget_exhausted', 'budget: agent requests: 1 of 1 used'));
  assert.equal(budget.settings, false);
  assert.equal(budget.text, 'The budget is used up (agent requests: 1 of 1 used): nothing was sent and nothing charged. (402 budget_exhausted)');
  assert.equal(askError(err(429, 'rate_limited', '3 asks of this owner are running; try again shortly', 5)).text,
    'Rate limited: 3 asks of this owner are running; try again shortly; nothing was answered. Try again in 5 s. (429 rate_limited)');
  assert.match(askError(err(429, 'rate_limited', 'the model API is rate limiting this key: slow down')).text, /Try again shortly\. \(429 rate_limited\)$/);
  assert.match(askError(err(502, 'upstream_error', 'the model API answered 500: broke')).text, /^The model API failed: the model API answered 500: broke\. .*\(502 upstream_error\)$/);
  assert.match(askError(err(503, 'unavailable', 'the model API is overloaded: busy', 3)).text, /^Not available just now: .*Try again in 3 s\. \(503 unavailable\)$/);
  assert.match(askError(new ApiError(0, null, '/x')).text, /could not be reached.*\(network\)$/);
  assert.equal(askError(err(400, 'invalid_field', 'text must be 1 to 10000 characters, not only white space')).text,
    'Not asked: text must be 1 to 10000 characters, not only white space. (400 invalid_field)');
  assert.equal(askUsage({ model: 'claude-sonnet-4-5', usage: { input: 1234, output: 56, cache_write: 10, cache_read: 6, requests: 1, cost: 0.004542 } }),
    "Answered by claude-sonnet-4-5: 1,250 tokens in, 56 out, $0.0045, charged to this agent's budget.");
  assert.equal(chatWho({ role: 'user', type: 'ask' }), 'you asked the model');
  assert.equal(chatWho({ role: 'assistant', type: 'answer' }), 'the model answered');
  assert.equal(chatWho({ role: 'operator', type: 'message' }), 'operator');
  assert.equal(chatNote({ role: 'user', type: 'ask' }), 'not sent to the agent');
  assert.equal(chatNote({ role: 'assistant', type: 'answer' }), 'not sent to the agent');
  assert.equal(chatNote({ role: 'user', type: 'message', delivered_iteration: 3 }), 'delivered to iteration 3');
  assert.equal(chatNote({ role: 'user', type: 'message' }), 'waiting for the next iteration');
  assert.equal(chatNote({ role: 'user', type: 'message', superseded: true }), 'superseded');
  assert.equal(chatNote({ role: 'agent', type: 'message' }), '');
});

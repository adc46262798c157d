// The dashboard end to end, in Debian's Chromium against the real stack
// (nginx → FastCGI pool → MariaDB, with a real runner and sandbox), as a
// person would use it: submit a strategy in the editor, run it, watch it
// complete, read the charts, find it on the leaderboard, promote it; see a
// broken strategy's error at its line and a failed run's error; submit a
// challenge signal and see the per-window chart. Then every page is checked
// with axe-core, on a laptop and on a phone-sized screen (no horizontal
// scrolling), and photographed into $AGENTTEST_TEST_OUT/screenshots/.
//
// The tests run in order and share what they created (ids below). Run by
// tests/stages/60-browser.sh, which starts the stack with MANTIS_AUTH_TOKEN
// set and exports AGENTTEST_URL and AGENTTEST_TOKEN (an admin credential).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import {
  BASE, launch, open, axe, shot, watch, formatViolations, horizontalOverflow, canvasInk, apiFetch, PHONE,
} from './lib.mjs';

const TOKEN = process.env.AGENTTEST_TOKEN || '';
const RUN_TIMEOUT = 120000;

let browser;
let page;
let problems;
const made = { strategyId: null, versionId: null, runId: null, failedRunId: null, challenge: null, evaluationId: null };
const stamp = Date.now().toString(36);

before(async () => {
  assert.ok(BASE, 'AGENTTEST_URL must point at a running stack');
  browser = await launch();
  page = await browser.context.newPage();
  problems = watch(page);
  // sign in once with the token link; the API sets the cookie
  await open(page, '#/', TOKEN ? `?token=${encodeURIComponent(TOKEN)}` : '');
});

after(async () => {
  if (browser) await browser.close();
});

/** waitRoute(re): waits until the router has drawn a path matching re; returns the path. */
async function waitRoute(re, timeout = 20000) {
  const h = await page.waitForFunction((src) => {
    const p = document.body.dataset.ready || '';
    return new RegExp(src).test(p) ? p : null;
  }, re.source, { timeout });
  return h.jsonValue();
}

/**
 * assertCountsUp(el, path): the "N s so far" in el moves on by at least
 * 1.5 s over 2.5 s, and the page (at path) was not reloaded meanwhile.
 */
async function assertCountsUp(el, path) {
  const seconds = async () => {
    const t = await el.textContent();
    const m = /([\d.]+) (ms|s) so far/.exec(t);
    assert.ok(m, `an elapsed time (${t})`);
    return m[2] === 'ms' ? Number(m[1]) / 1000 : Number(m[1]);
  };
  const a = await seconds();
  await page.waitForTimeout(2500);
  const b = await seconds();
  assert.ok(b - a >= 1.5, `the runtime moved on from ${a} s to ${b} s`);
  assert.equal(page.url().split('#')[1], path, 'still the same page, never reloaded');
}

/** editorValue() -> the text in the page's code editor. */
function editorValue() {
  return page.locator('.editor').evaluate((e) => e.codeEditor.value());
}

/** submitStrategy(name, code) -> the version page path after submitting in the editor. */
async function submitStrategy(name, code) {
  await open(page, '#/strategies/new');
  await page.getByLabel('Name', { exact: true }).fill(name);
  // The whole text goes in through the editor (Playwright's fill() on a
  // contenteditable turns runs of spaces into no-break spaces, as typing
  // would not); typing itself is tested in the keyboard test.
  if (code !== undefined) await page.locator('.editor').evaluate((e, c) => e.codeEditor.setValue(c), code);
  await page.getByRole('button', { name: 'Submit', exact: true }).click();
}

test('the overview draws in a new tab with its API data', async () => {
  // functional only: how fast is tests/bench/dashboard.sh's business
  const p = await browser.context.newPage();
  try {
    await p.goto(`${BASE}/#/`, { waitUntil: 'commit' });
    await p.waitForFunction(() => document.body.dataset.ready === '/', null, { timeout: 30000 });
    assert.ok(await p.getByRole('heading', { name: 'Health' }).isVisible());
  } finally {
    await p.close();
  }
});

test('submit a strategy in the editor', async () => {
  await submitStrategy(`browser-bh-${stamp}`); // the editor's buy-and-hold template
  const path = await waitRoute(/^\/versions\/\d+$/);
  made.versionId = path.split('/').pop();
  await page.getByText('Submitted: the code passed').waitFor();
  const code = await page.locator('pre.code-view').textContent();
  assert.match(code, /def simulate\(prices, params\)/, 'the owner sees the code');
  const strategyHref = await page.locator('dl.kv a[href^="#/strategies/"]').first().getAttribute('href');
  made.strategyId = strategyHref.split('/').pop();
  await shot(page, 'version-submitted');
});

test('run it and watch it complete', { timeout: RUN_TIMEOUT + 30000 }, async () => {
  assert.ok(made.versionId, 'needs the submitted version');
  await page.getByRole('button', { name: 'Run', exact: true }).click();
  const path = await waitRoute(/^\/runs\/[0-9a-f-]{8,}$/);
  made.runId = path.split('/').pop();
  const first = await page.locator('[data-testid=run-status]').textContent();
  assert.match(first, /queued|running|completed/);
  await shot(page, 'run-live');
  await page.locator('[data-testid=run-status] .st-completed, [data-testid=run-status] .st-failed')
    .waitFor({ timeout: RUN_TIMEOUT });
  const status = (await page.locator('[data-testid=run-status]').textContent()).trim();
  const why = status === 'completed' ? '' : await page.locator('[data-testid=run-error]').textContent().catch(() => '');
  assert.equal(status, 'completed', `the run ended ${status}: ${why}`);
  for (const m of ['Score', 'Total return', 'Sharpe ratio', 'Max drawdown']) {
    assert.ok(await page.getByRole('rowheader', { name: m, exact: true }).isVisible(), `metric ${m} shown`);
  }
  await page.getByText('Dataset hash').waitFor();
  assert.match(await page.locator('[data-testid=audit-verdict]').textContent(), /passed/);
});

test('run metrics read in percent and ratios, with their formulas and the short-history caveat', async () => {
  assert.ok(made.runId, 'needs the completed run');
  const { body: run } = await apiFetch(page, `/runs/${made.runId}`);
  const { body: ds } = await apiFetch(page, `/datasets/${encodeURIComponent(run.dataset_version)}`);
  const row = (name) => page.getByRole('row').filter({ has: page.getByRole('rowheader', { name, exact: true }) });
  // the value cell, computed here independently of static/js/metrics.js
  const pctText = (v) => `${v * 100 < 0 && (v * 100).toFixed(2) !== '-0.00' ? '−' : ''}${Math.abs(v * 100).toLocaleString('en-US', { minimumFractionDigits: 2, maximumFractionDigits: 2 })} %`;
  const value = async (name) => (await row(name).locator('td.num').textContent()).trim();
  assert.equal(await value('Total return'), pctText(run.metrics.total_return));
  assert.equal(await value('Max drawdown'), pctText(run.metrics.max_drawdown));
  assert.equal(await value('Sharpe ratio'), Math.abs(run.metrics.sharpe).toFixed(2).replace(/^/, run.metrics.sharpe < 0 && run.metrics.sharpe.toFixed(2) !== '-0.00' ? '−' : ''));
  assert.equal(await value('Bars'), run.metrics.n_bars.toLocaleString('en-US'));
  // artifacts by their routes (issue 11 item 15): a link, never a server path
  const art = page.locator('dl div', { has: page.locator('dt', { hasText: /^Artifacts$/ }) });
  assert.equal(await art.locator('dd a').first().getAttribute('href'), run.artifacts.equity);
  assert.doesNotMatch(await art.textContent(), /\//, 'no path in the Artifacts row');
  assert.ok(await row('CAGR').isVisible(), 'CAGR by its name, not "Cagr"');
  assert.equal(await page.getByRole('rowheader', { name: 'Cagr', exact: true }).count(), 0);
  assert.match(await row('Score').textContent(), /CAGR − 0\.7 × \|max drawdown\|/, 'the score formula beside it');
  const years = ((run.metrics.n_bars - 1) * ds.interval_ms) / (365 * 86400000);
  const caveat = page.locator('[data-testid=annual-caveat]');
  if (years < 1) {
    await caveat.waitFor();
    assert.match(await caveat.textContent(), /annualised from [\d.,]+ (days|hours) of history/);
  } else {
    assert.equal(await caveat.count(), 0, 'no caveat on a year or more of bars');
  }
  await shot(page, 'run-metrics');
});

test('the equity and drawdown charts are drawn with data, zoom and hover', async () => {
  assert.ok(made.runId, 'needs the completed run');
  const eq = page.locator('[data-testid=equity-chart]');
  await page.waitForFunction(() => Number(document.querySelector('[data-testid=equity-chart]')?.dataset.points) > 1, null, { timeout: 15000 });
  const points = Number(await eq.getAttribute('data-points'));
  const apiEq = await apiFetch(page, `/runs/${made.runId}/equity`, { headers: { Accept: 'application/json' } });
  assert.equal(apiEq.status, 200);
  assert.equal(apiEq.body.benchmark.length, apiEq.body.equity.length, 'a benchmark value per bar');
  assert.equal(points, apiEq.body.equity.length * 2, 'every point of the curve and of the benchmark is plotted');
  // the buy-and-hold benchmark is the second series, drawn dashed, with the API's values
  const bench = await page.evaluate(() => {
    const u = document.querySelector('[data-testid=equity-chart]').uplot;
    return { label: u.series[2].label, dash: u.series[2].dash, values: u.data[2] };
  });
  assert.match(bench.label, /^Buy and hold/);
  assert.ok(Array.isArray(bench.dash), 'dashed');
  assert.deepEqual(bench.values, apiEq.body.benchmark);
  assert.ok(points > 20, `a real curve (${points} points)`);
  // dates on the x-axis when the curve covers every bar of a gap-free dataset
  const { body: theRun } = await apiFetch(page, `/runs/${made.runId}`);
  const { body: ds } = await apiFetch(page, `/datasets/${encodeURIComponent(theRun.dataset_version)}`);
  const x0 = await page.evaluate(() => document.querySelector('[data-testid=equity-chart]').uplot.data[0][0]);
  const n = apiEq.body.equity.length;
  if (ds.bars === n && ds.last_ts - ds.first_ts === (n - 1) * ds.interval_ms) {
    assert.equal(x0, ds.first_ts / 1000, 'bar 0 is the dataset\'s first timestamp');
    assert.match(await eq.locator('.u-legend .u-series:first-child').textContent(), /Time/);
    const ticks = (await eq.getAttribute('data-x-ticks')).split(' | ');
    assert.ok(ticks.every((l) => /^(\d{4}-\d{2}-\d{2}|(\d{4}-\d{2}-\d{2}\n)?\d{2}:\d{2})$/.test(l)), `ISO date ticks: ${ticks}`);
  } else {
    assert.equal(x0, 0, 'the bar index when the bars cannot be dated exactly');
  }
  assert.ok(await canvasInk(page, '[data-testid=equity-chart]') > 200, 'the equity line is drawn on the canvas');
  assert.ok(await canvasInk(page, '[data-testid=drawdown-chart]') > 50, 'the drawdown is drawn on the canvas');
  // hover shows a value in the legend
  const over = eq.locator('.u-over');
  await over.scrollIntoViewIfNeeded();
  const box = await over.boundingBox();
  await page.mouse.move(box.x + box.width * 0.4, box.y + box.height * 0.4);
  await page.mouse.move(box.x + box.width * 0.5, box.y + box.height * 0.5, { steps: 3 });
  const value = eq.locator('.u-legend .u-series:nth-child(2) .u-value');
  await page.waitForFunction((el) => /\d/.test(el.textContent), await value.elementHandle(), { timeout: 5000 })
    .catch(() => {});
  const legend = await value.textContent();
  assert.match(legend, /\d/, `hover value shown (${legend})`);
  // drag to zoom, then reset
  await page.mouse.move(box.x + box.width * 0.2, box.y + box.height * 0.5);
  await page.mouse.down();
  await page.mouse.move(box.x + box.width * 0.6, box.y + box.height * 0.5, { steps: 5 });
  await page.mouse.up();
  const reset = eq.getByRole('button', { name: 'Reset zoom' });
  await assert.doesNotReject(reset.waitFor({ state: 'visible' }));
  // the drawdown chart follows the equity chart's zoom, and its reset
  const ranges = () => page.evaluate(() => ['equity-chart', 'drawdown-chart'].map((t) => {
    const u = document.querySelector(`[data-testid=${t}]`).uplot;
    return [u.scales.x.min, u.scales.x.max];
  }));
  let [er, dr] = await ranges();
  const xs = await page.evaluate(() => { const d = document.querySelector('[data-testid=equity-chart]').uplot.data[0]; return [d[0], d[d.length - 1]]; });
  assert.ok(er[0] > xs[0] || er[1] < xs[1], `zoomed in (${er} within ${xs})`);
  assert.deepEqual(dr, er, 'the drawdown shows the same bars as the zoomed equity');
  assert.equal(await reset.isEnabled(), true, 'zoomed in: reset is offered');
  await reset.click();
  assert.equal(await reset.isEnabled(), false, 'zoom reset');
  [er, dr] = await ranges();
  assert.deepEqual(dr, er, 'the drawdown is reset with it');
  const dl = page.getByRole('link', { name: 'Download equity (CSV)' });
  assert.equal(await dl.getAttribute('href'), `/runs/${made.runId}/equity`);
  const [download] = await Promise.all([page.waitForEvent('download'), dl.click()]);
  const csv = await new Promise((resolve, reject) => {
    download.createReadStream().then((s) => {
      let t = '';
      s.on('data', (d) => { t += d; });
      s.on('end', () => resolve(t));
      s.on('error', reject);
    }, reject);
  });
  const lines = csv.trim().split('\n');
  assert.match(lines[0], /equity/, 'a CSV with a header');
  assert.equal(lines.length - 1, apiEq.body.equity.length, 'one CSV row per point of the curve');
  await shot(page, 'run-completed');
});

test('a positions run shows its trades and its position under the equity, following the zoom', { timeout: RUN_TIMEOUT + 30000 }, async () => {
  const code = 'def positions(prices, params):\n    return [1.0 if (t // 500) % 2 == 0 else -0.5 for t in range(len(prices))]\n';
  const sub = await apiFetch(page, '/strategies/submit', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ code, name: `browser-pos-${stamp}` }) });
  assert.equal(sub.status, 200, JSON.stringify(sub.body));
  const run = await apiFetch(page, '/runs', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ strategy_version_id: sub.body.strategy_version_id, wait: 60 }) });
  assert.ok(run.status === 200 || run.status === 202, JSON.stringify(run.body));
  made.positionsRunId = run.body.run_id;
  await open(page, `#/runs/${made.positionsRunId}`);
  await page.locator('[data-testid=run-status] .st-completed').waitFor({ timeout: RUN_TIMEOUT });
  const { body: t } = await apiFetch(page, `/runs/${made.positionsRunId}/trades?limit=100`);
  const rows = page.getByRole('region', { name: 'Fills (table)' }).locator('tbody tr');
  await rows.first().waitFor({ timeout: 15000 });
  assert.equal(await rows.count(), Math.min(100, t.fills_total));
  const first = await rows.first().locator('td').allTextContents();
  assert.equal(first[2], 'Buy');
  assert.equal(first[6], '100.00 %', 'the position after the first fill, in percent');
  assert.match(first[5], /^\d+\.\d\d bp$/, 'the fee in basis points');
  assert.match(await rows.first().locator('th, td').first().textContent(), /^\d{4}-\d\d-\d\d \d\d:\d\d UTC$/, 'a date, not a bar index');
  // the position chart under the equity, with the API's per-bar positions, following its zoom
  await page.waitForFunction(() => document.querySelector('[data-testid=position-chart]')?.uplot, null, { timeout: 15000 });
  assert.deepEqual(await page.evaluate(() => document.querySelector('[data-testid=position-chart]').uplot.data[1]), t.positions);
  const over = page.locator('[data-testid=equity-chart] .u-over');
  await over.scrollIntoViewIfNeeded();
  const box = await over.boundingBox();
  await page.mouse.move(box.x + box.width * 0.3, box.y + box.height * 0.5);
  await page.mouse.down();
  await page.mouse.move(box.x + box.width * 0.7, box.y + box.height * 0.5, { steps: 5 });
  await page.mouse.up();
  const [er, pr] = await page.evaluate(() => ['equity-chart', 'position-chart'].map((k) => {
    const u = document.querySelector(`[data-testid=${k}]`).uplot;
    return [u.scales.x.min, u.scales.x.max];
  }));
  assert.deepEqual(pr, er, 'the position chart shows the same bars as the zoomed equity');
  await shot(page, 'run-trades');
});

test('verify reproducibility from the run page', { timeout: RUN_TIMEOUT }, async () => {
  assert.ok(made.runId);
  await open(page, `#/runs/${made.runId}`);
  await page.getByRole('button', { name: 'Verify reproducibility' }).click();
  const panel = page.getByTestId('verification');
  await panel.waitFor({ timeout: 60000 });
  // the result may arrive after the request's own wait: the page follows it
  await panel.locator('.badge.st-completed, .badge.st-failed').waitFor({ timeout: RUN_TIMEOUT - 10000 });
  const text = await panel.textContent();
  assert.match(text, /byte-identical/, text);
  await shot(page, 'run-verified');
});

test('keyboard: skip link, navigation, and leaving the code editor', async () => {
  await open(page, '#/');
  await page.reload(); // a fresh load: focus starts at the top of the document
  await waitRoute(/^\/$/);
  await page.keyboard.press('Tab');
  assert.equal(await page.evaluate(() => document.activeElement.textContent), 'Skip to content');
  await page.keyboard.press('Enter');
  assert.equal(await page.evaluate(() => document.activeElement.id), 'main', 'the skip link lands on the content');
  // the navigation is reachable and moves focus to the new page's heading
  const runsLink = page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Runs' });
  await runsLink.focus();
  await page.keyboard.press('Enter');
  await waitRoute(/^\/runs$/);
  assert.equal(await page.evaluate(() => document.activeElement.tagName), 'H1');
  assert.equal(await runsLink.getAttribute('aria-current'), 'page');
  // in the editor, Tab indents; Esc then Tab moves on to the next field
  await open(page, '#/strategies/new');
  const ta = page.getByLabel('Code (Python)');
  // typed, as a person types (fill() on a contenteditable goes through the
  // browser's own editing command, which no keyboard or paste takes)
  await page.locator('.editor').evaluate((e) => e.codeEditor.setValue(''));
  await ta.focus();
  await page.keyboard.type('x = 1');
  await page.keyboard.press('Enter');
  await page.keyboard.press('Tab');
  assert.equal(await editorValue(), 'x = 1\n    ', 'Tab indents by four spaces');
  await page.keyboard.press('Escape');
  await page.keyboard.press('Tab');
  assert.equal(await page.evaluate(() => document.activeElement.name), 'params', 'Esc, Tab moves on to the params field');
});

test('find it on the leaderboard', async () => {
  assert.ok(made.versionId);
  await open(page, '#/leaderboards');
  const row = page.locator('table.data tbody tr', { has: page.locator(`a[href="#/versions/${made.versionId}"]`) });
  await row.first().waitFor();
  assert.equal(await row.count(), 1, 'one row per strategy version');
  assert.match(await row.first().textContent(), new RegExp(made.runId.slice(0, 8)));
});

test('leaderboard columns sort by their values, both ways', async () => {
  await open(page, '#/leaderboards');
  const board = page.locator('table.data').first();
  const n = await board.locator('tbody tr').count();
  const col = async (name) => {
    const head = await board.locator('thead th').allTextContents();
    const i = head.findIndex((t) => t.startsWith(name));
    return board.locator(`tbody tr td:nth-child(${i + 1})`).allTextContents();
  };
  const toNum = (t) => Number(t.replace('−', '-').replace(/[ %,]/g, ''));
  await board.getByRole('button', { name: 'Total return' }).click();
  assert.equal(await board.locator('th[aria-sort]').getAttribute('aria-sort'), 'descending');
  const down = (await col('Total return')).map(toNum);
  assert.deepEqual(down, [...down].sort((x, y) => y - x), `descending: ${down}`);
  await board.getByRole('button', { name: 'Total return' }).click();
  assert.equal(await board.locator('th[aria-sort]').getAttribute('aria-sort'), 'ascending');
  const up = (await col('Total return')).map(toNum);
  assert.deepEqual(up, [...up].sort((x, y) => x - y), `ascending: ${up}`);
  assert.equal(await board.locator('tbody tr').count(), n, 'no row lost');
});

test('promote it as admin, with confirmation, and see the mark', async () => {
  const row = () => page.locator('table.data tbody tr', { has: page.locator(`a[href="#/versions/${made.versionId}"]`) });
  const btn = row().getByRole('button', { name: /^Promote/ });
  await btn.click();
  const dlg = page.getByRole('dialog', { name: 'Promote to default?' });
  await dlg.waitFor();
  await shot(page, 'promote-confirm');
  // cancelling changes nothing
  await dlg.getByRole('button', { name: 'Cancel' }).click();
  assert.equal(await row().locator('[data-testid=default-mark]').count(), 0);
  await btn.click();
  await dlg.getByRole('button', { name: 'Promote', exact: true }).click();
  await row().locator('[data-testid=default-mark]').waitFor();
  assert.match(await page.locator('[data-testid=current-default]').textContent(), new RegExp(`#${made.versionId}\\b`));
  assert.match(await page.locator('table.data').last().textContent(), /#\d+/, 'promotion history listed');
  const defs = await apiFetch(page, '/defaults');
  assert.ok(defs.body.defaults.some((d) => String(d.strategy_version_id) === made.versionId), 'the API agrees');
  await shot(page, 'leaderboard-promoted');
});

test('a broken strategy shows the error at its line, also far down a long file', async () => {
  // examples/strategies/sma_positions.py with a colon dropped on line 30:
  // the marker must sit beside line 30 of the text, after scrolling there.
  const lines = readFileSync('examples/strategies/sma_positions.py', 'utf8').split('\n');
  assert.match(lines[29], /^\s+up = f > sma_slow$/);
  lines[29] = lines[29].replace('up = f > sma_slow', 'if f > sma_slow');
  await submitStrategy(`browser-broken-${stamp}`, lines.join('\n'));
  const ed = page.locator('.editor[data-error-line="30"]');
  await ed.waitFor({ timeout: 20000 });
  const num = page.locator('.cm-gutterElement.cm-error-number');
  assert.equal((await num.textContent()).trim(), '30');
  const line = page.locator('.cm-line.cm-error-line');
  assert.match(await line.textContent(), /if f > sma_slow/);
  // the red number and the tinted line are on the same row of the screen
  const [nb, lb] = [await num.boundingBox(), await line.boundingBox()];
  assert.ok(nb && lb && Math.abs(nb.y - lb.y) < 3 && Math.abs(nb.height - lb.height) < 3, `number ${JSON.stringify(nb)} beside line ${JSON.stringify(lb)}`);
  const msg = await page.locator('.code-error').textContent();
  assert.match(msg, /line 30/i);
  assert.equal(await page.getByLabel('Code (Python)').getAttribute('aria-invalid'), 'true');
  // the caret was put on the line
  const caretLine = await page.locator('.editor').evaluate((e) => {
    const v = e.codeEditor.view;
    return v.state.doc.lineAt(v.state.selection.main.head).number;
  });
  assert.equal(caretLine, 30);
  assert.equal(await page.evaluate(() => document.body.dataset.ready), '/strategies/new', 'nothing was stored');
  await shot(page, 'editor-syntax-error');
  // editing clears the mark
  await page.keyboard.press('End');
  await page.keyboard.type(' ');
  assert.equal(await page.locator('.cm-error-number').count(), 0);
  assert.equal(await page.locator('.editor').getAttribute('data-error-line'), '');
});

test('code without the contract function is refused with a clear message', async () => {
  await submitStrategy(`browser-nocontract-${stamp}`, 'def helper(prices, params):\n    return prices\n');
  await page.locator('.code-error p').first().waitFor({ timeout: 20000 });
  const msg = await page.locator('.code-error').textContent();
  assert.match(msg, /simulate|positions/, msg);
});

test('a run that fails shows its error code, message and log tail', { timeout: RUN_TIMEOUT + 30000 }, async () => {
  const code = 'def simulate(prices, params):\n    print("about to return the wrong length")\n    return [1.0]\n';
  await submitStrategy(`browser-badout-${stamp}`, code);
  await waitRoute(/^\/versions\/\d+$/);
  await page.getByRole('button', { name: 'Run', exact: true }).click();
  const path = await waitRoute(/^\/runs\/[0-9a-f-]{8,}$/);
  made.failedRunId = path.split('/').pop();
  await page.locator('[data-testid=run-status] .st-failed, [data-testid=run-status] .st-completed').waitFor({ timeout: RUN_TIMEOUT });
  assert.equal((await page.locator('[data-testid=run-status]').textContent()).trim(), 'failed');
  const panel = page.locator('[data-testid=run-error]');
  const run = (await apiFetch(page, `/runs/${made.failedRunId}`)).body;
  assert.ok(run.error && run.error.code, 'the API recorded an error code');
  assert.match(await panel.textContent(), new RegExp(run.error.code));
  if (run.error.message) assert.ok((await panel.textContent()).includes(run.error.message.slice(0, 40)));
  if (run.error.log_tail) assert.ok(await panel.getByLabel('Log tail').isVisible(), 'log tail shown');
  assert.equal(await page.locator('[data-testid=equity-chart]').count(), 0, 'no chart for a failed run');
  await shot(page, 'run-failed');
});

test('a running run\'s runtime counts up on the page without a reload', { timeout: RUN_TIMEOUT + 30000 }, async () => {
  const code = 'import time\ndef simulate(prices, params):\n    time.sleep(20)\n    p0 = prices[0]\n    return [p / p0 for p in prices]\n';
  await submitStrategy(`browser-slow-${stamp}`, code);
  await waitRoute(/^\/versions\/\d+$/);
  await page.getByRole('button', { name: 'Run', exact: true }).click();
  const path = await waitRoute(/^\/runs\/[0-9a-f-]{8,}$/);
  const id = path.split('/').pop();
  try {
    const el = page.getByTestId('elapsed');
    await el.waitFor({ timeout: RUN_TIMEOUT });
    await assertCountsUp(el, path);
  } finally {
    await apiFetch(page, `/runs/${id}/cancel`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{}' });
  }
});

test('the run form: the asset is a choice of the dataset\'s assets; fee and leverage for a positions strategy', { timeout: RUN_TIMEOUT + 30000 }, async () => {
  await submitStrategy(`browser-sma-${stamp}`, readFileSync('examples/strategies/sma_positions.py', 'utf8'));
  const vpath = await waitRoute(/^\/versions\/\d+$/);
  const { body: dsBody } = await apiFetch(page, '/datasets');
  const dsSel = page.getByLabel('Dataset version');
  const d = dsBody.datasets.find((x) => x.version === (dsBody.default_version || dsBody.datasets[0].version));
  await dsSel.selectOption(d.version);
  const options = await page.getByLabel('Asset').locator('option').allTextContents();
  assert.equal(options.length, d.assets.length, `every asset of ${d.version} offered`);
  assert.ok(options[0].startsWith(d.assets[0]) && options.slice(1).every((o, i) => o === d.assets[i + 1]));
  if (d.assets.length < 2) return;
  const pick2 = d.assets[1];
  await page.getByLabel('Asset').selectOption(pick2);
  await page.getByLabel(/^Fee/).fill('25');
  await page.getByLabel(/^Maximum leverage/).fill('0');
  await page.getByRole('button', { name: 'Run', exact: true }).click();
  await page.getByText('The maximum leverage must be a number above 0 up to 100.').waitFor();
  assert.equal(page.url().split('#')[1].split('?')[0], vpath, 'nothing was queued');
  await page.getByLabel(/^Maximum leverage/).fill('2');
  const req = page.waitForRequest((r) => r.method() === 'POST' && new URL(r.url()).pathname === '/runs');
  await page.getByRole('button', { name: 'Run', exact: true }).click();
  const sent = (await req).postDataJSON();
  assert.equal(sent.asset, pick2);
  assert.equal(sent.fee_bps, 25);
  assert.equal(sent.max_leverage, 2);
  const path = await waitRoute(/^\/runs\/[0-9a-f-]{8,}$/);
  made.smaRunId = path.split('/').pop();
  const { body: run } = await apiFetch(page, `/runs/${made.smaRunId}`);
  assert.equal(run.asset, pick2, 'the run is on the chosen asset');
});

test('submit a signal for a challenge and see the per-window chart', { timeout: 300000 }, async (t) => {
  const ch = await apiFetch(page, '/api/challenges');
  const ev = await apiFetch(page, '/api/evaluations');
  if (ch.status === 404 || ev.status === 404) {
    await open(page, '#/challenges');
    assert.ok(await page.getByTestId('unavailable').isVisible(), 'the page says challenges are not available');
    t.skip(`the evaluations API is absent from this server (GET /api/challenges ${ch.status}, GET /api/evaluations ${ev.status})`);
    return;
  }
  const names = Array.isArray(ch.body) ? ch.body.map((c) => c.name) : Object.keys(ch.body);
  made.challenge = names.includes('ETH-1H-BINARY') ? 'ETH-1H-BINARY' : names[0];
  await open(page, `#/challenges/${encodeURIComponent(made.challenge)}`);
  // only datasets the challenge can run on are offered: v1 (5 daily bars) is not
  const { body: dsBody } = await apiFetch(page, '/datasets');
  const offered = await page.getByLabel('Dataset version').locator('option').evaluateAll((os) => os.map((o) => o.value));
  const v1 = dsBody.datasets.find((d) => d.version === 'v1');
  if (v1) {
    assert.ok(!offered.includes('v1'), `v1 is not offered (${offered.join(', ')})`);
    assert.match(await page.locator('.field', { has: page.getByLabel('Dataset version') }).textContent(), /Not offered: .*v1 \(not 1-minute bars\)/);
  }
  assert.ok(offered.length > 0 && offered.every((v) => dsBody.datasets.find((d) => d.version === v).interval_ms === 60000));
  // more days than the chosen dataset holds is refused before anything is sent
  const chosen = dsBody.datasets.find((d) => d.version === offered[0]);
  const holds = (chosen.bars * chosen.interval_ms) / 86400000;
  await page.getByLabel('Days of history').fill(String(Math.ceil(holds) + 30));
  await page.getByRole('button', { name: 'Evaluate' }).click();
  await page.getByText(/holds [\d.,]+ days; ask for at most/).waitFor();
  assert.equal(await page.getByLabel('Days of history').getAttribute('aria-invalid'), 'true');
  assert.equal(page.url().split('#')[1].split('?')[0], `/challenges/${made.challenge}`, 'nothing was queued');
  await page.getByLabel('Days of history').fill('');
  // a name and a note: a control character in the name is the API's field error
  await page.getByLabel('Name (optional)').evaluate((e) => { e.value = 'tab\tin a name'; });
  await page.getByRole('button', { name: 'Evaluate' }).click();
  await page.getByRole('alert').filter({ hasText: 'invalid_field' }).waitFor();
  assert.equal(page.url().split('#')[1].split('?')[0], `/challenges/${made.challenge}`, 'nothing was queued');
  const evName = `momentum ${stamp}`;
  const evNote = 'the template as it is\nfirst try';
  await page.getByLabel('Name (optional)').fill(evName);
  await page.getByLabel('Note (optional)').fill(evNote);
  await page.getByRole('button', { name: 'Evaluate' }).click();
  const path = await waitRoute(/^\/evaluations\/[^/]+$/);
  made.evaluationId = path.split('/').pop();
  await page.locator('[data-testid=eval-status] .st-completed, [data-testid=eval-status] .st-failed').waitFor({ timeout: 280000 });
  const status = (await page.locator('[data-testid=eval-status]').textContent()).trim();
  const why = status === 'completed' ? '' : await page.locator('[data-testid=eval-error]').textContent().catch(() => '');
  assert.equal(status, 'completed', `evaluation ended ${status}: ${why}`);
  await page.waitForFunction(() => Number(document.querySelector('[data-testid=window-chart]')?.dataset.points) > 0, null, { timeout: 15000 });
  assert.ok(await canvasInk(page, '[data-testid=window-chart]') > 50, 'window bars drawn');
  const head = await page.locator('[data-testid=headline]').textContent();
  assert.match(head, /baseline/);
  const periods = await page.locator('table.data .badge.holdout, table.data .badge.dev').allTextContents();
  assert.ok(periods.includes('holdout'), 'holdout windows marked');
  assert.ok(periods.includes('dev'), 'dev windows marked');
  // when it started and how long it took, as the API recorded them
  const { body: evRow } = await apiFetch(page, `/api/evaluations/${made.evaluationId}`);
  const details = page.getByRole('region', { name: 'Evaluation details' });
  const started = details.locator('dl > div', { has: page.locator('dt', { hasText: /^Started$/ }) }).locator('time');
  assert.equal(await started.getAttribute('datetime'), new Date(evRow.started_at.replace(' ', 'T').replace(/(\d)$/, '$1Z')).toISOString(), 'the start time');
  assert.match(await details.textContent(), /Started.*Completed.*Runtime/s);
  // the history actually streamed, from the result
  const usedBars = evRow.result.dev_length + evRow.result.eval_holdout_minutes;
  assert.ok((await page.getByTestId('days-used').textContent()).includes(`${usedBars.toLocaleString('en-US')} one-minute bars`));
  // its name and note, as given
  assert.deepEqual([evRow.name, evRow.note], [evName, evNote]);
  assert.equal(await page.getByTestId('eval-name').textContent(), evName);
  assert.equal(await page.getByTestId('eval-note').textContent(), evNote);
  assert.match(await page.locator('h1').textContent(), new RegExp(`^${evName}`), 'the heading names it');
  // the submitted code and its hash
  const codeBox = page.getByTestId('eval-code');
  assert.ok((await codeBox.textContent()).includes(evRow.code_hash), 'the code hash in full');
  await codeBox.locator('summary').click();
  assert.equal(await codeBox.getByLabel('Submitted code').textContent(), evRow.code);
  assert.match(evRow.code, /TechFeaturizer/);
  await shot(page, 'evaluation-completed');
  // ranked on the challenge's leaderboard, next to the baseline
  await open(page, `#/leaderboards/challenge/${encodeURIComponent(made.challenge)}`);
  await page.locator(`a[href="#/evaluations/${made.evaluationId}"]`).waitFor();
  assert.ok(await page.getByTestId('baseline-row').isVisible(), 'the baseline is a row of the board');
  const lbRow = page.locator('tr', { has: page.locator(`a[href="#/evaluations/${made.evaluationId}"]`) });
  assert.equal(await lbRow.locator('code.hash').getAttribute('title'), evRow.code_hash, 'the row names its code');
  assert.equal((await lbRow.locator(`a[href="#/evaluations/${made.evaluationId}"]`).textContent()).trim(), evName, 'the row is identified by its name');
  await shot(page, 'leaderboard-challenge-named');
});

test('a running evaluation shows when it started and its runtime counting up, without a reload', { timeout: 240000 }, async (t) => {
  if (!made.challenge) {
    t.skip('no challenge was evaluated in this session');
    return;
  }
  // the template with a pause at every step: it stays running until cancelled
  await open(page, `#/challenges/${encodeURIComponent(made.challenge)}`);
  const slow = (await editorValue()).replace('import numpy as np', 'import time\nimport numpy as np')
    .replace(/( +)def compute\(self, view\):\n/, '$1def compute(self, view):\n$1    time.sleep(0.2)\n');
  assert.match(slow, /time\.sleep\(0\.2\)/);
  await page.locator('.editor').evaluate((e, c) => e.codeEditor.setValue(c), slow);
  await page.getByLabel('Name (optional)').fill(`slow ${stamp}`);
  await page.getByRole('button', { name: 'Evaluate' }).click();
  const path = await waitRoute(/^\/evaluations\/[^/]+$/);
  const id = path.split('/').pop();
  try {
    await page.locator('[data-testid=eval-status] .st-running').waitFor({ timeout: 200000 });
    const { body: ev } = await apiFetch(page, `/api/evaluations/${id}`);
    assert.equal(ev.status, 'running');
    const details = page.getByRole('region', { name: 'Evaluation details' });
    const started = details.locator('dl > div', { has: page.locator('dt', { hasText: /^Started$/ }) }).locator('time');
    assert.equal(await started.getAttribute('datetime'), new Date(ev.started_at.replace(' ', 'T').replace(/(\d)$/, '$1Z')).toISOString(), 'the start time');
    const el = details.getByTestId('elapsed');
    await assertCountsUp(el, path);
    await shot(page, 'evaluation-running');
    // its progress (issue 17 fix 4): a progressbar that fills without a reload
    await page.evaluate(() => { window.progressNoReload = true; });
    const bar = page.getByRole('progressbar', { name: /^Progress/ });
    await page.waitForFunction(() => document.querySelector('[data-testid=eval-progress]')?.hasAttribute('aria-valuenow'), null, { timeout: 120000 });
    const now = async () => Number(await bar.getAttribute('aria-valuenow'));
    const first = await now();
    const max = Number(await bar.getAttribute('aria-valuemax'));
    const { body: ev2 } = await apiFetch(page, `/api/evaluations/${id}`);
    assert.equal(ev2.progress.unit, 'steps');
    assert.equal(max, ev2.progress.total, 'the bar\'s maximum is the API\'s total');
    assert.ok(first >= 0 && first <= max, `${first} of ${max}`);
    await page.waitForFunction(([v]) => Number(document.querySelector('[data-testid=eval-progress]').getAttribute('aria-valuenow')) > v,
      [first], { timeout: 60000 });
    const second = await now();
    assert.ok(second > first && second <= max, `the bar moved from ${first} to ${second} of ${max}`);
    assert.match(await bar.getAttribute('aria-valuetext'), new RegExp(`^[\\d,]+ of ${max.toLocaleString('en-US')} steps`));
    assert.equal(await page.evaluate(() => window.progressNoReload), true, 'the page was not reloaded');
    const v = await axe(page);
    assert.deepEqual(v, [], `the running evaluation with its progress bar:\n${formatViolations(v)}`);
    await shot(page, 'evaluation-progress');
  } finally {
    await apiFetch(page, `/api/evaluations/${id}/cancel`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{}' });
  }
});

test('dated chart axes and their hover legend read ISO dates in UTC: yyyy-mm-dd, HH:MM within a day', async () => {
  await open(page, '#/');
  const day = Date.UTC(2026, 0, 30) / 1000;
  // two charts of the dashboard's own chart module: 40 daily points, and 6 hours of minutes across midnight
  const got = await page.evaluate(async ([d0]) => {
    const { chart } = await import('/js/chart.js');
    const out = [];
    for (const [id, step, n] of [['daily', 86400, 40], ['intraday', 60, 360]]) {
      const x = Array.from({ length: n }, (_, i) => d0 - (id === 'intraday' ? 3 * 3600 : 0) + i * step);
      const c = chart({ title: `dated ${id}`, testid: `dated-${id}`, x, time: true, series: [{ label: 'v', values: x.map((_, i) => Math.sin(i / 7)) }] });
      document.querySelector('main').append(c.figure);
      const u = await c.ready;
      const px = u.axes[0]._splits.map((v) => u.valToPos(v, 'x'));
      const minGap = Math.min(...px.slice(1).map((p, i) => p - px[i]));
      out.push({ id, ticks: c.figure.dataset.xTicks, values: u.axes[0]._values, label: u.series[0].label, minGap });
    }
    return out;
  }, [day]);
  const [daily, intra] = got;
  assert.equal(daily.label, 'Time (UTC)');
  assert.ok(daily.values.length >= 2 && daily.values.every((l) => /^\d{4}-\d{2}-\d{2}$/.test(l)), `daily ticks: ${daily.values}`);
  assert.ok(intra.values.length >= 2, `intraday ticks: ${intra.values}`);
  assert.match(intra.values[0], /^\d{4}-\d{2}-\d{2}\n\d{2}:\d{2}$/, 'the first intraday tick carries its date');
  assert.ok(intra.values.every((l) => /^(\d{4}-\d{2}-\d{2}\n)?\d{2}:\d{2}$/.test(l)), `intraday ticks: ${intra.values}`);
  assert.ok(intra.values.some((l) => l.startsWith('2026-01-30\n')), `the new day is dated: ${intra.values}`);
  assert.ok(!/\d{1,2}\/\d{1,2}/.test(daily.ticks + intra.ticks), 'no m/d labels');
  for (const c of got) assert.ok(c.minGap >= 80, `${c.id} ticks ${c.minGap} px apart: room for a date between them`);
  // hovering shows the time under the cursor as yyyy-mm-dd HH:MM
  for (const id of ['daily', 'intraday']) {
    const fig = page.locator(`[data-testid=dated-${id}]`);
    const over = fig.locator('.u-over');
    await over.scrollIntoViewIfNeeded();
    const b = await over.boundingBox();
    await page.mouse.move(b.x + b.width * 0.3, b.y + b.height / 2);
    await page.mouse.move(b.x + b.width * 0.5, b.y + b.height / 2, { steps: 3 });
    const value = fig.locator('.u-legend .u-series:first-child .u-value');
    await page.waitForFunction((el) => /\d/.test(el.textContent), await value.elementHandle(), { timeout: 5000 });
    const text = await value.textContent();
    assert.match(text, /^2026-0[12]-\d{2} \d{2}:\d{2}$/, `${id} legend: ${text}`);
  }
  await shot(page, 'dated-axes');
  await page.evaluate(() => document.querySelectorAll('[data-testid^=dated-]').forEach((f) => f.remove()));
});

test('the overview lists the evaluation, run lists name the strategy', async (t) => {
  const name = `browser-bh-${stamp}`;
  if (made.runId) {
    await open(page, '#/runs');
    const row = page.locator('tr', { has: page.locator(`a[href="#/runs/${made.runId}"]`) });
    await row.waitFor();
    const cell = row.locator(`a[href="#/versions/${made.versionId}"]`);
    assert.equal((await cell.textContent()).trim(), name, 'the runs list names the strategy');
    assert.doesNotMatch(await row.textContent(), /version \d/, 'not a bare version number');
    await open(page, '#/');
    const latest = page.locator('section[aria-labelledby=ov-runs]');
    assert.equal((await latest.locator(`a[href="#/versions/${made.versionId}"]`).first().textContent()).trim(), name,
      'the overview names the strategy too');
  }
  if (!made.evaluationId) {
    t.skip('no evaluation was made in this session');
    return;
  }
  await open(page, '#/');
  const evals = page.locator('section[aria-labelledby=ov-evals]');
  await evals.locator(`a[href="#/evaluations/${made.evaluationId}"]`).waitFor();
  assert.equal(await evals.getByTestId('unavailable').count(), 0, 'the list is available');
  const row = evals.locator('tr', { has: page.locator(`a[href="#/evaluations/${made.evaluationId}"]`) });
  assert.match(await row.textContent(), new RegExp(`${made.challenge}.*completed`));
  await open(page, `#/challenges/${encodeURIComponent(made.challenge)}`);
  await page.getByRole('heading', { name: 'Recent evaluations' }).waitFor();
  await page.locator(`table a[href="#/evaluations/${made.evaluationId}"]`).waitFor();
});

test('the runs list fills its columns: runtime, the failed run\'s error code, verification re-runs marked; strategies show their kind', async () => {
  assert.ok(made.runId && made.failedRunId, 'needs the completed and the failed run');
  const { body: run } = await apiFetch(page, `/runs/${made.runId}`);
  const { body: failed } = await apiFetch(page, `/runs/${made.failedRunId}`);
  await open(page, '#/runs');
  const rowOf = (id) => page.locator('tr', { has: page.locator(`a[href="#/runs/${id}"]`) }).first();
  const cells = async (id) => rowOf(id).locator('td').allTextContents();
  const head = await page.locator('table.data thead th').allTextContents();
  assert.ok(head.includes('Runtime'), `a Runtime column (${head.join(', ')})`);
  const ok = await cells(made.runId);
  const rt = ok[head.indexOf('Runtime')];
  assert.notEqual(rt.trim(), '—', 'the completed run has its runtime in the list');
  assert.match(rt, /\d+ ms|\d+\.\d\d s/);
  assert.equal(rt.trim(), run.runtime_s < 1 ? `${Math.round(run.runtime_s * 1000)} ms` : `${run.runtime_s.toFixed(2)} s`);
  assert.ok((await rowOf(made.failedRunId).getByTestId('error-code').textContent()).includes(failed.error.code),
    'the failed run shows its error code in the list');
  const vrun = run.verification && run.verification.verification_run_id;
  if (vrun) {
    const mark = rowOf(vrun).getByTestId('verify-mark');
    assert.match(await mark.textContent(), new RegExp(`verifies ${made.runId.slice(0, 8)}`), 'the re-execution is marked as such');
    assert.equal(await rowOf(made.runId).getByTestId('verify-mark').count(), 0, 'the original is not');
  }
  // version ids are written as ids (#N), not as per-strategy numbers (vN)
  const strategyCell = (await rowOf(made.runId).locator('.strategy-cell').textContent()).trim();
  assert.ok(strategyCell.endsWith(`#${made.versionId}`) && !strategyCell.includes(`v${made.versionId}`), strategyCell);
  // the overview's latest runs too: every completed one has its runtime
  await open(page, '#/');
  const ov = page.locator('section[aria-labelledby=ov-runs] table.data');
  const ovHead = await ov.locator('thead th').allTextContents();
  const ovRows = await ov.locator('tbody tr').evaluateAll((trs) => trs.map((tr) => Array.from(tr.cells, (c) => c.textContent.trim())));
  const done = ovRows.filter((r) => r.includes('completed'));
  assert.ok(ovHead.includes('Runtime') && done.length > 0, `the overview lists completed runs with a Runtime column (${ovHead.join(', ')})`);
  for (const r of done) assert.match(r[ovHead.indexOf('Runtime')], /^\d+ ms$|^\d+\.\d\d s$|^\d+ min \d+ s$/, `a runtime in ${r.join(' | ')}`);
  // the strategy's own page numbers its versions: its first is v1, whatever its id
  await open(page, `#/strategies/${made.strategyId}`);
  assert.equal((await page.locator(`table a[href="#/versions/${made.versionId}"]`).first().textContent()).trim(), `#${made.versionId} (v1)`);
  await open(page, '#/strategies');
  const srow = page.locator('tr', { hasText: `browser-bh-${stamp}` }).first();
  assert.match(await srow.textContent(), /simulate/, 'the strategy\'s kind');
  await shot(page, 'runs-columns');
});

test('compare two runs: what differs, metric deltas against the baseline, overlaid curves, CSV export', { timeout: RUN_TIMEOUT + 60000 }, async () => {
  assert.ok(made.runId && made.smaRunId, 'needs the buy-and-hold run and the SMA run');
  // the SMA run was queued by the run-form test; wait until it is finished
  let sma;
  for (let i = 0; i < RUN_TIMEOUT / 500; i += 1) {
    sma = (await apiFetch(page, `/runs/${made.smaRunId}`)).body;
    if (!['queued', 'running'].includes(sma.status)) break;
    await page.waitForTimeout(500);
  }
  assert.equal(sma.status, 'completed', JSON.stringify(sma.error));
  const { body: bh } = await apiFetch(page, `/runs/${made.runId}`);
  await open(page, '#/runs');
  const link = page.getByTestId('compare-link');
  assert.equal(await link.getAttribute('aria-disabled'), 'true', 'nothing to compare yet');
  await page.getByLabel(`Select run ${made.runId.slice(0, 8)} to compare`).check();
  await page.getByLabel(`Select run ${made.smaRunId.slice(0, 8)} to compare`).check();
  assert.equal(await link.getAttribute('aria-disabled'), null);
  await link.click();
  await page.waitForFunction(() => document.body.dataset.ready === '/compare', null, { timeout: 15000 });
  const diff = page.getByRole('region', { name: 'Fields that differ between the runs (table)' });
  const fields = await diff.getByRole('rowheader').allTextContents();
  assert.ok(fields.includes('Strategy') && fields.includes('Code hash'), `differences: ${fields}`);
  assert.ok(!fields.includes('Dataset') || bh.dataset_version !== sma.dataset_version, 'equal rows are left out');
  // the delta of the SMA run against the buy-and-hold baseline, in percentage points
  const metrics = page.getByTestId('compare-metrics');
  const row = metrics.getByRole('row').filter({ has: page.getByRole('rowheader', { name: 'Total return', exact: true }) });
  const d = (sma.metrics.total_return - bh.metrics.total_return) * 100;
  const want = `${d > 0 ? '+' : d < 0 && d.toFixed(2) !== '-0.00' ? '−' : ''}${Math.abs(d).toLocaleString('en-US', { minimumFractionDigits: 2, maximumFractionDigits: 2 })} pp`;
  assert.ok((await row.textContent()).includes(want), `${await row.textContent()} has ${want}`);
  // both curves on one chart, every bar of the longer one
  await page.waitForFunction(() => Number(document.querySelector('[data-testid=compare-chart]')?.dataset.points) > 1, null, { timeout: 15000 });
  const [e1, e2] = await Promise.all([made.runId, made.smaRunId].map((id) => apiFetch(page, `/runs/${id}/equity`, { headers: { Accept: 'application/json' } })));
  assert.equal(Number(await page.getByTestId('compare-chart').getAttribute('data-points')), e1.body.equity.length + e2.body.equity.length,
    'every point of both curves');
  assert.equal(await page.locator('[data-testid=compare-chart] .u-legend .u-series').count(), 3, 'the x-axis and two curves');
  // dated like the run page when both curves cover every bar of one gap-free dataset
  const { body: ds } = await apiFetch(page, `/datasets/${encodeURIComponent(bh.dataset_version)}`);
  const n = e1.body.equity.length;
  const x0 = await page.evaluate(() => document.querySelector('[data-testid=compare-chart]').uplot.data[0][0]);
  if (sma.dataset_version === bh.dataset_version && e2.body.equity.length === n && ds.bars === n
      && ds.last_ts - ds.first_ts === (n - 1) * ds.interval_ms) {
    assert.equal(x0, ds.first_ts / 1000, 'bar 0 is the dataset\'s first timestamp');
    assert.match(await page.locator('[data-testid=compare-chart] .u-legend .u-series:first-child').textContent(), /Time/);
  } else {
    assert.equal(x0, 0, 'the bar index when the curves cannot be dated alike');
  }
  const dl = page.waitForEvent('download');
  await page.getByRole('button', { name: 'Export as CSV' }).click();
  const file = await dl;
  assert.equal(file.suggestedFilename(), 'runs-compared.csv');
  const csv = readFileSync(await file.path(), 'utf8').trim().split('\r\n');
  assert.equal(csv.length, 3, 'a header and one line a run');
  assert.ok(csv[0].startsWith('run_id,') && csv[0].includes('total_return'));
  assert.ok(csv[1].startsWith(made.runId) && csv[2].startsWith(made.smaRunId));
  const dlj = page.waitForEvent('download');
  await page.getByRole('button', { name: 'Export as JSON' }).click();
  const jfile = await dlj;
  assert.equal(jfile.suggestedFilename(), 'runs-compared.json');
  const runs = JSON.parse(readFileSync(await jfile.path(), 'utf8'));
  assert.deepEqual(runs.map((r) => r.run_id), [made.runId, made.smaRunId], 'both runs, in order');
  assert.equal(runs[1].metrics.total_return, sma.metrics.total_return, 'with their metrics as the API gave them');
  await shot(page, 'compare-runs');
  made.compare = `#/compare?runs=${made.runId},${made.smaRunId}`;
});

test('the leaderboard exports as CSV and JSON', async () => {
  await open(page, '#/leaderboards');
  const { body: lb } = await apiFetch(page, '/leaderboard');
  const rowsApi = Array.isArray(lb) ? lb : lb.rows || lb.leaderboard;
  let dl = page.waitForEvent('download');
  await page.getByRole('button', { name: 'Export as JSON' }).click();
  const json = JSON.parse(readFileSync(await (await dl).path(), 'utf8'));
  assert.deepEqual(json.map((r) => r.run_id), rowsApi.map((r) => r.run_id));
  dl = page.waitForEvent('download');
  await page.getByRole('button', { name: 'Export as CSV' }).click();
  const csv = readFileSync(await (await dl).path(), 'utf8').trim().split('\r\n');
  assert.equal(csv.length, rowsApi.length + 1);
  assert.ok(csv[0].split(',').includes('score'));
});

/** Every page the session has reached, for the accessibility and phone checks. */
function allRoutes() {
  const r = ['#/', '#/strategies', '#/strategies/new', '#/runs', '#/runs?status=failed', '#/leaderboards', '#/challenges', '#/data', '#/settings', '#/no-such-page'];
  if (made.strategyId) r.push(`#/strategies/${made.strategyId}`);
  if (made.versionId) r.push(`#/versions/${made.versionId}`);
  if (made.runId) r.push(`#/runs/${made.runId}`);
  if (made.positionsRunId) r.push(`#/runs/${made.positionsRunId}`);
  if (made.failedRunId) r.push(`#/runs/${made.failedRunId}`);
  if (made.challenge) r.push(`#/challenges/${encodeURIComponent(made.challenge)}`, `#/leaderboards/challenge/${encodeURIComponent(made.challenge)}`);
  if (made.evaluationId) r.push(`#/evaluations/${made.evaluationId}`);
  if (made.compare) r.push(made.compare);
  return r;
}

test('the Data page audits the cached window the stand-in filled: assets, coverage, gaps, age, version, hash', async () => {
  // tests/stages/60-browser.sh fetched BTC and ETH (ETH with gaps) for 60 days
  // from the local Binance stand-in into the stack's MANTIS_DATA_DIR.
  const { status, body } = await apiFetch(page, '/api/data-cache');
  assert.equal(status, 200);
  const w = body['60'];
  assert.equal(w.cached, true, 'the stage filled the 60-day window');
  await open(page, '#/data');
  const row = page.locator('tr[data-window="60"]');
  const text = await row.textContent();
  assert.match(text, /partial/, '2 of 29 assets is not complete');
  assert.ok(text.includes(`${w.assets} of ${w.expected_assets}`), text);
  assert.ok(text.includes(`${w.row_pct.toFixed(2)} %`), `coverage in percent: ${text}`);
  assert.match(text, /\d+ min|\d h/, 'its age');
  assert.ok(text.includes(w.version), `the version label: ${text}`);
  assert.equal(await row.locator('code.hash').getAttribute('title'), w.dataset_hash);
  assert.match(await page.locator('tr[data-window="90"]').textContent(), /not fetched/);
  const eth = page.locator('[data-testid="window-60"] tr[data-asset="ETH"]');
  const gaps = w.per_asset.ETH.expected - w.per_asset.ETH.rows;
  assert.ok(gaps > 0, 'the stand-in left gaps in ETH');
  assert.ok((await eth.textContent()).includes(gaps.toLocaleString('en-US')), 'the missing candles of ETH');
  const btc = page.locator('[data-testid="window-60"] tr[data-asset="BTC"]');
  assert.match(await btc.textContent(), /100\.00 %/);
  await shot(page, 'data-page');
});

test('Fetch data from the Data page against the local Binance stand-in: the progress bar moves, the window appears, delete removes it', { timeout: 240000 }, async () => {
  await open(page, '#/data');
  assert.match(await page.locator('tr[data-window="90"]').textContent(), /not fetched/);
  await page.getByLabel('Window', { exact: true }).selectOption('90');
  await page.getByLabel('Assets (optional)', { exact: true }).fill('BTC,ETH');
  await page.getByRole('button', { name: 'Fetch data' }).click();
  const bar = page.getByTestId('fetch-progress');
  await bar.waitFor({ timeout: 20000 });
  // sample the bar until the page redraws with the fetched window
  const seen = new Set();
  const steps = new Set();
  const row90 = page.locator('tr[data-window="90"]');
  for (let i = 0; i < 1800; i += 1) {
    const st = await bar.evaluate((b) => (b.isConnected ? `${b.value}/${b.max}/${b.dataset.rows}` : null)).catch(() => null);
    if (st) seen.add(st);
    const step = await page.getByTestId('fetch-step').textContent().catch(() => '');
    if (step) steps.add(step);
    if (/partial|complete/.test(await row90.textContent().catch(() => ''))) break;
    await page.waitForTimeout(100);
  }
  assert.match(await row90.textContent(), /partial/, 'the 90-day window is cached (2 of 29 assets)');
  assert.ok(seen.size >= 2, `the progress moved: ${[...seen].join(' → ')}`);
  // counts read as counts (grouped), and the assets counted once (in the label above)
  assert.ok(steps.size > 0, 'a step was shown');
  for (const t of steps) {
    assert.doesNotMatch(t, /\d{4}/, `an ungrouped count in "${t}"`);
    assert.doesNotMatch(t, /assets/, `the assets counted again in "${t}"`);
  }
  const { body } = await apiFetch(page, '/api/data-cache/status?days_back=90');
  assert.equal(body.status, 'completed');
  assert.equal(body.assets_done, 2);
  assert.ok((await row90.textContent()).includes(body.dataset_version), 'the new version in the table');
  await shot(page, 'data-fetched');
  // delete it, confirmed
  await page.getByRole('button', { name: 'Delete the 90-day window' }).click();
  const dlg = page.getByRole('dialog', { name: 'Delete the 90-day window?' });
  await dlg.waitFor();
  assert.match(await dlg.getByRole('button', { name: 'Delete' }).getAttribute('class'), /danger/, 'styled as destructive');
  await dlg.getByRole('button', { name: 'Delete' }).click();
  await page.waitForFunction(() => /not fetched/.test(document.querySelector('tr[data-window="90"]')?.textContent || ''), null, { timeout: 15000 });
  const { body: cache } = await apiFetch(page, '/api/data-cache');
  assert.deepEqual(cache['90'], { cached: false });
});

test('Settings: the CoinGlass key is set, shown masked only, and removed with a confirmation', async () => {
  await open(page, '#/settings');
  const panel = page.getByTestId('set-coinglass-panel');
  await panel.getByTestId('set-coinglass-state').waitFor();
  if ((await panel.getByTestId('set-coinglass-state').textContent()) === 'set') {
    await panel.getByRole('button', { name: 'Remove the key' }).click();
    await page.getByRole('dialog', { name: 'Remove the CoinGlass API key?' }).getByRole('button', { name: 'Remove' }).click();
    await page.waitForFunction(() => document.querySelector('[data-testid=set-coinglass-state]')?.textContent === 'not set');
  }
  const key = `cgKEY-${stamp}-0123456789abcdef`;
  await panel.getByLabel('Set the key').fill(key);
  await panel.getByRole('button', { name: 'Save' }).click();
  await page.waitForFunction(() => document.querySelector('[data-testid=set-coinglass-state]')?.textContent === 'set');
  const { body: st } = await apiFetch(page, '/api/coinglass-key');
  assert.equal(st.set, true);
  assert.equal(await panel.getByTestId('set-coinglass-mask').textContent(), st.masked, 'the mask the API gives');
  assert.ok(!(await page.locator('body').textContent()).includes(key), 'the key itself is nowhere on the page');
  assert.equal(await panel.getByLabel('Replace the key').inputValue(), '', 'the field is cleared');
  await shot(page, 'settings-keys');
  await panel.getByRole('button', { name: 'Remove the key' }).click();
  const dlg = page.getByRole('dialog', { name: 'Remove the CoinGlass API key?' });
  assert.match(await dlg.getByRole('button', { name: 'Remove' }).getAttribute('class'), /danger/);
  await dlg.getByRole('button', { name: 'Remove' }).click();
  await page.waitForFunction(() => document.querySelector('[data-testid=set-coinglass-state]')?.textContent === 'not set');
  assert.equal((await apiFetch(page, '/api/coinglass-key')).body.set, false);
});

test('Settings: the Anthropic key is the caller\'s own or the admin\'s default, masked only, removed with a confirmation', async () => {
  await open(page, '#/settings');
  const panel = page.getByTestId('set-anthropic-panel');
  const state = () => page.evaluate(() => document.querySelector('[data-testid=set-anthropic-state]')?.textContent);
  await panel.getByTestId('set-anthropic-state').waitFor();
  // start from neither key (the API, not the page: this test is about the page below)
  await apiFetch(page, '/api/anthropic-key', { method: 'DELETE' });
  await apiFetch(page, '/api/anthropic-key?default=1', { method: 'DELETE' });
  await open(page, '#/settings');
  await panel.getByTestId('set-anthropic-state').waitFor();
  assert.equal(await state(), 'not set');
  // a malformed key: the API's field error, nothing stored
  await panel.getByLabel('Set the key').fill('not-an-anthropic-key');
  await panel.getByRole('button', { name: 'Save' }).click();
  await panel.getByRole('alert').filter({ hasText: 'invalid_field' }).waitFor();
  assert.equal((await apiFetch(page, '/api/anthropic-key')).body.set, false);
  // the caller's own key
  const key = `sk-ant-api03-${stamp}-Own_key-0123456789abcdef`;
  await panel.getByLabel('Set the key').fill(key);
  await panel.getByRole('button', { name: 'Save' }).click();
  await page.waitForFunction(() => document.querySelector('[data-testid=set-anthropic-state]')?.textContent === 'set');
  const { body: st } = await apiFetch(page, '/api/anthropic-key');
  assert.deepEqual([st.set, st.source], [true, 'own']);
  assert.equal(await panel.getByTestId('set-anthropic-mask').textContent(), st.masked, 'the mask the API gives');
  assert.equal(await panel.getByTestId('set-anthropic-source').textContent(), 'your own key');
  assert.ok(!(await page.locator('body').textContent()).includes(key), 'the key itself is nowhere on the page');
  assert.equal(await panel.getByLabel('Replace the key').inputValue(), '', 'the field is cleared');
  await shot(page, 'settings-anthropic-key');
  await panel.getByRole('button', { name: 'Remove the key' }).click();
  const dlg = page.getByRole('dialog', { name: 'Remove the Anthropic API key?' });
  assert.match(await dlg.getByRole('button', { name: 'Remove' }).getAttribute('class'), /danger/);
  await dlg.getByRole('button', { name: 'Remove' }).click();
  await page.waitForFunction(() => document.querySelector('[data-testid=set-anthropic-state]')?.textContent === 'not set');
  assert.equal((await apiFetch(page, '/api/anthropic-key')).body.set, false);
  // an admin stores the server's default
  const def = `sk-ant-admin-${stamp}-Default-fedcba9876543210`;
  await panel.getByLabel('Set the key').fill(def);
  await panel.getByLabel(/server’s default/).check();
  await panel.getByRole('button', { name: 'Save' }).click();
  await page.waitForFunction(() => document.querySelector('[data-testid=set-anthropic-source]')?.textContent?.startsWith('the server'));
  const { body: d } = await apiFetch(page, '/api/anthropic-key');
  assert.deepEqual([d.set, d.source], [true, 'default']);
  assert.equal(await panel.getByRole('button', { name: 'Remove the key', exact: true }).count(), 0, 'no own key to remove');
  await panel.getByRole('button', { name: 'Remove the default key' }).click();
  await page.getByRole('dialog', { name: 'Remove the default Anthropic API key?' }).getByRole('button', { name: 'Remove' }).click();
  await page.waitForFunction(() => document.querySelector('[data-testid=set-anthropic-state]')?.textContent === 'not set');
  assert.equal((await apiFetch(page, '/api/anthropic-key')).body.set, false);
});

/** shotName(route): a file name for a route. */
const shotName = (route) => route.replace(/^#\/?/, '').replace(/[^A-Za-z0-9-]+/g, '_').replace(/^_|_$/g, '').slice(0, 60) || 'overview';

test('axe-core finds no violations on any page (laptop), screenshots of each', async (t) => {
  for (const route of allRoutes()) {
    await t.test(route, async () => {
      await open(page, route);
      await page.waitForTimeout(300); // charts and late panels
      const v = await axe(page);
      await shot(page, `laptop-${shotName(route)}`);
      assert.equal(v.length, 0, `axe violations on ${route}:\n${formatViolations(v)}`);
    });
  }
});

test('axe-core finds no violations in the dialogs', async () => {
  await open(page, '#/settings');
  await page.getByLabel('Label (optional)').fill(`browser-${stamp}`);
  await page.getByRole('button', { name: 'Create a new token' }).click();
  const secret = page.getByTestId('new-token');
  await secret.waitFor();
  const tok = await secret.inputValue();
  assert.match(tok, /^at_[A-Za-z0-9_-]{43}$/, 'the new token is shown');
  let v = await axe(page);
  assert.equal(v.length, 0, formatViolations(v));
  await shot(page, 'settings-new-token');
  // it works at once, and revoking it from the page stops it
  const me = await page.evaluate(async (tk) => (await fetch('/api/me', { headers: { Authorization: `Bearer ${tk}` } })).status, tok);
  assert.equal(me, 200);
  const row = page.locator('table.data tbody tr', { hasText: tok.slice(0, 10) });
  assert.match(await row.textContent(), new RegExp(`browser-${stamp}`), 'the list shows the label');
  await row.getByRole('button', { name: /Revoke/ }).click();
  const dlg = page.getByRole('dialog', { name: 'Revoke this token?' });
  await dlg.waitFor();
  v = await axe(page);
  assert.equal(v.length, 0, formatViolations(v));
  await dlg.getByRole('button', { name: 'Revoke', exact: true }).click();
  await row.getByText('revoked').waitFor();
  const after = await page.evaluate(async (tk) => (await fetch('/api/me', { headers: { Authorization: `Bearer ${tk}` } })).status, tok);
  assert.equal(after, 401, 'a revoked token is refused');
});

test('a phone-sized screen never scrolls sideways; screenshots of each page', async (t) => {
  const phone = await launch({ viewport: PHONE });
  const p = await phone.context.newPage();
  const probs = watch(p);
  try {
    await open(p, '#/', TOKEN ? `?token=${encodeURIComponent(TOKEN)}` : '');
    for (const route of allRoutes()) {
      await t.test(route, async () => {
        await open(p, route);
        await p.waitForTimeout(300);
        const over = await horizontalOverflow(p);
        await shot(p, `phone-${shotName(route)}`);
        assert.ok(over <= 0, `${route} is ${over}px wider than the phone screen`);
        const v = await axe(p);
        assert.equal(v.length, 0, `axe violations on ${route} (phone):\n${formatViolations(v)}`);
      });
    }
    await t.test('the dataset leaderboard shows the Score column without scrolling sideways', async () => {
      await open(p, '#/leaderboards');
      const th = p.locator('table.data thead th', { hasText: /^Score/ }).first();
      const wrap = p.locator('.table-wrap', { has: th });
      const [a, b] = [await th.boundingBox(), await wrap.boundingBox()];
      assert.ok(a && b && a.x + a.width <= b.x + b.width + 1 && a.x + a.width <= PHONE.width,
        `Score header ends at ${a && a.x + a.width} px, the table's visible box at ${b && b.x + b.width} px`);
    });
    if (made.compare) {
      await t.test('the compared runs\' metrics show the baseline\'s values beside their names without scrolling sideways', async () => {
        await open(p, made.compare);
        const sec = p.getByTestId('compare-metrics');
        const th = sec.locator('table.data thead th', { hasText: /\(baseline\)/ });
        const [a, b] = [await th.boundingBox(), await sec.locator('.table-wrap').boundingBox()];
        assert.ok(a && b && a.x + a.width <= b.x + b.width + 1,
          `the baseline column ends at ${a && a.x + a.width} px, the table's visible box at ${b && b.x + b.width} px`);
      });
    }
    assert.deepEqual(probs, [], 'no CSP violations or page errors on the phone');
  } finally {
    await phone.close();
  }
});

test('no CSP violations or uncaught errors during the whole session', () => {
  assert.deepEqual(problems, []);
});

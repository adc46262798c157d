// An agent's detail page with content, in Debian's Chromium against the real
// stack (issue 17): an agent imported through POST /api/agents/import (the
// mantis-agent-export-v1 bundle of docs/agents.md) with two iterations,
// their analysis (a feature report, hypothesis, what worked and failed),
// notes.txt and STATE.md. The page shows the analysis of the chosen
// iteration (the feature report as a table), both text panels with their
// content, the best iteration marked in the table and on the metric chart
// (the mark's point is at the best iteration and nowhere else), and the
// chart's iteration axis ticks only whole iterations (two iterations once
// drew a "1.5"). axe-core clean at laptop and phone width. At phone width
// the agents list shows the agent (with its challenge), its status and its
// best sealed score without scrolling its table sideways.
//
// An imported agent has no best iteration of its own (its holdout numbers
// are not this server's sealed scores, docs/agents.md); the runner writes
// the sealed scores and the best iteration when it scores one
// (agents.test.mjs waits minutes for that). Here one UPDATE on the stack's
// MariaDB (DATABASE_URL of the stack's stack.env) stands in for that
// scoring, so the page is tested on a known best iteration.
//
// Run by tests/stages/60-browser.sh (AGENTTEST_URL, AGENTTEST_TOKEN: an
// admin; DATABASE_URL).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import {
  BASE, launch, open, axe, shot, watch, formatViolations, horizontalOverflow, apiFetch, PHONE, cellsCut,
} from './lib.mjs';

const TOKEN = process.env.AGENTTEST_TOKEN || '';
const stamp = Date.now().toString(36);
const NOTES = `notes of ${stamp}: ret_60 carries the signal; volume is noise`;
const STATE = `# STATE ${stamp}\n\n- best: iteration 1\n- next: rsi_14 on the 4h bars`;
const ANALYSIS = {
  hypothesis: `Momentum over 60 minutes predicts the next hour (${stamp})`,
  what_changed: 'added a volume z-score',
  what_worked: 'ret_60 kept its rank across windows',
  what_failed: 'the volume z-score added only noise',
  feature_report: [
    { name: 'ret_60', description: '60-minute log return', importance_rank: 1,
      predictive_power: { method: 'spearman', value: 0.0812, p_value: 0.0004, n_samples: 4200 } },
    { name: 'vol_z', description: 'volume z-score over a day', importance_rank: 2,
      predictive_power: { method: 'spearman', value: 0.0031, p_value: 0.61, n_samples: 4200 } },
  ],
};

let browser;
let page;
let problems;
let agentId = null;

/** sql(q): one statement on the stack's MariaDB, as scripts/stack.sh's account. */
function sql(q) {
  const u = new URL(process.env.DATABASE_URL || '');
  const socket = u.searchParams.get('socket');
  assert.ok(socket, 'DATABASE_URL names the stack\'s MariaDB socket');
  execFileSync('mariadb', ['--no-defaults', '--protocol=socket', `--socket=${socket}`, '-u', decodeURIComponent(u.username),
    u.pathname.replace(/^\//, ''), '-e', q], { env: { ...process.env, MYSQL_PWD: decodeURIComponent(u.password) }, timeout: 60000 });
}

before(async () => {
  assert.ok(BASE, 'AGENTTEST_URL must point at a running stack');
  browser = await launch();
  page = await browser.context.newPage();
  problems = watch(page);
  await open(page, '#/', TOKEN ? `?token=${encodeURIComponent(TOKEN)}` : '');
  const bundle = {
    format: 'mantis-agent-export-v1',
    exported_at: '2026-12-01T00:00:00Z',
    agent: {
      config: { challenge: 'ETH-1H-BINARY', goal: `analysis view ${stamp}`, min_iterations: 1, max_iterations: 2 },
      iterations: [
        { iteration: 1, metrics: { mean_auc: 0.55 }, analysis: { ...ANALYSIS, hypothesis: `first try ${stamp}`, feature_report: [] } },
        { iteration: 2, metrics: { mean_auc: 0.61 }, analysis: ANALYSIS },
      ],
    },
    code: { 1: 'class TechFeaturizer:\n    pass\n', 2: 'class TechFeaturizer:\n    window = 60\n' },
    notes: NOTES,
    state_md: STATE,
  };
  const r = await apiFetch(page, '/api/agents/import', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(bundle) });
  assert.equal(r.status, 201, JSON.stringify(r.body));
  agentId = r.body.id;
  // the runner's scoring, stood in for: sealed scores, iteration 1 the best (not the latest)
  sql(`UPDATE agent_iterations SET holdout_score = IF(iteration = 1, 0.63, 0.57) WHERE agent_id = '${agentId}'`);
  sql(`UPDATE agents SET best_iteration = 1, best_score = 0.63 WHERE id = '${agentId}'`);
});

after(async () => {
  if (agentId && page) await apiFetch(page, `/api/agents/${agentId}/delete`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{}' }).catch(() => {});
  if (browser) await browser.close();
});

/** chartState(p) -> what the iteration chart drew: x values, the best series, the x-axis ticks. */
async function chartState(p) {
  await p.waitForFunction(() => document.querySelector('[data-testid="iteration-chart"]')?.uplot?.axes?.[0]?._splits, null, { timeout: 20000 });
  return p.evaluate(() => {
    const f = document.querySelector('[data-testid="iteration-chart"]');
    const u = f.uplot;
    const best = u.series.findIndex((s) => s.label === 'Best iteration');
    return {
      x: Array.from(u.data[0]), best: Array.from(u.data[best]), splits: Array.from(u.axes[0]._splits),
      yTicks: Array.from(u.axes[1]._values || [], String), ticks: f.dataset.xTicks, bestAttr: f.dataset.bestIteration, label: f.querySelector('canvas').getAttribute('aria-label'),
    };
  });
}

test('the analysis of an iteration: hypothesis, what worked and failed, the feature report as a table', async () => {
  await open(page, `#/agents/${agentId}`);
  await page.locator('[data-testid="iterations"] tr[data-iteration="2"]').waitFor();
  // the latest iteration is chosen at first
  assert.equal(await page.getByTestId('code-iteration').inputValue(), '2');
  const an = page.getByTestId('analysis');
  await an.waitFor();
  const text = await an.innerText();
  for (const t of [ANALYSIS.hypothesis, ANALYSIS.what_worked, ANALYSIS.what_failed, ANALYSIS.what_changed]) assert.ok(text.includes(t), `${t} in:\n${text}`);
  for (const hd of ['Hypothesis', 'What worked', 'What failed']) assert.equal(await an.getByRole('heading', { name: hd }).count(), 1, hd);
  const tbl = an.getByRole('table', { name: 'Feature report' });
  const rows = await tbl.locator('tbody tr').evaluateAll((trs) => trs.map((tr) => Array.from(tr.cells, (c) => c.innerText.trim())));
  assert.equal(rows.length, 2);
  assert.deepEqual(rows[0].slice(0, 4), ['1', 'ret_60', '60-minute log return', 'spearman']);
  assert.equal(rows[1][1], 'vol_z');
  assert.match(rows[0][4], /^0\.081/);
  const heads = await tbl.locator('thead th').allInnerTexts();
  assert.deepEqual(heads.map((x) => x.trim()), ['Rank', 'Feature', 'Description', 'Method', 'Power', 'p-value', 'Samples']);
  // another iteration: its own analysis, and it has no feature report
  await page.getByTestId('code-iteration').selectOption('1');
  await page.getByTestId('analysis').filter({ hasText: `first try ${stamp}` }).waitFor();
  assert.match(await page.getByTestId('analysis').innerText(), /No feature report/);
  assert.deepEqual(problems, []);
});

test('notes.txt and STATE.md show their content', async () => {
  await open(page, `#/agents/${agentId}`);
  const notes = page.getByTestId('agent-notes').locator('pre');
  const state = page.getByTestId('agent-state').locator('pre');
  await notes.waitFor();
  await state.waitFor();
  assert.equal(await notes.innerText(), NOTES);
  assert.equal(await state.innerText(), STATE);
  assert.equal(await page.getByTestId('agent-notes').getByRole('heading', { name: 'notes.txt' }).count(), 1);
  assert.equal(await page.getByTestId('agent-state').getByRole('heading', { name: 'STATE.md' }).count(), 1);
  assert.deepEqual(problems, []);
});

test('the best iteration is marked in the table and on the chart, whose iteration ticks are whole numbers', async () => {
  await open(page, `#/agents/${agentId}`);
  const table = page.getByTestId('iterations');
  await table.locator('tr[data-iteration="2"]').waitFor();
  assert.equal(await table.locator('tr[data-iteration="1"] [data-testid="best-mark"]').count(), 1);
  assert.equal(await table.locator('tr[data-iteration="2"] [data-testid="best-mark"]').count(), 0);
  const c = await chartState(page);
  assert.deepEqual(c.x, [1, 2]);
  // the green mark sits on iteration 1 (its sealed score) and nowhere else
  assert.deepEqual(c.best, [0.63, null]);
  assert.equal(c.bestAttr, '1');
  assert.match(c.label, /The best is iteration 1\b/);
  // two iterations: ticks at 1 and 2 only, never 1.5
  assert.ok(c.splits.length >= 2 && c.splits.every((v) => Number.isInteger(v)), `x splits ${c.splits}`);
  assert.ok(c.splits.includes(1) && c.splits.includes(2), `x splits ${c.splits}`);
  assert.ok(c.ticks.split(' ').every((t) => /^\d+$/.test(t)), `x tick labels ${c.ticks}`);
  // the value axis writes its ticks with one number of decimals (0.560, 0.565, not 0.56, 0.565)
  const decimals = new Set(c.yTicks.map((t) => (t.split('.')[1] || '').length));
  assert.ok(c.yTicks.length >= 2 && decimals.size === 1, `y tick labels ${c.yTicks}`);
  // the count under the chart says what it counts
  const figText = await page.getByTestId('iteration-chart').innerText();
  assert.match(figText, /\b2 iterations\b/);
  assert.doesNotMatch(figText, /\bpoints\b/, 'iterations, not "points"');
  // the table reads the challenge's metric by name, four decimals in every row,
  // the sealed score next to the iteration (a phone shows it without scrolling)
  const heads = await table.locator('table.data thead th').allInnerTexts();
  assert.ok(heads.includes('Dev AUC (seen by the agent)') && heads.includes('Sealed holdout AUC'), heads.join(', '));
  const sealed = await table.locator('tr[data-iteration]').evaluateAll((trs) => trs.map((tr) => tr.cells[1].innerText.trim()));
  assert.deepEqual(sealed, ['0.6300', '0.5700']);
  assert.deepEqual(problems, []);
});

test('the code of an iteration diffs against the best iteration, not only the previous one', async () => {
  // iteration 1 is the best (set in before()), 2 the latest: against the
  // best, iteration 2 shows exactly its one changed line, and the best
  // itself shows its code as it is.
  await open(page, `#/agents/${agentId}`);
  await page.locator('[data-testid="iterations"] tr[data-iteration="2"]').waitFor();
  await page.getByTestId('code-iteration').selectOption('2');
  await page.getByTestId('code-against').selectOption('best');
  const diff = page.getByTestId('code-diff');
  await diff.waitFor();
  assert.equal(await diff.getAttribute('aria-label'), 'Changes from iteration 1 to 2');
  assert.deepEqual(await diff.locator('del').allInnerTexts(), ['-     pass\n']);
  assert.deepEqual(await diff.locator('ins').allInnerTexts(), ['+     window = 60\n']);
  await page.getByTestId('code-iteration').selectOption('1');
  const text = page.getByTestId('code-text');
  await text.waitFor();
  assert.equal(await text.innerText(), 'class TechFeaturizer:\n    pass\n');
  assert.match(await page.getByTestId('code').innerText(), /This is the best iteration/);
  assert.deepEqual(problems, []);
});

test('the detail with content is axe-clean at laptop and phone width, without sideways scrolling', async () => {
  await open(page, `#/agents/${agentId}`);
  await page.getByTestId('agent-notes').locator('pre').waitFor();
  await chartState(page);
  let v = await axe(page);
  assert.deepEqual(v, [], `laptop:\n${formatViolations(v)}`);
  await shot(page, 'agent-analysis-laptop');
  const phone = await launch({ viewport: PHONE });
  try {
    const p = await phone.context.newPage();
    const probs = watch(p);
    await open(p, `#/agents/${agentId}`, TOKEN ? `?token=${encodeURIComponent(TOKEN)}` : '');
    await p.getByTestId('agent-notes').locator('pre').waitFor();
    await p.getByTestId('analysis').waitFor();
    const c = await chartState(p);
    assert.ok(c.splits.every((x) => Number.isInteger(x)), `phone x splits ${c.splits}`);
    v = await axe(p);
    assert.deepEqual(v, [], `phone:\n${formatViolations(v)}`);
    assert.ok(await horizontalOverflow(p) <= 1, 'the agent detail scrolls sideways at phone width');
    // the sealed score's column is in view without scrolling the table sideways
    const sealedTh = p.locator('table.data thead th', { hasText: /^Sealed holdout/ });
    const wrap = p.getByTestId('iterations').locator('.table-wrap', { has: sealedTh });
    const th = wrap.locator('table.data thead th', { hasText: /^Sealed holdout/ });
    const [a, b] = [await th.boundingBox(), await wrap.boundingBox()];
    assert.ok(a && b && a.x + a.width <= b.x + b.width + 1, `the Sealed column ends at ${a && a.x + a.width} px, the table's box at ${b && b.x + b.width} px`);
    await shot(p, 'agent-analysis-phone');
    // the agents list: the agent with its challenge, its status and its best
    // sealed score in view without scrolling the table sideways (issue 17)
    await open(p, '#/agents');
    const list = p.getByTestId('agent-list');
    const listRow = list.locator(`tr[data-agent="${agentId}"]`);
    await listRow.waitFor();
    assert.deepEqual(await cellsCut(list.locator('.table-wrap'), [/^Agent$/, /^Status$/, /^Best sealed score$/], listRow), [],
      'the key columns of the agents list at phone width');
    assert.match(await listRow.locator('[data-testid=agent-challenge]').innerText(), /^ETH-1H-BINARY$/);
    assert.match(await listRow.innerText(), /0\.6300/, 'the best sealed score');
    assert.ok(await horizontalOverflow(p) <= 1, 'the agents list scrolls sideways at phone width');
    v = await axe(p);
    assert.deepEqual(v, [], `agents list, phone:\n${formatViolations(v)}`);
    await shot(p, 'agents-list-phone');
    assert.deepEqual(probs, []);
  } finally {
    await phone.close();
  }
  assert.deepEqual(problems, []);
});

// The Agents pages in Debian's Chromium against the real stack (the runner
// runs the built-in research agent in its sandbox and scores it): the
// launch form shows the API's field errors beside their fields; an agent
// launched from the form gets its first iteration on the detail page
// without a reload (the page polls), with the chart, the code and the
// list's figures; pause, resume and stop (confirmed, styled dangerous);
// axe-core clean on both pages at laptop and phone width, no sideways
// scrolling, screenshots into $AGENTTEST_TEST_OUT/screenshots/.
//
// The tests run in order and share the agent they launched. Run by
// tests/stages/60-browser.sh (AGENTTEST_URL, AGENTTEST_TOKEN: an admin).
// An iteration is two walk-forward scorings of 60 days of minute bars:
// minutes on a loaded machine, so the wait for it is generous and waits
// for the state, never for a time.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import {
  BASE, launch, open, axe, shot, watch, formatViolations, horizontalOverflow, apiFetch, PHONE,
} from './lib.mjs';

const TOKEN = process.env.AGENTTEST_TOKEN || '';
const ITERATION_WAIT = 1500000; // 25 min: one iteration under the heaviest load seen
const stamp = Date.now().toString(36);

let browser;
let page;
let problems;
let agentId = null;

before(async () => {
  assert.ok(BASE, 'AGENTTEST_URL must point at a running stack');
  browser = await launch();
  page = await browser.context.newPage();
  problems = watch(page);
  await open(page, '#/', TOKEN ? `?token=${encodeURIComponent(TOKEN)}` : '');
});

after(async () => {
  // an agent left running would hold the stack's runner for nothing
  if (agentId && page) await apiFetch(page, `/api/agents/${agentId}/stop`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{}' }).catch(() => {});
  if (browser) await browser.close();
});

/** statusText() -> the status word in the detail page's heading. */
function statusText() {
  return page.getByTestId('agent-live').innerText();
}

test('the launch form shows the API\'s field errors beside their fields', async () => {
  await open(page, '#/agents');
  assert.ok(await page.getByRole('link', { name: 'Agents' }).first().isVisible());
  // the challenge's description and metric follow the choice
  assert.match(await page.getByTestId('challenge-about').innerText(), /Metric:/);
  await page.getByLabel('Goal').fill(`browser agent ${stamp}`);
  await page.getByLabel('Minimum iterations').fill('7');
  await page.getByLabel('Maximum iterations').fill('3');
  await page.getByRole('button', { name: 'Launch agent' }).click();
  await page.getByTestId('launch-error').filter({ hasText: 'exceeds' }).waitFor();
  const min = page.getByLabel('Minimum iterations');
  assert.equal(await min.getAttribute('aria-invalid'), 'true');
  const described = await min.getAttribute('aria-describedby');
  const texts = await page.evaluate((ids) => ids.split(' ').map((i) => document.getElementById(i).textContent), described);
  assert.ok(texts.some((t) => /min_iterations \(7\) exceeds max_iterations \(3\)/.test(t)), texts.join(' | '));
  // a range the API refuses: the message names days_back and sits by it
  await page.getByLabel('Minimum iterations').fill('1');
  await page.getByLabel('Days of history').fill('30');
  await page.getByRole('button', { name: 'Launch agent' }).click();
  await page.getByTestId('launch-error').filter({ hasText: 'days_back' }).waitFor();
  assert.equal(await page.getByLabel('Days of history').getAttribute('aria-invalid'), 'true');
  assert.equal(await min.getAttribute('aria-invalid'), null, 'the earlier error is cleared');
  assert.deepEqual(problems, []);
});

test('launch a built-in agent from the form and watch its first iteration arrive without a reload', { timeout: ITERATION_WAIT + 120000 }, async () => {
  await open(page, '#/agents');
  await page.getByLabel('Goal').fill(`browser agent ${stamp}: 1-hour momentum on ETH`);
  await page.getByLabel('Driver').selectOption('builtin');
  // 20 iterations: the agent is still at work when the next test pauses
  // and stops it (the after hook stops it in any case); a kept set's
  // iteration takes only seconds (its scores are reused), so a few would
  // be over before that test starts
  await page.getByLabel('Minimum iterations').fill('20');
  await page.getByLabel('Maximum iterations').fill('20');
  await page.getByLabel('Days of history').fill('60');
  await page.getByRole('button', { name: 'Launch agent' }).click();
  const h = await page.waitForFunction(() => {
    const m = /^\/agents\/([0-9a-f-]{36})$/.exec(document.body.dataset.ready || '');
    return m ? m[1] : null;
  }, null, { timeout: 20000 });
  agentId = await h.jsonValue();
  // a mark in the page's memory: a reload would lose it
  await page.evaluate(() => { window.agentsNoReload = true; });
  // the list, open in a second tab, follows by itself too (ETag polling)
  const listTab = await browser.context.newPage();
  const listProblems = watch(listTab);
  await open(listTab, '#/agents');
  await listTab.evaluate(() => { window.agentsNoReload = true; });
  const listRow = listTab.locator(`[data-testid="agent-list"] tr[data-agent="${agentId}"]`);
  await listRow.waitFor();
  assert.match(await listRow.innerText(), /ETH-1H-BINARY/);
  assert.match(await page.getByTestId('agent-summary').innerText(), /ETH-1H-BINARY/);
  // live activity lines of the iteration in flight (iteration 1, or 2 if
  // 1 passed between two polls: min_iterations 20 keeps one running)
  await page.locator('[data-testid="activity"] ol.activity li').first().waitFor({ timeout: ITERATION_WAIT });
  // the first iteration's row appears by itself
  await page.locator('[data-testid="iterations"] tr[data-iteration="1"]').waitFor({ timeout: ITERATION_WAIT });
  assert.equal(await page.evaluate(() => window.agentsNoReload), true, 'the page was not reloaded');
  const row = await page.locator('[data-testid="iterations"] tr[data-iteration="1"]').innerText();
  assert.match(row, /\d\.\d/, `the row shows figures: ${row}`);
  // the chart has points, the code of iteration 1 is shown
  await page.waitForFunction(() => Number(document.querySelector('[data-testid="iteration-chart"]')?.dataset.points) > 0, null, { timeout: 20000 });
  await page.getByTestId('code-text').waitFor();
  assert.match(await page.getByTestId('code-text').innerText(), /def |class /);
  // the API says the same as the page
  const d = await apiFetch(page, `/api/agents/${agentId}`);
  assert.equal(d.status, 200);
  assert.ok(d.body.iteration_count >= 1);
  // the list tab shows the iteration (x / 20 done) without a reload
  await listTab.waitForFunction((aid) => {
    const r = document.querySelector(`[data-testid="agent-list"] tr[data-agent="${aid}"]`);
    return r && /\b([1-9]|1\d|20) \/ 20\b/.test(r.innerText);
  }, agentId, { timeout: 60000 });
  assert.equal(await listTab.evaluate(() => window.agentsNoReload), true, 'the list was not reloaded');
  await listTab.close();
  assert.deepEqual(listProblems, []);
  assert.deepEqual(problems, []);
});

test('pause, resume and stop from the detail page; stop is confirmed and dangerous', { timeout: 600000 }, async () => {
  assert.ok(agentId, 'the launch test made an agent');
  await open(page, `#/agents/${agentId}`);
  // iteration 1 is scored and min_iterations is 20: the agent is at work
  assert.match(await statusText(), /running|starting/);
  await page.getByRole('button', { name: 'Pause', exact: true }).click();
  // paused between iterations, or a pause requested of the running one
  await page.waitForFunction(() => /paused|pause requested/.test(document.querySelector('[data-testid="agent-live"]')?.innerText || ''), null, { timeout: 60000 });
  assert.equal((await apiFetch(page, `/api/agents/${agentId}`)).body.paused, true);
  await page.getByRole('button', { name: 'Resume', exact: true }).click();
  await page.waitForFunction(() => !/paused|pause requested/.test(document.querySelector('[data-testid="agent-live"]')?.innerText || ''), null, { timeout: 60000 });
  assert.equal((await apiFetch(page, `/api/agents/${agentId}`)).body.paused, false);
  const stop = page.getByRole('button', { name: 'Stop', exact: true });
  assert.match(await stop.getAttribute('class'), /danger/);
  assert.match(await page.getByRole('button', { name: 'Delete', exact: true }).getAttribute('class'), /danger/);
  await stop.click();
  const dlg = page.locator('dialog#confirm');
  await dlg.waitFor();
  assert.match(await dlg.locator('#confirm-yes').getAttribute('class'), /danger/);
  // cancelling leaves it as it was
  await dlg.locator('#confirm-no').click();
  assert.equal(await stop.isVisible(), true);
  await stop.click();
  await dlg.locator('#confirm-yes').click();
  await page.waitForFunction(() => /stopped/.test(document.querySelector('[data-testid="agent-live"]')?.innerText || ''), null, { timeout: 60000 });
  assert.equal(await page.getByRole('button', { name: 'Stop', exact: true }).count(), 0);
  const d = await apiFetch(page, `/api/agents/${agentId}`);
  assert.equal(d.body.status, 'stopped');
  // the chat takes a message
  await page.getByLabel('Message to the agent').fill(`hello from the browser ${stamp}`);
  await page.getByRole('button', { name: 'Send' }).click();
  await page.getByTestId('chat-messages').filter({ hasText: `hello from the browser ${stamp}` }).waitFor();
  assert.deepEqual(problems, []);
});

test('export, import (a bundle with a second iteration), the code diff, clone and delete', { timeout: 300000 }, async () => {
  assert.ok(agentId, 'the launch test made an agent');
  await open(page, `#/agents/${agentId}`);
  const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('link', { name: 'Export' }).click()]);
  const bundle = JSON.parse(readFileSync(await download.path(), 'utf8'));
  assert.equal(bundle.format, 'mantis-agent-export-v1');
  assert.ok(bundle.code['1'], 'the export holds the code of iteration 1');
  // a second iteration: iteration 1's code with one line more
  const it1 = bundle.agent.iterations.find((it) => it.iteration === 1);
  bundle.agent.iterations = [it1, { ...it1, iteration: 2 }];
  bundle.code = { 1: bundle.code['1'], 2: `${bundle.code['1']}\n# tweak from the browser test ${stamp}\n` };
  await open(page, '#/agents');
  await page.getByLabel('Export file (agent_<id>.json)').setInputFiles({ name: 'bundle.json', mimeType: 'application/json', buffer: Buffer.from(JSON.stringify(bundle)) });
  const h = await page.waitForFunction((old) => {
    const m = /^\/agents\/([0-9a-f-]{36})$/.exec(document.body.dataset.ready || '');
    return m && m[1] !== old ? m[1] : null;
  }, agentId, { timeout: 20000 });
  const imported = await h.jsonValue();
  assert.match(await page.getByTestId('agent-summary').innerText(), /Imported/);
  await page.locator('[data-testid="iterations"] tr[data-iteration="2"]').waitFor();
  // iteration 2 against the previous one: exactly the added lines
  await page.getByTestId('code-iteration').selectOption('2');
  await page.getByTestId('code-against').selectOption('prev');
  const diff = page.getByTestId('code-diff');
  await diff.waitFor();
  assert.match(await diff.locator('ins').allInnerTexts().then((t) => t.join('')), new RegExp(`tweak from the browser test ${stamp}`));
  assert.equal(await diff.locator('del').count(), 0);
  // clone from iteration 2, then delete the clone (confirmed)
  await page.getByLabel('Clone from').selectOption('2');
  await page.getByRole('button', { name: 'Clone', exact: true }).click();
  const c = await page.waitForFunction((old) => {
    const m = /^\/agents\/([0-9a-f-]{36})$/.exec(document.body.dataset.ready || '');
    return m && m[1] !== old ? m[1] : null;
  }, imported, { timeout: 20000 });
  const clone = await c.jsonValue();
  assert.match(await page.getByTestId('agent-summary').innerText(), new RegExp(`Cloned from\\s*${imported.slice(0, 8)} at iteration 2`));
  const del = page.getByRole('button', { name: 'Delete', exact: true });
  assert.match(await del.getAttribute('class'), /danger/);
  await del.click();
  await page.locator('dialog#confirm #confirm-yes').click();
  await page.waitForFunction(() => document.body.dataset.ready === '/agents', null, { timeout: 20000 });
  assert.equal(await page.locator(`[data-testid="agent-list"] tr[data-agent="${clone}"]`).count(), 0);
  assert.equal((await apiFetch(page, `/api/agents/${clone}`)).status, 404);
  assert.deepEqual(problems, []);
});

test('the agents pages are axe-clean at laptop and phone width, without sideways scrolling', async () => {
  const routes = [['agents', '#/agents']];
  if (agentId) routes.push(['agent-detail', `#/agents/${agentId}`]);
  for (const [name, route] of routes) {
    await open(page, route);
    const v = await axe(page);
    assert.deepEqual(v, [], `${route} at laptop width:\n${formatViolations(v)}`);
    await shot(page, `${name}-laptop`);
  }
  const phone = await launch({ viewport: PHONE });
  try {
    const p = await phone.context.newPage();
    const probs = watch(p);
    await open(p, '#/agents', TOKEN ? `?token=${encodeURIComponent(TOKEN)}` : '');
    for (const [name, route] of routes) {
      await open(p, route);
      const v = await axe(p);
      assert.deepEqual(v, [], `${route} at phone width:\n${formatViolations(v)}`);
      assert.ok(await horizontalOverflow(p) <= 1, `${route} scrolls sideways at phone width`);
      await shot(p, `${name}-phone`);
    }
    assert.deepEqual(probs, []);
  } finally {
    await phone.close();
  }
  assert.deepEqual(problems, []);
});

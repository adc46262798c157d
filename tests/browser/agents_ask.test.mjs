// The agent page's Ask box in Debian's Chromium against the real stack,
// whose AGENTTEST_ANTHROPIC_UPSTREAM is the local Anthropic stand-in
// (tests/lib/anthropic_standin.py, started by tests/stages/60-browser.sh
// with tests/browser/agents_ask.script.json; its request log is
// $AGENTTEST_ANTHROPIC_LOG, and the first answer is held until the test
// creates $AGENTTEST_ANTHROPIC_RELEASE). Proves: with no key the box shows
// 409 no_api_key and a link to Settings, nothing goes upstream and the chat
// is unchanged; with a key, a question asked from the keyboard shows the
// pending state (button disabled, form busy, seconds counting) for as long
// as the model takes, then the question and the answer appear in the chat
// without a reload, the cost beside the box and the request in the budget;
// the model API's 429 and then the exhausted request budget (402, nothing
// sent) are shown beside the box with their codes; Send still sends a
// message to the agent (not to the model); axe-core clean at laptop
// and phone width (pending, answered, failed), no sideways scrolling;
// screenshots agent-ask-*.png.
//
// The agent is a claude-code agent created while no key exists: its first
// iteration fails at once with no_api_key (status error), so no agent turn
// runs and the stand-in sees only the asks. Its budget is 2 requests.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import {
  BASE, launch, open, axe, shot, watch, formatViolations, horizontalOverflow, apiFetch, PHONE,
} from './lib.mjs';

const TOKEN = process.env.AGENTTEST_TOKEN || '';
const LOG = process.env.AGENTTEST_ANTHROPIC_LOG || '';
const RELEASE = process.env.AGENTTEST_ANTHROPIC_RELEASE || '';
const SCRIPT = JSON.parse(readFileSync(new URL('./agents_ask.script.json', import.meta.url), 'utf8'));
const ANSWER = SCRIPT.turns[0].content[0].text;
const KEY = `sk-ant-api03-BrowserAsk_${'k'.repeat(40)}Z9`;
const stamp = Date.now().toString(36);
const QUESTION = `Why has it not scored yet? (${stamp})`;
const JSON_POST = { method: 'POST', headers: { 'Content-Type': 'application/json' } };

let browser;
let page;
let problems;
let agentId = null;

/** upstream() -> the requests the stand-in received so far. */
function upstream() {
  if (!existsSync(LOG)) return [];
  return readFileSync(LOG, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l));
}

/** until(fn, what, ms): resolves once fn() is truthy (polled every 100 ms). */
async function until(fn, what, ms = 30000) {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => { setTimeout(r, 100); });
  }
}

/** askBox() -> the Ask form's locator. */
const askBox = () => page.getByTestId('ask-form');

before(async () => {
  assert.ok(BASE, 'AGENTTEST_URL must point at a running stack');
  assert.ok(LOG && RELEASE, 'AGENTTEST_ANTHROPIC_LOG and AGENTTEST_ANTHROPIC_RELEASE come from tests/stages/60-browser.sh');
  browser = await launch();
  page = await browser.context.newPage();
  problems = watch(page);
  await open(page, '#/', TOKEN ? `?token=${encodeURIComponent(TOKEN)}` : '');
  // no key anywhere (the caller's own, the admin default)
  await apiFetch(page, '/api/anthropic-key', { method: 'DELETE' });
  await apiFetch(page, '/api/anthropic-key?default=1', { method: 'DELETE' });
  assert.equal((await apiFetch(page, '/api/anthropic-key')).body.set, false);
  const r = await apiFetch(page, '/api/agents', { ...JSON_POST, body: JSON.stringify({
    challenge: 'ETH-1H-BINARY', goal: `ask box ${stamp}`, min_iterations: 1, max_iterations: 1,
    driver: 'claude-code', model: 'sonnet', budget: { requests: 2 },
  }) });
  assert.equal(r.status, 201, JSON.stringify(r.body));
  agentId = r.body.id;
  // the runner fails its first iteration for want of a key: no agent turn will run
  await until(async () => (await apiFetch(page, `/api/agents/${agentId}`)).body.status === 'error', 'the agent to stop with no_api_key', 300000);
});

after(async () => {
  if (page) {
    await apiFetch(page, '/api/anthropic-key', { method: 'DELETE' }).catch(() => {});
    if (agentId) await apiFetch(page, `/api/agents/${agentId}/delete`, { ...JSON_POST, body: '{}' }).catch(() => {});
  }
  if (RELEASE && !existsSync(RELEASE)) writeFileSync(RELEASE, '');
  if (browser) await browser.close();
});

test('with no key, Ask says 409 no_api_key beside the box, links to Settings, and sends nothing', { timeout: 360000 }, async () => {
  await open(page, `#/agents/${agentId}`);
  // the box says what it is: not a message to the agent, metered
  const about = await askBox().innerText();
  assert.match(about, /Not a message to the agent/);
  assert.match(about, /metered against this agent's LLM budget/);
  assert.match(about, /sonnet/);
  await page.getByLabel('Question for the model').fill(QUESTION);
  await askBox().getByRole('button', { name: 'Ask' }).click();
  const err = page.getByTestId('ask-error');
  await err.filter({ hasText: '409 no_api_key' }).waitFor();
  assert.match(await err.innerText(), /No Anthropic API key/);
  assert.equal(await err.getByRole('link', { name: 'Open Settings' }).getAttribute('href'), '#/settings');
  assert.equal(await page.getByLabel('Question for the model').inputValue(), QUESTION, 'the question is kept for another try');
  assert.deepEqual(upstream(), [], 'nothing went upstream');
  assert.equal(await page.locator('[data-testid="chat-messages"] li[data-type="ask"]').count(), 0, 'the chat is unchanged');
  await shot(page, 'agent-ask-nokey-laptop');
  assert.deepEqual(problems, []);
});

test('with a key, a question asked from the keyboard is pending until the model answers, then the answer is in the chat without a reload', { timeout: 180000 }, async () => {
  const set = await apiFetch(page, '/api/anthropic-key', { ...JSON_POST, body: JSON.stringify({ key: KEY }) });
  assert.equal(set.status, 200, JSON.stringify(set.body));
  await open(page, `#/agents/${agentId}`);
  await page.evaluate(() => { window.askNoReload = true; });
  const q = page.getByLabel('Question for the model');
  await q.fill(QUESTION);
  await q.press('Control+Enter');
  // pending: the stand-in holds the answer until RELEASE exists
  const btn = askBox().getByRole('button', { name: /Ask/ });
  await page.waitForFunction(() => document.querySelector('[data-testid="ask-form"]')?.getAttribute('aria-busy') === 'true');
  assert.equal(await btn.innerText(), 'Asking…');
  assert.equal(await btn.isDisabled(), true);
  await page.getByTestId('ask-pending').filter({ hasText: /Waiting for sonnet's answer… [1-9]\d* s/ }).waitFor({ timeout: 10000 });
  const reqs = await until(() => { const r = upstream(); return r.length ? r : null; }, 'the ask to reach the stand-in');
  assert.equal(reqs.length, 1);
  assert.equal(reqs[0].path, '/v1/messages');
  assert.equal(reqs[0].headers['x-api-key'], KEY, 'the upstream got the owner\'s key');
  assert.equal(reqs[0].body.model, 'claude-sonnet-4-5');
  assert.ok(JSON.stringify(reqs[0].body.messages).includes(QUESTION), 'the question went upstream');
  const busy = await axe(page);
  assert.deepEqual(busy, [], `pending ask at laptop width:\n${formatViolations(busy)}`);
  await shot(page, 'agent-ask-pending-laptop');
  writeFileSync(RELEASE, '');
  // the question and the answer appear in the chat, marked as an ask
  const answer = page.locator('[data-testid="chat-messages"] li[data-type="answer"]');
  await answer.filter({ hasText: ANSWER }).waitFor({ timeout: 60000 });
  assert.match(await answer.innerText(), /the model answered .* not sent to the agent/s);
  const asked = page.locator('[data-testid="chat-messages"] li[data-type="ask"]');
  assert.match(await asked.innerText(), new RegExp(`you asked the model .*not sent to the agent.*${stamp}`, 's'));
  // 1234 input and 56 output tokens at claude-sonnet-4-5's list prices: $0.004542
  assert.equal(await page.getByTestId('ask-usage').innerText(),
    "Answered by claude-sonnet-4-5: 1,234 tokens in, 56 out, $0.0045, charged to this agent's budget.");
  assert.equal(await btn.innerText(), 'Ask');
  assert.equal(await btn.isDisabled(), false);
  assert.equal(await page.getByTestId('ask-form').getAttribute('aria-busy'), 'false');
  assert.equal(await q.inputValue(), '', 'the field is cleared');
  // the budgets follow: one request of two used
  await page.getByTestId('agent-summary').filter({ hasText: /LLM requests\s*1 of 2 \(1 left\)/ }).waitFor({ timeout: 20000 });
  assert.equal(await page.evaluate(() => window.askNoReload), true, 'the page was not reloaded');
  const d = await apiFetch(page, `/api/agents/${agentId}`);
  assert.equal(d.body.budget.requests_used, 1);
  await shot(page, 'agent-ask-answered-laptop');
  assert.deepEqual(problems, []);
});

test('the model API\'s 429 and then the exhausted request budget are shown beside the box with their codes', { timeout: 120000 }, async () => {
  const q = page.getByLabel('Question for the model');
  const err = page.getByTestId('ask-error');
  await q.fill('And now?');
  await askBox().getByRole('button', { name: 'Ask' }).click();
  await err.filter({ hasText: '429 rate_limited' }).waitFor({ timeout: 60000 });
  assert.match(await err.innerText(), /^Rate limited: the model API is rate limiting this key: slow down; nothing was answered\. Try again in 7 s\. \(429 rate_limited\)$/);
  assert.equal(await q.inputValue(), 'And now?');
  assert.equal(upstream().length, 2);
  // the refused request counted: 2 of 2 used, the next is refused before it is sent
  await askBox().getByRole('button', { name: 'Ask' }).click();
  await err.filter({ hasText: '402 budget_exhausted' }).waitFor({ timeout: 60000 });
  assert.match(await err.innerText(), /^The budget is used up \(agent requests: 2 of 2 used\): nothing was sent and nothing charged\./);
  assert.equal(upstream().length, 2, 'nothing was sent');
  assert.equal(await page.locator('[data-testid="chat-messages"] li[data-type="answer"]').count(), 1, 'no answer was added');
  const v = await axe(page);
  assert.deepEqual(v, [], `failed ask at laptop width:\n${formatViolations(v)}`);
  await shot(page, 'agent-ask-error-laptop');
  assert.deepEqual(problems, []);
});

test('Send still sends a message to the agent, which waits for its next iteration, apart from the asks', async () => {
  const text = `a message, not a question (${stamp})`;
  await page.getByLabel('Message to the agent').fill(text);
  await page.getByLabel('Message to the agent').press('Control+Enter');
  const msg = page.locator('[data-testid="chat-messages"] li[data-type="message"]').filter({ hasText: text });
  await msg.waitFor({ timeout: 20000 });
  assert.match(await msg.innerText(), /waiting for the next iteration/);
  assert.equal(await page.getByLabel('Message to the agent').inputValue(), '');
  assert.equal(await page.getByLabel('Question for the model').inputValue(), 'And now?', 'the half-typed question survives');
  assert.equal(upstream().length, 2, 'a message goes to no model');
  const chat = await apiFetch(page, `/api/agents/${agentId}/chat`);
  assert.deepEqual(chat.body.messages.map((m) => m.type), ['ask', 'answer', 'message']);
  assert.deepEqual(problems, []);
});

test('the agent page with its asks is axe-clean at phone width, without sideways scrolling', async () => {
  const phone = await launch({ viewport: PHONE });
  try {
    const p = await phone.context.newPage();
    const probs = watch(p);
    await open(p, `#/agents/${agentId}`, TOKEN ? `?token=${encodeURIComponent(TOKEN)}` : '');
    await p.locator('[data-testid="chat-messages"] li[data-type="answer"]').waitFor();
    await p.getByLabel('Question for the model').fill('One more?');
    await p.getByTestId('ask-form').getByRole('button', { name: 'Ask' }).click();
    await p.getByTestId('ask-error').filter({ hasText: '402 budget_exhausted' }).waitFor({ timeout: 60000 });
    const v = await axe(p);
    assert.deepEqual(v, [], `agent page at phone width:\n${formatViolations(v)}`);
    assert.ok(await horizontalOverflow(p) <= 1, 'the agent page scrolls sideways at phone width');
    await p.getByTestId('chat').scrollIntoViewIfNeeded();
    await shot(p, 'agent-ask-phone');
    assert.deepEqual(probs, []);
  } finally {
    await phone.close();
  }
});

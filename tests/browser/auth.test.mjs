// Signing in, as the API defines it: without a credential a page shows a
// token prompt (never a broken page); the prompt and the `?token=` link both
// hand the token to the API once, which sets its HttpOnly cookie; the token
// never stays in the address bar; a user-role token sees no admin actions.
//
// Needs a stack with MANTIS_AUTH_TOKEN set (AGENTTEST_TOKEN) and a user-role
// token (AGENTTEST_USER_TOKEN); tests/stages/60-browser.sh provides both.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { BASE, launch, open, axe, shot, watch, formatViolations, confirmTokenLink } from './lib.mjs';

const TOKEN = process.env.AGENTTEST_TOKEN || '';
const USER_TOKEN = process.env.AGENTTEST_USER_TOKEN || '';
let browser;

before(async () => {
  assert.ok(BASE, 'AGENTTEST_URL must point at a running stack');
  browser = await launch();
});

after(async () => {
  if (browser) await browser.close();
});

/** A fresh page in a fresh cookie jar. */
async function freshPage() {
  const ctx = browser.context;
  await ctx.clearCookies();
  const page = await ctx.newPage();
  return { page, problems: watch(page) };
}

test('without a token a page shows the sign-in prompt, not a broken page', { skip: !TOKEN && 'the stack has no MANTIS_AUTH_TOKEN' }, async () => {
  const { page, problems } = await freshPage();
  try {
    await open(page, '#/runs');
    const dlg = page.getByRole('dialog', { name: 'Sign in' });
    await dlg.waitFor();
    await dlg.getByLabel('API token').waitFor();
    // the page behind says what is needed and offers the prompt again
    await page.getByRole('heading', { name: 'Sign-in needed' }).waitFor();
    const v = await axe(page);
    assert.equal(v.length, 0, formatViolations(v));
    await shot(page, 'signin-prompt');
    // a wrong token is refused in place
    await dlg.getByLabel('API token').fill('at_wrongwrongwrongwrongwrongwrongwrongwrongwro');
    await dlg.getByRole('button', { name: 'Sign in' }).click();
    await page.getByText('That token was not accepted.').waitFor();
    // the right one signs in and the page draws
    await dlg.getByLabel('API token').fill(TOKEN);
    await dlg.getByRole('button', { name: 'Sign in' }).click();
    await dlg.waitFor({ state: 'hidden' });
    await page.waitForFunction(() => document.body.dataset.ready === '/runs' && document.querySelector('form[role=search]'));
    assert.match(await page.locator('#who').textContent(), /admin/);
    const cookies = await browser.context.cookies(BASE);
    const c = cookies.find((x) => x.name === 'mantis_token');
    assert.ok(c && c.httpOnly, 'the API set an HttpOnly mantis_token cookie');
    assert.equal(c.sameSite, 'Strict');
    assert.deepEqual(problems, []);
  } finally {
    await page.close();
  }
});

test('the ?token= link logs in and leaves the address bar clean', { skip: !TOKEN && 'the stack has no MANTIS_AUTH_TOKEN' }, async () => {
  const { page, problems } = await freshPage();
  try {
    await page.goto(`${BASE}/?token=${encodeURIComponent(TOKEN)}#/settings`);
    // nothing is signed in before the user has seen which account the link is for
    const dlg = page.getByRole('dialog', { name: 'Sign in from this link?' });
    await dlg.waitFor();
    assert.equal((await browser.context.cookies(BASE)).filter((c) => c.name === 'mantis_token').length, 0,
      'no sign-in cookie before the confirmation');
    assert.equal(new URL(page.url()).search, '', 'the token left the URL before the question');
    const v = await axe(page);
    assert.equal(v.length, 0, formatViolations(v));
    await shot(page, 'token-link-confirm');
    const text = await confirmTokenLink(page);
    assert.match(text, /signs you in as .+ \(admin\)/);
    await page.waitForFunction(() => document.body.dataset.ready === '/settings');
    assert.equal(await page.getByTestId('my-role').textContent(), 'admin');
    assert.equal(new URL(page.url()).search, '', 'the token is removed from the URL');
    assert.equal(await page.getByRole('dialog', { name: 'Sign in' }).isVisible(), false);
    // a reload works from the cookie alone
    await page.reload();
    await page.waitForFunction(() => document.body.dataset.ready === '/settings');
    assert.equal(await page.getByTestId('my-role').textContent(), 'admin');
    await shot(page, 'settings-admin');
    assert.deepEqual(problems, []);
  } finally {
    await page.close();
  }
});

test('a sign-in link for another account asks first, names both accounts, and Cancel keeps the current one (login CSRF)', { skip: (!TOKEN || !USER_TOKEN) && 'needs both tokens' }, async () => {
  const { page, problems } = await freshPage();
  try {
    await open(page, '#/settings', `?token=${encodeURIComponent(TOKEN)}`);
    assert.equal(await page.getByTestId('my-role').textContent(), 'admin');
    const cookie = (await browser.context.cookies(BASE)).find((c) => c.name === 'mantis_token').value;
    // an attacker's link carrying a user-role token
    await page.goto(`${BASE}/?token=${encodeURIComponent(USER_TOKEN)}#/settings`);
    const dlg = page.getByRole('dialog', { name: 'Sign in from this link?' });
    await dlg.waitFor();
    const text = await dlg.locator('#confirm-text').textContent();
    assert.match(text, /You are signed in as .+ \(admin\)\. This link signs you in as .+ \(user\)/);
    await dlg.getByRole('button', { name: 'Cancel' }).click();
    await page.waitForFunction(() => document.body.dataset.tokenLink === 'done' && document.body.dataset.ready === '/settings');
    assert.equal(await page.getByTestId('my-role').textContent(), 'admin', 'still the admin after Cancel');
    assert.equal((await browser.context.cookies(BASE)).find((c) => c.name === 'mantis_token').value, cookie,
      'the sign-in cookie is unchanged');
    // the same link again, confirmed this time: now the user-role account
    await page.goto(`${BASE}/?token=${encodeURIComponent(USER_TOKEN)}#/settings`);
    assert.match(await confirmTokenLink(page), /\(user\)/);
    await page.waitForFunction(() => document.body.dataset.ready === '/settings');
    assert.equal(await page.getByTestId('my-role').textContent(), 'user');
    // a link for the account already signed in does not ask
    await page.goto(`${BASE}/?token=${encodeURIComponent(USER_TOKEN)}#/settings`);
    assert.equal(await confirmTokenLink(page), null);
    // a link with a token the server does not know signs nobody in and says so
    await page.goto(`${BASE}/?token=not-a-real-token-${Date.now()}#/settings`);
    await page.waitForFunction(() => document.body.dataset.tokenLink === 'done');
    await page.waitForFunction(() => /not accepted/.test(document.getElementById('announce').textContent));
    await page.waitForFunction(() => document.body.dataset.ready === '/settings');
    assert.equal(await page.getByTestId('my-role').textContent(), 'user');
    assert.deepEqual(problems, []);
  } finally {
    await page.close();
  }
});

test('a user-role token sees no admin actions', { skip: !USER_TOKEN && 'no AGENTTEST_USER_TOKEN' }, async () => {
  const { page, problems } = await freshPage();
  try {
    await open(page, '#/settings', `?token=${encodeURIComponent(USER_TOKEN)}`);
    assert.equal(await page.getByTestId('my-role').textContent(), 'user');
    assert.equal(await page.getByRole('heading', { name: 'Users' }).count(), 0, 'no users list for a user');
    const key = page.getByTestId('set-coinglass-panel');
    await key.getByTestId('set-coinglass-state').waitFor();
    assert.equal(await key.locator('input, button').count(), 0, 'a user sees the CoinGlass key state, not a way to change it');
    // the Anthropic key is per user: a user sets and removes their own, and
    // is offered no server default
    const ak = page.getByTestId('set-anthropic-panel');
    await ak.getByTestId('set-anthropic-state').waitFor();
    assert.equal(await ak.getByRole('checkbox').count(), 0, 'no default for a user');
    await ak.getByLabel('Set the key').fill(`sk-ant-user-${Date.now().toString(36)}-abcdefghijklmnop`);
    await ak.getByRole('button', { name: 'Save' }).click();
    await page.waitForFunction(() => document.querySelector('[data-testid=set-anthropic-source]')?.textContent === 'your own key');
    await ak.getByRole('button', { name: 'Remove the key' }).click();
    await page.getByRole('dialog', { name: 'Remove the Anthropic API key?' }).getByRole('button', { name: 'Remove' }).click();
    await page.waitForFunction(() => document.querySelector('[data-testid=set-anthropic-source]') === null);
    await open(page, '#/leaderboards');
    assert.equal(await page.getByRole('button', { name: /^Promote/ }).count(), 0, 'no promote button for a user');
    const v = await axe(page);
    assert.equal(v.length, 0, formatViolations(v));
    await shot(page, 'leaderboard-as-user');
    assert.deepEqual(problems, []);
  } finally {
    await page.close();
  }
});

test('sign out drops the cookie and returns to the token prompt', { skip: !TOKEN && 'the stack has no MANTIS_AUTH_TOKEN' }, async () => {
  const { page, problems } = await freshPage();
  try {
    await open(page, '#/runs', `?token=${encodeURIComponent(TOKEN)}`);
    const out = page.getByRole('button', { name: 'Sign out' });
    await out.waitFor();
    assert.ok((await browser.context.cookies(BASE)).some((c) => c.name === 'mantis_token'), 'signed in by cookie');
    await out.click();
    const dlg = page.getByRole('dialog', { name: 'Sign in' });
    await dlg.waitFor();
    // waitFor (visible) rather than isVisible(): the prompt renders its field
    // a moment after the dialog itself, and isVisible() does not wait
    await dlg.getByLabel('API token').waitFor();
    assert.equal((await browser.context.cookies(BASE)).filter((c) => c.name === 'mantis_token').length, 0,
      'the API expired the HttpOnly cookie');
    assert.equal(await page.getByRole('button', { name: 'Sign out' }).count(), 0, 'no sign-out control when signed out');
    // signed out for real: a reload asks again
    await dlg.getByRole('button', { name: 'Cancel' }).click();
    await page.reload();
    await page.getByRole('dialog', { name: 'Sign in' }).waitFor();
    await page.getByRole('heading', { name: 'Sign-in needed' }).waitFor();
    const v = await axe(page);
    assert.equal(v.length, 0, formatViolations(v));
    await shot(page, 'signed-out');
    assert.deepEqual(problems, []);
  } finally {
    await page.close();
  }
});

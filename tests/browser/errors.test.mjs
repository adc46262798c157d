// Error views in Debian's Chromium against the real stack (issue 17 fix 6):
// after the Settings page, a run that does not exist shows a heading of its
// own ("Not found", never the previous page's "Settings") above the API's
// message, and no "Try again" (a 404 answers the same again); a transient
// failure (the network) offers "Try again", and retrying draws the route
// afresh. Other by-id pages behave alike. The 404 view is axe-clean at
// laptop and phone width. Run by tests/stages/60-browser.sh (AGENTTEST_URL,
// AGENTTEST_TOKEN: an admin).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import {
  BASE, launch, open, axe, shot, watch, formatViolations, horizontalOverflow, PHONE,
} from './lib.mjs';

const TOKEN = process.env.AGENTTEST_TOKEN || '';
const BOGUS = '00000000-0000-4000-8000-000000000000';

let browser;
let page;
let problems;

before(async () => {
  assert.ok(BASE, 'AGENTTEST_URL must point at a running stack');
  browser = await launch();
  page = await browser.context.newPage();
  problems = watch(page);
  await open(page, '#/', TOKEN ? `?token=${encodeURIComponent(TOKEN)}` : '');
});

after(async () => {
  if (browser) await browser.close();
});

/** heading(p) -> the text of the view's h1. */
const heading = (p) => p.locator('#view h1').first().innerText();

/** tryAgain(p) -> how many "Try again" buttons the view shows. */
const tryAgain = (p) => p.locator('#view').getByRole('button', { name: 'Try again' }).count();

test('after Settings, a run that does not exist is headed "Not found" and offers no retry', async () => {
  await open(page, '#/settings');
  assert.equal(await heading(page), 'Settings');
  await open(page, `#/runs/${BOGUS}`);
  assert.equal(await heading(page), 'Not found');
  assert.equal(await page.title(), 'Not found · agenttest');
  const panel = page.locator('#view [role="alert"]');
  assert.match(await panel.innerText(), /Not found/);
  assert.match(await panel.innerText(), /not_found/, 'the API\'s code is shown');
  assert.equal(await tryAgain(page), 0, 'a 404 answers the same again: no "Try again"');
  // the navigation marks the section of the route, no longer Settings
  assert.equal(await page.locator('nav a[aria-current="page"]').getAttribute('data-nav'), 'runs');
  assert.deepEqual(problems, []);
});

test('other pages by id: never the previous heading, no retry on a 404', async () => {
  const routes = [`#/strategies/987654321`, `#/versions/987654321`, `#/evaluations/${BOGUS}`, `#/agents/${BOGUS}`];
  for (const route of routes) {
    await open(page, '#/settings');
    await open(page, route);
    assert.notEqual(await heading(page), 'Settings', route);
    assert.match(await page.locator('#view [role="alert"]').innerText(), /Not found/, route);
    assert.equal(await tryAgain(page), 0, route);
  }
  assert.deepEqual(problems, []);
});

test('a transient failure offers "Try again", and the retry draws the route afresh', async () => {
  await open(page, '#/settings');
  // the network fails for this run's request, once
  const target = new RegExp(`/runs/${BOGUS}$`);
  let failed = 0;
  await page.route(target, (r) => { failed += 1; return r.abort('failed'); });
  await open(page, `#/runs/${BOGUS}`);
  assert.ok(failed >= 1, 'the request was made and failed');
  assert.equal(await heading(page), 'Could not load this page');
  assert.equal(await tryAgain(page), 1, 'a network failure can pass: retry is offered');
  await page.unroute(target);
  await page.evaluate(() => { document.body.dataset.ready = ''; });
  await page.locator('#view').getByRole('button', { name: 'Try again' }).click();
  await page.waitForFunction((p) => document.body.dataset.ready === p, `/runs/${BOGUS}`);
  // now the server answers: 404, so the heading says so and the retry is gone
  assert.equal(await heading(page), 'Not found');
  assert.equal(await tryAgain(page), 0);
  // the failed fetch itself is logged by the browser; nothing else may be
  assert.deepEqual(problems.filter((p) => !/Failed to fetch|net::ERR_FAILED/.test(p)), []);
  problems.length = 0;
});

test('the not-found view is axe-clean at laptop and phone width', async () => {
  await open(page, '#/settings');
  await open(page, `#/runs/${BOGUS}`);
  let v = await axe(page);
  assert.deepEqual(v, [], `laptop:\n${formatViolations(v)}`);
  await shot(page, 'run-not-found-laptop');
  const phone = await launch({ viewport: PHONE });
  try {
    const p = await phone.context.newPage();
    const probs = watch(p);
    await open(p, '#/settings', TOKEN ? `?token=${encodeURIComponent(TOKEN)}` : '');
    await open(p, `#/runs/${BOGUS}`);
    assert.equal(await heading(p), 'Not found');
    assert.equal(await tryAgain(p), 0);
    v = await axe(p);
    assert.deepEqual(v, [], `phone:\n${formatViolations(v)}`);
    assert.ok(await horizontalOverflow(p) <= 1, 'the 404 view scrolls sideways at phone width');
    await shot(p, 'run-not-found-phone');
    assert.deepEqual(probs, []);
  } finally {
    await phone.close();
  }
  assert.deepEqual(problems, []);
});

// The dashboard under the default rate limit (issue 17 item 7), against a
// stack of its own that tests/stages/60-browser.sh starts with
// MANTIS_RATE_LIMIT_RPM at its default (120 a minute, burst 60) and no
// token (the loopback admin): six tabs opened at once all render, because
// the scripts, styles and libraries are not rate-limited and are served
// with validators (a second load is a 304); and once the address has used
// up its burst, a page says that the server is rate-limiting it and when to
// try again, instead of a bare failure.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { BASE, launch, open, shot, watch, url } from './lib.mjs';

const ROUTES = ['#/', '#/runs', '#/strategies', '#/leaderboards', '#/challenges', '#/settings'];

let browser;

before(async () => {
  assert.ok(BASE, 'AGENTTEST_URL must point at the rate-limited stack');
  browser = await launch();
});

after(async () => {
  if (browser) await browser.close();
});

/** ready(page, route): waits until the router has drawn route's path. */
function ready(page, route) {
  const target = route.replace(/^#/, '').replace(/\/+$/, '') || '/';
  return page.waitForFunction((t) => document.body.dataset.ready === t, target, { timeout: 120000 });
}

test('static assets carry validators, revalidate to 304 and are not rate-limited', async () => {
  const first = await fetch(`${BASE}/js/app.js`);
  assert.equal(first.status, 200);
  assert.equal(first.headers.get('cache-control'), 'no-cache', 'revalidated at every use');
  const etag = first.headers.get('etag');
  assert.ok(etag, 'an ETag');
  const again = await fetch(`${BASE}/js/app.js`, { headers: { 'If-None-Match': etag } });
  assert.equal(again.status, 304, 'an unchanged file is not downloaded twice');
  // far more than the burst, at once: none is refused
  const many = await Promise.all(Array.from({ length: 150 }, () => fetch(`${BASE}/js/api.js`, { headers: { 'If-None-Match': etag } })));
  assert.deepEqual([...new Set(many.map((r) => r.status))].filter((s) => s === 429), [], 'no 429 for static files');
});

test('six tabs opened at once all render with the default rate limit', async () => {
  const pages = await Promise.all(ROUTES.map(() => browser.context.newPage()));
  const problems = pages.map((p) => watch(p));
  try {
    await Promise.all(pages.map((p, i) => p.goto(url(ROUTES[i]), { waitUntil: 'commit' })));
    await Promise.all(pages.map((p, i) => ready(p, ROUTES[i])));
    for (const [i, p] of pages.entries()) {
      assert.equal(await p.locator('.error-panel').count(), 0, `${ROUTES[i]} drew without an error: ${await p.locator('main').textContent()}`);
      assert.ok(await p.locator('h1').isVisible(), `${ROUTES[i]} has its heading`);
      assert.deepEqual(problems[i], [], `${ROUTES[i]}: no failed module load, CSP violation or page error`);
    }
    await shot(pages[0], 'six-tabs-overview');
  } finally {
    await Promise.all(pages.map((p) => p.close()));
  }
});

test('a rate-limited page says so and when to try again', { timeout: 240000 }, async () => {
  const page = await browser.context.newPage();
  let flooding = false;
  let flood = null;
  let refused = 0;
  try {
    await open(page, '#/');
    // keep this address over its limit (the limit counts per address and
    // refills 2 requests a second) while the page asks the API
    flooding = true;
    flood = (async () => {
      while (flooding) {
        const rs = await Promise.all(Array.from({ length: 20 }, () => fetch(`${BASE}/health`).catch(() => null)));
        refused += rs.filter((r) => r && r.status === 429).length;
      }
    })();
    const msg = page.getByTestId('rate-limited');
    const deadline = Date.now() + 180000;
    // a request of the page may still catch a refilled slot: navigate again until one is refused
    for (const route of ['#/runs', '#/strategies'].concat(Array(40).fill(['#/runs', '#/strategies']).flat())) {
      await page.evaluate((r) => { document.body.dataset.ready = ''; location.hash = r; }, route);
      await ready(page, route);
      if (await msg.count() || Date.now() > deadline) break;
    }
    assert.ok(refused > 0, 'the flood was refused with 429');
    await msg.waitFor({ timeout: 1000 });
    assert.match(await msg.textContent(), /limiting how many requests one address may make per minute/);
    assert.match(await msg.textContent(), /Wait (\d+ s|a moment) and try again/);
    assert.ok(await page.getByRole('button', { name: 'Try again' }).isVisible(), 'a 429 passes: retry is offered');
    await shot(page, 'rate-limited');
  } finally {
    flooding = false;
    if (flood) await flood;
    await page.close();
  }
});

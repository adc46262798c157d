// Shared harness of the browser tests: Debian's Chromium driven by
// playwright-core (no browser download), one fresh profile per launch, the
// flags this machine needs (no sandbox as root, no background networking),
// plus helpers to open a dashboard route and wait until it has drawn, to run
// axe-core in the page, to take screenshots, and to collect CSP violations
// and uncaught page errors (a page that breaks the CSP fails its test).
//
// Environment: AGENTTEST_URL (the stack, e.g. http://127.0.0.1:8123),
// AGENTTEST_TOKEN (when the stack requires one), AGENTTEST_TEST_OUT (where
// screenshots go), CHROMIUM (default /usr/bin/chromium).
import { chromium } from 'playwright-core';
import { mkdtempSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';

const require = createRequire(import.meta.url);

export const BASE = (process.env.AGENTTEST_URL || '').replace(/\/+$/, '');
export const OUT = process.env.AGENTTEST_TEST_OUT || path.resolve('build/test-out');
export const SHOTS = path.join(OUT, 'screenshots');

export const PHONE = { width: 375, height: 740 };
export const LAPTOP = { width: 1280, height: 860 };

const FLAGS = [
  '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync',
  '--disable-dev-shm-usage', '--hide-scrollbars', '--mute-audio',
];

/**
 * launch(opts) -> {context, close()}: a persistent context on a fresh
 * --user-data-dir (removed on close). opts: viewport, extraHTTPHeaders.
 */
export async function launch(opts = {}) {
  const dir = mkdtempSync(path.join(tmpdir(), 'agenttest-chromium-'));
  const context = await chromium.launchPersistentContext(dir, {
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    args: FLAGS,
    viewport: opts.viewport || LAPTOP,
    extraHTTPHeaders: opts.extraHTTPHeaders,
    acceptDownloads: true,
    locale: 'en-US',
    timezoneId: 'UTC',
  });
  context.setDefaultTimeout(15000);
  return {
    context,
    async close() {
      await context.close().catch(() => {});
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * watch(page) -> problems[]: fills with CSP violations, uncaught page errors
 * and console errors (except failed resource loads the test expects, such as
 * a deliberate 401 or 404, which the browser logs as console errors too).
 */
export function watch(page) {
  const problems = [];
  // The console names a blocked inline style only by its hash; the event
  // says where it came from (file, line, column, the first characters).
  page.addInitScript(() => {
    document.addEventListener('securitypolicyviolation', (e) => {
      console.error(`Content Security Policy violation (${e.effectiveDirective}) at ${e.sourceFile || '?'}:${e.lineNumber}:${e.columnNumber} on <${e.target && e.target.nodeName ? e.target.nodeName.toLowerCase() : '?'} class="${e.target && e.target.className ? e.target.className : ''}">, sample: ${e.sample}`);
    });
  });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('console', (m) => {
    const t = m.text();
    if (/Content Security Policy|Refused to (load|execute|apply)/i.test(t)) problems.push(`CSP: ${t}`);
    else if (m.type() === 'error' && !/Failed to load resource|status of (401|403|404|409|429)/.test(t)) problems.push(`console: ${t}`);
  });
  return problems;
}

/** url(route, query): absolute URL of a dashboard route ('#/runs/3'). */
export function url(route = '#/', query = '') {
  return `${BASE}/${query}${route}`;
}

/**
 * open(page, route, query): navigates to a dashboard route and waits until
 * the router has finished drawing it (body[data-ready] set for that path).
 * A `?token=` query is a sign-in link: the page asks before it signs in as
 * another account, and open() confirms, as the user who made the link does.
 */
export async function open(page, route = '#/', query = '') {
  const target = route.replace(/^#/, '').split('?')[0].replace(/\/+$/, '') || '/';
  const current = await page.evaluate(() => location.origin).catch(() => '');
  if (current === BASE && !query) {
    await page.evaluate((r) => {
      document.body.dataset.ready = '';
      // the same fragment again fires no hashchange: ask the router directly
      if (location.hash === r || (location.hash === '' && r === '#/')) window.dispatchEvent(new HashChangeEvent('hashchange'));
      else location.hash = r;
    }, route);
  } else {
    await page.goto(url(route, query), { waitUntil: 'domcontentloaded' });
    if (/[?&]token=/.test(query)) await confirmTokenLink(page);
  }
  await page.waitForFunction((t) => document.body.dataset.ready === t, target, { timeout: 15000 });
}

/**
 * confirmTokenLink(page) -> the dialog's text, or null when the page did
 * not ask (the link's account was already signed in): waits for the
 * sign-in link's check and accepts its confirmation dialog.
 */
export async function confirmTokenLink(page) {
  await page.waitForFunction(() => ['asking', 'done'].includes(document.body.dataset.tokenLink), null, { timeout: 15000 });
  if (await page.evaluate(() => document.body.dataset.tokenLink) !== 'asking') return null;
  const dlg = page.getByRole('dialog', { name: 'Sign in from this link?' });
  const text = await dlg.locator('#confirm-text').textContent();
  await dlg.getByRole('button', { name: /^Sign in as / }).click();
  await page.waitForFunction(() => document.body.dataset.tokenLink === 'done', null, { timeout: 15000 });
  return text;
}

let axeSource = null;
/**
 * axe(page) -> violations[]: runs axe-core (WCAG 2.0/2.1 A and AA rules and
 * best practices) on the current page. The script is evaluated through the
 * DevTools protocol, which the page's CSP does not govern, so the CSP can
 * stay strict while the audit runs.
 */
export async function axe(page) {
  if (!axeSource) axeSource = readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');
  if (!await page.evaluate(() => typeof window.axe === 'object')) await page.evaluate(axeSource);
  return page.evaluate(async () => {
    const r = await window.axe.run(document, {
      runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice'] },
      resultTypes: ['violations'],
    });
    return r.violations.map((v) => ({
      id: v.id, impact: v.impact, help: v.help,
      nodes: v.nodes.slice(0, 5).map((n) => `${n.target.join(' ')}: ${n.failureSummary.replace(/\s+/g, ' ')}`),
    }));
  });
}

/** formatViolations(v): readable text for an assertion message. */
export function formatViolations(v) {
  return v.map((x) => `${x.id} (${x.impact}): ${x.help}\n    ${x.nodes.join('\n    ')}`).join('\n');
}

/** shot(page, name): a full-page PNG in $AGENTTEST_TEST_OUT/screenshots/. */
export async function shot(page, name) {
  mkdirSync(SHOTS, { recursive: true });
  const file = path.join(SHOTS, `${name}.png`);
  await page.screenshot({ path: file, fullPage: true });
  return file;
}

/** horizontalOverflow(page) -> px the page is wider than the viewport (0 = none). */
export function horizontalOverflow(page) {
  return page.evaluate(() => Math.max(document.documentElement.scrollWidth, document.body.scrollWidth) - window.innerWidth);
}

/**
 * cellsCut(wrap, headers, row) -> the headers (regexps of header texts) of
 * the table in the scroll region `wrap` (a locator) whose header or whose
 * cell in `row` (a locator of a body row) ends beyond the region's visible
 * box or the viewport: [] when a phone shows them all without scrolling the
 * table sideways. A header not found counts as cut.
 */
export async function cellsCut(wrap, headers, row) {
  const box = await wrap.boundingBox();
  const vw = wrap.page().viewportSize().width;
  const ths = wrap.locator('table.data thead th');
  const texts = (await ths.allInnerTexts()).map((t) => t.replace(/\s+/g, ' ').trim());
  const cut = [];
  for (const re of headers) {
    const i = texts.findIndex((t) => re.test(t));
    const boxes = i < 0 ? [] : [await ths.nth(i).boundingBox(), await row.locator('td, th').nth(i).boundingBox()];
    if (i < 0 || boxes.some((b) => !b || b.x + b.width > Math.min(box.x + box.width, vw) + 1)) cut.push(String(re));
  }
  return cut;
}

/** apiFetch(page, path, init) -> {status, body}: an API call made from the page (same cookies). */
export function apiFetch(page, p, init = {}) {
  return page.evaluate(async ([u, i]) => {
    const r = await fetch(u, { credentials: 'same-origin', ...i, headers: { Accept: 'application/json', 'X-Requested-With': 'XMLHttpRequest', ...(i.headers || {}) } });
    const t = await r.text();
    let b = t;
    try { b = JSON.parse(t); } catch { /* text */ }
    return { status: r.status, body: b };
  }, [p, init]);
}

/**
 * canvasInk(page, selector) -> number of non-background pixels in the
 * plotting canvas inside selector: proof that lines were drawn, not just an
 * empty canvas.
 */
export function canvasInk(page, selector) {
  return page.evaluate((sel) => {
    const c = document.querySelector(`${sel} canvas`);
    if (!c) return -1;
    const g = c.getContext('2d');
    const { data } = g.getImageData(0, 0, c.width, c.height);
    let ink = 0;
    for (let i = 0; i < data.length; i += 4) {
      const a = data[i + 3];
      if (a === 0) continue;
      const r = data[i]; const gg = data[i + 1]; const b = data[i + 2];
      // count coloured pixels only (the series), not the grey grid/axes
      if (Math.max(r, gg, b) - Math.min(r, gg, b) > 40) ink += 1;
    }
    return ink;
  }, selector);
}

// The dashboard overview's first render, timed (tests/bench/dashboard.sh
// runs it against a private stack): each load is a new tab with no page
// state, from navigation to the page drawn with its API data
// (body[data-ready="/"]). Prints every time, the median and the minimum;
// on a shared machine the minimum is the figure to compare, the median says
// how loaded it was. The target (issue 7) is under a second.
//
// Environment: AGENTTEST_URL (the stack), N (loads, default 9).
import { launch, BASE } from '../browser/lib.mjs';

const N = Number(process.env.N || 9);
if (!BASE) {
  console.error('bench/dashboard: AGENTTEST_URL is not set');
  process.exit(1);
}
const browser = await launch();
try {
  const warm = await browser.context.newPage();   // the browser's own start is not the page's
  await warm.goto(`${BASE}/#/`, { waitUntil: 'commit' });
  await warm.waitForFunction(() => document.body.dataset.ready === '/', null, { timeout: 30000 });
  await warm.close();
  const times = [];
  for (let i = 0; i < N; i += 1) {
    const p = await browser.context.newPage();
    try {
      const t0 = performance.now();
      await p.goto(`${BASE}/#/`, { waitUntil: 'commit' });
      await p.waitForFunction(() => document.body.dataset.ready === '/', null, { timeout: 30000 });
      times.push(performance.now() - t0);
    } finally {
      await p.close();
    }
  }
  times.sort((a, b) => a - b);
  const ms = (v) => v.toFixed(0);
  console.log(`overview first render, ${N} new tabs: ${times.map(ms).join(' ')} ms`);
  console.log(`overview first render: median ${ms(times[Math.floor(N / 2)])} ms, min ${ms(times[0])} ms (target < 1000 ms)`);
} finally {
  await browser.close();
}

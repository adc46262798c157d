// Polling with back-off. A page asks for fresh data only as often as it
// needs: quickly right after something changed, then slower and slower while
// nothing does, never while the tab is hidden, and not at all once the
// thing it watches is finished or the page is left.

/**
 * poll(tick, opts) -> stop()
 * tick(): async, returns 'changed' (reset to the fast interval), 'same'
 * (back off) or 'done' (stop). A thrown error backs off like 'same'; a 401
 * stops the poller (the sign-in prompt takes over).
 * opts: min (ms, first interval), max (ms, slowest; or a function giving
 * it, read at each step), factor, signal
 * (AbortSignal that stops the poller), immediate (tick once at once).
 */
export function poll(tick, opts = {}) {
  const min = opts.min || 1000;
  const maxOf = typeof opts.max === 'function' ? opts.max : () => opts.max || 15000;
  const factor = opts.factor || 1.5;
  let interval = min;
  let timer = null;
  let stopped = false;
  let running = false;

  const schedule = () => {
    if (stopped || document.hidden) return;
    clearTimeout(timer);
    timer = setTimeout(run, interval);
  };

  async function run() {
    if (stopped || running) return;
    running = true;
    let r = 'same';
    try {
      r = await tick();
    } catch (e) {
      if (e && (e.status === 401 || e.name === 'AbortError')) r = 'done';
    }
    running = false;
    if (r === 'done') { stop(); return; }
    interval = r === 'changed' ? min : Math.min(maxOf(), Math.round(interval * factor));
    schedule();
  }

  const onVisibility = () => {
    if (document.hidden) { clearTimeout(timer); return; }
    interval = min; // coming back: refresh soon, then back off again
    schedule();
  };

  function stop() {
    stopped = true;
    clearTimeout(timer);
    document.removeEventListener('visibilitychange', onVisibility);
  }

  document.addEventListener('visibilitychange', onVisibility);
  if (opts.signal) opts.signal.addEventListener('abort', stop, { once: true });
  if (opts.immediate) run(); else schedule();
  return stop;
}

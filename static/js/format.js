// Formatting of numbers, times, statuses and hashes for display. Pure
// functions returning strings or small elements; no page state.
import { h } from './dom.js';

/** num(v, digits): a number with up to `digits` significant decimals, or '—'. */
export function num(v, digits = 4) {
  if (v === null || v === undefined || v === '') return '—';
  const n = Number(v);
  if (!Number.isFinite(n)) return String(v);
  if (Number.isInteger(n) && Math.abs(n) < 1e15) return n.toLocaleString('en-US');
  const a = Math.abs(n);
  if (a !== 0 && (a < 1e-4 || a >= 1e9)) return n.toExponential(3);
  return n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: 0 });
}

/**
 * fixed(v, d): a number with exactly d decimals ("0.5600") and a true minus
 * sign, or '—' when absent: for a column of one measure, so that its digits
 * line up.
 */
export function fixed(v, d = 4) {
  if (v === null || v === undefined || v === '') return '—';
  const n = Number(v);
  if (!Number.isFinite(n)) return String(v);
  const s = Math.abs(n).toLocaleString('en-US', { minimumFractionDigits: d, maximumFractionDigits: d });
  return `${n < 0 && Number(n.toFixed(d)) !== 0 ? '−' : ''}${s}`;
}

/**
 * tickLabels(vals) -> the labels of a value axis, all with the same number
 * of decimals: the fewest that write every tick exactly (0.560, 0.565,
 * 0.570 rather than 0.56, 0.565, 0.57), at most 10.
 */
export function tickLabels(vals) {
  const fin = vals.filter((v) => Number.isFinite(v));
  let step = Infinity;
  for (let i = 1; i < fin.length; i += 1) step = Math.min(step, Math.abs(fin[i] - fin[i - 1]) || Infinity);
  const tol = Number.isFinite(step) ? step * 1e-3 : 1e-9;
  let d = 0;
  while (d < 10 && fin.some((v) => Math.abs(Number(v.toFixed(d)) - v) > tol)) d += 1;
  return vals.map((v) => (Number.isFinite(v) ? v.toLocaleString('en-US', { minimumFractionDigits: d, maximumFractionDigits: d }) : ''));
}

/** isoMinute(sec) -> "yyyy-mm-dd HH:MM" (UTC) of epoch seconds; "—" for none. */
export function isoMinute(sec) {
  if (sec === null || sec === undefined || !Number.isFinite(sec)) return '—';
  const s = new Date(sec * 1000).toISOString();
  return `${s.slice(0, 10)} ${s.slice(11, 16)}`;
}

/**
 * timeTicks(vals) -> labels of a dated axis at epoch seconds vals, as a
 * quant reads them (ISO, UTC): "yyyy-mm-dd" when every tick is at midnight
 * (ranges of days and more); otherwise (intraday) "HH:MM", with the date
 * above it ("yyyy-mm-dd\nHH:MM") on the first tick and where the day
 * changes.
 */
export function timeTicks(vals) {
  const fin = vals.filter((v) => Number.isFinite(v));
  const daily = fin.every((v) => v % 86400 === 0);
  let day = null;
  return vals.map((v) => {
    if (!Number.isFinite(v)) return '';
    const [d, hm] = isoMinute(v).split(' ');
    if (daily) return d;
    const label = d !== day ? `${d}\n${hm}` : hm;
    day = d;
    return label;
  });
}

/** pct(v): a fraction shown as a percentage (0.04 -> "4.00 %"). */
export function pct(v) {
  if (v === null || v === undefined) return '—';
  const n = Number(v);
  if (!Number.isFinite(n)) return String(v);
  return `${(n * 100).toFixed(2)} %`;
}

/** toDate(v): Date from ISO text, epoch seconds or epoch ms; null if none. */
export function toDate(v) {
  if (v === null || v === undefined || v === '') return null;
  if (typeof v === 'number') return new Date(v > 1e11 ? v : v * 1000);
  const d = new Date(/^\d{4}-\d\d-\d\d \d/.test(v) ? v.replace(' ', 'T') + (/[zZ+]|-\d\d:?\d\d$/.test(v.slice(10)) ? '' : 'Z') : v);
  return Number.isNaN(d.getTime()) ? null : d;
}

/** when(v): a <time> element with a short UTC date and the ISO instant. */
export function when(v) {
  const d = toDate(v);
  if (!d) return '—';
  const iso = d.toISOString();
  return h('time', { datetime: iso, title: iso }, `${iso.slice(0, 10)} ${iso.slice(11, 19)} UTC`);
}

/** ago(v): "12 s ago", "3 min ago", ... relative to now. */
export function ago(v) {
  const d = toDate(v);
  if (!d) return '—';
  const s = Math.max(0, (Date.now() - d.getTime()) / 1000);
  let t;
  if (s < 60) t = `${Math.round(s)} s ago`;
  else if (s < 3600) t = `${Math.round(s / 60)} min ago`;
  else if (s < 86400) t = `${Math.round(s / 3600)} h ago`;
  else t = `${Math.round(s / 86400)} d ago`;
  return h('time', { datetime: d.toISOString(), title: d.toISOString() }, t);
}

/** secs(v): a duration in seconds, "85 ms", "1.24 s", "3 min 5 s". */
export function secs(v) {
  if (v === null || v === undefined) return '—';
  const n = Number(v);
  if (!Number.isFinite(n)) return String(v);
  if (n < 1) return `${Math.round(n * 1000)} ms`;
  if (n < 120) return `${n.toFixed(2)} s`;
  return `${Math.floor(n / 60)} min ${Math.round(n % 60)} s`;
}

/** bytes(v): 1536 -> "1.5 KiB". */
export function bytes(v) {
  if (v === null || v === undefined) return '—';
  let n = Number(v);
  if (!Number.isFinite(n)) return String(v);
  const units = ['B', 'KiB', 'MiB', 'GiB'];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i += 1; }
  return `${i ? n.toFixed(1) : n} ${units[i]}`;
}

const STATUS_TEXT = {
  queued: 'queued', running: 'running', completed: 'completed', succeeded: 'completed',
  failed: 'failed', cancelled: 'cancelled', canceled: 'cancelled',
};

/** statusBadge(s): a text badge whose class carries the colour; the word itself carries the meaning. */
export function statusBadge(s) {
  const key = STATUS_TEXT[String(s || '').toLowerCase()] || 'unknown';
  return h('span', { class: `badge st-${key}` }, s ? String(s) : 'unknown');
}

/** isActive(status): true while a job is still queued or running. */
export function isActive(status) {
  return status === 'queued' || status === 'running';
}

/** hash(v): a shortened hash in <code>, the whole value in its title and copy text. */
export function hash(v, n = 12) {
  if (!v) return '—';
  const s = String(v);
  return h('code', { class: 'hash', title: s }, s.length > n + 2 ? `${s.slice(0, n)}…` : s);
}

/** fullHash(v): the whole hash, breakable, for detail pages. */
export function fullHash(v) {
  if (!v) return '—';
  return h('code', { class: 'hash full' }, String(v));
}

/** label(key): metric_key -> "Metric key". */
export function label(key) {
  const s = String(key).replace(/_/g, ' ');
  return s.charAt(0).toUpperCase() + s.slice(1);
}

/**
 * elapsedSince(v) -> a <span> reading "12.34 s so far" that counts up once a
 * second from the instant v, for a job still queued or running. It stops by
 * itself when the page drops it (a redraw or a navigation): the timer ends
 * on the first tick after the element has left the document.
 */
export function elapsedSince(v) {
  const d = toDate(v);
  if (!d) return '—';
  const el = h('span', { 'data-testid': 'elapsed' });
  const tick = () => { el.textContent = `${secs(Math.max(0, (Date.now() - d.getTime()) / 1000))} so far`; };
  tick();
  let seen = false;
  const timer = setInterval(() => {
    if (el.isConnected) seen = true;
    else if (seen) { clearInterval(timer); return; }
    tick();
  }, 1000);
  return el;
}

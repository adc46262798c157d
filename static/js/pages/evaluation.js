// One challenge evaluation: live status, then the headline metric (holdout
// windows only) against the challenge's baseline, and the metric per
// walk-forward window as a chart and a table, dev and holdout windows told
// apart by colour, legend and an explicit "period" column.
import { api, available } from '../api.js';
import { h, clear, dl, table, link } from '../dom.js';
import { num, statusBadge, isActive, when, label, secs, elapsedSince, fullHash } from '../format.js';
import { chart } from '../chart.js';
import { poll } from '../poll.js';
import { announce } from '../app.js';
import { pageHead, pick, unavailable, challengeMap, shortId } from './common.js';
import { windowKey, verdict, historyUsed } from '../results.js';

/** daysText(ev): the days asked for and, once scored, the days streamed;
 * a dataset shorter than asked for is said, not hidden. */
function daysText(ev) {
  const asked = pick(ev, 'days_back');
  const used = historyUsed(ev);
  if (!used) return asked !== undefined && asked !== null ? `${asked} requested` : null;
  const d = num(used.days, 2);
  const short = asked !== undefined && asked !== null && used.days < Number(asked) - 1e-9;
  return h('span', { 'data-testid': 'days-used', class: short ? 'warn' : null },
    `${d} used (${num(used.bars)} one-minute bars)`,
    asked !== undefined && asked !== null ? `; ${asked} requested` : '',
    short ? ': the dataset holds less history than was asked for' : '');
}

/** progressMeter() -> {el, show(ev)}: how far a running evaluation's
 * stream is (GET /api/evaluations/{id} `progress`, written by the runner's
 * heartbeat about once a second): a progressbar with aria-valuenow/max and
 * the counts in words; before the stream starts (progress null) the bar
 * has no value (indeterminate). show(ev) updates it in place. */
function progressMeter() {
  const fill = h('span', { class: 'meter-fill' });
  const bar = h('div', { class: 'meter', role: 'progressbar', 'aria-labelledby': 'ev-progress-label', 'aria-valuemin': '0', 'data-testid': 'eval-progress' }, fill);
  const text = h('p', { id: 'ev-progress-label' });
  const el = h('section', { class: 'panel', 'aria-label': 'Evaluation progress' }, text, bar);
  function show(ev) {
    const p = ev.progress;
    if (!p || !(Number(p.total) > 0)) {
      bar.removeAttribute('aria-valuenow');
      bar.removeAttribute('aria-valuemax');
      bar.removeAttribute('aria-valuetext');
      fill.style.width = '0%';
      text.textContent = ev.status === 'queued' ? 'Progress: waiting for a runner' : 'Progress: starting the sandbox and loading your code';
      return;
    }
    const done = Math.min(Number(p.done) || 0, Number(p.total));
    const pct = (100 * done) / Number(p.total);
    const words = `${num(done)} of ${num(p.total)} ${p.unit || 'steps'} (${num(pct, 1)} %)`;
    bar.setAttribute('aria-valuemax', String(p.total));
    bar.setAttribute('aria-valuenow', String(done));
    bar.setAttribute('aria-valuetext', words);
    fill.style.width = `${pct.toFixed(2)}%`;
    text.textContent = `Progress: ${words}`;
  }
  return { el, show };
}

function resultPanels(ctx, ev, ch, box) {
  const res = ev.result || ev.metrics || {};
  const info = (ch && ch.metric_info) || {};
  const primary = info.primary || ev.metric || Object.keys(res).find((k) => k.startsWith('mean_')) || 'mean_auc';
  const dir = info.direction || 'higher';
  const base = info.baseline !== undefined && info.baseline !== null ? Number(info.baseline) : null;
  const head = Number(res[primary]);
  const v = verdict(head, base, dir);
  const mlabel = info.label || label(primary);

  if (res.error) {
    // a failed evaluation's error is already shown once ("Why it failed")
    if (!ev.error) box.append(h('section', { class: 'panel error-panel', 'data-testid': 'eval-error' }, h('h2', null, 'The evaluation returned an error'), h('p', null, String(res.error))));
    return;
  }
  box.append(h('section', { class: 'panel', 'aria-labelledby': 'ev-head' },
    h('h2', { id: 'ev-head' }, 'Headline (holdout)'),
    h('div', { class: 'headline', 'data-testid': 'headline' },
      h('span', { class: 'big' }, Number.isFinite(head) ? num(head, 5) : '—'),
      h('span', null, `${mlabel} (${primary}), ${dir} is better`),
      base !== null ? h('span', null, 'baseline ', h('strong', null, num(base, 4))) : null,
      v ? h('span', { class: v === 'better' ? 'better' : v === 'worse' ? 'worse' : '' },
        v === 'better' ? `beats the baseline by ${num(Math.abs(head - base), 5)}`
          : v === 'worse' ? `below the baseline by ${num(Math.abs(head - base), 5)}` : 'equal to the baseline') : null),
    dl(Object.entries(res).filter(([k, x]) => k !== 'windows' && k !== primary && (typeof x !== 'object' || x === null))
      .map(([k, x]) => [label(k), typeof x === 'number' ? num(x, 6) : String(x)]))));

  const windows = Array.isArray(res.windows) ? res.windows : [];
  if (!windows.length) return;
  const key = windowKey(primary, windows);
  const x = windows.map((_, i) => i + 1);
  const devVals = windows.map((w) => (w.in_holdout ? null : (Number.isFinite(w[key]) ? w[key] : null)));
  const hoVals = windows.map((w) => (w.in_holdout ? (Number.isFinite(w[key]) ? w[key] : null) : null));
  const nDev = devVals.filter((q) => q !== null).length;
  const nHo = hoVals.filter((q) => q !== null).length;
  const series = [
    { label: 'Dev window', values: devVals, color: '#0c6fb0', bars: true, fill: 'rgba(12,111,176,0.55)' },
    { label: 'Holdout window', values: hoVals, color: '#c2410c', bars: true, fill: 'rgba(194,65,12,0.75)' },
  ];
  if (base !== null) series.push({ label: 'Baseline', values: x.map(() => base), color: '#374151', dash: [6, 4], width: 1.5 });
  const c = chart({
    title: `${mlabel} per walk-forward window`, testid: 'window-chart', x, xLabel: 'Window', xUnit: 'windows', signal: ctx.signal, height: 240,
    series,
    summary: `${windows.length} windows: ${nDev} dev and ${nHo} holdout.${base !== null ? ` Baseline ${base}.` : ''}`,
  });
  const panel = h('section', { class: 'panel', 'aria-labelledby': 'ev-win' }, h('h2', { id: 'ev-win' }, 'Walk-forward windows'),
    h('p', { class: 'small' }, h('span', { class: 'badge dev' }, 'dev'), ' windows are for diagnosis; only ',
      h('span', { class: 'badge holdout' }, 'holdout'), ' windows make the headline.'),
    c.figure);
  const extra = Object.keys(windows[0]).filter((k) => !['start', 'end', 'in_holdout', key].includes(k));
  panel.append(table([
    { label: 'Window', num: true, cell: (w) => num(windows.indexOf(w) + 1) },
    { label: 'Period', cell: (w) => h('span', { class: `badge ${w.in_holdout ? 'holdout' : 'dev'}` }, w.in_holdout ? 'holdout' : 'dev') },
    { label: 'Start', num: true, cell: (w) => num(w.start) },
    { label: 'End', num: true, cell: (w) => num(w.end) },
    { label: key ? label(key) : 'Value', num: true, cell: (w) => num(w[key], 5) },
    ...extra.map((k) => ({ label: label(k), num: true, cell: (w) => num(w[k], 5) })),
  ], windows, { caption: 'Windows' }));
  box.append(panel);
}

export async function render(ctx) {
  const root = clear(ctx.main);
  const id = ctx.params.id;
  root.append(pageHead(ctx, `Evaluation ${shortId(id)}`));
  // the name given at submission heads the page once it is known
  root.querySelector('h1').title = id;
  let ev;
  try {
    ev = await api(`/api/evaluations/${encodeURIComponent(id)}`);
  } catch (e) {
    if (e.status === 404 && !await available('/api/challenges')) {
      root.append(unavailable('Evaluations'));
      return;
    }
    throw e;
  }
  if (ctx.signal.aborted) return;
  if (ev.name) root.querySelector('h1').textContent = `${ev.name} · evaluation ${shortId(id)}`;
  const challenges = challengeMap(await api('/api/challenges').catch(() => ({})));
  const badge = h('span', { role: 'status', 'data-testid': 'eval-status' });
  root.querySelector('h1').append(' ', badge);
  const body = h('div');
  root.append(body);
  const meter = progressMeter();

  function draw() {
    clear(badge).append(statusBadge(ev.status));
    clear(body);
    const chName = pick(ev, 'challenge');
    body.append(h('section', { class: 'panel', 'aria-label': 'Evaluation details' }, dl([
      ['Name', ev.name ? h('span', { 'data-testid': 'eval-name' }, String(ev.name)) : null],
      ['Note', ev.note ? h('span', { class: 'prewrap', 'data-testid': 'eval-note' }, String(ev.note)) : null],
      ['Challenge', chName ? link(`#/challenges/${encodeURIComponent(chName)}`, chName) : null],
      ['Mode', pick(ev, 'mode') ? String(ev.mode) : null],
      ['Dataset version', pick(ev, 'dataset_version') ? String(ev.dataset_version) : null],
      ['Days of history', daysText(ev)],
      ['Holdout days', pick(ev, 'holdout_days') !== undefined ? String(ev.holdout_days) : null],
      ['Queued', when(pick(ev, 'queued_at', 'created_at'))],
      ['Started', ev.started_at ? when(ev.started_at) : ev.status === 'queued' ? 'not yet: waiting for a runner' : null],
      ['Completed', ev.completed_at ? when(ev.completed_at) : null],
      ['Runtime', ev.runtime_s !== null && ev.runtime_s !== undefined ? secs(ev.runtime_s)
        : ev.status === 'running' && ev.started_at ? elapsedSince(ev.started_at) : null],
    ])));
    if (isActive(ev.status)) {
      body.append(h('p', { class: 'panel notice' }, ev.status === 'queued'
        ? 'Waiting for a runner… this page updates by itself.'
        : 'Streaming bars through your code in the sandbox… this page updates by itself.'));
      meter.show(ev);
      body.append(meter.el);
    }
    const err = ev.error;
    if (err && (err.code || err.message || typeof err === 'string')) {
      const e = typeof err === 'object' ? err : { message: err };
      body.append(h('section', { class: 'panel error-panel', 'data-testid': 'eval-error' }, h('h2', null, 'Why it failed'),
        dl([['Code', e.code ? h('code', null, e.code) : null], ['Message', e.message || null]]),
        e.log_tail ? h('pre', { tabindex: 0, 'aria-label': 'Log tail' }, e.log_tail) : null));
    }
    if (ev.result || (ev.metrics && ev.status !== 'failed')) resultPanels(ctx, ev, challenges[chName], body);
    // what was submitted: the hash that identifies it on the leaderboard, and the code
    body.append(h('section', { class: 'panel', 'aria-labelledby': 'eval-code', 'data-testid': 'eval-code' },
      h('h2', { id: 'eval-code' }, 'Submitted code'),
      dl([['Code hash', fullHash(pick(ev, 'code_hash'))], ['Dataset hash', fullHash(pick(ev, 'dataset_hash'))]]),
      typeof ev.code === 'string'
        ? h('details', null, h('summary', null, `The code (${num(ev.code.split('\n').length)} lines)`),
          h('pre', { class: 'code-view', tabindex: 0, 'aria-label': 'Submitted code' }, h('code', null, ev.code)))
        : null));
  }
  draw();
  if (isActive(ev.status)) {
    let last = ev.status;
    poll(async () => {
      const r = await api(`/api/evaluations/${encodeURIComponent(id)}`, { signal: ctx.signal });
      if (ctx.signal.aborted) return 'done';
      const moved = JSON.stringify(r.progress) !== JSON.stringify(ev.progress);
      ev = r;
      if (r.status === last) {
        if (!moved) return 'same';
        meter.show(r);   // in place: the rest of the page (an open <details>, the focus) stays
        return 'changed';
      }
      last = r.status;
      announce(`Evaluation ${r.status}`);
      draw();
      return isActive(r.status) ? 'changed' : 'done';
    }, { min: 1000, max: 10000, signal: ctx.signal });
  }
}

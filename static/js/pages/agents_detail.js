// One research agent: its configuration and budgets, the controls (pause,
// resume, stop, clone from an iteration, export, delete), the live activity
// of the iteration in flight, the iterations (table and a metric-by-
// iteration chart with the best one marked), the code of any iteration with
// a diff against the previous or the best one, its analysis, notes.txt and
// STATE.md, and the chat with the agent and the model (agents_chat.js).
//
// Theory of operation: GET /api/agents/{id} is polled (fast while the agent
// runs, backing off while nothing changes, stopped with the page); each
// panel lives in its own box and is redrawn only when the part of the
// detail it shows has changed (the status and budgets, the activity lines,
// the iteration count), so the reader's code selection, a half-typed chat
// message and the chart's zoom survive the updates. Notes, STATE.md and the
// chat are fetched again when an iteration is scored or a message is sent.
import { api, post } from '../api.js';
import { h, clear, append, dl, table, link, field } from '../dom.js';
import { num, fixed, secs, when, ago, fullHash } from '../format.js';
import { chart } from '../chart.js';
import { poll } from '../poll.js';
import { announce, navigate, confirmDialog } from '../app.js';
import { pageHead, challengeMap, shortId } from './common.js';
import { agentBadge, agentActive } from './agents.js';
import { lineDiff, iterTokens, iterCost, usd, devMetric } from './agents_diff.js';
import { chatPanel } from './agents_chat.js';

/** fill(el, ...kids): el emptied, then kids appended (arrays flattened, nullish skipped). */
const fill = (el, ...kids) => append(clear(el), kids);

const FINISHED = ['completed', 'error', 'stopped', 'max_iterations_reached'];

/** enc(id): an agent id in a path. */
const enc = (id) => encodeURIComponent(id);

/** budgetText(b, key, fmt) -> "used of limit (left)" for one budget, or null. */
function budgetText(b, key, fmt) {
  if (!b || b[key] === null || b[key] === undefined) return null;
  return `${fmt(b[`${key}_used`])} of ${fmt(b[key])} (${fmt(b[`${key}_left`])} left)`;
}

/** summaryPanel(a) -> the configuration, counters and budgets of agent a. */
function summaryPanel(a) {
  const c = a.config || {};
  const b = a.budget || {};
  return h('section', { class: 'panel', 'aria-label': 'Agent details', 'data-testid': 'agent-summary' }, dl([
    ['Status', h('span', null, agentBadge(a.status, a.paused), a.status_detail ? h('span', { class: 'muted small' }, ` ${a.status_detail}`) : null)],
    ['Challenge', c.challenge ? link(`#/challenges/${enc(c.challenge)}`, c.challenge) : null],
    ['Goal', h('span', { class: 'prewrap' }, String(c.goal || ''))],
    ['Driver', c.driver ? `${c.driver}${c.driver !== 'builtin' ? ` (model ${c.model})` : ''}` : null],
    ['Iterations', h('span', { 'data-testid': 'iteration-count' }, `${num(a.iteration_count)} done; minimum ${num(c.min_iterations)}, maximum ${num(c.max_iterations)}`)],
    ['Best iteration', a.best_iteration ? `#${a.best_iteration}: sealed score ${fixed(a.best_score, 4)}${c.best_by === 'forward' ? ' (by forward score)' : ''}` : 'none yet'],
    ['Days of history', c.days_back !== undefined ? num(c.days_back) : null],
    ['Dataset', c.dataset_version ? h('span', null, String(c.dataset_version), ' ', fullHash(c.dataset_hash)) : null],
    ['Wall time', budgetText(b, 'wall_s', secs) || (b.wall_s_used !== undefined ? `${secs(b.wall_s_used)} used` : null)],
    ['Tokens', c.driver !== 'builtin' ? budgetText(b, 'tokens', (v) => num(v)) : num(a.total_tokens)],
    ['Cost', c.driver !== 'builtin' ? budgetText(b, 'usd', usd) : usd(a.total_cost)],
    ['LLM requests', c.driver !== 'builtin' ? budgetText(b, 'requests', (v) => num(v)) : null],
    ['Cloned from', a.cloned_from ? h('span', null, link(`#/agents/${enc(a.cloned_from)}`, shortId(a.cloned_from)), a.fork_iteration ? ` at iteration ${a.fork_iteration}` : '') : null],
    ['Imported', a.imported ? 'yes (holdout numbers of the bundle were dropped)' : null],
    ['Created', when(a.created_at)],
    ['Updated', ago(a.updated_at)],
  ]));
}

/** primaryOf(a, challenges) -> {key, label, direction} of the agent's challenge metric. */
function primaryOf(a, challenges) {
  const ch = challenges[(a.config || {}).challenge] || {};
  const mi = ch.metric_info || {};
  return { key: mi.primary || 'mean_auc', label: mi.label || mi.primary || 'metric', direction: mi.direction || 'higher' };
}

/** iterationsPanel(ctx, a, pm, signal) -> the iteration table and the chart. */
function iterationsPanel(a, pm, signal) {
  const its = a.iterations || [];
  const box = h('section', { class: 'panel', 'aria-labelledby': 'ag-iters', 'data-testid': 'iterations' },
    h('h2', { id: 'ag-iters' }, 'Iterations'));
  if (!its.length) {
    box.append(h('p', { class: 'muted', 'data-testid': 'no-iterations' }, agentActive(a.status)
      ? 'No iteration scored yet: the first one is running. This page updates by itself.' : 'No iteration was scored.'));
    return box;
  }
  const x = its.map((it) => it.iteration);
  const dev = its.map((it) => devMetric(it, pm.key));
  const ho = its.map((it) => (it.holdout_score === null || it.holdout_score === undefined ? null : Number(it.holdout_score)));
  const best = its.map((it, i) => (it.iteration === a.best_iteration ? (ho[i] ?? dev[i]) : null));
  const c = chart({
    title: `${pm.label} by iteration (${pm.direction} is better)`, testid: 'iteration-chart', x, xLabel: 'Iteration', xInteger: true, xUnit: 'iterations', signal, height: 220,
    series: [
      { label: 'Dev (seen by the agent)', values: dev, color: '#0c6fb0', points: true },
      { label: 'Sealed holdout', values: ho, color: '#c2410c', points: true },
      { label: 'Best iteration', values: best, color: '#15803d', ring: true, width: 3 },
    ],
    summary: `${its.length} iterations.${a.best_iteration ? ` The best is iteration ${a.best_iteration}, marked in green.` : ' No best iteration yet.'}`,
  });
  // which iteration the green mark sits on, for readers of the markup (and tests)
  c.figure.dataset.bestIteration = a.best_iteration ? String(a.best_iteration) : '';
  box.append(c.figure, table([
    { label: 'Iteration', num: true, cell: (it) => h('span', null, String(it.iteration),
      it.iteration === a.best_iteration ? h('span', null, ' ', h('span', { class: 'badge st-completed', 'data-testid': 'best-mark' }, 'best')) : null) },
    // the sealed score first: it is what counts, and a phone shows it without scrolling
    { label: `Sealed holdout ${pm.label}`, num: true, title: 'Scored on the last 20 days, which the agent never sees', cell: (it) => fixed(it.holdout_score, 4) },
    { label: `Dev ${pm.label} (seen by the agent)`, num: true, title: `${pm.key} on the development windows, the figure the agent is shown`, cell: (it) => fixed(devMetric(it, pm.key), 4) },
    { label: 'Error', cell: (it) => (it.has_error
      ? h('span', { class: 'badge st-failed', title: String(it.error || it.holdout_error || '') }, 'error')
      : 'no') },
    { label: 'Elapsed', num: true, cell: (it) => secs(it.elapsed_s) },
    { label: 'Tokens', num: true, cell: (it) => num(iterTokens(it)) },
    { label: 'Cost', num: true, cell: (it) => usd(iterCost(it)) },
    { label: 'Done', cell: (it) => (it.done_signal ? 'agent said done' : it.timed_out ? 'timed out' : '') },
  ], its, { caption: 'Iterations', rowAttrs: (it) => ({ 'data-iteration': it.iteration }) }));
  const errs = its.filter((it) => it.has_error && (it.error || it.holdout_error));
  if (errs.length) {
    box.append(h('details', null, h('summary', null, `Errors (${errs.length})`),
      h('ul', null, errs.map((it) => h('li', null, `Iteration ${it.iteration}: `, h('span', { class: 'prewrap' }, String(it.error || it.holdout_error)))))));
  }
  return box;
}

/** analysisView(an) -> the analysis of one iteration: feature report and narrative. */
function analysisView(an) {
  if (!an || typeof an !== 'object') return h('p', { class: 'muted' }, 'This iteration wrote no analysis.');
  const text = (k, l) => (an[k] ? [h('h4', null, l), h('p', { class: 'prewrap' }, String(an[k]))] : null);
  const fr = Array.isArray(an.feature_report) ? an.feature_report : [];
  const pp = (f) => (f.predictive_power && typeof f.predictive_power === 'object' ? f.predictive_power : {});
  return h('div', { 'data-testid': 'analysis' },
    text('hypothesis', 'Hypothesis'), text('what_changed', 'What changed'), text('what_worked', 'What worked'),
    text('what_failed', 'What failed'), text('expected_outcome', 'Expected outcome'),
    fr.length ? table([
      { label: 'Rank', num: true, cell: (f) => num(f.importance_rank) },
      { label: 'Feature', cell: (f) => String(f.name ?? '') },
      { label: 'Description', cell: (f) => String(f.description ?? '') },
      { label: 'Method', cell: (f) => String(pp(f).method ?? '') },
      { label: 'Power', num: true, cell: (f) => num(pp(f).value, 4) },
      { label: 'p-value', num: true, cell: (f) => num(pp(f).p_value, 4) },
      { label: 'Samples', num: true, cell: (f) => num(pp(f).n_samples) },
    ], fr, { caption: 'Feature report' }) : h('p', { class: 'muted' }, 'No feature report.'));
}

/** diffView(rows) -> a <pre> of a line diff, removed and added lines marked in text and colour. */
function diffView(rows, what) {
  if (!rows) return h('p', { class: 'warn' }, 'The two files differ in too many lines to compare here.');
  const pre = h('pre', { class: 'code-view diff', tabindex: 0, 'aria-label': what, 'data-testid': 'code-diff' });
  for (const r of rows) {
    const t = `${r.op} ${r.text}\n`;
    pre.append(r.op === '+' ? h('ins', null, t) : r.op === '-' ? h('del', null, t) : t);
  }
  const added = rows.filter((r) => r.op === '+').length;
  const removed = rows.filter((r) => r.op === '-').length;
  return h('div', null, h('p', { class: 'small' }, `${added} lines added, ${removed} removed.`), pre);
}

/** codePanel(ctx, id, state) -> the code viewer; state.a is the current detail. */
function codePanel(ctx, id, state) {
  const pick = h('select', { 'data-testid': 'code-iteration' });
  const against = h('select', { 'data-testid': 'code-against' },
    h('option', { value: 'none' }, 'nothing (show the code)'),
    h('option', { value: 'prev' }, 'the previous iteration'),
    h('option', { value: 'best' }, 'the best iteration'));
  const out = h('div', { 'aria-live': 'polite' });
  const analysis = h('div');
  const cache = new Map();
  const code = async (n) => {
    if (!cache.has(n)) cache.set(n, api(`/api/agents/${enc(id)}/code/${n}`, { accept: 'text/plain', signal: ctx.signal }));
    return cache.get(n);
  };
  let seq = 0;
  async function show() {
    const n = Number(pick.value);
    if (!n) return;
    const my = ++seq;
    const its = state.a.iterations || [];
    const it = its.find((q) => q.iteration === n);
    fill(analysis, analysisView(it && it.analysis));
    let base = null;
    if (against.value === 'prev') base = its.filter((q) => q.iteration < n).map((q) => q.iteration).pop() || null;
    if (against.value === 'best') base = state.a.best_iteration && state.a.best_iteration !== n ? state.a.best_iteration : null;
    try {
      const [txt, old] = await Promise.all([code(n), base ? code(base) : null]);
      if (my !== seq || ctx.signal.aborted) return;
      if (base) fill(out, diffView(lineDiff(String(old), String(txt)), `Changes from iteration ${base} to ${n}`));
      else {
        fill(out, against.value !== 'none' ? h('p', { class: 'muted small' }, against.value === 'best' ? 'This is the best iteration (or there is none yet): its code as it is.' : 'No earlier iteration: the code as it is.') : null,
          h('pre', { class: 'code-view', tabindex: 0, 'aria-label': `Code of iteration ${n}`, 'data-testid': 'code-text' }, h('code', null, String(txt))));
      }
    } catch (e) {
      if (e && e.name === 'AbortError') return;
      cache.delete(n);
      if (base) cache.delete(base);
      fill(out, h('p', { class: 'error' }, `Could not load the code: ${e.message}`));
    }
  }
  pick.addEventListener('change', show);
  against.addEventListener('change', show);
  const panel = h('section', { class: 'panel', 'aria-labelledby': 'ag-code', 'data-testid': 'code' },
    h('h2', { id: 'ag-code' }, 'Code and analysis'),
    h('div', { class: 'grid' }, field('Iteration', pick), field('Compare with', against)),
    out, h('h3', null, 'Analysis'), analysis);
  /** update(): the iteration choices follow the detail; the selection is kept. */
  panel.update = () => {
    const its = state.a.iterations || [];
    const had = pick.value;
    if (pick.options.length === its.length) return;
    fill(pick, its.map((it) => h('option', { value: it.iteration }, `Iteration ${it.iteration}${it.iteration === state.a.best_iteration ? ' (best)' : ''}`)));
    if (!its.length) {
      fill(out, h('p', { class: 'muted' }, 'No iteration has code yet.'));
      return;
    }
    pick.value = had && its.some((q) => String(q.iteration) === had) ? had : String(its[its.length - 1].iteration);
    if (pick.value !== had) show();
  };
  return panel;
}

/** textPanel(ctx, id, which, title) -> a panel showing notes.txt or STATE.md; .reload() fetches again. */
function textPanel(ctx, id, which, title) {
  const body = h('div');
  const panel = h('section', { class: 'panel', 'aria-labelledby': `ag-${which}`, 'data-testid': `agent-${which}` },
    h('h2', { id: `ag-${which}` }, title), body);
  panel.reload = async () => {
    try {
      const r = await api(`/api/agents/${enc(id)}/${which}`, { signal: ctx.signal });
      const t = r && typeof r.content === 'string' ? r.content : '';
      fill(body, t.trim() ? h('pre', { class: 'prewrap', tabindex: 0, 'aria-label': title }, t) : h('p', { class: 'muted' }, 'Empty so far.'));
    } catch (e) {
      if (e && e.name === 'AbortError') return;
      fill(body, h('p', { class: 'error' }, `Could not load ${title}: ${e.message}`));
    }
  };
  return panel;
}

/** activityPanel(a) -> the live lines of the iteration in flight, or nothing. */
function activityPanel(a) {
  const act = a.activity;
  if (!act) return null;
  const lines = Array.isArray(act.lines) ? act.lines : [];
  return h('section', { class: 'panel notice', 'aria-labelledby': 'ag-act', 'data-testid': 'activity' },
    h('h2', { id: 'ag-act' }, `Iteration ${act.iteration}: ${act.state}`),
    h('p', { class: 'small muted' }, act.started_at ? ['started ', ago(act.started_at)] : 'waiting for a runner',
      act.attempts > 1 ? `, attempt ${act.attempts}` : ''),
    lines.length
      ? h('ol', { class: 'activity', role: 'log', 'aria-label': 'Activity lines', tabindex: 0 },
        lines.map((l) => h('li', null, h('code', null, String(l.line)))))
      : h('p', { class: 'muted' }, 'No activity lines yet.'));
}

export async function render(ctx) {
  const id = ctx.params.id;
  const root = clear(ctx.main);
  root.append(pageHead(ctx, `Agent ${shortId(id)}`));
  root.querySelector('h1').title = id;
  const state = { a: await api(`/api/agents/${enc(id)}`, { signal: ctx.signal }) };
  const challenges = challengeMap(await api('/api/challenges', { signal: ctx.signal }).catch(() => ({})));
  if (ctx.signal.aborted) return;
  const pm = primaryOf(state.a, challenges);
  const live = h('span', { role: 'status', 'data-testid': 'agent-live' });
  root.querySelector('h1').append(' ', live);
  const boxes = { summary: h('div'), actions: h('div'), activity: h('div'), iters: h('div') };
  const code = codePanel(ctx, id, state);
  const notes = textPanel(ctx, id, 'notes', 'notes.txt');
  const stateMd = textPanel(ctx, id, 'state', 'STATE.md');
  // after an ask, the budgets it was metered against are fetched again
  const chat = chatPanel(ctx, id, state, () => { refresh().catch(() => {}); });
  root.append(boxes.summary, boxes.actions, boxes.activity, boxes.iters, code, h('div', { class: 'grid' }, notes, stateMd), chat);

  let chartCtl = null;
  const seen = { head: '', act: '', iters: '' };
  async function act(path, body, done) {
    try {
      await post(`/api/agents/${enc(id)}/${path}`, body || {});
      announce(done);
      await refresh();
    } catch (e) {
      announce(`Failed: ${e.message}`);
      const m = boxes.actions.querySelector('[data-testid="action-error"]');
      if (m) m.textContent = `${path} failed: ${e.message}`;
    }
  }
  function actionsPanel(a) {
    const finished = FINISHED.includes(a.status);
    const btn = (label, cls, fn, show = true) => (show ? h('button', { type: 'button', class: cls, on: { click: fn } }, label) : null);
    const its = a.iterations || [];
    const from = h('select', null, h('option', { value: '' }, 'no iteration (start afresh)'),
      its.map((it) => h('option', { value: it.iteration }, `iteration ${it.iteration}${it.iteration === a.best_iteration ? ' (best)' : ''}`)));
    if (a.best_iteration) from.value = String(a.best_iteration);
    const goal = h('input', { type: 'text', maxlength: 10000, placeholder: 'the same goal' });
    const cloneForm = h('form', { class: 'grid' }, field('Clone from', from), field('Goal of the clone', goal),
      h('div', { class: 'actions' }, h('button', { type: 'submit' }, 'Clone')));
    cloneForm.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      const body = {};
      if (from.value) body.iteration = Number(from.value);
      if (goal.value.trim()) body.goal = goal.value.trim();
      try {
        const r = await post(`/api/agents/${enc(id)}/clone`, body);
        announce(`Cloned as agent ${shortId(r.id)}`);
        navigate(`#/agents/${enc(r.id)}`);
      } catch (e) {
        cloneForm.append(h('p', { class: 'error', role: 'alert' }, `Not cloned: ${e.message}`));
      }
    });
    return h('section', { class: 'panel', 'aria-labelledby': 'ag-ctl', 'data-testid': 'agent-actions' },
      h('h2', { id: 'ag-ctl' }, 'Control'),
      h('div', { class: 'actions' },
        btn('Pause', null, () => act('pause', {}, 'Pause requested: the agent stops after this iteration'), !finished && !a.paused),
        btn('Resume', 'primary', () => act('resume', {}, 'Resumed'), a.paused || a.status === 'crashed'),
        btn('Stop', 'danger', async () => {
          if (await confirmDialog('Stop this agent?', 'A running iteration is killed and no further iteration runs. A stopped agent cannot be resumed; you can clone it.', 'Stop the agent', { danger: true })) act('stop', {}, 'Agent stopped');
        }, !finished),
        h('a', { class: 'button', href: `/api/agents/${enc(id)}/export`, download: `agent_${id}.json` }, 'Export'),
        btn('Delete', 'danger', async () => {
          if (!await confirmDialog('Delete this agent?', 'The agent, its iterations, code and notes are removed for good. Export it first to keep a copy.', 'Delete the agent', { danger: true })) return;
          try {
            await post(`/api/agents/${enc(id)}/delete`, {});
            announce('Agent deleted');
            navigate('#/agents');
          } catch (e) {
            announce(`Not deleted: ${e.message}`);
          }
        })),
      h('p', { class: 'error', role: 'alert', 'data-testid': 'action-error' }),
      h('h3', null, 'Clone'), cloneForm);
  }

  function draw() {
    const a = state.a;
    fill(live, agentBadge(a.status, a.paused));
    const head = JSON.stringify([a.status, a.paused, a.status_detail, a.iteration_count, a.best_iteration, a.budget, a.total_cost, a.updated_at]);
    if (head !== seen.head) {
      fill(boxes.summary, summaryPanel(a));
      fill(boxes.actions, actionsPanel(a));
      chat.update();
    }
    const actKey = JSON.stringify(a.activity);
    if (actKey !== seen.act) fill(boxes.activity, activityPanel(a));
    const itKey = JSON.stringify([a.iterations, a.best_iteration]);
    const itersChanged = itKey !== seen.iters;
    if (itersChanged) {
      if (chartCtl) chartCtl.abort();
      chartCtl = new AbortController();
      ctx.signal.addEventListener('abort', () => chartCtl.abort(), { once: true });
      fill(boxes.iters, iterationsPanel(a, pm, chartCtl.signal));
      code.update();
      notes.reload();
      stateMd.reload();
    }
    const headChanged = head !== seen.head;
    seen.head = head; seen.act = actKey; seen.iters = itKey;
    return headChanged || itersChanged;
  }

  async function refresh() {
    const a = await api(`/api/agents/${enc(id)}`, { signal: ctx.signal });
    if (ctx.signal.aborted) return false;
    const before = state.a.iteration_count;
    state.a = a;
    const changed = draw();
    if (a.iteration_count !== before) announce(`Iteration ${a.iteration_count} scored`);
    if (changed) chat.reload();
    return changed;
  }

  draw();
  chat.reload();
  poll(async () => {
    const changed = await refresh();
    if (ctx.signal.aborted) return 'done';
    return changed || agentActive(state.a.status) ? 'changed' : 'same';
  }, { min: 2000, max: () => (agentActive(state.a.status) ? 3000 : 15000), signal: ctx.signal });
}


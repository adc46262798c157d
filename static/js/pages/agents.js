// Agents: the launch form of a research agent and the list of agents.
// Theory of operation: the list is GET /api/agents?full=0 polled with
// If-None-Match (the API's strong ETag), so an unchanged list costs a 304
// and the table is redrawn only when an agent's figures moved; the poller
// backs off while nothing changes (poll.js) and stops with the page. The
// form posts POST /api/agents; a 400 names its field in the message, which
// is shown beside that field (aria-invalid, described by the message) and
// in an alert above the button.
import { api, post, NOT_MODIFIED, ApiError } from '../api.js';
import { h, clear, append, field, table, link, nextId } from '../dom.js';
import { num, ago, fixed } from '../format.js';
import { poll } from '../poll.js';
import { announce, navigate } from '../app.js';
import { pageHead, challengeMap, shortId } from './common.js';
import { metricText } from './challenges.js';
import { errorField, usd } from './agents_diff.js';

/** fill(el, ...kids): el emptied, then kids appended (arrays flattened, nullish skipped). */
const fill = (el, ...kids) => append(clear(el), kids);

const STATUS_CLASS = {
  starting: 'queued', running: 'running', paused: 'queued', completed: 'completed',
  max_iterations_reached: 'completed', stopped: 'cancelled', crashed: 'failed', error: 'failed',
};

/** agentBadge(status, paused) -> a status badge of an agent (words carry the meaning). */
export function agentBadge(status, paused) {
  const s = String(status || 'unknown');
  const b = h('span', { class: `badge st-${STATUS_CLASS[s] || 'unknown'}`, 'data-testid': 'agent-status' }, s.replace(/_/g, ' '));
  return paused && s !== 'paused' ? h('span', null, b, ' ', h('span', { class: 'badge st-queued' }, 'pause requested')) : b;
}

/** agentActive(status) -> true while an agent may still run iterations by itself. */
export function agentActive(status) {
  return status === 'starting' || status === 'running';
}

/** numInput(name, value, min, max, step): a number control with the API's bounds. */
function numInput(name, value, min, max, step = 1) {
  return h('input', { type: 'number', name, value: value ?? '', min, max, step, inputmode: step === 1 ? 'numeric' : 'decimal' });
}

/** launchForm(challenges) -> the <section> of the create form. */
function launchForm(challenges) {
  const names = Object.keys(challenges);
  const ch = h('select', { name: 'challenge', required: true }, names.map((n) => h('option', { value: n }, n)));
  const about = h('div', { class: 'small', 'data-testid': 'challenge-about', 'aria-live': 'polite' });
  const showAbout = () => {
    const c = challenges[ch.value] || {};
    fill(about, 
      c.short ? h('p', null, h('strong', null, String(c.short))) : null,
      c.desc ? h('p', null, String(c.desc)) : null,
      h('p', null, h('span', { class: 'muted' }, 'Metric: '), metricText(c)));
  };
  ch.addEventListener('change', showAbout);
  if (names.includes('ETH-1H-BINARY')) ch.value = 'ETH-1H-BINARY';
  showAbout();
  const goal = h('textarea', { name: 'goal', rows: 3, required: true, maxlength: 10000, placeholder: 'e.g. find a 1-hour momentum effect on ETH' });
  const driver = h('select', { name: 'driver' },
    h('option', { value: 'builtin' }, 'builtin (the built-in research agent, no LLM)'),
    h('option', { value: 'claude-code' }, 'claude-code (Claude Code CLI, needs your Anthropic key)'),
    h('option', { value: 'command' }, 'command (the operator\'s AGENTTEST_AGENT_COMMAND)'));
  const model = h('select', { name: 'model' }, ['sonnet', 'opus', 'haiku'].map((m) => h('option', { value: m }, m)));
  const ctl = {
    challenge: ch, goal, driver, model,
    min_iterations: numInput('min_iterations', 5, 1, 100),
    max_iterations: numInput('max_iterations', 20, 1, 500),
    days_back: numInput('days_back', 60, 60, 365),
    wall_s: numInput('wall_s', '', 1, 1e9, 'any'),
    tokens: numInput('tokens', '', 1, null),
    usd: numInput('usd', '', 0.01, null, 'any'),
    requests: numInput('requests', '', 1, null),
  };
  const errs = {};
  const rows = {};
  const row = (key, labelText, hint) => {
    const r = field(labelText, ctl[key], hint);
    errs[key] = h('p', { class: 'error', id: nextId('err') });
    r.append(errs[key]);
    rows[key] = r;
    return r;
  };
  const summary = h('p', { class: 'error', role: 'alert', 'data-testid': 'launch-error' });
  const button = h('button', { type: 'submit', class: 'primary' }, 'Launch agent');
  const form = h('form', { novalidate: true, 'aria-labelledby': 'launch-head' },
    row('challenge', 'Challenge'), about,
    row('goal', 'Goal', 'What the agent should look for; it can be changed while it runs.'),
    h('div', { class: 'grid' },
      h('div', null, row('driver', 'Driver'), row('model', 'Model', 'Used by the LLM drivers only.')),
      h('div', null, row('min_iterations', 'Minimum iterations', '1–100: the agent may not stop earlier.'),
        row('max_iterations', 'Maximum iterations', '1–500.'),
        row('days_back', 'Days of history', '60–365 days of one-minute bars.'))),
    h('fieldset', null, h('legend', null, 'Budget (optional)'),
      h('div', { class: 'grid' },
        h('div', null, row('wall_s', 'Wall time (s)', 'Pauses the agent once used up.'), row('requests', 'LLM requests')),
        h('div', null, row('tokens', 'LLM tokens', 'Input, output and cache tokens together.'), row('usd', 'LLM cost (USD)')))),
    summary, h('div', { class: 'actions' }, button));

  const clearErrors = () => {
    summary.textContent = '';
    for (const [k, el] of Object.entries(errs)) {
      el.textContent = '';
      ctl[k].removeAttribute('aria-invalid');
      const d = (ctl[k].getAttribute('aria-describedby') || '').split(' ').filter((x) => x && x !== el.id);
      if (d.length) ctl[k].setAttribute('aria-describedby', d.join(' ')); else ctl[k].removeAttribute('aria-describedby');
    }
  };
  const showError = (key, msg) => {
    if (!errs[key]) return;
    errs[key].textContent = msg;
    ctl[key].setAttribute('aria-invalid', 'true');
    const d = ctl[key].getAttribute('aria-describedby');
    ctl[key].setAttribute('aria-describedby', d ? `${d} ${errs[key].id}` : errs[key].id);
  };

  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    clearErrors();
    const body = { challenge: ch.value, goal: goal.value, driver: driver.value, model: model.value };
    for (const k of ['min_iterations', 'max_iterations', 'days_back']) {
      if (ctl[k].value !== '') body[k] = Number(ctl[k].value);
    }
    const budget = {};
    for (const k of ['wall_s', 'tokens', 'usd', 'requests']) if (ctl[k].value !== '') budget[k] = Number(ctl[k].value);
    if (Object.keys(budget).length) body.budget = budget;
    // the browser's own checks would hide the API's messages: only the
    // required goal is said here, the rest is the server's to judge
    if (!goal.value.trim()) {
      showError('goal', 'Enter a goal.');
      summary.textContent = 'The agent needs a goal.';
      goal.focus();
      return;
    }
    button.disabled = true;
    try {
      const r = await post('/api/agents', body);
      announce(`Agent ${shortId(r.id)} launched`);
      navigate(`#/agents/${encodeURIComponent(r.id)}`);
    } catch (e) {
      if (!(e instanceof ApiError)) throw e;
      const key = errorField(e.message);
      if (key) showError(key, e.message);
      summary.textContent = `Not launched: ${e.message}${e.code ? ` (${e.code})` : ''}`;
      if (key && ctl[key]) ctl[key].focus();
    } finally {
      button.disabled = false;
    }
  });
  return h('section', { class: 'panel', 'aria-labelledby': 'launch-head', 'data-testid': 'launch' },
    h('h2', { id: 'launch-head' }, 'Launch a research agent'),
    h('p', { class: 'muted small' }, 'An agent writes a signal, the server scores it on the development windows (which the agent sees) and on a sealed holdout (which it never sees), and the agent iterates.'),
    form);
}

/** goalSnippet(goal) -> the goal's first 40 characters, with an ellipsis when cut. */
function goalSnippet(goal) {
  const g = String(goal);
  return g.length > 40 ? `${g.slice(0, 39)}…` : g;
}

/** agentTable(list) -> the table of agents. */
function agentTable(list) {
  // the columns a reader scans first come first, narrow enough that a
  // phone (375 px) shows them without scrolling the table sideways: the
  // agent with its challenge under it, its status, its best sealed score
  // (whose long header wraps)
  return table([
    { label: 'Agent', cell: (a) => [link(`#/agents/${encodeURIComponent(a.id)}`, shortId(a.id), { title: a.id }),
      h('br'), h('span', { class: 'small muted', 'data-testid': 'agent-challenge' }, (a.config && a.config.challenge) || '—')] },
    { label: 'Status', cell: (a) => agentBadge(a.status, a.paused) },
    { label: 'Best sealed score', num: true, headWrap: true, title: 'The best iteration\'s score on the sealed holdout (never shown to the agent)',
      sort: (a) => a.best_score, cell: (a) => (a.best_score === null || a.best_score === undefined ? '—'
        : [fixed(a.best_score, 4), h('br'), h('span', { class: 'small muted' }, `iteration ${a.best_iteration}`)]) },
    { label: 'Iterations', num: true, sort: (a) => a.iteration_count, cell: (a) => `${num(a.iteration_count)} / ${num(a.config ? a.config.max_iterations : null)}` },
    { label: 'Driver', cell: (a) => (a.config ? `${a.config.driver}${a.config.driver !== 'builtin' ? ` · ${a.config.model}` : ''}` : '—') },
    { label: 'Cost', num: true, sort: (a) => a.total_cost, cell: (a) => usd(a.total_cost) },
    { label: 'Tokens', num: true, sort: (a) => a.total_tokens, cell: (a) => num(a.total_tokens) },
    { label: 'Created', cell: (a) => ago(a.created_at) },
    { label: 'Goal', cell: (a) => (a.config && a.config.goal ? h('span', { title: String(a.config.goal) }, goalSnippet(a.config.goal)) : '—') },
  ], list, { caption: 'Agents', empty: 'No agents yet: launch one above.', rowAttrs: (a) => ({ 'data-agent': a.id }) });
}

/** importBox() -> the import control: an export file becomes a new agent. */
function importBox() {
  const input = h('input', { type: 'file', accept: 'application/json,.json' });
  const msg = h('p', { class: 'error', role: 'alert' });
  input.addEventListener('change', async () => {
    msg.textContent = '';
    const f = input.files && input.files[0];
    if (!f) return;
    let bundle;
    try {
      bundle = JSON.parse(await f.text());
    } catch (e) {
      msg.textContent = `That file is not JSON: ${e.message}`;
      return;
    }
    try {
      const r = await post('/api/agents/import', bundle);
      announce(`Imported as agent ${shortId(r.id)}`);
      navigate(`#/agents/${encodeURIComponent(r.id)}`);
    } catch (e) {
      msg.textContent = `Not imported: ${e.message}${e.code ? ` (${e.code})` : ''}`;
    }
  });
  return h('section', { class: 'panel', 'aria-labelledby': 'import-head' }, h('h2', { id: 'import-head' }, 'Import an agent'),
    field('Export file (agent_<id>.json)', input, 'Becomes a new, completed agent; its holdout numbers are not this server\'s and are dropped.'), msg);
}

export async function render(ctx) {
  const root = clear(ctx.main);
  root.append(pageHead(ctx, 'Agents'));
  const [chData, first] = await Promise.all([
    api('/api/challenges', { signal: ctx.signal }),
    api('/api/agents?full=0', { signal: ctx.signal, withHeaders: true }),
  ]);
  if (ctx.signal.aborted) return;
  const listBox = h('section', { class: 'panel', 'aria-labelledby': 'agents-head', 'data-testid': 'agent-list' },
    h('h2', { id: 'agents-head' }, 'Your agents'));
  const holder = h('div');
  listBox.append(holder);
  root.append(launchForm(challengeMap(chData)), listBox, importBox());
  let etag = first.headers.get('ETag');
  let list = Array.isArray(first.data) ? first.data : [];
  const draw = () => fill(holder, agentTable(list));
  draw();
  poll(async () => {
    const r = await api('/api/agents?full=0', { signal: ctx.signal, etag, withHeaders: true });
    if (ctx.signal.aborted) return 'done';
    if (r === NOT_MODIFIED) return 'same';
    etag = r.headers.get('ETag');
    list = Array.isArray(r.data) ? r.data : [];
    draw();
    return 'changed';
  }, { min: 2000, max: 10000, signal: ctx.signal });
}

// The chat panel of the agent page: the messages (to the agent, and the
// questions asked of the model with its answers), a form that sends a
// message to the agent (POST …/message: it reaches the agent's INBOX.md at
// its next iteration) and a separate form that asks the model about the
// agent (POST …/ask: answered now, metered against the agent's budget,
// never shown to the agent).
//
// Theory of operation: the list is redrawn from GET …/chat by .reload()
// (the page calls it when the detail changes); the two forms are never
// redrawn, so half-typed text survives. An ask waits up to the API's 45 s:
// meanwhile the Ask button is disabled, the form is aria-busy and a status
// line counts the seconds; then the chat is reloaded (the answer appears
// in it), the cost is shown beside the box and onAsked() lets the page
// refresh the budgets. An error is shown beside the box (role=alert) with
// the API's status and code, and the question is kept for another try.
import { api, post } from '../api.js';
import { h, clear, append, field, link } from '../dom.js';
import { ago } from '../format.js';
import { announce } from '../app.js';
import { askError, askUsage, chatWho, chatNote } from './agents_ask.js';

/** fill(el, ...kids): el emptied, then kids appended. */
const fill = (el, ...kids) => append(clear(el), kids);

/** submitOnCtrlEnter(textarea, form): Ctrl+Enter (or Cmd+Enter) submits the form. */
function submitOnCtrlEnter(textarea, form) {
  textarea.addEventListener('keydown', (ev) => {
    if (ev.key === 'Enter' && (ev.ctrlKey || ev.metaKey)) {
      ev.preventDefault();
      form.requestSubmit();
    }
  });
}

/** messageItem(m) -> the <li> of one chat message. */
function messageItem(m) {
  const note = chatNote(m);
  return h('li', { class: `msg role-${m.role}${m.type === 'ask' || m.type === 'answer' ? ` type-${m.type}` : ''}`, 'data-type': m.type || 'message' },
    h('p', { class: 'small muted' }, `${chatWho(m)} · `, ago(m.ts), note ? ` · ${note}` : ''),
    h('p', { class: 'prewrap' }, String(m.text || '')));
}

/** messageForm(ctx, id, reload) -> the form that sends a message to the agent. */
function messageForm(ctx, id, reload) {
  const text = h('textarea', { rows: 2, maxlength: 10000 });
  const err = h('p', { class: 'error', role: 'alert' });
  const send = h('button', { type: 'submit' }, 'Send');
  const form = h('form', { 'data-testid': 'message-form' },
    field('Message to the agent', text, 'It reaches the agent at its next iteration (in INBOX.md). Ctrl+Enter sends.'),
    err, h('div', { class: 'actions' }, send));
  submitOnCtrlEnter(text, form);
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    err.textContent = '';
    if (!text.value.trim()) { err.textContent = 'Write a message first.'; return; }
    send.disabled = true;
    try {
      await post(`/api/agents/${encodeURIComponent(id)}/message`, { text: text.value }, { signal: ctx.signal });
      text.value = '';
      announce('Message sent');
      await reload();
    } catch (e) {
      if (e && e.name === 'AbortError') return;
      err.textContent = `Not sent: ${e.message}`;
    } finally {
      send.disabled = false;
    }
  });
  return form;
}

/** askForm(ctx, id, state, reload, onAsked) -> the form that asks the model about the agent. */
function askForm(ctx, id, state, reload, onAsked) {
  const model = () => ((state.a && state.a.config && state.a.config.model) || 'sonnet');
  const text = h('textarea', { rows: 2, maxlength: 10000, 'data-testid': 'ask-text' });
  const err = h('div', { class: 'error', role: 'alert', 'data-testid': 'ask-error' });
  const pending = h('p', { class: 'small muted', role: 'status', 'data-testid': 'ask-pending' });
  const usage = h('p', { class: 'small', 'data-testid': 'ask-usage' });
  const btn = h('button', { type: 'submit', class: 'primary' }, 'Ask');
  const form = h('form', { class: 'ask', 'aria-labelledby': 'ag-ask', 'data-testid': 'ask-form' },
    h('h3', { id: 'ag-ask' }, 'Ask the model about this agent'),
    h('p', { class: 'small', id: 'ag-ask-about' },
      'Not a message to the agent: your question goes now to the agent\'s model (', h('span', { 'data-testid': 'ask-model' }, model()),
      ') with the agent\'s configuration, goal, STATE.md, notes and recent iterations (never a sealed holdout score), and the answer appears in the chat above. ',
      'The agent never sees either. Each ask is one model request, metered against this agent\'s LLM budget and your daily budget, with your Anthropic key (Settings); at most 3 of your asks run at once.'),
    field('Question for the model', text, 'Up to 10,000 characters; an answer takes up to 45 s. Ctrl+Enter asks.'),
    err, pending, h('div', { class: 'actions' }, btn), usage);
  text.setAttribute('aria-describedby', `ag-ask-about ${text.getAttribute('aria-describedby')}`);
  submitOnCtrlEnter(text, form);
  let timer = null;
  /** busy(on): the pending state while the answer is awaited. */
  const busy = (on) => {
    btn.disabled = on;
    btn.textContent = on ? 'Asking…' : 'Ask';
    form.setAttribute('aria-busy', on ? 'true' : 'false');
    clearInterval(timer);
    pending.textContent = '';
    if (!on) return;
    const t0 = Date.now();
    const tick = () => { pending.textContent = `Waiting for ${model()}'s answer… ${Math.floor((Date.now() - t0) / 1000)} s`; };
    tick();
    timer = setInterval(tick, 1000);
  };
  ctx.signal.addEventListener('abort', () => clearInterval(timer), { once: true });
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    if (btn.disabled) return;
    fill(err);
    if (!text.value.trim()) { err.textContent = 'Write a question first.'; text.focus(); return; }
    busy(true);
    try {
      const r = await post(`/api/agents/${encodeURIComponent(id)}/ask`, { text: text.value }, { signal: ctx.signal });
      text.value = '';
      usage.textContent = askUsage(r);
      announce('The model answered; the answer is in the chat');
      await reload();
      onAsked();
    } catch (e) {
      if (e && e.name === 'AbortError') return;
      const m = askError(e);
      fill(err, m.text, m.settings ? [' ', link('#/settings', 'Open Settings')] : null);
    } finally {
      if (!ctx.signal.aborted) busy(false);
    }
  });
  form.update = () => { form.querySelector('[data-testid="ask-model"]').textContent = model(); };
  return form;
}

/**
 * chatPanel(ctx, id, state, onAsked) -> the chat panel; .reload() fetches
 * the messages again, .update() follows the detail in state.a (the model);
 * onAsked() runs after an answer was recorded.
 */
export function chatPanel(ctx, id, state, onAsked) {
  const list = h('ol', { class: 'chat', 'data-testid': 'chat-messages', 'aria-label': 'Chat messages' });
  /** reload(): the messages from GET …/chat. */
  const reload = async () => {
    try {
      const r = await api(`/api/agents/${encodeURIComponent(id)}/chat`, { signal: ctx.signal });
      const msgs = (r && r.messages) || [];
      fill(list, msgs.length ? msgs.map(messageItem) : h('li', { class: 'muted' }, 'No messages yet.'));
    } catch (e) {
      if (e && e.name === 'AbortError') return;
      fill(list, h('li', { class: 'error' }, `Could not load the chat: ${e.message}`));
    }
  };
  const ask = askForm(ctx, id, state, reload, onAsked);
  const panel = h('section', { class: 'panel', 'aria-labelledby': 'ag-chat', 'data-testid': 'chat' },
    h('h2', { id: 'ag-chat' }, 'Chat'), list,
    h('div', { class: 'chat-forms' }, messageForm(ctx, id, reload), ask));
  panel.reload = reload;
  panel.update = ask.update;
  return panel;
}

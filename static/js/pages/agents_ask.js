// The words of the agent page's chat that need no DOM (unit-tested under
// node): what an ask's error means to the person who asked, the line that
// says what an answer cost, and the note beside each chat message (to the
// agent, delivered or waiting; or an ask, which the agent never sees).
//
// POST /api/agents/{id}/ask answers 409 no_api_key, 402 budget_exhausted,
// 429 rate_limited (3 asks of the owner already running, or the model API
// rate limiting the key; both with Retry-After), 503 unavailable, 502
// upstream_error, 400 invalid_field/missing_field (docs/agents.md).
import { num } from '../format.js';
import { usd } from './agents_diff.js';

/**
 * askError(e) -> {text, settings}: the sentence shown beside the Ask box for
 * an ApiError e (status, code, message, retryAfter), ending with the status
 * and code the API returned; settings is true when the fix is a key in
 * Settings (the caller links there).
 */
export function askError(e) {
  const status = Number(e && e.status) || 0;
  const code = String((e && e.code) || 'error');
  const msg = String((e && e.message) || '').replace(/\.$/, '');
  const tag = status ? ` (${status} ${code})` : ` (${code})`;
  const wait = Number(e && e.retryAfter) > 0 ? ` Try again in ${num(Number(e.retryAfter))} s.` : ' Try again shortly.';
  let text;
  switch (code) {
    case 'no_api_key':
      text = 'No Anthropic API key: neither this agent\'s owner nor the server has one, so nothing was asked. Set a key in Settings.';
      return { text: text + tag, settings: true };
    case 'budget_exhausted':
      text = `The budget is used up (${msg.replace(/^budget:\s*/, '')}): nothing was sent and nothing charged.`;
      break;
    case 'rate_limited':
      text = `Rate limited: ${msg}; nothing was answered.${wait}`;
      break;
    case 'unavailable':
      text = `Not available just now: ${msg}.${wait}`;
      break;
    case 'upstream_error':
      text = `The model API failed: ${msg}. The request counts against the budget (with no tokens).`;
      break;
    case 'network':
      text = 'The server could not be reached: the question may or may not have been asked; reload the chat before asking again.';
      break;
    default:
      text = `Not asked: ${msg || 'the server refused the question'}.`;
  }
  return { text: text + tag, settings: false };
}

/** askUsage(r) -> "Answered by M: N tokens in, K out, $C" for a 200 answer r of POST …/ask. */
export function askUsage(r) {
  const u = (r && r.usage) || {};
  const inTok = (Number(u.input) || 0) + (Number(u.cache_write) || 0) + (Number(u.cache_read) || 0);
  return `Answered by ${String((r && r.model) || 'the model')}: ${num(inTok)} tokens in, ${num(Number(u.output) || 0)} out, ${usd(u.cost)}, charged to this agent's budget.`;
}

/** chatWho(m) -> who wrote chat message m, as the reader sees it. */
export function chatWho(m) {
  if (m.type === 'ask') return 'you asked the model';
  if (m.type === 'answer') return 'the model answered';
  if (m.type === 'inbox') return `${m.role} (inbox)`;
  return String(m.role || '');
}

/** chatNote(m) -> whether chat message m reached the agent ('' when that is not a question). */
export function chatNote(m) {
  if (m.type === 'ask' || m.type === 'answer') return 'not sent to the agent';
  if (m.delivered_iteration) return `delivered to iteration ${m.delivered_iteration}`;
  if (m.role === 'user' || m.role === 'operator') return m.superseded ? 'superseded' : 'waiting for the next iteration';
  return '';
}

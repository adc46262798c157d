// Settings: who you are, your API tokens (create: shown once; revoke), your
// Anthropic key for LLM agents (masked; yours or the admin's default), the
// server's CoinGlass key (masked; admins set and remove it), and for admins
// the users of this server.
import { api, post, rows } from '../api.js';
import { h, clear, table, dl, field } from '../dom.js';
import { ago, when } from '../format.js';
import { announce, confirmDialog, loadWho } from '../app.js';
import { pageHead, pick, unavailable } from './common.js';
import { keyPanel } from '../secretkey.js';

const AUTH_TEXT = {
  loopback: 'no token: this server admits clients on its own machine as the local admin',
  bearer: 'an API token (Authorization header)',
  cookie: 'an API token, kept by this browser as a cookie',
  query: 'an API token in the link',
};

/** authText(me): how the caller signed in, in words. */
function authText(me) {
  const base = AUTH_TEXT[me.auth] || (me.auth ? String(me.auth) : null);
  if (me.shared_token) return `${base} (the server’s shared MANTIS_AUTH_TOKEN)`;
  return base;
}

function tokenTable(list, onRevoke) {
  return table([
    { label: 'Token', cell: (t) => (pick(t, 'prefix', 'hint') ? h('code', null, `${pick(t, 'prefix', 'hint')}…`) : `#${t.id}`) },
    { label: 'Label', cell: (t) => (t.label ? String(t.label) : h('span', { class: 'muted' }, '—')) },
    { label: 'Created', cell: (t) => when(pick(t, 'created_at')) },
    { label: 'Last used', cell: (t) => (pick(t, 'last_used', 'last_used_at') ? ago(pick(t, 'last_used', 'last_used_at')) : 'never') },
    {
      label: 'State',
      cell: (t) => {
        if (t.revoked || t.revoked_at) return h('span', { class: 'badge st-cancelled' }, 'revoked');
        return h('span', { class: 'row' }, h('span', { class: 'badge st-completed' }, 'active'),
          t.current ? h('span', { class: 'muted small' }, '(this session)') : null,
          h('button', {
            type: 'button', class: 'small danger', 'aria-label': `Revoke token ${pick(t, 'prefix') || `#${t.id}`}`,
            on: { click: () => onRevoke(t) },
          }, 'Revoke'));
      },
    },
  ], list, { caption: 'Your API tokens', empty: 'You have no tokens yet.' });
}

async function tokensSection(ctx, section) {
  clear(section).append(h('h2', { id: 'set-tokens' }, 'API tokens'));
  let data;
  try {
    data = await api('/api/tokens');
  } catch (e) {
    if (e.status === 401) throw e;
    section.append(e.status === 404 ? unavailable('Token management over HTTP')
      : h('p', { class: 'error' }, e.message));
    if (e.status === 404) {
      section.append(h('p', { class: 'small muted' }, 'An operator can manage tokens on the server with ',
        h('code', null, 'agenttest token create --user NAME --role user'), '.'));
    }
    return;
  }
  if (ctx.signal.aborted) return;
  const list = rows(data, 'tokens');
  section.append(h('p', { class: 'muted' },
    'Tokens let scripts and agents use the API as you. A new token is shown once; the server keeps only a keyed hash of it.'));
  const once = h('div', { 'aria-live': 'polite' });
  const err = h('p', { class: 'error', role: 'alert' });
  const labelIn = h('input', { type: 'text', name: 'label', maxlength: 64, autocomplete: 'off', spellcheck: 'false', placeholder: 'e.g. laptop, ci, agent-7' });
  const form = h('form', { class: 'stack', 'aria-label': 'Create a token' },
    h('div', { class: 'fields' }, field('Label (optional)', labelIn, 'What the token is for, shown in the list below.')),
    h('div', { class: 'actions' }, h('button', { type: 'submit', class: 'primary' }, 'Create a new token'),
      h('span', { class: 'small muted' }, 'It gets your role; each user may hold up to 50 active tokens.')), err);
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    err.textContent = '';
    try {
      const label = labelIn.value.trim();
      if (new TextEncoder().encode(label).length > 64) {
        err.textContent = 'The label is longer than 64 bytes.';
        labelIn.focus();
        return;
      }
      const res = await post('/api/tokens', label ? { label } : {});
      labelIn.value = '';
      const secret = h('input', { type: 'text', readonly: true, value: res.token, 'aria-label': 'Your new token', 'data-testid': 'new-token' });
      const copy = h('button', { type: 'button' }, 'Copy');
      copy.addEventListener('click', async () => {
        secret.select();
        try { await navigator.clipboard.writeText(res.token); copy.textContent = 'Copied'; } catch { copy.textContent = 'Select and copy it'; }
      });
      const url = `${location.origin}/?token=${encodeURIComponent(res.token)}`;
      clear(once).append(h('div', { class: 'warn', role: 'status' },
        h('p', null, h('strong', null, 'Copy this token now: it will not be shown again.')),
        h('div', { class: 'secret' }, secret, copy),
        h('p', { class: 'small' }, 'Sign-in link for a browser: ', h('code', null, url))));
      announce('Token created. Copy it now; it will not be shown again.');
      secret.focus();
      secret.select();
      await refreshList();
    } catch (e) {
      if (e.status !== 401) err.textContent = `${e.message}${e.code ? ` (${e.code})` : ''}`;
    }
  });
  const listBox = h('div');
  section.append(form, once, listBox);

  async function revoke(t) {
    const name = pick(t, 'prefix') ? `${t.prefix}…` : `#${t.id}`;
    const self = t.current ? ' It is the token this browser signed in with: you will have to sign in again.' : '';
    if (!await confirmDialog('Revoke this token?', `Token ${name} stops working at once, for every script that uses it.${self}`, 'Revoke', { danger: true })) return;
    try {
      await post(`/api/tokens/${encodeURIComponent(t.id)}/revoke`);
      announce(`Token ${name} revoked`);
      await refreshList();
      if (t.current) loadWho();
    } catch (e) {
      if (e.status !== 401) err.textContent = `Revoke failed: ${e.message}`;
    }
  }
  async function refreshList(d) {
    const l = d ? rows(d, 'tokens') : rows(await api('/api/tokens'), 'tokens');
    clear(listBox).append(tokenTable(l, revoke));
  }
  await refreshList(list);
}

async function usersSection(ctx, section) {
  clear(section).append(h('h2', { id: 'set-users' }, 'Users'));
  let data;
  try {
    data = await api('/api/users');
  } catch (e) {
    if (e.status === 401) throw e;
    section.append(e.status === 404 ? unavailable('The users list') : h('p', { class: 'error' }, e.message));
    return;
  }
  if (ctx.signal.aborted) return;
  section.append(table([
    { label: 'User', cell: (u) => String(pick(u, 'name', 'user', 'username') ?? '—') },
    { label: 'Role', cell: (u) => h('span', { class: `badge role-${u.role === 'admin' ? 'admin' : 'user'}` }, String(u.role || 'user')) },
    { label: 'Active tokens', num: true, cell: (u) => String(pick(u, 'active_tokens', 'tokens', 'token_count') ?? '—') },
    { label: 'Created', cell: (u) => when(pick(u, 'created_at')) },
    { label: 'Last token use', cell: (u) => (pick(u, 'last_used_at', 'last_used') ? ago(pick(u, 'last_used_at', 'last_used')) : '—') },
  ], rows(data, 'users'), { caption: 'Users of this server', empty: 'No users.' }));
}

export async function render(ctx) {
  const root = clear(ctx.main);
  root.append(pageHead(ctx, 'Settings'));
  const whoBox = h('section', { class: 'panel', 'aria-labelledby': 'set-who' }, h('h2', { id: 'set-who' }, 'Who you are'));
  root.append(whoBox);
  let me = null;
  try {
    me = await api('/api/me');
  } catch (e) {
    if (e.status === 401) throw e;
    whoBox.append(e.status === 404 ? unavailable('Identity (GET /api/me)') : h('p', { class: 'error' }, e.message));
  }
  if (ctx.signal.aborted) return;
  if (me) {
    whoBox.append(dl([
      ['User', String(pick(me, 'user', 'name') ?? '—')],
      ['Role', h('span', { class: `badge role-${me.role === 'admin' ? 'admin' : 'user'}`, 'data-testid': 'my-role' }, String(me.role || 'user'))],
      ['Signed in with', authText(me)],
    ]));
    if (me.role === 'admin') whoBox.append(h('p', { class: 'small muted' }, 'Admins see every strategy and run, promote defaults and see the users.'));
  }
  const tokens = h('section', { class: 'panel', 'aria-labelledby': 'set-tokens' });
  root.append(tokens);
  await tokensSection(ctx, tokens);
  // the keys next to the tokens
  root.append(keyPanel(ctx, {
    id: 'set-anthropic', title: 'Anthropic API key', path: '/api/anthropic-key', admin: Boolean(me && me.role === 'admin'), perUser: true,
    hint: 'For LLM research agents (drivers that call Claude): your own key, else the default an admin set. Encrypted at rest on the server; only a mask is ever shown. It starts with sk-ant-.',
  }));
  root.append(keyPanel(ctx, {
    id: 'set-coinglass', title: 'CoinGlass API key', path: '/api/coinglass-key', admin: Boolean(me && me.role === 'admin'),
    hint: 'For the CoinGlass derivatives fields of the market data: while a key is set, Fetch data on the Data page fetches them into the new version too. Encrypted at rest on the server; only a mask is ever shown.',
  }));
  if (me && me.role === 'admin') {
    const users = h('section', { class: 'panel', 'aria-labelledby': 'set-users' });
    root.append(users);
    await usersSection(ctx, users);
  }
}

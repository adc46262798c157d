// The panel of one secret key: whether it is set and its mask as the API
// gives it (the key itself never comes back), a password field to set or
// replace it and a confirmed Remove. Two shapes:
//  - a server-wide key (CoinGlass: GET/POST/DELETE /api/coinglass-key):
//    only admins set or remove it;
//  - a per-user key with an admin-set default (Anthropic, opts.perUser:
//    /api/anthropic-key answers {set, masked, source}): every user sets and
//    removes their own key; the panel says whether the key in use is their
//    own or the server's default; admins may also store or remove the
//    default (POST {key, default: true}, DELETE ?default=1).
// The key typed is sent once and the field is cleared; nothing keeps it in
// the page.
import { api, post } from './api.js';
import { h, clear, dl, field } from './dom.js';
import { announce, confirmDialog } from './app.js';

const SOURCE_TEXT = { own: 'your own key', default: 'the server’s default key (set by an admin)' };

/**
 * keyPanel(ctx, {id, title, path, hint, admin, perUser}) -> <section>: draws
 * itself from GET path and redraws after a change. id: the heading's id;
 * perUser: the key is the caller's own with an admin default (see above).
 */
export function keyPanel(ctx, opts) {
  const section = h('section', { class: 'panel', 'aria-labelledby': opts.id, 'data-testid': `${opts.id}-panel` });
  async function draw() {
    clear(section).append(h('h2', { id: opts.id }, opts.title));
    let st;
    try {
      st = await api(opts.path, { signal: ctx.signal });
    } catch (e) {
      if (e.status === 401 || ctx.signal.aborted) return;
      section.append(h('p', { class: 'error' }, e.status === 404 ? `${opts.title} cannot be managed on this server yet.` : e.message));
      return;
    }
    if (ctx.signal.aborted) return;
    section.append(dl([
      ['State', h('span', { 'data-testid': `${opts.id}-state` }, st.set ? 'set' : 'not set')],
      ['Key', st.set ? h('code', { 'data-testid': `${opts.id}-mask` }, String(st.masked ?? '***')) : null],
      ['In use', opts.perUser && st.set ? h('span', { 'data-testid': `${opts.id}-source` }, SOURCE_TEXT[st.source] || String(st.source)) : null],
    ]));
    if (opts.hint) section.append(h('p', { class: 'small muted' }, opts.hint));
    if (!opts.admin && !opts.perUser) {
      section.append(h('p', { class: 'small muted' }, 'Only admins set or remove this key.'));
      return;
    }
    const input = h('input', { type: 'password', name: 'key', autocomplete: 'off', spellcheck: 'false', maxlength: 256 });
    const err = h('p', { class: 'error', role: 'alert' });
    // per-user: "replace" only when the caller's own key is there
    const own = opts.perUser ? st.source === 'own' : st.set;
    const asDefault = opts.perUser && opts.admin ? h('input', { type: 'checkbox', name: 'default' }) : null;
    const form = h('form', { class: 'key-form', novalidate: true },
      field(own ? 'Replace the key' : 'Set the key', input),
      asDefault ? h('label', { class: 'check small' }, asDefault, ' Store as the server’s default for every user without their own key') : null,
      h('div', { class: 'actions' }, h('button', { type: 'submit', class: 'primary' }, own ? 'Replace' : 'Save')));
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      err.textContent = '';
      const key = input.value.trim();
      if (!key) { err.textContent = 'Enter the key.'; input.focus(); return; }
      try {
        await post(opts.path, asDefault && asDefault.checked ? { key, default: true } : { key });
        input.value = '';
        announce(`${opts.title} saved`);
        draw();
      } catch (e) {
        if (e.status !== 401) err.textContent = `${e.message}${e.code ? ` (${e.code})` : ''}`;
      }
    });
    section.append(form, err);
    const remove = (label, what, query) => h('button', {
      type: 'button', class: 'danger',
      on: {
        click: async () => {
          if (!await confirmDialog(`Remove ${what}?`, 'The server forgets the key at once; features that need it stop working.', 'Remove', { danger: true })) return;
          try {
            await api(`${opts.path}${query}`, { method: 'DELETE' });
            announce(`${opts.title} removed`);
            draw();
          } catch (e) {
            if (e.status !== 401) err.textContent = `${e.message}${e.code ? ` (${e.code})` : ''}`;
          }
        },
      },
    }, label);
    if (own) section.append(h('p', { class: 'actions' }, remove('Remove the key', `the ${opts.title}`, '')));
    if (opts.perUser && opts.admin && st.source === 'default') {
      section.append(h('p', { class: 'actions' }, remove('Remove the default key', `the default ${opts.title}`, '?default=1')));
    }
  }
  draw();
  return section;
}

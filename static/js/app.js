// The dashboard's entry point: hash router, sign-in, "who am I", and the
// shared dialogs. Theory of operation:
//
// - Routes live in the URL fragment (#/runs/42?x=y), so nginx serves one
//   static index.html and never has to know the dashboard's paths, and the
//   API paths (/runs, /strategies, ...) stay the API's.
// - Each route lazily imports its page module and calls its render(ctx).
//   ctx carries the matched params, the query, the element to draw into and
//   an AbortSignal that fires when the user navigates away: pages hang their
//   pollers and fetches on it, so nothing keeps running for a page that is
//   gone.
// - A 401 from any API call opens the sign-in dialog. The token typed there
//   (or arriving as ?token= in the page URL) is presented once to the API,
//   which sets its HttpOnly cookie; the page never stores it and removes it
//   from the address bar.
import { api, post, ApiError, onUnauthorized, signIn } from './api.js';
import { h, clear } from './dom.js';

const ROUTES = [
  // [pattern, nav key, module]; :name matches one path segment.
  ['/', 'overview', './pages/overview.js'],
  ['/strategies', 'strategies', './pages/strategies.js'],
  ['/strategies/new', 'strategies', './pages/submit.js'],
  ['/strategies/:id', 'strategies', './pages/strategy.js'],
  ['/versions/:id', 'strategies', './pages/version.js'],
  ['/runs', 'runs', './pages/runs.js'],
  ['/runs/:id', 'runs', './pages/run.js'],
  ['/compare', 'runs', './pages/compare.js'],
  ['/leaderboards', 'leaderboards', './pages/leaderboards.js'],
  ['/leaderboards/:kind/:name', 'leaderboards', './pages/leaderboards.js'],
  ['/challenges', 'challenges', './pages/challenges.js'],
  ['/challenges/:name', 'challenges', './pages/challenge.js'],
  ['/evaluations/:id', 'challenges', './pages/evaluation.js'],
  ['/agents', 'agents', './pages/agents.js'],
  ['/agents/:id', 'agents', './pages/agents_detail.js'],
  ['/data', 'data', './pages/data.js'],
  ['/settings', 'settings', './pages/settings.js'],
];

const view = () => document.getElementById('view');
let current = null; // { controller }
let firstRender = true;
export const session = { me: null, meLoaded: false };

/** parseHash(): {path, query} of the current fragment. */
function parseHash() {
  // only "#/..." is a route; any other fragment is an in-page anchor
  const raw = location.hash.startsWith('#/') ? location.hash.slice(1) : '/';
  const i = raw.indexOf('?');
  const path = (i < 0 ? raw : raw.slice(0, i)).replace(/\/+$/, '') || '/';
  const query = new URLSearchParams(i < 0 ? '' : raw.slice(i + 1));
  return { path, query };
}

/** match(path): [route, params] for the first matching route, or [null]. */
function match(path) {
  const segs = path.split('/').filter(Boolean);
  for (const r of ROUTES) {
    const ps = r[0].split('/').filter(Boolean);
    if (ps.length !== segs.length) continue;
    const params = {};
    let ok = true;
    for (let i = 0; i < ps.length; i += 1) {
      if (ps[i].startsWith(':')) params[ps[i].slice(1)] = decodeURIComponent(segs[i]);
      else if (ps[i] !== segs[i]) { ok = false; break; }
    }
    if (ok) return [r, params];
  }
  return [null, {}];
}

/** announce(text): says text through the polite live region. */
export function announce(text) {
  const el = document.getElementById('announce');
  el.textContent = '';
  setTimeout(() => { el.textContent = text; }, 50);
}

/** navigate(hash): go to an in-app route (e.g. '#/runs/5'). */
export function navigate(hash) {
  if (location.hash === hash) render();
  else location.hash = hash;
}

/** setQuery(query): replace the fragment's query without a re-render. */
export function setQuery(params) {
  const { path } = parseHash();
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== '' && v !== null && v !== undefined) q.set(k, v);
  const s = q.toString();
  history.replaceState(null, '', `#${path}${s ? `?${s}` : ''}`);
}

/** errorPanel(err, retry): a readable explanation of a failed load. */
export function errorPanel(err, retry) {
  if (err instanceof ApiError && err.status === 401) {
    return h('section', { class: 'panel notice', 'aria-labelledby': 'auth-needed' },
      h('h2', { id: 'auth-needed' }, 'Sign-in needed'),
      h('p', null, 'This server asks for an API token before it shows this page.'),
      h('button', { type: 'button', class: 'primary', on: { click: () => openSignIn() } }, 'Sign in with a token'));
  }
  const parts = [h('h2', null, err.status === 404 ? 'Not found' : 'Something went wrong'),
    h('p', null, err.message || String(err))];
  if (err.code) parts.push(h('p', { class: 'muted' }, 'Code: ', h('code', null, err.code)));
  if (err.detail) parts.push(h('p', { class: 'muted' }, err.detail));
  if (err instanceof ApiError && err.status === 429) {
    parts.push(h('p', { 'data-testid': 'rate-limited' }, 'The server is limiting how many requests one address may make per minute, and this page asked too often. ',
      err.retryAfter ? `Wait ${err.retryAfter} s and try again.` : 'Wait a moment and try again.'));
  }
  // Only a failure that can pass by (network, 429, 5xx) is worth retrying;
  // a 404 or a refused request will answer the same again.
  const transient = !(err instanceof ApiError) || err.status === 0 || err.status === 429 || err.status >= 500;
  if (retry && transient) parts.push(h('button', { type: 'button', on: { click: retry } }, 'Try again'));
  return h('section', { class: 'panel error-panel', role: 'alert' }, parts);
}

/** render(): draws the route in the current fragment. */
async function render() {
  if (current) current.controller.abort();
  const controller = new AbortController();
  current = { controller };
  const { path, query } = parseHash();
  const [route, params] = match(path);
  for (const a of document.querySelectorAll('nav a[data-nav]')) {
    if (route && a.dataset.nav === route[1]) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  const target = view();
  target.setAttribute('aria-busy', 'true');
  let title = 'agenttest';
  const ctx = {
    params, query, path, signal: controller.signal,
    main: target,
    title(t) { title = t; document.title = `${t} · agenttest`; },
    rerender: () => { if (!controller.signal.aborted) render(); },
  };
  try {
    if (!route) {
      ctx.title('Not found');
      clear(target).append(h('h1', { tabindex: -1 }, 'Page not found'),
        h('p', null, 'There is no page at ', h('code', null, path), '. ', h('a', { href: '#/' }, 'Go to the overview'), '.'));
    } else {
      const mod = await import(route[2]);
      if (controller.signal.aborted) return;
      await mod.render(ctx);
    }
  } catch (err) {
    if (err && err.name === 'AbortError') return;
    if (controller.signal.aborted) return;
    if (!(err instanceof ApiError)) console.error(err); // API errors are shown in the panel below
    // A page that failed before drawing its heading gets one naming the
    // failure, never the previous page's title.
    if (!target.querySelector('h1')) {
      const t = err instanceof ApiError && err.status === 404 ? 'Not found' : 'Could not load this page';
      ctx.title(t);
      clear(target).append(h('h1', { tabindex: -1 }, t));
    }
    target.append(errorPanel(err, () => render()));
  } finally {
    if (!controller.signal.aborted) {
      target.removeAttribute('aria-busy');
      const h1 = target.querySelector('h1');
      if (h1 && !firstRender) {
        h1.setAttribute('tabindex', '-1');
        h1.focus({ preventScroll: false });
      }
      if (!firstRender) announce(`${document.title.split(' · ')[0]} page loaded`);
      firstRender = false;
      document.body.dataset.ready = path; // for tests: the route finished drawing
      void title;
    }
  }
}

// ---------------------------------------------------------------- sign-in

let signInOpen = false;

/** openSignIn(): shows the token prompt (once, however many 401s arrive). */
export function openSignIn() {
  const dlg = document.getElementById('signin');
  if (signInOpen || dlg.open) return;
  signInOpen = true;
  document.getElementById('signin-error').textContent = '';
  dlg.showModal();
  document.getElementById('signin-token').focus();
}

function setupSignIn() {
  const dlg = document.getElementById('signin');
  const form = document.getElementById('signin-form');
  const input = document.getElementById('signin-token');
  const errEl = document.getElementById('signin-error');
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    errEl.textContent = '';
    const tok = input.value.trim();
    if (!tok) { errEl.textContent = 'Enter a token.'; return; }
    try {
      await signIn(tok);
      input.value = '';
      dlg.close();
      signInOpen = false;
      session.meLoaded = false;
      session.ready = loadWho();
      await session.ready;
      announce('Signed in');
      render();
    } catch (e) {
      errEl.textContent = e.status === 401 ? 'That token was not accepted.' : `Sign-in failed: ${e.message}`;
      input.select();
    }
  });
  document.getElementById('signin-cancel').addEventListener('click', () => dlg.close());
  dlg.addEventListener('close', () => { signInOpen = false; });
  onUnauthorized(() => openSignIn());
}

/**
 * tokenFromUrl(): a `?token=` link, handled so that it cannot sign a victim
 * into someone else's account (login CSRF, issue 11 item 13). The token
 * leaves the address bar at once; the page asks the API whose token it is
 * (as a one-request Bearer, which never sets the cookie) and, unless that
 * is already the account signed in, shows which account the link signs in
 * as and waits for the user to confirm. Confirming while signed in as
 * another account signs out first (the API never replaces a sign-in
 * cookie). document.body.dataset.tokenLink tells tests where it stands:
 * "checking", "asking" (the dialog is open), then "done".
 */
async function tokenFromUrl() {
  const u = new URL(location.href);
  const tok = u.searchParams.get('token');
  if (!tok) return;
  u.searchParams.delete('token');
  history.replaceState(null, '', u.pathname + (u.searchParams.toString() ? `?${u.searchParams}` : '') + u.hash);
  document.body.dataset.tokenLink = 'checking';
  try {
    let them;
    try {
      them = await api('/api/me', { bearer: tok.trim() });
    } catch (e) {
      announce(e.status === 401 ? 'The sign-in link\'s token was not accepted.' : `Sign-in link failed: ${e.message}`);
      return;
    }
    let now = null;
    try { now = await api('/api/me', { quiet: true }); } catch { /* signed out */ }
    if (now && now.user_id === them.user_id && now.role === them.role) return;
    const who = `${them.user} (${them.role})`;
    const text = (now ? `You are signed in as ${now.user} (${now.role}). ` : '') +
      `This link signs you in as ${who}. Everything you submit afterwards belongs to that account. ` +
      'Continue only if you made this link yourself or trust whoever sent it.';
    document.body.dataset.tokenLink = 'asking';
    if (!await confirmDialog('Sign in from this link?', text, `Sign in as ${them.user}`)) {
      announce('The sign-in link was not used');
      return;
    }
    if (now && now.auth === 'cookie') await post('/api/logout', {});
    await signIn(tok);
    announce(`Signed in as ${who}`);
  } catch (e) {
    if (e.status !== 401) console.error(e);
  } finally {
    document.body.dataset.tokenLink = 'done';
  }
}

// ---------------------------------------------------------------- who am I

/** loadWho(): fills the header's "who" line from GET /api/me (if present). */
export async function loadWho() {
  const who = document.getElementById('who');
  try {
    session.me = await api('/api/me');
  } catch (e) {
    session.me = null;
    if (e.status === 401) {
      clear(who).append(h('button', { type: 'button', class: 'link', on: { click: openSignIn } }, 'Sign in'));
    } else {
      clear(who);
    }
    session.meLoaded = true;
    return null;
  }
  session.meLoaded = true;
  const me = session.me || {};
  clear(who).append(h('a', { href: '#/settings' }, `${me.user || me.name || 'you'}`),
    ' ', h('span', { class: `badge role-${me.role === 'admin' ? 'admin' : 'user'}` }, me.role || 'user'));
  // Only a cookie sign-in can be undone from here: the loopback rule and a
  // Bearer header are not the browser's to drop.
  if (me.auth === 'cookie') {
    who.append(' ', h('button', { type: 'button', class: 'link', 'data-testid': 'sign-out', on: { click: signOut } }, 'Sign out'));
  }
  return me;
}

/**
 * signOut(): asks the API to expire its HttpOnly cookie (POST /api/logout;
 * the page cannot clear it itself), then redraws as a signed-out visitor:
 * on a server that needs a token the next request answers 401 and the token
 * prompt opens.
 */
export async function signOut() {
  try {
    await post('/api/logout', {});
  } catch (e) {
    announce(`Sign-out failed: ${e.message}`);
    return;
  }
  session.me = null;
  session.meLoaded = false;
  session.ready = loadWho();
  const me = await session.ready;
  announce('Signed out');
  if (!me) openSignIn();
  render();
}

/** whoAmI() -> the /api/me body once known (null when the server has none). */
export async function whoAmI() {
  if (session.ready) await session.ready;
  return session.me;
}

/** isAdmin(): true/false for a known identity, null when unknown. */
export function isAdmin() {
  if (!session.me) return null;
  return session.me.role === 'admin';
}

async function loadVersion() {
  try {
    const hl = await api('/health');
    if (hl && hl.version) document.getElementById('version').textContent = `version ${hl.version}`;
  } catch { /* shown on the overview */ }
}

// ---------------------------------------------------------------- confirm

/** confirmDialog(title, text, yesLabel, opts) -> Promise<boolean>.
 * opts.danger: the confirming button is styled as destructive. */
export function confirmDialog(title, text, yesLabel = 'Confirm', opts = {}) {
  const dlg = document.getElementById('confirm');
  document.getElementById('confirm-title').textContent = title;
  document.getElementById('confirm-text').textContent = text;
  const yes = document.getElementById('confirm-yes');
  yes.textContent = yesLabel;
  yes.className = opts.danger ? 'danger' : 'primary';
  const opener = document.activeElement;
  return new Promise((resolve) => {
    dlg.addEventListener('close', () => {
      resolve(dlg.returnValue === 'yes');
      if (opener && opener.focus) opener.focus();
    }, { once: true });
    dlg.returnValue = '';
    dlg.showModal();
    document.getElementById('confirm-no').focus();
  });
}

// ---------------------------------------------------------------- boot

async function boot() {
  setupSignIn();
  await tokenFromUrl();
  window.addEventListener('hashchange', () => {
    if (location.hash === '' || location.hash.startsWith('#/')) render();
  });
  // the skip link moves focus to the content without touching the route
  document.querySelector('a.skip').addEventListener('click', (ev) => {
    ev.preventDefault();
    document.getElementById('main').focus();
  });
  session.ready = loadWho();
  loadVersion();
  render();
}

boot();

// The only module that talks HTTP. Everything goes to the public API on our
// own origin, with the cookie the API sets (`mantis_token`) and the CSRF
// header the API asks of state-changing requests. Errors come back as
// ApiError carrying the API's {error, code, detail} body, so pages can show
// the message and the machine code, and syntax errors their line.

const listeners = { unauthorized: new Set() };

/** An error answer from the API (or the network), normalised. */
export class ApiError extends Error {
  constructor(status, body, path) {
    const msg = (body && (body.error || body.detail || body.message)) ||
      (status === 0 ? 'The server could not be reached' : `HTTP ${status}`);
    super(String(msg));
    this.name = 'ApiError';
    this.status = status;
    this.body = body || {};
    this.code = (body && body.code) || (status === 0 ? 'network' : `http_${status}`);
    this.detail = body && body.detail && body.detail !== msg ? String(body.detail) : '';
    this.path = path;
  }

  /** The 1-based line an error points at (syntax/contract errors), or 0. */
  get line() {
    const b = this.body;
    for (const k of ['line', 'lineno']) {
      if (Number.isInteger(b[k]) && b[k] > 0) return b[k];
    }
    if (b.location && Number.isInteger(b.location.line)) return b.location.line;
    const m = /\bline (\d+)/i.exec(`${this.message} ${this.detail}`);
    return m ? Number(m[1]) : 0;
  }

  /** The 1-based column, or 0 when the API gave none. */
  get column() {
    const b = this.body;
    for (const k of ['column', 'col', 'offset']) {
      if (Number.isInteger(b[k]) && b[k] > 0) return b[k];
    }
    if (b.location && Number.isInteger(b.location.column)) return b.location.column;
    const m = /\bcol(?:umn)? (\d+)/i.exec(`${this.message} ${this.detail}`);
    return m ? Number(m[1]) : 0;
  }
}

/** onUnauthorized(fn): fn() runs whenever the API answers 401. */
export function onUnauthorized(fn) {
  listeners.unauthorized.add(fn);
}

/** qs(obj): a query string from an object, skipping empty values. */
export function qs(obj) {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(obj || {})) {
    if (v === undefined || v === null || v === '') continue;
    p.set(k, String(v));
  }
  const s = p.toString();
  return s ? `?${s}` : '';
}

/**
 * api(path, opts) -> parsed JSON (or text for non-JSON answers).
 * opts: method, body (serialised as JSON), accept, etag (sends If-None-Match;
 * a 304 resolves to the symbol NOT_MODIFIED), signal, raw (return Response),
 * bearer (a token sent as Authorization: Bearer for this one request, which
 * never becomes the sign-in cookie; its 401 does not open the token prompt),
 * quiet (a 401 does not open the token prompt either).
 * Throws ApiError on any non-2xx answer or network failure.
 */
export const NOT_MODIFIED = Symbol('not-modified');

export async function api(path, opts = {}) {
  const method = opts.method || (opts.body !== undefined ? 'POST' : 'GET');
  const headers = {
    Accept: opts.accept || 'application/json',
    'X-Requested-With': 'XMLHttpRequest',
  };
  let body;
  if (opts.body !== undefined) {
    headers['Content-Type'] = 'application/json';
    body = JSON.stringify(opts.body);
  }
  if (opts.etag) headers['If-None-Match'] = opts.etag;
  if (opts.bearer) headers.Authorization = `Bearer ${opts.bearer}`;
  let res;
  try {
    res = await fetch(path, { method, headers, body, credentials: 'same-origin', signal: opts.signal, cache: 'no-store' });
  } catch (e) {
    if (e.name === 'AbortError') throw e;
    throw new ApiError(0, { error: 'The server could not be reached', detail: String(e.message || e) }, path);
  }
  if (res.status === 304) return NOT_MODIFIED;
  if (opts.raw && res.ok) return res;
  const type = res.headers.get('Content-Type') || '';
  let data = null;
  const text = await res.text();
  if (type.includes('json') && text) {
    try { data = JSON.parse(text); } catch { data = null; }
  } else {
    data = text;
  }
  if (!res.ok) {
    const errBody = data && typeof data === 'object' ? data : { error: res.statusText || `HTTP ${res.status}` };
    const err = new ApiError(res.status, errBody, path);
    if (res.status === 401 && !opts.bearer && !opts.quiet) for (const fn of listeners.unauthorized) fn(err);
    const ra = res.headers.get('Retry-After');
    if (ra) err.retryAfter = Number(ra);
    throw err;
  }
  if (opts.withHeaders) return { data, headers: res.headers };
  return data;
}

/** post(path, body, opts): api() with method POST and a JSON body. */
export function post(path, body = {}, opts = {}) {
  return api(path, { ...opts, method: 'POST', body });
}

/**
 * signIn(token): presents the token once as `?token=` so that the API sets
 * its HttpOnly cookie, then never keeps it in the page. Resolves to who the
 * token belongs to (the /api/me body) when the server has that endpoint.
 */
export async function signIn(token) {
  const t = encodeURIComponent(token.trim());
  try {
    return await api(`/api/me?token=${t}`);
  } catch (e) {
    if (e.status !== 404) throw e;
  }
  // A server without /api/me: any authenticated route sets the cookie.
  await api(`/datasets?token=${t}`);
  return null;
}

const features = new Map();
/**
 * available(path): whether an optional API (evaluations, tokens, ...) exists
 * on this server: false when its GET answers 404 with no resource body,
 * true otherwise. Cached per page load.
 */
export async function available(path) {
  if (features.has(path)) return features.get(path);
  const p = api(path).then(() => true, (e) => {
    if (e.status === 404) return false;
    if (e.status === 401) { features.delete(path); throw e; }
    return true;
  });
  features.set(path, p);
  return p;
}

/** rows(data, ...keys): the array in a list answer, whatever its envelope. */
export function rows(data, ...keys) {
  if (Array.isArray(data)) return data;
  if (!data || typeof data !== 'object') return [];
  for (const k of [...keys, 'items', 'rows', 'data', 'results']) {
    if (Array.isArray(data[k])) return data[k];
  }
  return [];
}

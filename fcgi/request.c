/*
 * request.c: turn FastCGI parameters into a struct fcgi_request, and the
 * small parsers for the parts of a request that carry credentials (cookies,
 * Authorization) or user input (the query string). Every parser is bounded
 * and works on the bytes as sent; nothing here trusts X-Forwarded-For or any
 * other client-supplied address.
 */
#include <string.h>

#include "common/parse.h"
#include "fcgi/app.h"

static const char *const req_methods[] = { "GET", "POST", "PUT", "PATCH", "DELETE" };

enum http_method req_method(const char *s)
{
	for (int i = 0; i < HTTP__MAX; i++)
		if (strcmp(s, req_methods[i]) == 0)
			return (enum http_method)i;
	if (strcmp(s, "HEAD") == 0)
		return HTTP_HEAD;
	return HTTP_OTHER;
}

const char *req_method_name(enum http_method m)
{
	if (m < HTTP__MAX)
		return req_methods[m];
	return m == HTTP_HEAD ? "HEAD" : "OTHER";
}

const char *req_env(char *const *envp, const char *name)
{
	size_t n = strlen(name);
	for (; envp && *envp; envp++)
		if (strncmp(*envp, name, n) == 0 && (*envp)[n] == '=')
			return *envp + n + 1;
	return NULL;
}

/* Store value of one parameter in the matching field of r. */
static void req_field(struct fcgi_request *r, const char *name, size_t n, const char *v)
{
#define REQ_IS(s) (n == sizeof(s) - 1 && memcmp(name, s, n) == 0)
	if (REQ_IS("REQUEST_METHOD"))
		r->method_str = v;
	else if (REQ_IS("REQUEST_URI"))
		r->path = v;
	else if (REQ_IS("QUERY_STRING"))
		r->query = v;
	else if (REQ_IS("REMOTE_ADDR"))
		r->remote_addr = v;
	else if (REQ_IS("HTTP_HOST"))
		r->host = v;
	else if (REQ_IS("CONTENT_TYPE"))
		r->content_type = v;
	else if (REQ_IS("CONTENT_LENGTH"))
		r->content_length = -2; /* parsed below */
	else if (REQ_IS("HTTP_AUTHORIZATION"))
		r->authorization = v;
	else if (REQ_IS("HTTP_COOKIE"))
		r->cookie = v;
	else if (REQ_IS("HTTP_ORIGIN"))
		r->origin = v;
	else if (REQ_IS("HTTP_X_REQUESTED_WITH"))
		r->xrw = v;
	else if (REQ_IS("HTTP_X_REQUEST_ID"))
		r->request_id = v;
	else if (REQ_IS("HTTPS"))
		r->https = v[0] != '\0' && strcmp(v, "off") != 0;
	else if (REQ_IS("REQUEST_SCHEME"))
		r->https = r->https || strcmp(v, "https") == 0;
#undef REQ_IS
}

enum req_status req_parse(struct fcgi_request *r, char *const *envp, const char **why)
{
	size_t count = 0, bytes = 0;
	const char *clen = NULL;

	memset(r, 0, sizeof *r);
	r->envp = envp;
	r->content_length = -1;
	for (char *const *e = envp; e && *e; e++) {
		const char *eq = strchr(*e, '=');
		size_t len = strlen(*e);
		if (++count > REQ_MAX_PARAMS || (bytes += len) > REQ_MAX_PARAM_BYTES) {
			*why = "too many or too large request headers";
			return REQ_TOO_LARGE;
		}
		if (eq == NULL)
			continue;
		req_field(r, *e, (size_t)(eq - *e), eq + 1);
		if (r->content_length == -2) {
			clen = eq + 1;
			r->content_length = -1;
		}
	}
	if (r->method_str == NULL || r->method_str[0] == '\0') {
		*why = "missing request method";
		return REQ_BAD;
	}
	r->method = req_method(r->method_str);
	if (r->path == NULL)
		r->path = req_env(envp, "DOCUMENT_URI");
	if (r->path == NULL || r->path[0] != '/') {
		*why = "missing or relative request URI";
		return REQ_BAD;
	}
	const char *q = strchr(r->path, '?');
	r->path_len = q ? (size_t)(q - r->path) : strlen(r->path);
	if (r->query == NULL)
		r->query = q ? q + 1 : "";
	if (r->path_len > REQ_MAX_PATH || strlen(r->query) > REQ_MAX_QUERY) {
		*why = "request URI too long";
		return REQ_TOO_LARGE;
	}
	if (clen != NULL && clen[0] != '\0') {
		int64_t v;
		if (!parse_int(clen, strlen(clen), 0, INT64_MAX / 2, &v)) {
			*why = "invalid Content-Length";
			return REQ_BAD;
		}
		r->content_length = v;
	}
	if (r->remote_addr == NULL)
		r->remote_addr = "";
	return REQ_OK;
}

bool req_query_parse(struct fcgi_request *r, struct arena *a)
{
	const char *s = r->query;
	size_t n = strlen(s), cap = 0;

	if (r->qparsed)
		return true;
	r->qparsed = true;
	r->nqs = 0;
	if (n == 0)
		return true;
	for (size_t i = 0; i < n; i++)
		cap += s[i] == '&';
	cap++;
	if (cap > REQ_MAX_QUERY_PARAMS)
		return false;
	r->qs = arena_calloc(a, cap, sizeof *r->qs);
	while (n > 0) {
		const char *amp = memchr(s, '&', n);
		size_t pn = amp ? (size_t)(amp - s) : n;
		if (pn > 0) {
			const char *eq = memchr(s, '=', pn);
			size_t kn = eq ? (size_t)(eq - s) : pn;
			size_t vn = eq ? pn - kn - 1 : 0, dl;
			char *k = arena_alloc(a, kn + 1), *v = arena_alloc(a, vn + 1);
			if (!parse_pct_decode(s, kn, true, k, &dl) ||
			    !parse_pct_decode(eq ? eq + 1 : "", vn, true, v, &dl))
				return false;
			r->qs[r->nqs].name = k;
			r->qs[r->nqs].value = v;
			r->nqs++;
		}
		s += pn;
		n -= pn;
		if (amp != NULL) {
			s++;
			n--;
		}
	}
	return true;
}

const char *req_query_get(const struct fcgi_request *r, const char *name)
{
	for (size_t i = 0; i < r->nqs; i++)
		if (strcmp(r->qs[i].name, name) == 0)
			return r->qs[i].value;
	return NULL;
}

bool req_cookie(const char *header, const char *name, const char **val, size_t *len)
{
	size_t nl = strlen(name);
	const char *p = header;
	if (p == NULL)
		return false;
	while (*p) {
		while (*p == ' ' || *p == '\t' || *p == ';')
			p++;
		const char *end = strchr(p, ';');
		size_t pn = end ? (size_t)(end - p) : strlen(p);
		const char *eq = memchr(p, '=', pn);
		if (eq != NULL && (size_t)(eq - p) == nl && memcmp(p, name, nl) == 0) {
			const char *v = eq + 1;
			size_t vn = pn - nl - 1;
			while (vn > 0 && (v[vn - 1] == ' ' || v[vn - 1] == '\t'))
				vn--;
			if (vn >= 2 && v[0] == '"' && v[vn - 1] == '"') {
				v++;
				vn -= 2;
			}
			*val = v;
			*len = vn;
			return true;
		}
		p += pn;
	}
	return false;
}

int req_bearer(const char *header, const char **tok, size_t *len)
{
	if (header == NULL)
		return 0;
	while (*header == ' ')
		header++;
	if (!parse_ieq(header, header[0] && strlen(header) >= 6 ? 6 : 0, "bearer") || header[6] != ' ')
		return -1;
	const char *t = header + 7;
	while (*t == ' ')
		t++;
	size_t n = strlen(t);
	while (n > 0 && (t[n - 1] == ' ' || t[n - 1] == '\t'))
		n--;
	if (n == 0)
		return -1;
	*tok = t;
	*len = n;
	return 1;
}

bool req_id_valid(const char *s)
{
	size_t n = 0;
	for (; s[n]; n++) {
		char c = s[n];
		if (n >= REQUEST_ID_MAX)
			return false;
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '.' || c == '_' || c == '-'))
			return false;
	}
	return n > 0;
}

bool req_is_json_type(const char *ct)
{
	if (ct == NULL)
		return false;
	while (*ct == ' ')
		ct++;
	size_t n = strcspn(ct, "; \t");
	if (parse_ieq(ct, n, "application/json"))
		return true;
	return n > 17 && parse_ieq(ct, 12, "application/") && parse_ieq(ct + n - 5, 5, "+json") &&
	       memchr(ct + 12, '/', n - 12) == NULL;
}

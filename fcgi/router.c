/*
 * router.c: method + path matching over the route table.
 *
 * Patterns are split once into segments (literal or {name}). A request path
 * is split on '/', each segment percent-decoded separately (so an encoded
 * "%2F" stays inside its segment), and compared with every route of the same
 * segment count. When several routes match, the most specific wins: literal
 * segments beat parameters, compared from the left, so "/api/agents/import"
 * is chosen over "/api/agents/{id}". Routes that match the path with another
 * method feed the Allow header of the 405.
 */
#include <string.h>

#include "common/parse.h"
#include "common/xalloc.h"
#include "fcgi/app.h"

struct route_seg {
	const char *text; /* literal text or parameter name */
	size_t      len;
	bool        param;
};

struct route_comp {
	struct route_seg seg[ROUTE_MAX_SEGMENTS];
	size_t           nseg;
	unsigned         literal_mask; /* bit (nseg-1-i) set for a literal segment i */
};

struct router {
	const struct fcgi_route *routes;
	size_t                   n;
	struct route_comp       *comp;
};

/* Split pattern into c; false with a message if invalid. */
static bool router_compile(const char *pattern, struct route_comp *c, struct buf *err)
{
	const char *p = pattern;
	memset(c, 0, sizeof *c);
	if (p[0] != '/') {
		buf_printf(err, "route '%s' must start with '/'", pattern);
		return false;
	}
	if (strcmp(p, "/") == 0)
		return true;
	while (*p == '/') {
		p++;
		size_t n = strcspn(p, "/");
		if (c->nseg == ROUTE_MAX_SEGMENTS || n == 0) {
			buf_printf(err, "route '%s' has an empty segment or too many segments", pattern);
			return false;
		}
		struct route_seg *s = &c->seg[c->nseg];
		if (p[0] == '{') {
			if (n < 3 || p[n - 1] != '}') {
				buf_printf(err, "route '%s' has a bad parameter", pattern);
				return false;
			}
			s->param = true;
			s->text = p + 1;
			s->len = n - 2;
		} else {
			for (size_t i = 0; i < n; i++)
				if (strchr("{}%?#", p[i]) != NULL) {
					buf_printf(err, "route '%s' has a bad literal segment", pattern);
					return false;
				}
			s->text = p;
			s->len = n;
		}
		c->nseg++;
		p += n;
	}
	size_t nparams = 0;
	for (size_t i = 0; i < c->nseg; i++) {
		if (c->seg[i].param)
			nparams++;
		else
			c->literal_mask |= 1u << (c->nseg - 1 - i);
	}
	if (nparams > ROUTE_MAX_PARAMS) {
		buf_printf(err, "route '%s' has more than %d parameters", pattern, ROUTE_MAX_PARAMS);
		return false;
	}
	return true;
}

struct router *router_new(const struct fcgi_route *routes, size_t n, struct buf *err)
{
	struct router *r = xcalloc(1, sizeof *r);
	r->routes = routes;
	r->n = n;
	r->comp = xcalloc(n ? n : 1, sizeof *r->comp);
	for (size_t i = 0; i < n; i++) {
		if (routes[i].method >= HTTP__MAX || routes[i].handler == NULL ||
		    !router_compile(routes[i].pattern, &r->comp[i], err)) {
			if (err->len == 0)
				buf_printf(err, "route %zu has an invalid method or no handler", i);
			router_free(r);
			return NULL;
		}
		for (size_t j = 0; j < i; j++)
			if (routes[j].method == routes[i].method && strcmp(routes[j].pattern, routes[i].pattern) == 0) {
				buf_printf(err, "duplicate route %s %s", req_method_name(routes[i].method), routes[i].pattern);
				router_free(r);
				return NULL;
			}
	}
	return r;
}

size_t router_count(const struct router *r)
{
	return r->n;
}

void router_free(struct router *r)
{
	if (r == NULL)
		return;
	free(r->comp);
	free(r);
}

/* Decoded request segments. */
struct req_segs {
	const char *raw[ROUTE_MAX_SEGMENTS];
	size_t      rawlen[ROUTE_MAX_SEGMENTS];
	char       *dec[ROUTE_MAX_SEGMENTS];
	size_t      declen[ROUTE_MAX_SEGMENTS];
	size_t      n;
};

/* Split and decode path; ROUTER_NOT_FOUND when it has more segments than any route could. */
static enum router_status router_split(const char *path, size_t len, struct arena *a, struct req_segs *s)
{
	size_t i = 1;
	s->n = 0;
	if (len == 0 || path[0] != '/')
		return ROUTER_BAD_PATH;
	if (len == 1)
		return ROUTER_FOUND;
	while (i <= len) {
		size_t j = i;
		while (j < len && path[j] != '/')
			j++;
		if (s->n == ROUTE_MAX_SEGMENTS)
			return ROUTER_NOT_FOUND;
		size_t n = j - i, dl;
		char *d = arena_alloc(a, n + 1);
		if (!parse_pct_decode(path + i, n, false, d, &dl))
			return ROUTER_BAD_PATH;
		if ((dl == 1 && d[0] == '.') || (dl == 2 && d[0] == '.' && d[1] == '.'))
			return ROUTER_BAD_PATH;
		s->raw[s->n] = path + i;
		s->rawlen[s->n] = n;
		s->dec[s->n] = d;
		s->declen[s->n] = dl;
		s->n++;
		i = j + 1;
	}
	return ROUTER_FOUND;
}

/* True if the compiled route c matches the segments. Empty segments only
 * match nothing (a doubled or trailing '/' is a different path). */
static bool router_fits(const struct route_comp *c, const struct req_segs *s)
{
	if (c->nseg != s->n)
		return false;
	for (size_t i = 0; i < s->n; i++) {
		if (s->declen[i] == 0)
			return false;
		if (c->seg[i].param)
			continue;
		if (s->rawlen[i] != c->seg[i].len || memcmp(s->raw[i], c->seg[i].text, c->seg[i].len) != 0)
			return false;
	}
	return true;
}

enum router_status router_match(const struct router *r, enum http_method m, const char *path, size_t len,
                                struct arena *a, struct route_match *out)
{
	struct req_segs s;
	enum http_method want = m == HTTP_HEAD ? HTTP_GET : m;
	long best = -1;

	memset(out, 0, sizeof *out);
	enum router_status st = router_split(path, len, a, &s);
	if (st != ROUTER_FOUND)
		return st;
	for (size_t i = 0; i < r->n; i++) {
		if (!router_fits(&r->comp[i], &s))
			continue;
		out->allow |= 1u << r->routes[i].method;
		if (r->routes[i].method != want)
			continue;
		if (best < 0 || r->comp[i].literal_mask > r->comp[(size_t)best].literal_mask)
			best = (long)i;
	}
	if (best < 0)
		return out->allow ? ROUTER_BAD_METHOD : ROUTER_NOT_FOUND;
	const struct route_comp *c = &r->comp[(size_t)best];
	out->route = &r->routes[best];
	out->index = (size_t)best;
	for (size_t i = 0; i < c->nseg; i++)
		if (c->seg[i].param) {
			out->params[out->nparams].name = arena_strndup(a, c->seg[i].text, c->seg[i].len);
			out->params[out->nparams].value = s.dec[i];
			out->nparams++;
		}
	return ROUTER_FOUND;
}

void router_allow_header(unsigned allow, struct buf *b)
{
	bool first = true;
	for (int i = 0; i < HTTP__MAX; i++) {
		if (!(allow & (1u << i)))
			continue;
		if (!first)
			buf_puts(b, ", ");
		buf_puts(b, req_method_name((enum http_method)i));
		first = false;
		if (i == HTTP_GET)
			buf_puts(b, ", HEAD");
	}
}

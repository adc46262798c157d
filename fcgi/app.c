/*
 * app.c: the request pipeline.
 *
 * Theory of operation. A worker owns one struct fcgi_app: its database
 * connection, its arena and three reusable buffers (request body, response
 * body, extra headers). For each request app_handle():
 *   1. parses the FastCGI parameters (bounded) and picks the request id;
 *   2. matches the route (404, 405 + Allow, 400 for a malformed path);
 *   3. decodes the query string (400);
 *   4. authenticates and checks the role (401 / 403 / 503);
 *   5. applies the CSRF rule (403 csrf_rejected);
 *   6. for JSON routes: 413 before reading an announced oversize body, reads
 *      at most limit + 1 bytes, 415 for a non-JSON type, 400 for bad JSON;
 *   7. calls the handler (500 if it does not reply);
 *   8. writes status, security headers and body into one buffer, counts the
 *      request in the shared metrics and writes one JSON log line;
 *   9. releases the JSON objects and resets the arena, keeping its first
 *      chunk and the buffers' capacity, so the steady state allocates only
 *      what json-c allocates for bodies.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <sodium.h>

#include "common/log.h"
#include "fcgi/app.h"

#define APP_SECURITY_HEADERS                                                       \
	"Cache-Control: no-store\r\n"                                                  \
	"X-Content-Type-Options: nosniff\r\n"                                          \
	"X-Frame-Options: DENY\r\n"                                                    \
	"Referrer-Policy: no-referrer\r\n"                                             \
	"Content-Security-Policy: default-src 'none'; frame-ancestors 'none'; "        \
	"base-uri 'none'; form-action 'none'\r\n"

long long app_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Monotonic microseconds. */
static uint64_t app_now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

bool app_init(struct fcgi_app *app, const struct config *cfg, const struct fcgi_route *routes, size_t nroutes,
              struct prom *metrics, const unsigned char key[SECRET_BYTES], struct buf *err)
{
	unsigned char rnd[4];
	memset(app, 0, sizeof *app);
	app->cfg = cfg;
	app->routes = routes;
	app->nroutes = nroutes;
	app->metrics = metrics;
	app->router = router_new(routes, nroutes, err);
	if (app->router == NULL)
		return false;
	auth_setup(&app->auth, key, cfg->mantis_auth_token, cfg->auth == CONFIG_AUTH_REQUIRED);
	app->auth.hosts = config_get(cfg, "AGENTTEST_ALLOWED_HOSTS");
	if (app->auth.hosts != NULL && app->auth.hosts[0] == '\0')
		app->auth.hosts = NULL;
	app->health_db = -1;
	randombytes_buf(rnd, sizeof rnd);
	snprintf(app->rid_prefix, sizeof app->rid_prefix, "%02x%02x%02x%02x", rnd[0], rnd[1], rnd[2], rnd[3]);
	arena_init(&app->arena, 16384);
	return true;
}

void app_free(struct fcgi_app *app)
{
	router_free(app->router);
	arena_free(&app->arena);
	buf_free(&app->log);
	buf_free(&app->in_body);
	buf_free(&app->out_body);
	buf_free(&app->out_hdrs);
	sodium_memzero(&app->auth, sizeof app->auth);
}

enum db_status app_db_lookup(void *ctx, const unsigned char hash[TOKEN_HASH_BYTES],
                             struct tokstore_identity *who, bool *found)
{
	struct db *db = ctx;
	enum db_status st = tokstore_lookup(db, hash, who, found);
	if (st == DB_OK && *found &&
	    (who->last_used_age_s < 0 || who->last_used_age_s >= TOKSTORE_TOUCH_INTERVAL_S))
		tokstore_touch(db, who->token_id); /* best effort: a failure only delays last_used_at */
	return st;
}

bool app_db_healthy(struct fcgi_app *app)
{
	long long now = app_now_ms();
	if (app->db == NULL)
		return false;
	if (app->health_db < 0 || now - app->health_at_ms >= 1000) {
		app->health_db = db_ping(app->db) == DB_OK;
		app->health_at_ms = now;
	}
	return app->health_db == 1;
}

/* The reason phrase of a status. */
static const char *app_reason(int status)
{
	switch (status) {
	case 200: return "OK";
	case 201: return "Created";
	case 202: return "Accepted";
	case 204: return "No Content";
	case 304: return "Not Modified";
	case 400: return "Bad Request";
	case 401: return "Unauthorized";
	case 402: return "Payment Required";   /* budget_exhausted (agents_ask.c) */
	case 403: return "Forbidden";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 409: return "Conflict";
	case 412: return "Precondition Failed";
	case 413: return "Payload Too Large";
	case 415: return "Unsupported Media Type";
	case 421: return "Misdirected Request";
	case 422: return "Unprocessable Entity";
	case 429: return "Too Many Requests";
	case 500: return "Internal Server Error";
	case 502: return "Bad Gateway";        /* upstream_error (agents_ask.c) */
	case 503: return "Service Unavailable";
	default: return "Status";
	}
}

/* Read the body (at most limit + 1 bytes) into app->in_body: 0 when read to
 * its end, 413 when it exceeds limit, 400 on a read error. */
static int app_read_body(struct fcgi_app *app, struct fcgi_exchange *x, size_t limit)
{
	struct buf *b = &app->in_body;
	for (;;) {
		if (b->len > limit)
			return 413;
		buf_reserve(b, 16384);
		size_t room = b->cap - b->len - 1;
		if (room > limit + 1 - b->len)
			room = limit + 1 - b->len;
		ssize_t r = x->read(x->io, b->data + b->len, room);
		if (r < 0)
			return 400;
		if (r == 0)
			break;
		b->len += (size_t)r;
		b->data[b->len] = '\0';
	}
	x->drained = true;
	return 0;
}

/* Step 6: the body of a JSON route. False when a reply was made. */
static bool app_body(struct fcgi_ctx *c, struct fcgi_exchange *x)
{
	struct fcgi_app *app = c->app;
	size_t limit = app->cfg->body_limit;
	char msg[160];
	const struct fcgi_route *rt = c->match.route;

	if (c->req.content_length > 0 && (unsigned long long)c->req.content_length > limit) {
		fcgi_reply_error(c, 413, "payload_too_large", "the request body exceeds %zu bytes", limit);
		return false;
	}
	int st = app_read_body(app, x, limit);
	if (st == 413) {
		fcgi_reply_error(c, 413, "payload_too_large", "the request body exceeds %zu bytes", limit);
		return false;
	}
	if (st != 0) {
		fcgi_reply_error(c, 400, "bad_request", "could not read the request body");
		return false;
	}
	if (rt->body == BODY_JSON_OPTIONAL && app->in_body.len == 0)
		return true;
	if (!req_is_json_type(c->req.content_type)) {
		fcgi_reply_error(c, 415, "unsupported_media_type", "send the body as Content-Type: application/json");
		return false;
	}
	if (body_parse(buf_cstr(&app->in_body), app->in_body.len, &c->body, msg, sizeof msg) != BODY_OK) {
		fcgi_reply_error(c, 400, "invalid_json", "%s", msg);
		return false;
	}
	return true;
}

/* Run the route's handler; when its reply is a lock conflict (a deadlock or
 * lock wait timeout with another worker or a runner) and nothing it did was
 * kept (db_writes() unchanged), discard the reply and run it again, at most
 * APP_CONFLICT_TRIES times in all, after a short randomised pause that lets
 * the other transaction finish. Handlers are transactions over the parsed
 * request, so running one again is the same as the client retrying. */
#define APP_CONFLICT_TRIES 3
static void app_run_handler(struct fcgi_ctx *c)
{
	size_t hdrs = c->out_hdrs->len;
	for (int attempt = 1;; attempt++) {
		unsigned long writes = c->app->db ? db_writes(c->app->db) : 0;
		c->match.route->handler(c);
		if (!c->db_conflict || attempt == APP_CONFLICT_TRIES || c->app->db == NULL ||
		    db_writes(c->app->db) != writes)
			return;
		db_rollback(c->app->db);
		json_object_put(c->reply);
		c->reply = NULL;
		c->replied = false;
		c->db_conflict = false;
		c->status = 0;
		c->ctype = NULL;
		buf_reset(c->out_body);
		c->out_hdrs->len = hdrs;
		if (c->out_hdrs->data)
			c->out_hdrs->data[hdrs] = '\0';
		struct timespec pause = { 0, (long)(5 + randombytes_uniform(20)) * 1000000L * attempt };
		nanosleep(&pause, NULL);
	}
}

/* Steps 1-7: decide the response. */
static void app_dispatch(struct fcgi_ctx *c, struct fcgi_exchange *x)
{
	struct fcgi_app *app = c->app;
	const char *why = NULL;

	switch (router_match(app->router, c->req.method, c->req.path, c->req.path_len, &app->arena, &c->match)) {
	case ROUTER_FOUND:
		break;
	case ROUTER_NOT_FOUND:
		fcgi_reply_error(c, 404, "not_found", "no such endpoint");
		return;
	case ROUTER_BAD_METHOD: {
		struct buf allow = BUF_INIT;
		router_allow_header(c->match.allow, &allow);
		fcgi_reply_error(c, 405, "method_not_allowed", "method %s is not allowed here (allowed: %s)",
		                 c->req.method == HTTP_OTHER ? "this" : req_method_name(c->req.method), buf_cstr(&allow));
		fcgi_add_header(c, "Allow", buf_cstr(&allow));
		buf_free(&allow);
		return;
	}
	case ROUTER_BAD_PATH:
		fcgi_reply_error(c, 400, "bad_request", "malformed request path");
		return;
	}
	if (!req_query_parse(&c->req, &app->arena)) {
		fcgi_reply_error(c, 400, "bad_request", "malformed query string");
		return;
	}
	switch (auth_check(&app->auth, &c->req, c->match.route->access, app->lookup, app->lookup_ctx, &c->who, &why)) {
	case AUTH_OK:
		break;
	case AUTH_UNAUTHORIZED:
		fcgi_reply_error(c, 401, "unauthorized", "%s", why);
		fcgi_add_header(c, "WWW-Authenticate", "Bearer");
		return;
	case AUTH_FORBIDDEN:
		fcgi_reply_error(c, 403, "forbidden", "%s", why);
		return;
	case AUTH_UNAVAILABLE:
		fcgi_reply_db_error(c, DB_UNAVAILABLE);
		return;
	}
	/* A body route without any Content-Type (curl -X POST with no -H) is a
	 * client mistake, not a cross-site attempt (a cross-site form always
	 * sends a type): say which type to send. A wrong type from a cookie or
	 * loopback caller still gets the CSRF refusal below. */
	if (c->match.route->body != BODY_NONE && (c->req.content_type == NULL || c->req.content_type[0] == '\0') &&
	    (c->req.content_length > 0 || c->match.route->body != BODY_JSON_OPTIONAL) &&
	    c->req.method != HTTP_GET && c->req.method != HTTP_HEAD) {
		fcgi_reply_error(c, 415, "unsupported_media_type",
		                 "no Content-Type: send the body as Content-Type: application/json");
		return;
	}
	if (!auth_csrf_ok(&c->req, &c->who)) {
		fcgi_reply_error(c, 403, "csrf_rejected", "cross-site request refused: send a same-origin Origin, "
		                 "X-Requested-With: XMLHttpRequest or a JSON body, or use a Bearer token");
		return;
	}
	if (c->who.via == AUTH_VIA_QUERY && auth_query_cookie_ok(&c->req, fcgi_header(c, "HTTP_SEC_FETCH_SITE"))) {
		const char *tok = req_query_get(&c->req, "token");
		if (auth_cookie_safe(tok, strlen(tok))) {
			struct buf ck = BUF_INIT;
			buf_printf(&ck, "mantis_token=%s; HttpOnly; SameSite=Strict; Path=/; Max-Age=2592000%s", tok,
			           c->req.https ? "; Secure" : "");
			fcgi_add_header(c, "Set-Cookie", buf_cstr(&ck));
			sodium_memzero(ck.data, ck.len);
			buf_free(&ck);
		}
	}
	if (c->match.route->body != BODY_NONE && !app_body(c, x))
		return;
	app_run_handler(c);
	if (!c->replied) {
		log_msg(LOG_LVL_ERROR, "no_reply", "handler for %s did not reply (request %s)",
		        c->match.route->pattern, c->rid);
		fcgi_reply_error(c, 500, "internal", "internal error (request %s)", c->rid);
	}
}

/* Step 8: status, headers and body into x->out. */
static void app_write(struct fcgi_ctx *c, struct fcgi_exchange *x)
{
	struct buf *o = x->out;
	buf_reset(o);
	buf_puts(o, "Status: ");
	buf_put_u64(o, (unsigned)c->status);
	buf_putc(o, ' ');
	buf_puts(o, app_reason(c->status));
	buf_puts(o, "\r\nContent-Type: ");
	buf_puts(o, c->ctype ? c->ctype : "application/json");
	buf_puts(o, "\r\nContent-Length: ");
	buf_put_u64(o, c->out_body->len);
	buf_puts(o, "\r\n");
	buf_append(o, APP_SECURITY_HEADERS, sizeof APP_SECURITY_HEADERS - 1);
	buf_puts(o, "X-Request-Id: ");
	buf_puts(o, c->rid);
	buf_puts(o, "\r\n");
	buf_append(o, buf_cstr(c->out_hdrs), c->out_hdrs->len);
	buf_puts(o, "\r\n");
	if (c->req.method != HTTP_HEAD)
		buf_append(o, buf_cstr(c->out_body), c->out_body->len);
}

/* A fresh request id: the worker's random prefix, '-', a hex counter. */
static void app_request_id(struct fcgi_app *app, char rid[REQUEST_ID_MAX + 1])
{
	static const char hex[] = "0123456789abcdef";
	char tmp[17];
	size_t i = sizeof tmp, n = strlen(app->rid_prefix);
	uint64_t v = ++app->rid_counter;
	do {
		tmp[--i] = hex[v & 15];
		v >>= 4;
	} while (v != 0);
	memcpy(rid, app->rid_prefix, n);
	rid[n] = '-';
	memcpy(rid + n + 1, tmp + i, sizeof tmp - i);
	rid[n + 1 + sizeof tmp - i] = '\0';
}

/* The request log line. */
static void app_log(struct fcgi_ctx *c, uint64_t us)
{
	struct buf *b = &c->app->log;
	if (!log_enabled(LOG_LVL_INFO))
		return;
	buf_reset(b);
	log_begin(b, LOG_LVL_INFO, "request");
	log_str(b, "request_id", c->rid);
	log_str(b, "method", c->req.method_str ? c->req.method_str : "");
	log_str(b, "route", c->match.route ? c->match.route->pattern : "unmatched");
	log_int(b, "status", c->status);
	char frac[4] = { (char)('0' + us / 100 % 10), (char)('0' + us / 10 % 10), (char)('0' + us % 10), 0 };
	buf_puts(b, ",\"duration_ms\":");
	buf_put_u64(b, us / 1000);
	buf_putc(b, '.');
	buf_append(b, frac, 3);
	log_str(b, "client", c->req.remote_addr ? c->req.remote_addr : "");
	if (c->who.authenticated)
		log_str(b, "user", c->who.name);
	log_end(b);
}

void app_handle(struct fcgi_app *app, struct fcgi_exchange *x)
{
	struct fcgi_ctx c;
	const char *why = NULL;
	uint64_t t0 = app_now_us();

	memset(&c, 0, sizeof c);
	c.app = app;
	c.out_body = &app->out_body;
	c.out_hdrs = &app->out_hdrs;
	buf_reset(&app->in_body);
	buf_reset(&app->out_body);
	buf_reset(&app->out_hdrs);
	x->drained = false;

	enum req_status rs = req_parse(&c.req, x->envp, &why);
	if (c.req.request_id != NULL && req_id_valid(c.req.request_id))
		snprintf(c.rid, sizeof c.rid, "%s", c.req.request_id);
	else
		app_request_id(app, c.rid);
	if (rs != REQ_OK)
		fcgi_reply_error(&c, 400, "bad_request", "%s", why);
	else if (c.req.host != NULL && !hosts_allowed(app->auth.hosts, c.req.host))
		fcgi_reply_error(&c, 421, "misdirected_request",
				 "this server does not answer for that Host (see AGENTTEST_ALLOWED_HOSTS)");
	else
		app_dispatch(&c, x);
	if (c.req.content_length == 0 || (c.req.content_length < 0 && c.req.method == HTTP_GET))
		x->drained = true;
	app_write(&c, x);
	x->status = c.status;

	uint64_t us = app_now_us() - t0;
	prom_request(app->metrics, c.match.route ? c.match.index : app->nroutes, c.status, us);
	app_log(&c, us);

	json_object_put(c.body);
	json_object_put(c.reply);
	if (app->in_body.len > 0)
		sodium_memzero(app->in_body.data, app->in_body.len);
	arena_reset(&app->arena);
}

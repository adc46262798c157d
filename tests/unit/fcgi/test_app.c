/* The request pipeline end to end, without libfcgi: status codes and JSON
 * error bodies for 400/401/403/404/405/413/415/500/503, the security headers
 * on every response, request ids, the ?token= cookie, HEAD, and metrics. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <sodium.h>

#include "fcgi/app.h"
#include "fcgi/handlers/handlers.h"
#include "fcgi/handlers/json_list.h"

static void h_echo(struct fcgi_ctx *c)
{
	json_object *o = json_object_new_object();
	const char *q = fcgi_query(c, "q");
	json_object_object_add(o, "id", json_object_new_string(fcgi_param(c, "id")));
	json_object_object_add(o, "q", q ? json_object_new_string(q) : NULL);
	json_object_object_add(o, "who", json_object_new_string(fcgi_who(c)->name));
	fcgi_reply_json(c, 200, o);
}

static void h_create(struct fcgi_ctx *c)
{
	const char *name = NULL;
	int64_t n = 3;
	if (!fcgi_json_string(c, fcgi_body(c), "name", FIELD_REQUIRED, 1, 8, &name) ||
	    !fcgi_json_int(c, fcgi_body(c), "n", FIELD_OPTIONAL, 1, 10, &n))
		return;
	json_object *o = json_object_new_object();
	json_object_object_add(o, "name", json_object_new_string(name));
	json_object_object_add(o, "n", json_object_new_int64(n));
	fcgi_reply_json(c, 201, o);
}

static void h_opt(struct fcgi_ctx *c)
{
	fcgi_reply_raw(c, 200, "application/json", fcgi_body(c) ? "{\"body\":true}" : "{\"body\":false}",
	               fcgi_body(c) ? 13 : 14);
}

static void h_tail(struct fcgi_ctx *c)
{
	int64_t tail;
	if (!fcgi_query_int(c, "tail", 1, 5000, 200, &tail))
		return;
	buf_printf(fcgi_body_buf(c), "{\"tail\":%lld}", (long long)tail);
	fcgi_reply_buf(c, 200, "application/json");
}

static void h_noreply(struct fcgi_ctx *c) { (void)c; }

/* A list route as the handlers write them (json_list.h): ?n= elements whose
 * ranks start after ?offset=, ended as if the query returned ?fail= (a
 * db_status, 0 for DB_OK). */
static void h_list(struct fcgi_ctx *c)
{
	int64_t n, offset, fail;
	if (!fcgi_query_int(c, "n", 0, 5, 0, &n) || !fcgi_query_int(c, "offset", 0, 100, 0, &offset) ||
	    !fcgi_query_int(c, "fail", 0, DB__MAX - 1, 0, &fail))
		return;
	struct buf *b = fcgi_body_buf(c);
	struct json_list l = JSON_LIST(b, offset);
	buf_puts(b, "{\"items\":[");
	for (int64_t i = 0; i < n; i++)
		buf_printf(b, "{\"rank\":%lld}", jl_next(&l));
	jl_reply(c, (enum db_status)fail, "]}");
}

/* An error quoting the user's ?q=, after ?pad= 'x's (to reach the 511-byte cut). */
static void h_say(struct fcgi_ctx *c)
{
	int64_t pad;
	const char *q = fcgi_query(c, "q");
	if (!fcgi_query_int(c, "pad", 0, 600, 0, &pad))
		return;
	fcgi_reply_error(c, 404, "not_found", "%.*s'%s' is not here", (int)pad,
	                 "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
	                 "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
	                 "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
	                 "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
	                 "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
	                 "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
	                 q ? q : "");
}

static const struct fcgi_route routes[] = {
	{ HTTP_GET, "/health", h_health, ACCESS_PUBLIC, BODY_NONE },
	{ HTTP_GET, "/metrics", h_metrics, ACCESS_ADMIN_OR_LOOPBACK, BODY_NONE },
	{ HTTP_GET, "/t/echo/{id}", h_echo, ACCESS_USER, BODY_NONE },
	{ HTTP_POST, "/t/items", h_create, ACCESS_USER, BODY_JSON },
	{ HTTP_POST, "/t/opt", h_opt, ACCESS_USER, BODY_JSON_OPTIONAL },
	{ HTTP_GET, "/t/tail", h_tail, ACCESS_USER, BODY_NONE },
	{ HTTP_GET, "/t/admin", h_opt, ACCESS_ADMIN, BODY_NONE },
	{ HTTP_GET, "/t/noreply", h_noreply, ACCESS_PUBLIC, BODY_NONE },
	{ HTTP_GET, "/t/say", h_say, ACCESS_PUBLIC, BODY_NONE },
	{ HTTP_GET, "/t/list", h_list, ACCESS_PUBLIC, BODY_NONE },
};
#define NROUTES (sizeof routes / sizeof routes[0])

static struct config cfg;
static struct fcgi_app app;
static struct prom *metrics;
static unsigned char key[SECRET_BYTES];
static char user_tok[TOKEN_TEXT_LEN + 1];

static enum db_status fake_lookup(void *ctx, const unsigned char hash[TOKEN_HASH_BYTES],
                                  struct tokstore_identity *who, bool *found)
{
	unsigned char h[TOKEN_HASH_BYTES];
	(void)ctx;
	token_hash(key, user_tok, TOKEN_TEXT_LEN, h);
	*found = token_hash_equal(h, hash);
	if (*found) {
		memset(who, 0, sizeof *who);
		who->user_id = 5;
		snprintf(who->name, sizeof who->name, "bob");
		who->role = TOKSTORE_ROLE_USER;
	}
	return DB_OK;
}

/* Start an app with the given MANTIS_AUTH_TOKEN (NULL for none). */
static void start(const char *shared)
{
	struct buf err = BUF_INIT;
	unsetenv("AGENTTEST_CONFIG");
	unsetenv("MANTIS_AUTH_TOKEN");
	unsetenv("AGENTTEST_AUTH");
	setenv("AGENTTEST_BODY_LIMIT", "2048", 1);
	if (shared)
		setenv("MANTIS_AUTH_TOKEN", shared, 1);
	assert_true(config_load(&cfg, "/dev/null", &err));
	metrics = prom_new(NROUTES);
	assert_non_null(metrics);
	assert_true(app_init(&app, &cfg, routes, NROUTES, metrics, key, &err));
	app.lookup = fake_lookup;
	buf_free(&err);
}

static void stop(void)
{
	app_free(&app);
	prom_free(metrics);
	config_free(&cfg);
}

static int setup(void **state)
{
	(void)state;
	if (sodium_init() < 0)
		return 1;
	randombytes_buf(key, sizeof key);
	token_generate(user_tok);
	log_set_level(LOG_LVL_ERROR); /* keep request lines out of the test output */
	start(NULL);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	stop();
	return 0;
}

struct mem_body {
	const char *p;
	size_t      left;
};

static ssize_t mem_read(void *io, char *buf, size_t n)
{
	struct mem_body *m = io;
	if (n > m->left)
		n = m->left;
	memcpy(buf, m->p, n);
	m->p += n;
	m->left -= n;
	return (ssize_t)n;
}

struct resp {
	int  status;
	char head[4096];
	char body[8192];
};

/* Run one request; extra is a NULL-terminated list of NAME=value. */
static void run(struct resp *r, const char *method, const char *uri, const char *body, const char *const *extra)
{
	char *envp[32];
	char store[32][600];
	int n = 0;
	struct buf out = BUF_INIT;
	struct mem_body mb = { body ? body : "", body ? strlen(body) : 0 };
	snprintf(store[n], sizeof store[n], "REQUEST_METHOD=%s", method);
	envp[n] = store[n];
	n++;
	snprintf(store[n], sizeof store[n], "REQUEST_URI=%s", uri);
	envp[n] = store[n];
	n++;
	const char *q = strchr(uri, '?');
	snprintf(store[n], sizeof store[n], "QUERY_STRING=%s", q ? q + 1 : "");
	envp[n] = store[n];
	n++;
	snprintf(store[n], sizeof store[n], "HTTP_HOST=localhost:8000");
	envp[n] = store[n];
	n++;
	bool has_addr = false;
	for (const char *const *e = extra; e && *e; e++) {
		has_addr |= strncmp(*e, "REMOTE_ADDR=", 12) == 0;
		snprintf(store[n], sizeof store[n], "%s", *e);
		envp[n] = store[n];
		n++;
	}
	if (!has_addr) {
		snprintf(store[n], sizeof store[n], "REMOTE_ADDR=127.0.0.1");
		envp[n] = store[n];
		n++;
	}
	if (body) {
		snprintf(store[n], sizeof store[n], "CONTENT_LENGTH=%zu", strlen(body));
		envp[n] = store[n];
		n++;
	}
	envp[n] = NULL;
	struct fcgi_exchange x = { .envp = envp, .read = mem_read, .io = &mb, .out = &out };
	app_handle(&app, &x);
	r->status = x.status;
	const char *sep = strstr(buf_cstr(&out), "\r\n\r\n");
	assert_non_null(sep);
	snprintf(r->head, sizeof r->head, "%.*s\r\n", (int)(sep - buf_cstr(&out)), buf_cstr(&out));
	snprintf(r->body, sizeof r->body, "%s", sep + 4);
	buf_free(&out);
	/* every response carries the security headers and a request id */
	assert_non_null(strstr(r->head, "Cache-Control: no-store\r\n"));
	assert_non_null(strstr(r->head, "X-Content-Type-Options: nosniff\r\n"));
	assert_non_null(strstr(r->head, "X-Frame-Options: DENY\r\n"));
	assert_non_null(strstr(r->head, "Referrer-Policy: no-referrer\r\n"));
	assert_non_null(strstr(r->head, "Content-Security-Policy: default-src 'none'"));
	assert_non_null(strstr(r->head, "X-Request-Id: "));
}

/* Assert an error response with status and code, and the one error shape. */
static void expect_error(const struct resp *r, int status, const char *code)
{
	if (r->status != status)
		fail_msg("status %d, expected %d: %s", r->status, status, r->body);
	json_object *o = json_tokener_parse(r->body);
	assert_non_null(o);
	json_object *e, *c, *d;
	assert_true(json_object_object_get_ex(o, "error", &e));
	assert_true(json_object_object_get_ex(o, "code", &c));
	assert_true(json_object_object_get_ex(o, "detail", &d));
	assert_int_equal(json_object_object_length(o), 3);
	assert_string_equal(json_object_get_string(c), code);
	assert_string_equal(json_object_get_string(e), json_object_get_string(d));
	assert_non_null(strstr(r->head, "Content-Type: application/json"));
	json_object_put(o);
}

static void test_routing_errors(void **state)
{
	struct resp r;
	run(&r, "GET", "/nope", NULL, NULL);
	expect_error(&r, 404, "not_found");
	run(&r, "DELETE", "/t/items", NULL, NULL);
	expect_error(&r, 405, "method_not_allowed");
	assert_non_null(strstr(r.head, "Allow: POST\r\n"));
	run(&r, "BREW", "/health", NULL, NULL);
	expect_error(&r, 405, "method_not_allowed");
	assert_non_null(strstr(r.head, "Allow: GET, HEAD\r\n"));
	run(&r, "GET", "/t/echo/%zz", NULL, NULL);
	expect_error(&r, 400, "bad_request");
	run(&r, "GET", "/t/echo/x?q=%zz", NULL, NULL);
	expect_error(&r, 400, "bad_request");
	run(&r, "GET", "/t/noreply", NULL, NULL);
	expect_error(&r, 500, "internal");
	(void)state;
}

static void test_echo_and_request_id(void **state)
{
	struct resp r;
	static const char *const rid[] = { "HTTP_X_REQUEST_ID=abc.DEF_12-3", NULL };
	static const char *const badrid[] = { "HTTP_X_REQUEST_ID=bad id\"", NULL };
	run(&r, "GET", "/t/echo/a%20b?q=x+y", NULL, rid);
	assert_int_equal(r.status, 200);
	assert_string_equal(r.body, "{\"id\":\"a b\",\"q\":\"x y\",\"who\":\"local\"}");
	assert_non_null(strstr(r.head, "X-Request-Id: abc.DEF_12-3\r\n"));
	run(&r, "GET", "/t/echo/1", NULL, badrid);
	assert_null(strstr(r.head, "bad id"));
	assert_non_null(strstr(r.head, "X-Request-Id: "));
	run(&r, "GET", "/t/echo/1", NULL, NULL);
	char clen[64];
	snprintf(clen, sizeof clen, "Content-Length: %zu\r\n", strlen(r.body));
	run(&r, "HEAD", "/t/echo/1", NULL, NULL);
	assert_int_equal(r.status, 200);
	assert_string_equal(r.body, "");
	assert_non_null(strstr(r.head, clen));
	run(&r, "GET", "/t/tail?tail=12", NULL, NULL);
	assert_string_equal(r.body, "{\"tail\":12}");
	run(&r, "GET", "/t/tail", NULL, NULL);
	assert_string_equal(r.body, "{\"tail\":200}");
	run(&r, "GET", "/t/tail?tail=0", NULL, NULL);
	expect_error(&r, 400, "invalid_field");
	run(&r, "GET", "/t/tail?tail=5x", NULL, NULL);
	expect_error(&r, 400, "invalid_field");
	(void)state;
}

static void test_json_bodies(void **state)
{
	struct resp r;
	static const char *const json[] = { "CONTENT_TYPE=application/json", NULL };
	static const char *const text[] = { "CONTENT_TYPE=text/plain", "HTTP_X_REQUESTED_WITH=XMLHttpRequest", NULL };
	run(&r, "POST", "/t/items", "{\"name\":\"abc\",\"n\":4}", json);
	assert_int_equal(r.status, 201);
	assert_string_equal(r.body, "{\"name\":\"abc\",\"n\":4}");
	run(&r, "POST", "/t/items", "{\"name\":\"abc\"}", text);
	expect_error(&r, 415, "unsupported_media_type");
	run(&r, "POST", "/t/items", "{\"name\":", json);
	expect_error(&r, 400, "invalid_json");
	run(&r, "POST", "/t/items", "{\"name\":\"a\"} x", json);
	expect_error(&r, 400, "invalid_json");
	run(&r, "POST", "/t/items", "", json);
	expect_error(&r, 400, "invalid_json");
	run(&r, "POST", "/t/items", "[]", json);
	expect_error(&r, 400, "invalid_json");
	run(&r, "POST", "/t/items", "{}", json);
	expect_error(&r, 400, "missing_field");
	assert_non_null(strstr(r.body, "'name'"));
	run(&r, "POST", "/t/items", "{\"name\":7}", json);
	expect_error(&r, 400, "invalid_field");
	run(&r, "POST", "/t/items", "{\"name\":\"abcdefghi\"}", json);
	expect_error(&r, 400, "invalid_field");
	run(&r, "POST", "/t/items", "{\"name\":\"a\",\"n\":11}", json);
	expect_error(&r, 400, "invalid_field");
	assert_non_null(strstr(r.body, "'n'"));
	char deep[200];
	memset(deep, '[', sizeof deep);
	memcpy(deep, "{\"a\":", 5);
	deep[sizeof deep - 1] = '\0';
	run(&r, "POST", "/t/items", deep, json);
	expect_error(&r, 400, "invalid_json");
	assert_non_null(strstr(r.body, "deeper"));
	run(&r, "POST", "/t/opt", "", json);
	assert_string_equal(r.body, "{\"body\":false}");
	run(&r, "POST", "/t/opt", "{}", json);
	assert_string_equal(r.body, "{\"body\":true}");
	run(&r, "POST", "/t/opt", "{}", text);
	expect_error(&r, 415, "unsupported_media_type");
	(void)state;
}

#define FFFD "\xef\xbf\xbd"

/* The message of error body r, copied to out; the body must be strict JSON
 * in valid UTF-8 (body_parse checks both). */
static void error_message(const struct resp *r, char *out, size_t cap)
{
	json_object *o = NULL, *e;
	char why[160];
	assert_int_equal(body_parse(r->body, strlen(r->body), &o, why, sizeof why), BODY_OK);
	assert_true(json_object_object_get_ex(o, "error", &e));
	snprintf(out, cap, "%s", json_object_get_string(e));
	json_object_put(o);
}

static void test_error_messages_are_utf8(void **state)
{
	struct resp r;
	char msg[600];
	/* what the user sent arrives as it was: raw UTF-8 in the body, never \u00c3-style bytes */
	run(&r, "GET", "/t/say?q=caf%C3%A9%20%E2%82%AC%20%F0%9F%93%88", NULL, NULL);
	expect_error(&r, 404, "not_found");
	error_message(&r, msg, sizeof msg);
	assert_string_equal(msg, "'caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x93\x88' is not here");
	assert_non_null(strstr(r.body, "caf\xc3\xa9"));
	assert_null(strstr(r.body, "\\u00c3"));
	/* invalid UTF-8 from the user becomes U+FFFD: the body stays valid JSON */
	run(&r, "GET", "/t/say?q=a%FFb%C0%AFc%ED%A0%80", NULL, NULL);
	expect_error(&r, 404, "not_found");
	error_message(&r, msg, sizeof msg);
	assert_string_equal(msg, "'a" FFFD "b" FFFD FFFD "c" FFFD FFFD FFFD "' is not here");
	/* quotes and control characters are escaped, and the code is the code */
	run(&r, "GET", "/t/say?q=%22%5C%0A%01", NULL, NULL);
	expect_error(&r, 404, "not_found");
	error_message(&r, msg, sizeof msg);
	assert_string_equal(msg, "'\"\\\n\x01' is not here");
	/* the 511-byte cut falls inside a character: that character is dropped, not garbled */
	run(&r, "GET", "/t/say?pad=509&q=%E2%82%AC", NULL, NULL);
	expect_error(&r, 404, "not_found");
	error_message(&r, msg, sizeof msg);
	assert_int_equal(strlen(msg), 510);
	assert_memory_equal(msg + 509, "'", 2);
	run(&r, "GET", "/t/say?pad=508&q=%C3%A9", NULL, NULL);
	error_message(&r, msg, sizeof msg);
	assert_int_equal(strlen(msg), 511);
	assert_string_equal(msg + 508, "'\xc3\xa9");
	(void)state;
}

static void test_body_limit(void **state)
{
	struct resp r;
	static const char *const json[] = { "CONTENT_TYPE=application/json", NULL };
	static const char *const announced[] = { "CONTENT_TYPE=application/json", "CONTENT_LENGTH=4096", NULL };
	char *big = malloc(3000);
	memset(big, ' ', 2999);
	big[0] = '{';
	big[2997] = '}';
	big[2999] = '\0';
	run(&r, "POST", "/t/items", big, json); /* 2999 bytes > 2048 */
	expect_error(&r, 413, "payload_too_large");
	run(&r, "POST", "/t/items", NULL, announced); /* announced, not read */
	expect_error(&r, 413, "payload_too_large");
	big[2040] = '\0';
	big[2039] = '}';
	run(&r, "POST", "/t/items", big, json); /* under the limit: parsed */
	expect_error(&r, 400, "missing_field");
	free(big);
	(void)state;
}

static void test_auth_in_pipeline(void **state)
{
	struct resp r;
	char bearer[96], cookie[96];
	static const char *const remote[] = { "REMOTE_ADDR=127.0.0.2", NULL };
	run(&r, "GET", "/t/echo/1", NULL, remote);
	expect_error(&r, 401, "unauthorized");
	assert_non_null(strstr(r.head, "WWW-Authenticate: Bearer"));
	snprintf(bearer, sizeof bearer, "HTTP_AUTHORIZATION=Bearer %s", user_tok);
	const char *const with_bearer[] = { "REMOTE_ADDR=10.0.0.1", bearer, NULL };
	run(&r, "GET", "/t/echo/1", NULL, with_bearer);
	assert_int_equal(r.status, 200);
	assert_non_null(strstr(r.body, "\"who\":\"bob\""));
	run(&r, "GET", "/t/admin", NULL, with_bearer);
	expect_error(&r, 403, "forbidden");
	run(&r, "GET", "/metrics", NULL, with_bearer);
	expect_error(&r, 403, "forbidden");
	/* the health check needs nothing and reports the database */
	run(&r, "GET", "/health", NULL, remote);
	assert_int_equal(r.status, 503);
	assert_non_null(strstr(r.body, "\"db\":\"down\""));
	assert_non_null(strstr(r.body, "\"ok\":false"));
	/* CSRF on cookie and loopback authority */
	snprintf(cookie, sizeof cookie, "HTTP_COOKIE=mantis_token=%s", user_tok);
	const char *const cookie_form[] = { "REMOTE_ADDR=10.0.0.1", cookie, "CONTENT_TYPE=text/plain", NULL };
	run(&r, "POST", "/t/opt", "", cookie_form);
	expect_error(&r, 403, "csrf_rejected");
	const char *const cookie_xrw[] = { "REMOTE_ADDR=10.0.0.1", cookie, "HTTP_X_REQUESTED_WITH=XMLHttpRequest", NULL };
	run(&r, "POST", "/t/opt", "", cookie_xrw);
	assert_int_equal(r.status, 200);
	static const char *const loop_evil[] = { "HTTP_ORIGIN=http://evil.example", "CONTENT_TYPE=application/json", NULL };
	run(&r, "POST", "/t/items", "{\"name\":\"x\"}", loop_evil);
	expect_error(&r, 403, "csrf_rejected");
	const char *const bearer_evil[] = { bearer, "HTTP_ORIGIN=http://evil.example", "CONTENT_TYPE=application/json", NULL };
	run(&r, "POST", "/t/items", "{\"name\":\"x\"}", bearer_evil);
	assert_int_equal(r.status, 201);
	/* DNS rebinding: a Host outside AGENTTEST_ALLOWED_HOSTS is 421 before
	 * routing, authentication or any handler, even with a matching Origin */
	static const char *const rebound[] = { "HTTP_HOST=evil.example:8000", "HTTP_ORIGIN=http://evil.example:8000",
					      "CONTENT_TYPE=application/json", NULL };
	run(&r, "POST", "/t/items", "{\"name\":\"x\"}", rebound);
	expect_error(&r, 421, "misdirected_request");
	run(&r, "GET", "/health", NULL, rebound);
	expect_error(&r, 421, "misdirected_request");
	run(&r, "GET", "/no/such/route", NULL, rebound);
	expect_error(&r, 421, "misdirected_request");
	(void)state;
}

static void test_query_token_cookie(void **state)
{
	struct resp r;
	char uri[128];
	static const char *const https[] = { "REMOTE_ADDR=10.0.0.1", "HTTPS=on", "HTTP_SEC_FETCH_SITE=same-origin", NULL };
	static const char *const http[] = { "REMOTE_ADDR=10.0.0.1", "HTTP_SEC_FETCH_SITE=none", NULL };
	/* login CSRF: another site's link, an unknown origin, an existing session */
	static const char *const cross[] = { "REMOTE_ADDR=10.0.0.1", "HTTP_SEC_FETCH_SITE=cross-site", NULL };
	static const char *const nosite[] = { "REMOTE_ADDR=10.0.0.1", NULL };
	static const char *const session[] = { "REMOTE_ADDR=10.0.0.1", "HTTP_SEC_FETCH_SITE=same-origin",
					       "HTTP_COOKIE=mantis_token=", NULL };
	stop();
	start("Correct-Horse-Battery-42");
	snprintf(uri, sizeof uri, "/t/echo/1?token=Correct-Horse-Battery-42");
	run(&r, "GET", uri, NULL, https);
	assert_int_equal(r.status, 200);
	assert_non_null(strstr(r.head, "Set-Cookie: mantis_token=Correct-Horse-Battery-42; HttpOnly; SameSite=Strict; "
	                                "Path=/; Max-Age=2592000; Secure\r\n"));
	run(&r, "GET", uri, NULL, http);
	assert_non_null(strstr(r.head, "Max-Age=2592000\r\n"));
	run(&r, "GET", uri, NULL, cross);
	assert_int_equal(r.status, 200);
	assert_null(strstr(r.head, "Set-Cookie"));
	run(&r, "GET", uri, NULL, nosite);
	assert_int_equal(r.status, 200);
	assert_null(strstr(r.head, "Set-Cookie"));
	run(&r, "GET", uri, NULL, session);
	assert_int_equal(r.status, 200);
	assert_null(strstr(r.head, "Set-Cookie"));
	run(&r, "GET", "/t/echo/1?token=wrong", NULL, http);
	expect_error(&r, 401, "unauthorized");
	assert_null(strstr(r.head, "Set-Cookie"));
	/* auth required: loopback without a token is refused, except /metrics */
	run(&r, "GET", "/t/echo/1", NULL, NULL);
	expect_error(&r, 401, "unauthorized");
	run(&r, "GET", "/metrics", NULL, NULL);
	assert_int_equal(r.status, 200);
	stop();
	start(NULL);
	(void)state;
}

static void test_metrics_text(void **state)
{
	struct resp r;
	run(&r, "GET", "/health", NULL, NULL);
	run(&r, "GET", "/nope", NULL, NULL);
	prom_worker_restart(metrics);
	prom_db_reconnect(metrics);
	prom_db_reconnect(metrics);
	run(&r, "GET", "/metrics", NULL, NULL);
	assert_int_equal(r.status, 200);
	assert_non_null(strstr(r.head, "Content-Type: text/plain; version=0.0.4"));
	assert_non_null(strstr(r.body, "agenttest_http_requests_total{method=\"GET\",route=\"/health\",status=\"503\"} "));
	assert_non_null(strstr(r.body, "agenttest_http_requests_total{method=\"\",route=\"unmatched\",status=\"404\"} "));
	assert_non_null(strstr(r.body, "agenttest_http_request_duration_seconds_bucket{method=\"GET\",route=\"/health\",le=\"+Inf\"}"));
	assert_non_null(strstr(r.body, "agenttest_worker_restarts_total 1\n"));
	assert_non_null(strstr(r.body, "agenttest_db_reconnects_total 2\n"));
	(void)state;
}

/* json_list: a comma between elements only, ranks after the offset, the
 * tail on success; on a database error nothing of the list, only the error. */
static void test_json_list(void **state)
{
	struct resp r;
	run(&r, "GET", "/t/list?n=0", NULL, NULL);
	assert_int_equal(r.status, 200);
	assert_string_equal(r.body, "{\"items\":[]}");
	assert_non_null(strstr(r.head, "Content-Type: application/json"));
	run(&r, "GET", "/t/list?n=1", NULL, NULL);
	assert_string_equal(r.body, "{\"items\":[{\"rank\":1}]}");
	run(&r, "GET", "/t/list?n=3&offset=40", NULL, NULL);
	assert_int_equal(r.status, 200);
	assert_string_equal(r.body, "{\"items\":[{\"rank\":41},{\"rank\":42},{\"rank\":43}]}");
	char uri[64];
	snprintf(uri, sizeof uri, "/t/list?n=2&fail=%d", (int)DB_UNAVAILABLE);
	run(&r, "GET", uri, NULL, NULL);
	expect_error(&r, 503, "unavailable");
	assert_null(strstr(r.body, "items"));
	snprintf(uri, sizeof uri, "/t/list?n=2&fail=%d", (int)DB_ERROR);
	run(&r, "GET", uri, NULL, NULL);
	expect_error(&r, 500, "internal");
	assert_null(strstr(r.body, "rank"));
	(void)state;
}

static void test_malformed_params(void **state)
{
	struct resp r;
	struct buf out = BUF_INIT;
	char *no_method[] = { "REQUEST_URI=/health", NULL };
	struct fcgi_exchange x = { .envp = no_method, .read = mem_read, .io = NULL, .out = &out };
	app_handle(&app, &x);
	assert_int_equal(x.status, 400);
	char *bad_len[] = { "REQUEST_METHOD=POST", "REQUEST_URI=/t/items", "CONTENT_LENGTH=12x", NULL };
	x.envp = bad_len;
	app_handle(&app, &x);
	assert_int_equal(x.status, 400);
	/* more parameters than REQ_MAX_PARAMS: 400 before anything else */
	static char many_store[REQ_MAX_PARAMS + 8][32];
	char *many[REQ_MAX_PARAMS + 8];
	size_t k = 0;
	many[k++] = "REQUEST_METHOD=GET";
	many[k++] = "REQUEST_URI=/health";
	while (k < REQ_MAX_PARAMS + 6) {
		snprintf(many_store[k], sizeof many_store[k], "HTTP_X_%zu=1", k);
		many[k] = many_store[k];
		k++;
	}
	many[k] = NULL;
	x.envp = many;
	app_handle(&app, &x);
	assert_int_equal(x.status, 400);
	/* a URI longer than REQ_MAX_PATH */
	char *longuri = malloc(REQ_MAX_PATH + 32);
	memcpy(longuri, "REQUEST_URI=/", 13);
	memset(longuri + 13, 'a', REQ_MAX_PATH + 10);
	longuri[REQ_MAX_PATH + 23] = '\0';
	char *long_env[] = { "REQUEST_METHOD=GET", longuri, NULL };
	x.envp = long_env;
	app_handle(&app, &x);
	assert_int_equal(x.status, 400);
	free(longuri);
	/* a relative URI */
	char *rel[] = { "REQUEST_METHOD=GET", "REQUEST_URI=health", NULL };
	x.envp = rel;
	app_handle(&app, &x);
	assert_int_equal(x.status, 400);
	buf_free(&out);
	(void)r;
	(void)state;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_routing_errors),
		cmocka_unit_test(test_echo_and_request_id),
		cmocka_unit_test(test_json_bodies),
		cmocka_unit_test(test_error_messages_are_utf8),
		cmocka_unit_test(test_body_limit),
		cmocka_unit_test(test_auth_in_pipeline),
		cmocka_unit_test(test_query_token_cookie),
		cmocka_unit_test(test_metrics_text),
		cmocka_unit_test(test_malformed_params),
		cmocka_unit_test(test_json_list),
	};
	return cmocka_run_group_tests_name("app", tests, setup, teardown);
}

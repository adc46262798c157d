/* Authentication matrix (bearer, cookie, ?token=, MANTIS_AUTH_TOKEN, loopback
 * rule, required mode, roles), CSRF, and the credential parsers. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include <sodium.h>

#include "fcgi/app.h"

static unsigned char key[SECRET_BYTES];
static char user_tok[TOKEN_TEXT_LEN + 1], admin_tok[TOKEN_TEXT_LEN + 1], revoked_tok[TOKEN_TEXT_LEN + 1];
static int lookups;
static bool store_down;
static const char shared[] = "Correct-Horse-Battery-42";

/* The fake token store: two valid tokens. */
static enum db_status fake_lookup(void *ctx, const unsigned char hash[TOKEN_HASH_BYTES],
                                  struct tokstore_identity *who, bool *found)
{
	unsigned char h[TOKEN_HASH_BYTES];
	(void)ctx;
	lookups++;
	*found = false;
	if (store_down)
		return DB_UNAVAILABLE;
	token_hash(key, user_tok, TOKEN_TEXT_LEN, h);
	if (token_hash_equal(h, hash)) {
		*found = true;
		who->token_id = 1;
		who->user_id = 10;
		snprintf(who->name, sizeof who->name, "alice");
		who->role = TOKSTORE_ROLE_USER;
		return DB_OK;
	}
	token_hash(key, admin_tok, TOKEN_TEXT_LEN, h);
	if (token_hash_equal(h, hash)) {
		*found = true;
		who->token_id = 2;
		who->user_id = 11;
		snprintf(who->name, sizeof who->name, "root");
		who->role = TOKSTORE_ROLE_ADMIN;
	}
	return DB_OK;
}

struct reqspec {
	const char *method, *uri, *addr, *authz, *cookie, *origin, *host, *xrw, *ctype;
};

static struct arena a;

/* Build envp for spec into storage and parse it into r. */
static void make_req(const struct reqspec *s, struct fcgi_request *r, char **envp, char store[][512])
{
	int n = 0;
	const char *why;
#define ADD(name, val) do { if (val) { snprintf(store[n], 512, "%s=%s", name, val); envp[n] = store[n]; n++; } } while (0)
	ADD("REQUEST_METHOD", s->method ? s->method : "GET");
	ADD("REQUEST_URI", s->uri ? s->uri : "/x");
	ADD("REMOTE_ADDR", s->addr ? s->addr : "127.0.0.1");
	ADD("HTTP_AUTHORIZATION", s->authz);
	ADD("HTTP_COOKIE", s->cookie);
	ADD("HTTP_ORIGIN", s->origin);
	ADD("HTTP_HOST", s->host ? s->host : "localhost:8000");
	ADD("HTTP_X_REQUESTED_WITH", s->xrw);
	ADD("CONTENT_TYPE", s->ctype);
#undef ADD
	envp[n] = NULL;
	assert_int_equal(req_parse(r, envp, &why), REQ_OK);
	assert_true(req_query_parse(r, &a));
}

/* Run auth_check for spec. */
static enum auth_status check(const struct auth_config *cfg, const struct reqspec *s, enum fcgi_access acc,
                              struct fcgi_identity *who)
{
	struct fcgi_request r;
	char *envp[16];
	char store[16][512];
	const char *why = NULL;
	make_req(s, &r, envp, store);
	enum auth_status st = auth_check(cfg, &r, acc, fake_lookup, NULL, who, &why);
	if (st != AUTH_OK)
		assert_non_null(why);
	return st;
}

static int setup(void **state)
{
	(void)state;
	if (sodium_init() < 0)
		return 1;
	randombytes_buf(key, sizeof key);
	token_generate(user_tok);
	token_generate(admin_tok);
	token_generate(revoked_tok);
	arena_init(&a, 4096);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	arena_free(&a);
	return 0;
}

static void test_auto_mode(void **state)
{
	struct auth_config cfg;
	struct fcgi_identity who;
	char bearer[128], cookie[128], uri[128];
	auth_setup(&cfg, key, NULL, false);

	/* no credential: loopback is the local admin, anyone else 401 */
	assert_int_equal(check(&cfg, &(struct reqspec){ .addr = "127.0.0.1" }, ACCESS_ADMIN, &who), AUTH_OK);
	assert_int_equal(who.via, AUTH_VIA_LOOPBACK);
	assert_true(who.admin);
	assert_string_equal(who.name, "local");
	assert_int_equal(check(&cfg, &(struct reqspec){ .addr = "::1" }, ACCESS_USER, &who), AUTH_OK);
	assert_int_equal(check(&cfg, &(struct reqspec){ .addr = "127.0.0.2" }, ACCESS_USER, &who), AUTH_UNAUTHORIZED);
	assert_int_equal(check(&cfg, &(struct reqspec){ .addr = "10.0.0.1" }, ACCESS_USER, &who), AUTH_UNAUTHORIZED);
	assert_int_equal(check(&cfg, &(struct reqspec){ .addr = "" }, ACCESS_USER, &who), AUTH_UNAUTHORIZED);
	/* public routes never look at credentials */
	lookups = 0;
	assert_int_equal(check(&cfg, &(struct reqspec){ .addr = "10.0.0.1", .authz = "Bearer junk" }, ACCESS_PUBLIC, &who),
	                 AUTH_OK);
	assert_int_equal(lookups, 0);
	assert_false(who.authenticated);

	/* bearer, cookie, query from a remote client */
	snprintf(bearer, sizeof bearer, "Bearer %s", user_tok);
	assert_int_equal(check(&cfg, &(struct reqspec){ .addr = "10.0.0.1", .authz = bearer }, ACCESS_USER, &who), AUTH_OK);
	assert_int_equal(who.via, AUTH_VIA_BEARER);
	assert_int_equal(who.user_id, 10);
	assert_false(who.admin);
	assert_int_equal(check(&cfg, &(struct reqspec){ .addr = "10.0.0.1", .authz = bearer }, ACCESS_ADMIN, &who),
	                 AUTH_FORBIDDEN);
	snprintf(cookie, sizeof cookie, "theme=dark; mantis_token=%s; x=1", admin_tok);
	assert_int_equal(check(&cfg, &(struct reqspec){ .addr = "10.0.0.1", .cookie = cookie }, ACCESS_ADMIN, &who), AUTH_OK);
	assert_int_equal(who.via, AUTH_VIA_COOKIE);
	assert_true(who.admin);
	snprintf(uri, sizeof uri, "/x?a=1&token=%s", user_tok);
	assert_int_equal(check(&cfg, &(struct reqspec){ .addr = "10.0.0.1", .uri = uri }, ACCESS_USER, &who), AUTH_OK);
	assert_int_equal(who.via, AUTH_VIA_QUERY);

	/* a wrong credential is 401 even from loopback */
	snprintf(bearer, sizeof bearer, "Bearer %s", revoked_tok);
	assert_int_equal(check(&cfg, &(struct reqspec){ .authz = bearer }, ACCESS_USER, &who), AUTH_UNAUTHORIZED);
	assert_int_equal(check(&cfg, &(struct reqspec){ .cookie = "mantis_token=nope" }, ACCESS_USER, &who),
	                 AUTH_UNAUTHORIZED);
	assert_int_equal(check(&cfg, &(struct reqspec){ .uri = "/x?token=nope" }, ACCESS_USER, &who), AUTH_UNAUTHORIZED);
	assert_int_equal(check(&cfg, &(struct reqspec){ .authz = "Basic dXNlcjpwYXNz" }, ACCESS_USER, &who),
	                 AUTH_UNAUTHORIZED);
	assert_int_equal(check(&cfg, &(struct reqspec){ .authz = "Bearer " }, ACCESS_USER, &who), AUTH_UNAUTHORIZED);
	/* malformed tokens never reach the store */
	lookups = 0;
	assert_int_equal(check(&cfg, &(struct reqspec){ .authz = "Bearer at_short" }, ACCESS_USER, &who),
	                 AUTH_UNAUTHORIZED);
	assert_int_equal(lookups, 0);
	/* bearer wins over cookie and query */
	snprintf(bearer, sizeof bearer, "Bearer %s", user_tok);
	snprintf(cookie, sizeof cookie, "mantis_token=%s", admin_tok);
	assert_int_equal(check(&cfg, &(struct reqspec){ .authz = bearer, .cookie = cookie }, ACCESS_ADMIN, &who),
	                 AUTH_FORBIDDEN);
	/* store down: 503, not 401 */
	store_down = true;
	assert_int_equal(check(&cfg, &(struct reqspec){ .authz = bearer }, ACCESS_USER, &who), AUTH_UNAVAILABLE);
	store_down = false;
	(void)state;
}

static void test_required_mode(void **state)
{
	struct auth_config cfg;
	struct fcgi_identity who;
	char bearer[128];
	auth_setup(&cfg, key, NULL, true);
	assert_int_equal(check(&cfg, &(struct reqspec){ .addr = "127.0.0.1" }, ACCESS_USER, &who), AUTH_UNAUTHORIZED);
	/* /metrics-style routes still admit a local scraper */
	assert_int_equal(check(&cfg, &(struct reqspec){ .addr = "127.0.0.1" }, ACCESS_ADMIN_OR_LOOPBACK, &who), AUTH_OK);
	assert_int_equal(check(&cfg, &(struct reqspec){ .addr = "10.1.1.1" }, ACCESS_ADMIN_OR_LOOPBACK, &who),
	                 AUTH_UNAUTHORIZED);
	snprintf(bearer, sizeof bearer, "Bearer %s", user_tok);
	assert_int_equal(check(&cfg, &(struct reqspec){ .authz = bearer }, ACCESS_ADMIN_OR_LOOPBACK, &who), AUTH_FORBIDDEN);
	assert_int_equal(check(&cfg, &(struct reqspec){ .authz = bearer }, ACCESS_USER, &who), AUTH_OK);
	(void)state;
}

/* ACCESS_PUBLIC_ADMIN_VIEW (GET /health): always admitted; only an admin or
 * the loopback rule is recognised, anything else is anonymous. */
static void test_public_admin_view(void **state)
{
	struct auth_config cfg;
	struct fcgi_identity who;
	char bearer[128];
	const enum fcgi_access v = ACCESS_PUBLIC_ADMIN_VIEW;
	auth_setup(&cfg, key, NULL, true);
	assert_int_equal(check(&cfg, &(struct reqspec){ .addr = "127.0.0.1" }, v, &who), AUTH_OK);
	assert_true(who.admin); /* loopback, even with authentication required */
	assert_int_equal(who.via, AUTH_VIA_LOOPBACK);
	assert_int_equal(check(&cfg, &(struct reqspec){ .addr = "127.0.0.1", .host = "evil.example" }, v, &who), AUTH_OK);
	assert_false(who.admin); /* a rebound name is no loopback caller */
	assert_int_equal(check(&cfg, &(struct reqspec){ .addr = "10.0.0.1" }, v, &who), AUTH_OK);
	assert_false(who.admin);
	assert_false(who.authenticated);
	snprintf(bearer, sizeof bearer, "Bearer %s", admin_tok);
	assert_int_equal(check(&cfg, &(struct reqspec){ .addr = "10.0.0.1", .authz = bearer }, v, &who), AUTH_OK);
	assert_true(who.admin);
	snprintf(bearer, sizeof bearer, "Bearer %s", user_tok);
	assert_int_equal(check(&cfg, &(struct reqspec){ .addr = "10.0.0.1", .authz = bearer }, v, &who), AUTH_OK);
	assert_false(who.admin);
	assert_int_equal(who.via, AUTH_VIA_NONE);
	assert_int_equal(who.user_id, -1);
	snprintf(bearer, sizeof bearer, "Bearer %s", revoked_tok);
	assert_int_equal(check(&cfg, &(struct reqspec){ .addr = "127.0.0.1", .authz = bearer }, v, &who), AUTH_OK);
	assert_false(who.admin); /* a bad credential is not upgraded by loopback */
	assert_int_equal(check(&cfg, &(struct reqspec){ .addr = "10.0.0.1", .authz = "Basic x" }, v, &who), AUTH_OK);
	assert_false(who.admin);
	snprintf(bearer, sizeof bearer, "Bearer %s", admin_tok);
	store_down = true;
	assert_int_equal(check(&cfg, &(struct reqspec){ .addr = "10.0.0.1", .authz = bearer }, v, &who), AUTH_OK);
	assert_false(who.admin);
	store_down = false;
	(void)state;
}

static void test_shared_token(void **state)
{
	struct auth_config cfg;
	struct fcgi_identity who;
	char bearer[128], uri[128];
	auth_setup(&cfg, key, shared, false);
	assert_true(cfg.required);
	snprintf(bearer, sizeof bearer, "Bearer %s", shared);
	lookups = 0;
	assert_int_equal(check(&cfg, &(struct reqspec){ .addr = "10.0.0.9", .authz = bearer }, ACCESS_ADMIN, &who), AUTH_OK);
	assert_true(who.admin);
	assert_string_equal(who.name, "mantis-admin");
	assert_int_equal(who.user_id, -1);
	assert_int_equal(lookups, 0);
	snprintf(bearer, sizeof bearer, "Bearer %sx", shared);
	assert_int_equal(check(&cfg, &(struct reqspec){ .authz = bearer }, ACCESS_USER, &who), AUTH_UNAUTHORIZED);
	assert_int_equal(check(&cfg, &(struct reqspec){ .addr = "127.0.0.1" }, ACCESS_USER, &who), AUTH_UNAUTHORIZED);
	/* percent-encoded in the query */
	snprintf(uri, sizeof uri, "/x?token=Correct%%2DHorse-Battery-42");
	assert_int_equal(check(&cfg, &(struct reqspec){ .uri = uri }, ACCESS_ADMIN, &who), AUTH_OK);
	/* database tokens keep working next to the shared one */
	snprintf(bearer, sizeof bearer, "Bearer %s", admin_tok);
	assert_int_equal(check(&cfg, &(struct reqspec){ .authz = bearer }, ACCESS_ADMIN, &who), AUTH_OK);
	assert_int_equal(who.user_id, 11);
	(void)state;
}

/* CSRF verdict for a spec authenticated as via. */
static bool csrf(const struct reqspec *s, enum fcgi_auth_via via)
{
	struct fcgi_request r;
	char *envp[16];
	char store[16][512];
	struct fcgi_identity who = { .via = via, .authenticated = true };
	make_req(s, &r, envp, store);
	return auth_csrf_ok(&r, &who);
}

static void test_csrf(void **state)
{
	/* safe methods and explicit credentials pass */
	assert_true(csrf(&(struct reqspec){ .method = "GET", .origin = "http://evil" }, AUTH_VIA_COOKIE));
	assert_true(csrf(&(struct reqspec){ .method = "POST", .origin = "http://evil" }, AUTH_VIA_BEARER));
	assert_true(csrf(&(struct reqspec){ .method = "POST", .origin = "http://evil" }, AUTH_VIA_QUERY));
	/* Origin must equal http(s)://Host */
	for (int v = AUTH_VIA_COOKIE; v <= AUTH_VIA_LOOPBACK; v += AUTH_VIA_LOOPBACK - AUTH_VIA_COOKIE) {
		enum fcgi_auth_via via = (enum fcgi_auth_via)v;
		assert_true(csrf(&(struct reqspec){ .method = "POST", .origin = "http://localhost:8000" }, via));
		assert_true(csrf(&(struct reqspec){ .method = "DELETE", .origin = "https://localhost:8000" }, via));
		assert_true(csrf(&(struct reqspec){ .method = "PUT", .origin = "http://LOCALHOST:8000" }, via));
		assert_false(csrf(&(struct reqspec){ .method = "POST", .origin = "http://evil.example" }, via));
		assert_false(csrf(&(struct reqspec){ .method = "POST", .origin = "http://localhost:8001" }, via));
		assert_false(csrf(&(struct reqspec){ .method = "POST", .origin = "null" }, via));
		assert_false(csrf(&(struct reqspec){ .method = "PATCH", .origin = "ftp://localhost:8000" }, via));
		/* Origin wins over the other signals */
		assert_false(csrf(&(struct reqspec){ .method = "POST", .origin = "http://evil", .xrw = "XMLHttpRequest",
		                                     .ctype = "application/json" }, via));
		/* no Origin: X-Requested-With or a JSON body */
		assert_true(csrf(&(struct reqspec){ .method = "POST", .xrw = "xmlhttprequest" }, via));
		assert_true(csrf(&(struct reqspec){ .method = "POST", .ctype = "application/json; charset=utf-8" }, via));
		assert_false(csrf(&(struct reqspec){ .method = "POST", .ctype = "text/plain" }, via));
		assert_false(csrf(&(struct reqspec){ .method = "POST", .ctype = "application/x-www-form-urlencoded" }, via));
		assert_false(csrf(&(struct reqspec){ .method = "POST" }, via));
		assert_false(csrf(&(struct reqspec){ .method = "POST", .xrw = "fetch" }, via));
	}
	/* no Host at all: an Origin cannot match */
	struct fcgi_request r;
	char *envp[] = { "REQUEST_METHOD=POST", "REQUEST_URI=/x", "HTTP_ORIGIN=http://", NULL };
	const char *why;
	struct fcgi_identity who = { .via = AUTH_VIA_COOKIE };
	assert_int_equal(req_parse(&r, envp, &why), REQ_OK);
	assert_false(auth_csrf_ok(&r, &who));
	(void)state;
}

static void test_parsers(void **state)
{
	const char *v;
	size_t n;
	assert_true(req_cookie("a=1; mantis_token=abc; b=2", "mantis_token", &v, &n));
	assert_int_equal(n, 3);
	assert_memory_equal(v, "abc", 3);
	assert_true(req_cookie("mantis_token=\"q\"", "mantis_token", &v, &n));
	assert_int_equal(n, 1);
	assert_false(req_cookie("xmantis_token=abc", "mantis_token", &v, &n));
	assert_false(req_cookie("mantis_tokenx=abc", "mantis_token", &v, &n));
	assert_false(req_cookie("", "mantis_token", &v, &n));
	assert_false(req_cookie(NULL, "mantis_token", &v, &n));
	assert_true(req_cookie(";;  mantis_token=z  ", "mantis_token", &v, &n));
	assert_int_equal(n, 1);
	assert_int_equal(req_bearer("Bearer abc", &v, &n), 1);
	assert_int_equal(n, 3);
	assert_int_equal(req_bearer("bearer   abc  ", &v, &n), 1);
	assert_int_equal(n, 3);
	assert_int_equal(req_bearer(NULL, &v, &n), 0);
	assert_int_equal(req_bearer("Bearerabc", &v, &n), -1);
	assert_int_equal(req_bearer("Bear", &v, &n), -1);
	assert_int_equal(req_bearer("Token abc", &v, &n), -1);
	assert_true(auth_cookie_safe("at_abc-_", 8));
	assert_false(auth_cookie_safe("a;b", 3));
	assert_false(auth_cookie_safe("a b", 3));
	assert_false(auth_cookie_safe("", 0));
	assert_true(auth_is_loopback("127.0.0.1"));
	assert_true(auth_is_loopback("::1"));
	assert_false(auth_is_loopback("127.0.0.2"));
	assert_false(auth_is_loopback("::ffff:127.0.0.1"));
	assert_false(auth_is_loopback(NULL));
	(void)state;
}

/* DNS rebinding (issue 11): Host names, and the loopback rule only with one. */
static void test_hosts(void **state)
{
	(void)state;
	assert_true(hosts_allowed(NULL, "localhost:8000"));
	assert_true(hosts_allowed(NULL, "LOCALHOST"));
	assert_true(hosts_allowed(NULL, "localhost."));
	assert_true(hosts_allowed(NULL, "127.0.0.1:80"));
	assert_true(hosts_allowed(NULL, "[::1]:8000"));
	assert_true(hosts_allowed(NULL, "[::1]"));
	assert_false(hosts_allowed(NULL, "evil.example"));
	assert_false(hosts_allowed(NULL, "evil.example:8000"));
	assert_false(hosts_allowed(NULL, "localhost.evil.example"));
	assert_false(hosts_allowed(NULL, "127.0.0.1.nip.io"));
	assert_false(hosts_allowed(NULL, "localhost:80x"));
	assert_false(hosts_allowed(NULL, "localhost:"));
	assert_false(hosts_allowed(NULL, "[::1"));
	assert_false(hosts_allowed(NULL, "::1"));
	assert_false(hosts_allowed(NULL, ""));
	assert_false(hosts_allowed(NULL, NULL));
	assert_true(hosts_allowed("agenttest.example.org, localhost", "Agenttest.Example.Org:443"));
	assert_false(hosts_allowed("agenttest.example.org", "localhost"));
	assert_true(hosts_allowed("::1", "[::1]:1"));

	struct auth_config cfg;
	struct fcgi_identity who;
	auth_setup(&cfg, key, NULL, false);
	/* a rebound domain: loopback address, foreign Host: no local admin */
	assert_int_equal(check(&cfg, &(struct reqspec){ .addr = "127.0.0.1", .host = "evil.example" }, ACCESS_USER, &who),
	                 AUTH_UNAUTHORIZED);
	assert_int_equal(check(&cfg, &(struct reqspec){ .addr = "127.0.0.1", .host = "[::1]:8000" }, ACCESS_ADMIN, &who),
	                 AUTH_OK);
	cfg.hosts = "agenttest.example.org";
	assert_int_equal(check(&cfg, &(struct reqspec){ .addr = "127.0.0.1" }, ACCESS_USER, &who), AUTH_UNAUTHORIZED);
	assert_int_equal(check(&cfg, &(struct reqspec){ .addr = "127.0.0.1", .host = "agenttest.example.org" },
	                       ACCESS_USER, &who), AUTH_OK);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_auto_mode),
		cmocka_unit_test(test_required_mode),
		cmocka_unit_test(test_public_admin_view),
		cmocka_unit_test(test_shared_token),
		cmocka_unit_test(test_csrf),
		cmocka_unit_test(test_parsers),
		cmocka_unit_test(test_hosts),
	};
	return cmocka_run_group_tests_name("auth", tests, setup, teardown);
}

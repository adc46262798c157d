/* POST /api/logout through the real pipeline (no socket): the expiring
 * Set-Cookie with the attributes the cookie was set with (Secure only over
 * HTTPS), the CSRF rule applied whatever the request carries, and the route
 * staying usable without a valid credential. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <sodium.h>

#include "common/log.h"
#include "fcgi/app.h"
#include "fcgi/handlers/handlers.h"

static const struct fcgi_route routes[] = {
	{ HTTP_POST, "/api/logout", h_logout, ACCESS_PUBLIC, BODY_NONE },
};

static struct config cfg;
static struct fcgi_app app;
static struct prom *metrics;
static unsigned char key[SECRET_BYTES];

/* Token lookups: nothing is known (a logout never needs a valid token). */
static enum db_status no_lookup(void *ctx, const unsigned char hash[TOKEN_HASH_BYTES],
                                struct tokstore_identity *who, bool *found)
{
	(void)ctx;
	(void)hash;
	(void)who;
	*found = false;
	return DB_OK;
}

/* Start an app that requires authentication (MANTIS_AUTH_TOKEN set). */
static int setup(void **state)
{
	struct buf err = BUF_INIT;
	(void)state;
	if (sodium_init() < 0)
		return 1;
	randombytes_buf(key, sizeof key);
	log_set_level(LOG_LVL_ERROR);
	unsetenv("AGENTTEST_CONFIG");
	unsetenv("AGENTTEST_AUTH");
	setenv("MANTIS_AUTH_TOKEN", "Session-Test-Token-42", 1);
	if (!config_load(&cfg, "/dev/null", &err))
		return 1;
	metrics = prom_new(1);
	if (!metrics || !app_init(&app, &cfg, routes, 1, metrics, key, &err))
		return 1;
	app.lookup = no_lookup;
	buf_free(&err);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	app_free(&app);
	prom_free(metrics);
	config_free(&cfg);
	return 0;
}

/* Read nothing: the route takes no body. */
static ssize_t no_body(void *io, char *buf, size_t n)
{
	(void)io;
	(void)buf;
	(void)n;
	return 0;
}

/* POST /api/logout with the extra NAME=value parameters (NULL-ended); the
 * response head goes to head[cap]; returns the status. */
static int logout(const char *const *extra, char *head, size_t cap)
{
	char *envp[16];
	const char *base[] = { "REQUEST_METHOD=POST", "REQUEST_URI=/api/logout", "QUERY_STRING=",
	                       "HTTP_HOST=localhost:8000", "REMOTE_ADDR=127.0.0.2" };
	size_t n = 0;
	for (size_t i = 0; i < sizeof base / sizeof base[0]; i++)
		envp[n++] = (char *)(uintptr_t)base[i];
	for (const char *const *e = extra; *e && n < 15; e++)
		envp[n++] = (char *)(uintptr_t)*e;
	envp[n] = NULL;
	struct buf out = BUF_INIT;
	struct fcgi_exchange x = { .envp = envp, .read = no_body, .io = NULL, .out = &out };
	app_handle(&app, &x);
	snprintf(head, cap, "%s", buf_cstr(&out));
	buf_free(&out);
	return x.status;
}

static void test_expires_the_cookie(void **state)
{
	char head[4096];
	(void)state;
	const char *const extra[] = { "HTTP_X_REQUESTED_WITH=XMLHttpRequest", "HTTP_COOKIE=mantis_token=stale", NULL };
	assert_int_equal(logout(extra, head, sizeof head), 200);
	assert_non_null(strstr(head, "\r\nSet-Cookie: mantis_token=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0\r\n"));
	assert_null(strstr(head, "Secure"));
	assert_non_null(strstr(head, "{\"ok\":true}"));
}

static void test_secure_over_https(void **state)
{
	char head[4096];
	(void)state;
	const char *const extra[] = { "HTTPS=on", "HTTP_ORIGIN=https://localhost:8000", NULL };
	assert_int_equal(logout(extra, head, sizeof head), 200);
	assert_non_null(strstr(head, "Set-Cookie: mantis_token=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0; Secure\r\n"));
}

static void test_csrf(void **state)
{
	char head[4096];
	(void)state;
	const char *const foreign[] = { "HTTP_ORIGIN=http://evil.example", "CONTENT_TYPE=application/json",
	                                "HTTP_COOKIE=mantis_token=x", NULL };
	const char *const form[] = { "CONTENT_TYPE=application/x-www-form-urlencoded", NULL };
	const char *const bearer_only[] = { "HTTP_AUTHORIZATION=Bearer Session-Test-Token-42", NULL };
	const char *const *cases[] = { foreign, form, bearer_only };
	for (size_t i = 0; i < 3; i++) {
		assert_int_equal(logout(cases[i], head, sizeof head), 403);
		assert_non_null(strstr(head, "\"code\":\"csrf_rejected\""));
		assert_null(strstr(head, "Set-Cookie"));
	}
	const char *const json[] = { "CONTENT_TYPE=application/json", NULL };
	assert_int_equal(logout(json, head, sizeof head), 200);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_expires_the_cookie),
		cmocka_unit_test(test_secure_over_https),
		cmocka_unit_test(test_csrf),
	};
	return cmocka_run_group_tests_name("session", tests, setup, teardown);
}

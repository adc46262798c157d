/* Router: literal and parameter segments, decoding, specificity, 404, 405
 * with Allow, malformed paths, and table validation. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "fcgi/app.h"

static void h(struct fcgi_ctx *c) { (void)c; }

static const struct fcgi_route routes[] = {
	{ HTTP_GET, "/health", h, ACCESS_PUBLIC, BODY_NONE },
	{ HTTP_GET, "/api/agents", h, ACCESS_USER, BODY_NONE },
	{ HTTP_POST, "/api/agents", h, ACCESS_USER, BODY_JSON },
	{ HTTP_GET, "/api/agents/{id}", h, ACCESS_USER, BODY_NONE },
	{ HTTP_POST, "/api/agents/import", h, ACCESS_USER, BODY_JSON },
	{ HTTP_POST, "/api/agents/{id}/stop", h, ACCESS_USER, BODY_NONE },
	{ HTTP_GET, "/api/agents/{id}/iterations/{n}/metrics", h, ACCESS_USER, BODY_NONE },
	{ HTTP_DELETE, "/api/agents/{id}", h, ACCESS_ADMIN, BODY_NONE },
	{ HTTP_GET, "/", h, ACCESS_PUBLIC, BODY_NONE },
};
#define NROUTES (sizeof routes / sizeof routes[0])

static struct router *r;
static struct arena a;

static int setup(void **state)
{
	struct buf err = BUF_INIT;
	r = router_new(routes, NROUTES, &err);
	arena_init(&a, 1024);
	buf_free(&err);
	(void)state;
	return r == NULL;
}

static int teardown(void **state)
{
	router_free(r);
	arena_free(&a);
	(void)state;
	return 0;
}

/* Match m + path. */
static enum router_status match(enum http_method m, const char *path, struct route_match *out)
{
	return router_match(r, m, path, strlen(path), &a, out);
}

static void test_literal_and_params(void **state)
{
	struct route_match m;
	assert_int_equal(match(HTTP_GET, "/health", &m), ROUTER_FOUND);
	assert_int_equal(m.index, 0);
	assert_int_equal(m.nparams, 0);
	assert_int_equal(match(HTTP_GET, "/api/agents/abc123", &m), ROUTER_FOUND);
	assert_int_equal(m.index, 3);
	assert_int_equal(m.nparams, 1);
	assert_string_equal(m.params[0].name, "id");
	assert_string_equal(m.params[0].value, "abc123");
	assert_int_equal(match(HTTP_GET, "/api/agents/a1/iterations/7/metrics", &m), ROUTER_FOUND);
	assert_int_equal(m.nparams, 2);
	assert_string_equal(m.params[0].value, "a1");
	assert_string_equal(m.params[1].name, "n");
	assert_string_equal(m.params[1].value, "7");
	assert_int_equal(match(HTTP_GET, "/", &m), ROUTER_FOUND);
	assert_int_equal(m.index, 8);
	(void)state;
}

static void test_params_are_decoded_per_segment(void **state)
{
	struct route_match m;
	assert_int_equal(match(HTTP_GET, "/api/agents/a%2Fb%20c", &m), ROUTER_FOUND);
	assert_string_equal(m.params[0].value, "a/b c");
	assert_int_equal(match(HTTP_GET, "/api/agents/%zz", &m), ROUTER_BAD_PATH);
	assert_int_equal(match(HTTP_GET, "/api/agents/%00", &m), ROUTER_BAD_PATH);
	assert_int_equal(match(HTTP_GET, "/api/agents/..", &m), ROUTER_BAD_PATH);
	assert_int_equal(match(HTTP_GET, "/api/agents/%2e%2e", &m), ROUTER_BAD_PATH);
	assert_int_equal(match(HTTP_GET, "/api/./agents", &m), ROUTER_BAD_PATH);
	/* a literal segment must match as sent, not after decoding */
	assert_int_equal(match(HTTP_GET, "/heal%74h", &m), ROUTER_NOT_FOUND);
	(void)state;
}

static void test_specificity(void **state)
{
	struct route_match m;
	assert_int_equal(match(HTTP_POST, "/api/agents/import", &m), ROUTER_FOUND);
	assert_int_equal(m.index, 4);
	assert_int_equal(match(HTTP_GET, "/api/agents/import", &m), ROUTER_FOUND);
	assert_int_equal(m.index, 3); /* GET only exists as {id} */
	assert_string_equal(m.params[0].value, "import");
	(void)state;
}

static void test_not_found(void **state)
{
	struct route_match m;
	assert_int_equal(match(HTTP_GET, "/nope", &m), ROUTER_NOT_FOUND);
	assert_int_equal(match(HTTP_GET, "/health/", &m), ROUTER_NOT_FOUND);
	assert_int_equal(match(HTTP_GET, "//health", &m), ROUTER_NOT_FOUND);
	assert_int_equal(match(HTTP_GET, "/api/agents//stop", &m), ROUTER_NOT_FOUND);
	assert_int_equal(match(HTTP_GET, "/a/b/c/d/e/f/g/h/i/j/k/l/m/n/o/p/q/r", &m), ROUTER_NOT_FOUND);
	assert_int_equal(match(HTTP_GET, "", &m), ROUTER_BAD_PATH);
	assert_int_equal(match(HTTP_GET, "health", &m), ROUTER_BAD_PATH);
	(void)state;
}

static void test_method_not_allowed(void **state)
{
	struct route_match m;
	struct buf allow = BUF_INIT;
	assert_int_equal(match(HTTP_PUT, "/api/agents/x", &m), ROUTER_BAD_METHOD);
	router_allow_header(m.allow, &allow);
	assert_string_equal(buf_cstr(&allow), "GET, HEAD, DELETE");
	buf_reset(&allow);
	assert_int_equal(match(HTTP_DELETE, "/health", &m), ROUTER_BAD_METHOD);
	router_allow_header(m.allow, &allow);
	assert_string_equal(buf_cstr(&allow), "GET, HEAD");
	buf_reset(&allow);
	assert_int_equal(match(HTTP_OTHER, "/api/agents", &m), ROUTER_BAD_METHOD);
	router_allow_header(m.allow, &allow);
	assert_string_equal(buf_cstr(&allow), "GET, HEAD, POST");
	assert_int_equal(match(HTTP_HEAD, "/health", &m), ROUTER_FOUND);
	buf_free(&allow);
	(void)state;
}

static void test_table_validation(void **state)
{
	static const struct fcgi_route dup[] = {
		{ HTTP_GET, "/a/{x}", h, ACCESS_PUBLIC, BODY_NONE },
		{ HTTP_GET, "/a/{x}", h, ACCESS_PUBLIC, BODY_NONE },
	};
	static const struct fcgi_route bad[][1] = {
		{ { HTTP_GET, "a", h, ACCESS_PUBLIC, BODY_NONE } },
		{ { HTTP_GET, "/a//b", h, ACCESS_PUBLIC, BODY_NONE } },
		{ { HTTP_GET, "/a/{}", h, ACCESS_PUBLIC, BODY_NONE } },
		{ { HTTP_GET, "/a/{x", h, ACCESS_PUBLIC, BODY_NONE } },
		{ { HTTP_GET, "/a%20", h, ACCESS_PUBLIC, BODY_NONE } },
		{ { HTTP_GET, "/a", NULL, ACCESS_PUBLIC, BODY_NONE } },
		{ { HTTP_HEAD, "/a", h, ACCESS_PUBLIC, BODY_NONE } },
		{ { HTTP_GET, "/{a}/{b}/{c}/{d}/{e}/{f}/{g}/{h}/{i}", h, ACCESS_PUBLIC, BODY_NONE } },
	};
	struct buf err = BUF_INIT;
	assert_null(router_new(dup, 2, &err));
	assert_non_null(strstr(buf_cstr(&err), "duplicate route GET /a/{x}"));
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		buf_reset(&err);
		if (router_new(bad[i], 1, &err) != NULL)
			fail_msg("accepted route %s", bad[i][0].pattern);
		assert_true(err.len > 0);
	}
	/* the real table compiles */
	buf_reset(&err);
	struct router *real = router_new(fcgi_routes, fcgi_nroutes, &err);
	if (real == NULL)
		fail_msg("fcgi/routes.c: %s", buf_cstr(&err));
	router_free(real);
	buf_free(&err);
	(void)state;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_literal_and_params),
		cmocka_unit_test(test_params_are_decoded_per_segment),
		cmocka_unit_test(test_specificity),
		cmocka_unit_test(test_not_found),
		cmocka_unit_test(test_method_not_allowed),
		cmocka_unit_test(test_table_validation),
	};
	return cmocka_run_group_tests_name("router", tests, setup, teardown);
}

/*
 * test_egress.c: the egress proxy's pure parts (evaluator/runner/egress/):
 * the usage meter on SSE split at every byte and on plain JSON, the price
 * table's longest-prefix match and cost, the route and header allow-lists,
 * the upstream URL rule.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "evaluator/runner/egress/egress.h"

static const char SSE[] =
	"event: message_start\r\n"
	"data: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"usage\":{\"input_tokens\":1200,"
	"\"output_tokens\":1,\"cache_creation_input_tokens\":100,\"cache_read_input_tokens\":2000}}}\r\n\r\n"
	"event: content_block_delta\n"
	"data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"usage\"}}\n\n"
	"event: message_delta\n"
	"data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":345}}\n\n"
	"event: message_stop\n"
	"data: {\"type\":\"message_stop\"}\n\n";

static void check_usage(const struct egress_meter *m)
{
	assert_true(m->saw_usage);
	assert_int_equal(m->u.input, 1200);
	assert_int_equal(m->u.output, 345);
	assert_int_equal(m->u.cache_write, 100);
	assert_int_equal(m->u.cache_read, 2000);
}

static void test_sse_any_split(void **state)
{
	size_t n = strlen(SSE);
	for (size_t step = 1; step <= n; step = step < 8 ? step + 1 : step * 2) {
		struct egress_meter m;
		egress_meter_init(&m, true);
		for (size_t i = 0; i < n; i += step)
			egress_meter_feed(&m, SSE + i, i + step > n ? n - i : step);
		egress_meter_finish(&m);
		check_usage(&m);
		egress_meter_free(&m);
	}
}

static void test_sse_junk_and_no_usage(void **state)
{
	struct egress_meter m;
	egress_meter_init(&m, true);
	const char *junk = "data: {not json\n\ndata: [1,2]\n: comment\nevent: ping\ndata: {\"type\":\"ping\"}\n\n";
	egress_meter_feed(&m, junk, strlen(junk));
	egress_meter_finish(&m);
	assert_false(m.saw_usage);
	assert_int_equal(m.u.input + m.u.output, 0);
	egress_meter_free(&m);
}

static void test_json_body(void **state)
{
	const char *b = "{\"id\":\"m\",\"content\":[{\"type\":\"text\",\"text\":\"x\"}],\"usage\":{\"input_tokens\":1200,"
		"\"output_tokens\":345,\"cache_creation_input_tokens\":100,\"cache_read_input_tokens\":2000}}";
	struct egress_meter m;
	egress_meter_init(&m, false);
	egress_meter_feed(&m, b, 10);
	egress_meter_feed(&m, b + 10, strlen(b) - 10);
	egress_meter_finish(&m);
	check_usage(&m);
	egress_meter_free(&m);
}

static void test_prices(void **state)
{
	struct llm_prices p;
	llm_prices_default(&p);
	const struct llm_price *s = llm_price_for(&p, "claude-sonnet-4-6");
	assert_non_null(s);
	assert_string_equal(s->prefix, "claude-sonnet-4");
	assert_string_equal(llm_price_for(&p, "claude-opus-4-5-20251101")->prefix, "claude-opus-4-5");
	assert_string_equal(llm_price_for(&p, "claude-opus-4-1-20250805")->prefix, "claude-opus-4");
	assert_null(llm_price_for(&p, "gpt-4o"));
	assert_null(llm_price_for(&p, NULL));
	struct egress_usage u = { 1200, 345, 100, 2000 };
	/* (1200*3 + 345*15 + 100*3.75 + 2000*0.3) / 1e6 */
	assert_true(llm_price_cost(s, u.input, u.output, u.cache_write, u.cache_read) == 0.00975);
	assert_int_equal(egress_tokens(&u), 3645);
	llm_prices_free(&p);
}

static void test_routes(void **state)
{
	bool metered = false;
	assert_true(egress_route_allowed("POST", "/v1/messages", &metered) && metered);
	assert_true(egress_route_allowed("POST", "/v1/messages?beta=true", &metered) && metered);
	assert_true(egress_route_allowed("POST", "/v1/messages/count_tokens", &metered) && !metered);
	const char *bad[][2] = { { "GET", "/v1/messages" }, { "POST", "/v1/messages/" }, { "POST", "/v1/messagesx" },
		{ "POST", "/v1/messages?beta=false" }, { "POST", "/v1/messages/batches" }, { "POST", "/v1/files" },
		{ "POST", "/v1/messages/count_tokens/../../x" }, { "PUT", "/v1/messages" }, { "POST", "" } };
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		assert_false(egress_route_allowed(bad[i][0], bad[i][1], &metered));
	assert_true(egress_header_forwarded("anthropic-beta"));
	assert_true(egress_header_forwarded("x-stainless-retry-count"));
	const char *dropped[] = { "authorization", "x-api-key", "cookie", "host", "proxy-authorization",
		"anthropic-api-key", "forwarded", "x-forwarded-for" };
	for (size_t i = 0; i < sizeof dropped / sizeof dropped[0]; i++)
		assert_false(egress_header_forwarded(dropped[i]));
}

static void test_upstream_rule(void **state)
{
	assert_true(llm_upstream_ok("https://api.anthropic.com"));
	assert_true(llm_upstream_ok("http://127.0.0.1:8080"));
	assert_false(llm_upstream_ok("http://api.anthropic.com"));
	assert_false(llm_upstream_ok("http://127.0.0.1:"));
	assert_false(llm_upstream_ok("http://127.0.0.1.evil.example"));
	assert_false(llm_upstream_ok("https://"));
	assert_false(llm_upstream_ok("file:///etc/passwd"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sse_any_split),
		cmocka_unit_test(test_sse_junk_and_no_usage),
		cmocka_unit_test(test_json_body),
		cmocka_unit_test(test_prices),
		cmocka_unit_test(test_routes),
		cmocka_unit_test(test_upstream_rule),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * Unit tests of the runner's pure policy (evaluator/runner/policy.c):
 * log tails, finiteness, the byte-for-byte
 * comparison behind POST /runs/{id}/verify (metrics, equity, trades), JSON numbers, the bound on an
 * untrusted error object's text.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "evaluator/runner/runner.h"

static void test_tail(void **state)
{
	(void)state;
	struct buf b = BUF_INIT;
	policy_tail(&b, "abcdef", 6, 3);
	assert_string_equal(buf_cstr(&b), "def");
	buf_reset(&b);
	policy_tail(&b, "ab", 2, 10);
	assert_string_equal(buf_cstr(&b), "ab");
	buf_reset(&b);
	/* "x\xc3\xa9y": a cut inside é moves forward to the next character */
	policy_tail(&b, "x\xc3\xa9y", 4, 2);
	assert_string_equal(buf_cstr(&b), "y");
	buf_free(&b);
}

static void test_finite(void **state)
{
	(void)state;
	struct metrics m;
	memset(&m, 0, sizeof m);
	assert_true(policy_metrics_finite(&m));
	metrics_set(&m, MET_CAGR, INFINITY);
	assert_false(policy_metrics_finite(&m));
	metrics_set(&m, MET_CAGR, 1.0);
	metrics_set(&m, MET_SHARPE, NAN);
	assert_false(policy_metrics_finite(&m));
}

static void test_compare(void **state)
{
	(void)state;
	struct metrics a, b;
	memset(&a, 0, sizeof a);
	metrics_set(&a, MET_TOTAL_RETURN, 0.04);
	metrics_set(&a, MET_CAGR, 34.8);
	metrics_set(&a, MET_SCORE, 34.8);
	metrics_set(&a, MET_RUNTIME_S, 1);
	b = a;
	double ea[3] = { 1.0, 1.01, 1.02 }, eb[3] = { 1.0, 1.01, 1.02 };
	struct buf d = BUF_INIT;
	metrics_set(&b, MET_RUNTIME_S, 2); /* runtime is wall-clock: ignored */
	assert_true(policy_compare(&a, ea, 3, &b, eb, 3, &d));
	assert_int_equal(d.len, 0);
	eb[2] = nextafter(1.02, 2.0);
	assert_false(policy_compare(&a, ea, 3, &b, eb, 3, &d));
	assert_non_null(strstr(buf_cstr(&d), "\"step\":2"));
	buf_reset(&d);
	assert_false(policy_compare(&a, ea, 3, &b, eb, 2, &d));
	assert_non_null(strstr(buf_cstr(&d), "equity_length"));
	buf_reset(&d);
	metrics_set(&b, MET_SCORE, -0.0);
	metrics_set(&a, MET_SCORE, 0.0);
	assert_false(policy_compare(&a, ea, 3, &b, ea, 3, &d));
	assert_non_null(strstr(buf_cstr(&d), "\"name\":\"score\""));
	buf_reset(&d);
	b = a;
	b.present[MET_SORTINO] = 1; /* present vs null differs */
	assert_false(policy_compare(&a, ea, 3, &b, ea, 3, &d));
	assert_non_null(strstr(buf_cstr(&d), "sortino"));
	buf_free(&d);
}

/* Trades compare byte for byte; the first difference names what and where. */
static void test_compare_trades(void **state)
{
	(void)state;
	struct fill fa[2] = { { .bar = 0, .ts_ms = 1000, .quantity = 1, .price = 10, .fee = 0.001, .position = 1,
				.units = 0.1, .equity = 0.999 },
			      { .bar = 3, .ts_ms = 4000, .quantity = -1, .price = 11, .fee = 0.001, .position = 0,
				.units = 0, .equity = 1.08 } };
	struct fill fb[2];
	double pa[4] = { 1, 1, 1, 0 }, pb[4];
	memcpy(fb, fa, sizeof fa);
	memcpy(pb, pa, sizeof pa);
	struct rtrades a = { .has = true, .fills = fa, .n_fills = 2, .fills_total = 2, .positions = pa, .n = 4 };
	struct rtrades b = { .has = true, .fills = fb, .n_fills = 2, .fills_total = 2, .positions = pb, .n = 4 };
	struct rtrades none = { 0 };
	struct buf d = BUF_INIT;
	assert_true(policy_compare_trades(&a, &b, &d));
	assert_true(policy_compare_trades(&none, &none, &d));
	assert_int_equal(d.len, 0);
	assert_false(policy_compare_trades(&a, &none, &d));
	assert_string_equal(buf_cstr(&d), "{\"what\":\"trades\",\"expected\":true,\"actual\":false}");
	buf_reset(&d);
	b.n = 3;
	assert_false(policy_compare_trades(&a, &b, &d));
	assert_non_null(strstr(buf_cstr(&d), "\"what\":\"positions_length\""));
	buf_reset(&d);
	b.n = 4;
	pb[0] = 0.0; /* 0.0 against 1.0 at bar 0 */
	assert_false(policy_compare_trades(&a, &b, &d));
	assert_string_equal(buf_cstr(&d), "{\"what\":\"position\",\"bar\":0,\"expected\":1.0,\"actual\":0.0}");
	buf_reset(&d);
	pb[0] = 1;
	b.fills_total = 3;
	assert_false(policy_compare_trades(&a, &b, &d));
	assert_non_null(strstr(buf_cstr(&d), "\"what\":\"fills_total\""));
	buf_reset(&d);
	b.fills_total = 2;
	b.n_fills = 1;
	assert_false(policy_compare_trades(&a, &b, &d));
	assert_non_null(strstr(buf_cstr(&d), "\"what\":\"fills_length\""));
	buf_reset(&d);
	b.n_fills = 2;
	fb[1].equity = nextafter(1.08, 2.0); /* one ulp in the last field of the second fill */
	assert_false(policy_compare_trades(&a, &b, &d));
	assert_non_null(strstr(buf_cstr(&d), "\"what\":\"fill\",\"index\":1,\"bar\":3,\"field\":\"equity\""));
	buf_reset(&d);
	fb[1].equity = fa[1].equity;
	fb[0].ts_ms = 999;
	assert_false(policy_compare_trades(&a, &b, &d));
	assert_string_equal(buf_cstr(&d), "{\"what\":\"fill\",\"index\":0,\"bar\":0,\"field\":\"ts_ms\","
					  "\"expected\":1000,\"actual\":999}");
	buf_free(&d);
}

static void test_metrics_json_roundtrip(void **state)
{
	(void)state;
	struct metrics a, b;
	struct buf j = BUF_INIT;
	memset(&a, 0, sizeof a);
	metrics_set(&a, MET_TOTAL_RETURN, 0.040000000000000036);
	metrics_set(&a, MET_CAGR, 34.833745950177334);
	metrics_set(&a, MET_SHARPE, 1734.2307486352546);
	metrics_set(&a, MET_N_BARS, 5);
	metrics_set(&a, MET_SCORE, -1e-300);
	metrics_to_json(&a, &j);
	assert_true(policy_metrics_from_json(buf_cstr(&j), &b));
	assert_true(policy_compare(&a, NULL, 0, &b, NULL, 0, &j));
	assert_false(policy_metrics_from_json("[1]", &b));
	assert_false(policy_metrics_from_json("nonsense", &b));
	buf_free(&j);
}

static void test_json_double(void **state)
{
	(void)state;
	struct buf b = BUF_INIT;
	policy_json_double(&b, 0.1);
	buf_putc(&b, ' ');
	policy_json_double(&b, 34.833745950177334);
	buf_putc(&b, ' ');
	policy_json_double(&b, 1.0);
	buf_putc(&b, ' ');
	policy_json_double(&b, NAN);
	buf_putc(&b, ' ');
	policy_json_double(&b, 1e300);
	assert_string_equal(buf_cstr(&b), "0.1 34.83374595017733 1.0 null 1e+300");
	buf_free(&b);
}

/* A string of n copies of ch (caller frees). */
static char *rep(char ch, size_t n)
{
	char *s = malloc(n + 1);
	memset(s, ch, n);
	s[n] = '\0';
	return s;
}

static void test_cap_untrusted(void **state)
{
	(void)state;
	char *big = rep('x', 60000), *line = rep('t', 300);
	/* an é straddling the cut of the message */
	big[RUNNER_UNTRUSTED_FIELD_MAX - 1] = '\xc3';
	big[RUNNER_UNTRUSTED_FIELD_MAX] = '\xa9';
	json_object *o = json_object_new_object(), *ex = json_object_new_object(), *tb = json_object_new_array();
	json_object_object_add(o, "error", json_object_new_string(big));
	json_object_object_add(o, "code", json_object_new_string("strategy_error"));
	json_object_object_add(o, "log_tail", json_object_new_string(big));
	json_object_object_add(ex, "message", json_object_new_string(big));
	json_object_object_add(ex, "type", json_object_new_string(big));
	for (int i = 0; i < 40; i++)
		json_object_array_add(tb, json_object_new_string(i == 39 ? "last" : line));
	json_object_object_add(ex, "traceback", tb);
	json_object_object_add(o, "exception", ex);
	policy_cap_untrusted(o);
	json_object *v;
	assert_true(json_object_object_get_ex(o, "error", &v));
	assert_int_equal(json_object_get_string_len(v), RUNNER_UNTRUSTED_FIELD_MAX - 1); /* before the é */
	assert_true(json_object_object_get_ex(o, "log_tail", &v));
	assert_true(json_object_get_string_len(v) <= RUNNER_UNTRUSTED_FIELD_MAX);
	assert_true(json_object_object_get_ex(o, "code", &v));
	assert_string_equal(json_object_get_string(v), "strategy_error");
	assert_true(json_object_object_get_ex(o, "exception", &ex));
	assert_true(json_object_object_get_ex(ex, "type", &v));
	assert_int_equal(json_object_get_string_len(v), 128);
	assert_true(json_object_object_get_ex(ex, "traceback", &tb));
	size_t n = json_object_array_length(tb);
	assert_int_equal(n, 4);   /* "last" and three 300-byte lines fit in 1024 with newlines (908), four do not */
	assert_string_equal(json_object_get_string(json_object_array_get_idx(tb, n - 1)), "last");
	assert_true(strlen(json_object_to_json_string(o)) < 5 * 1024);
	json_object_put(o);
	policy_cap_untrusted(NULL);   /* left alone */
	free(big);
	free(line);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tail),
		cmocka_unit_test(test_finite),
		cmocka_unit_test(test_compare),
		cmocka_unit_test(test_compare_trades),
		cmocka_unit_test(test_metrics_json_roundtrip),
		cmocka_unit_test(test_json_double),
		cmocka_unit_test(test_cap_untrusted),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

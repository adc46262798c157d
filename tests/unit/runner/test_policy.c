/*
 * Unit tests of the runner's pure policy (evaluator/runner/policy.c): run id
 * syntax, verdict-to-code mapping, log tails, finiteness, the byte-for-byte
 * comparison behind POST /runs/{id}/verify, JSON numbers.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "evaluator/runner/runner.h"

static void test_uuid(void **state)
{
	(void)state;
	assert_true(policy_is_uuid("0f8fad5b-d9cb-469f-a165-70867728950e"));
	assert_false(policy_is_uuid("0F8FAD5B-d9cb-469f-a165-70867728950e"));
	assert_false(policy_is_uuid("0f8fad5b-d9cb-469f-a165-70867728950"));
	assert_false(policy_is_uuid("0f8fad5bxd9cb-469f-a165-70867728950e"));
	assert_false(policy_is_uuid("0f8fad5b-d9cb-469f-a165-70867728950e'"));
	assert_false(policy_is_uuid(""));
	assert_false(policy_is_uuid(NULL));
}

static void test_verdict_codes(void **state)
{
	(void)state;
	assert_string_equal(policy_code_for_verdict("timeout"), "timeout");
	assert_string_equal(policy_code_for_verdict("memory_limit"), "memory_limit");
	assert_string_equal(policy_code_for_verdict("forbidden_syscall"), "forbidden_syscall");
	assert_string_equal(policy_code_for_verdict("output_limit"), "output_limit");
	assert_string_equal(policy_code_for_verdict("signal"), "crashed");
	assert_string_equal(policy_code_for_verdict("nonsense"), "internal");
	assert_string_equal(policy_code_for_verdict(NULL), "internal");
}

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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_uuid),
		cmocka_unit_test(test_verdict_codes),
		cmocka_unit_test(test_tail),
		cmocka_unit_test(test_finite),
		cmocka_unit_test(test_compare),
		cmocka_unit_test(test_metrics_json_roundtrip),
		cmocka_unit_test(test_json_double),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

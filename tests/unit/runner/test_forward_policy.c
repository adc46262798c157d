/*
 * Unit tests of the forward-score policy (evaluator/runner/forward_policy.c)
 * and of stream_days_bars (drive/stream_eval.c), which turns the days of a
 * fresh evaluation into the same bar count a forward score used.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "evaluator/runner/drive/stream.h"
#include "evaluator/runner/forward.h"

static void test_final_days(void **state)
{
	(void)state;
	assert_true(forward_final_days(ch_lookup("ETH-1H-BINARY"), 0) == 7.0);
	assert_true(forward_final_days(ch_lookup("ETH-LBFGS"), 0) == 10.0);
	assert_true(forward_final_days(ch_lookup("MULTI-BREAKOUT"), 0) == 14.0);
	assert_true(forward_final_days(NULL, 0) == 14.0);   /* unknown: the longest */
	/* every challenge of the table has a period */
	for (size_t i = 0; i < ch_count(); i++)
		assert_true(forward_final_days(ch_at(i), 0) >= 7.0);
	/* the override is minutes, for every challenge */
	assert_true(forward_final_days(ch_lookup("ETH-1H-BINARY"), 600) == 600.0 / 1440.0);
	assert_true(forward_final_days(ch_lookup("MULTI-BREAKOUT"), 1440) == 1.0);
}

static void test_state(void **state)
{
	(void)state;
	double d = forward_final_days(NULL, 600);
	assert_int_equal(forward_state(599, 60000, d), FWD_PROVISIONAL);
	assert_int_equal(forward_state(600, 60000, d), FWD_FINAL);   /* exactly the period: final */
	assert_int_equal(forward_state(601, 60000, d), FWD_FINAL);
	assert_int_equal(forward_state(7 * 1440 - 1, 60000, 7), FWD_PROVISIONAL);
	assert_int_equal(forward_state(7 * 1440, 60000, 7), FWD_FINAL);
	assert_int_equal(forward_state(7 * 24, 3600000, 7), FWD_FINAL);   /* hourly bars */
	assert_int_equal(forward_state(1000000, 0, 7), FWD_PROVISIONAL);  /* no interval: never final */
	assert_string_equal(forward_state_name(FWD_FINAL), "final");
	assert_string_equal(forward_state_name(FWD_PROVISIONAL), "provisional");
}

static void test_bars_after(void **state)
{
	(void)state;
	const int64_t ts[] = { 0, 60000, 120000, 180000, 240000 };
	assert_int_equal(forward_bars_after(ts, 5, -1), 5);
	assert_int_equal(forward_bars_after(ts, 5, 0), 4);        /* the cutoff bar itself is not forward */
	assert_int_equal(forward_bars_after(ts, 5, 119999), 3);
	assert_int_equal(forward_bars_after(ts, 5, 120000), 2);
	assert_int_equal(forward_bars_after(ts, 5, 240000), 0);
	assert_int_equal(forward_bars_after(ts, 5, 1 << 30), 0);
	assert_int_equal(forward_bars_after(ts, 0, 0), 0);
	/* against a linear count on a gapped series */
	int64_t g[200];
	for (int i = 0; i < 200; i++)
		g[i] = (int64_t)i * 60000 + (i >= 100 ? 600000 : 0);
	for (int64_t c = -60000; c < 200 * 60000 + 700000; c += 30000) {
		size_t want = 0;
		for (int i = 0; i < 200; i++)
			want += g[i] > c;
		assert_int_equal(forward_bars_after(g, 200, c), want);
	}
}

static void test_primary(void **state)
{
	(void)state;
	const char *name;
	double v;
	json_object *r = json_tokener_parse("{\"challenge\":\"x\",\"mean_auc\":0.625,\"windows\":[]}");
	assert_true(policy_primary_metric(r, &name, &v));
	assert_string_equal(name, "mean_auc");
	assert_true(v == 0.625);
	json_object_put(r);
	r = json_tokener_parse("{\"direct_log_loss\":null}");
	assert_false(policy_primary_metric(r, &name, &v));   /* NaN is written as null */
	assert_string_equal(name, "direct_log_loss");
	json_object_put(r);
	r = json_tokener_parse("{\"mean_spearman\":\"0.1\"}");
	assert_false(policy_primary_metric(r, &name, &v));
	json_object_put(r);
	r = json_tokener_parse("{\"other\":1}");
	assert_false(policy_primary_metric(r, &name, &v));
	assert_null(name);
	json_object_put(r);
	assert_false(policy_primary_metric(NULL, &name, &v));
}

static void test_days_bars(void **state)
{
	(void)state;
	/* k/1440 days of minutes give k bars for every k a fresh evaluation may ask */
	for (size_t k = 1; k <= 100000; k++)
		assert_int_equal(stream_days_bars((double)k / 1440.0, 1440.0), k);
	/* and the value read back from 17 significant digits */
	for (size_t k = 1; k <= 5000; k++) {
		char t[40];
		snprintf(t, sizeof t, "%.17g", (double)k / 1440.0);
		assert_int_equal(stream_days_bars(atof(t), 1440.0), k);
		snprintf(t, sizeof t, "%.15g", (double)k / 1440.0);   /* what CAST(DOUBLE AS CHAR) may give */
		assert_int_equal(stream_days_bars(atof(t), 1440.0), k);
	}
	assert_int_equal(stream_days_bars(0.5, 1440.0), 720);
	assert_int_equal(stream_days_bars(0.9999 / 1440.0, 1440.0), 0);   /* under one bar */
	assert_int_equal(stream_days_bars(0, 1440.0), 0);
	assert_int_equal(stream_days_bars(-1, 1440.0), 0);
	assert_int_equal(stream_days_bars(NAN, 1440.0), 0);
	assert_int_equal(stream_days_bars(20, 1440.0), 28800);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_final_days), cmocka_unit_test(test_state), cmocka_unit_test(test_bars_after),
		cmocka_unit_test(test_primary), cmocka_unit_test(test_days_bars),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

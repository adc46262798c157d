/* Positions engine (evaluator/engine.c): next-bar execution, fees, clamp, wipe-out. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <math.h>
#include <cmocka.h>

#include "evaluator/engine.h"

static void test_next_bar_execution(void **s)
{
	(void)s;
	/* long decided at bar 1 earns only bar 2's return */
	double p[] = { 100, 110, 121, 121 };
	double w[] = { 0, 1, 0, 1 };
	double E[4];
	struct engine_cfg c = { .fee_bps = 0, .max_leverage = 1 };
	struct engine_report r;
	assert_int_equal(engine_run(&c, p, w, 4, E, &r), EV_OK);
	assert_true(E[0] == 1.0);
	assert_true(E[1] == 1.0);          /* w[0] = 0 held over bar 1 */
	assert_true(E[2] == 1.0 * (1 + (121.0 / 110 - 1)));
	assert_true(E[3] == E[2]);         /* w[2] = 0; w[3] never executed */
	assert_true(r.pos.turnover == 2.0); /* 0->1, 1->0 */
	assert_true(r.pos.average_exposure == 1.0 / 3.0);
	assert_int_equal(r.pos.liquidation_events, 0);
}

static void test_fees(void **s)
{
	(void)s;
	double p[] = { 100, 100, 100 };
	double w[] = { 1, -1, -1 };
	double E[3];
	struct engine_cfg c = { .fee_bps = 10, .max_leverage = 1 };
	struct engine_report r;
	assert_int_equal(engine_run(&c, p, w, 3, E, &r), EV_OK);
	assert_true(E[1] == 1.0 - 0.001);
	assert_true(E[2] == E[1] * (1.0 - 0.002));
	assert_true(r.pos.turnover == 3.0);
	assert_true(fabs(r.pos.fees_paid - (0.001 + E[1] * 0.002)) < 1e-15);
	/* a short earns when the price falls */
	double p2[] = { 100, 90 };
	double w2[] = { -1, 0 };
	c.fee_bps = 0;
	assert_int_equal(engine_run(&c, p2, w2, 2, E, &r), EV_OK);
	assert_true(fabs(E[1] - 1.1) < 1e-15);
}

static void test_leverage_clamp(void **s)
{
	(void)s;
	double p[] = { 100, 110, 99 };
	double w[] = { 5, -7, 0.5 };
	double E[3];
	struct engine_cfg c = { .fee_bps = 0, .max_leverage = 2 };
	struct engine_report r;
	assert_int_equal(engine_run(&c, p, w, 3, E, &r), EV_OK);
	assert_int_equal(r.clamped, 2);
	assert_true(w[0] == 2 && w[1] == -2 && w[2] == 0.5);
	assert_true(fabs(E[1] - 1.2) < 1e-15);
	assert_true(fabs(E[2] - 1.2 * (1 + -2 * (99.0 / 110 - 1))) < 1e-14);
	char msg[128];
	struct engine_cfg bad = { .fee_bps = -1, .max_leverage = 1 };
	assert_false(engine_cfg_valid(&bad, msg, sizeof msg));
	bad.fee_bps = 10;
	bad.max_leverage = 0;
	assert_false(engine_cfg_valid(&bad, msg, sizeof msg));
	bad.max_leverage = NAN;
	assert_false(engine_cfg_valid(&bad, msg, sizeof msg));
	bad.max_leverage = 3;
	assert_true(engine_cfg_valid(&bad, msg, sizeof msg));
}

static void test_bad_positions(void **s)
{
	(void)s;
	double p[] = { 1, 2, 3 };
	double w[] = { 0, NAN, 0 };
	double E[3];
	struct engine_cfg c = { .fee_bps = 0, .max_leverage = 1 };
	struct engine_report r;
	assert_int_equal(engine_run(&c, p, w, 3, E, &r), EV_BAD_OUTPUT);
	assert_int_equal(r.bad_index, 1);
	w[1] = INFINITY;
	assert_int_equal(engine_run(&c, p, w, 3, E, &r), EV_BAD_OUTPUT);
	assert_int_equal(r.bad_index, 1);
}

static void test_wipe_out_and_gaps(void **s)
{
	(void)s;
	double p[] = { 100, 40, 50, 60 };
	double w[] = { 2, 2, 2, 2 };
	double E[4];
	struct engine_cfg c = { .fee_bps = 0, .max_leverage = 2 };
	struct engine_report r;
	assert_int_equal(engine_run(&c, p, w, 4, E, &r), EV_OK);
	assert_true(E[1] == 0 && E[2] == 0 && E[3] == 0);
	assert_int_equal(r.pos.liquidation_events, 1);
	/* NaN prices: held through the gap, return measured from the last price */
	double g[] = { NAN, 100, NAN, 110 };
	double w2[] = { 1, 1, 1, 1 };
	c.max_leverage = 1;
	assert_int_equal(engine_run(&c, g, w2, 4, E, &r), EV_OK);
	assert_true(E[1] == 1.0 && E[2] == 1.0);
	assert_true(fabs(E[3] - 1.1) < 1e-15);
	/* one bar and zero bars */
	assert_int_equal(engine_run(&c, g, w2, 1, E, &r), EV_OK);
	assert_true(E[0] == 1.0);
	assert_int_equal(engine_run(&c, g, w2, 0, E, &r), EV_OK);
}

/* engine_step from a mid-curve start equals engine_run over the same bars, bit for bit
 * (what paper trading relies on), and its state carries fees and turnover. */
static void test_step_equals_run(void **state)
{
	(void)state;
	double p[] = { 100, 101.5, 99.25, 102, 102.5, 98, 97.5, 101 };
	double w[] = { 0.5, -1, 1, 0.25, 0, 1, -0.5, 0 };
	enum { N = sizeof p / sizeof p[0], S = 2 };
	struct engine_cfg c = { .fee_bps = 7.5, .max_leverage = 1 };
	struct engine_report r;
	double E[N], trade;
	assert_int_equal(engine_run(&c, p + S, w + S, N - S, E, &r), EV_OK);
	struct engine_state st;
	engine_state_init(&st, p[S]);
	for (size_t t = S + 1; t < N; t++) {
		double e = engine_step(&c, &st, w[t - 1], p[t], &trade);
		assert_memory_equal(&e, &E[t - S], sizeof e);
		assert_true(trade == fabs(w[t - 1] - (t - 1 > S ? w[t - 2] : 0)));
	}
	assert_memory_equal(&st.fees, &r.pos.fees_paid, sizeof st.fees);
	assert_memory_equal(&st.turnover, &r.pos.turnover, sizeof st.turnover);
	assert_int_equal(st.steps, N - S - 1);
	/* a wiped account stays at 0 and trades no more */
	c.max_leverage = 100;
	engine_state_init(&st, 100);
	assert_true(engine_step(&c, &st, 50, 97, &trade) == 0.0 && st.wiped);
	assert_true(engine_step(&c, &st, 1, 98, &trade) == 0.0 && trade == 0.0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_next_bar_execution),
		cmocka_unit_test(test_fees),
		cmocka_unit_test(test_leverage_clamp),
		cmocka_unit_test(test_bad_positions),
		cmocka_unit_test(test_wipe_out_and_gaps),
		cmocka_unit_test(test_step_equals_run),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

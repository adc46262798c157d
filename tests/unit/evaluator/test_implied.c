/* Implied exposure of simulate curves (evaluator/implied.c, issue 11 item 1):
 * golden values pinned bit for bit, the forged "e *= 1.0009" curve refused,
 * explained curves recomputed to themselves. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <math.h>
#include <cmocka.h>

#include "evaluator/implied.h"

static const double P[] = { 100, 101, 100, 100, 102, 99 };

static void test_buy_and_hold_golden(void **s)
{
	(void)s;
	double E[] = { 1, 1.01, 1.0, 1.0, 1.02, 0.99 }, w[6], q[6];
	static const double gw[] = { 0, 1, 1, 0, 1, 1 };
	static const double gq[] = { 0x1p+0, 0x1.028f5c28f5c29p+0, 0x1p+0, 0x1p+0, 0x1.051eb851eb852p+0,
				     0x1.fae147ae147aep-1 };
	struct implied_report rep;
	assert_int_equal(implied_equity(P, E, 6, 1.0, w, q, &rep), 0);
	assert_int_equal(rep.unexplained, 0);
	assert_true(rep.max_abs_w == 1.0);
	assert_memory_equal(w, gw, sizeof gw);
	assert_memory_equal(q, gq, sizeof gq);
}

static void test_more_than_leverage_refused(void **s)
{
	(void)s;
	/* bar 4: +2.04 % while the asset moved +2 % with L = 1 */
	double E[] = { 1, 1.005, 0.99, 0.98, 1.0, 0.97 }, w[6], q[6];
	struct implied_report rep;
	assert_int_equal(implied_equity(P, E, 6, 1.0, w, q, &rep), -1);
	assert_int_equal(rep.unexplained, 1);
	assert_int_equal(rep.first_bad, 4);
	assert_true(rep.growth == 0x1.4e5e0a72f054p-6);
	assert_true(rep.ret == 0x1.47ae147ae148p-6);
	assert_true(w[1] == 0x1.fffffffffff38p-2);  /* half long over bar 1 */
	assert_true(w[3] == 0.0);                   /* a loss on a flat bar is a cost */
	assert_true(q[5] == 0x1.f070fbeb9e493p-1);  /* bar 4 capped at L·r */
	/* the same curve is explained at twice the leverage */
	assert_int_equal(implied_equity(P, E, 6, 2.0, NULL, NULL, &rep), 0);
}

static void test_forged_growth_refused(void **s)
{
	(void)s;
	/* the red team's six lines: e *= 1.0009 whatever the prices */
	enum { N = 5000 };
	static double p[N], E[N], q[N];
	uint64_t x = 88172645463325252ULL;
	p[0] = 100;
	E[0] = 1;
	for (size_t t = 1; t < N; t++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		double u = (double)(x >> 11) / 9007199254740992.0 - 0.5;
		p[t] = p[t - 1] * (1 + 0.002 * u);   /* |r| <= 0.1 %, 1-minute-like */
		E[t] = E[t - 1] * 1.0009;
	}
	struct implied_report rep;
	assert_int_equal(implied_equity(p, E, N, 1.0, NULL, q, &rep), -1);
	assert_true(rep.unexplained > N / 4);
	assert_true(rep.growth > rep.ret);
	/* the recomputed curve cannot beat holding the asset at full leverage
	 * on every bar in its favour */
	double best = 1;
	for (size_t t = 1; t < N; t++)
		best *= 1 + fabs(p[t] / p[t - 1] - 1);
	assert_true(q[N - 1] <= best * (1 + 1e-9));
	assert_true(q[N - 1] < E[N - 1] / 2);           /* 1.0009^5000 is about 90 */
}

static void test_explained_curve_recomputes_to_itself(void **s)
{
	(void)s;
	/* a strategy half long, then short, with fees: explained, Q = E to rounding */
	enum { N = 2000 };
	static double p[N], E[N], q[N];
	uint64_t x = 42;
	p[0] = 50;
	E[0] = 1;
	for (size_t t = 1; t < N; t++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		double u = (double)(x >> 11) / 9007199254740992.0 - 0.5;
		p[t] = p[t - 1] * (1 + 0.01 * u);
		double wt = t < N / 2 ? 0.5 : -1.0, r = p[t] / p[t - 1] - 1;
		E[t] = E[t - 1] * (1 + wt * r - (t == N / 2 ? 0.0015 : 0.0));
	}
	struct implied_report rep;
	assert_int_equal(implied_equity(p, E, N, 1.0, NULL, q, &rep), 0);
	for (size_t t = 0; t < N; t++)
		assert_true(fabs(q[t] / E[t] - 1) < 1e-12);
	assert_true(fabs(rep.max_abs_w - 1.0) < 1e-9);
}

static void test_flat_prices_and_edges(void **s)
{
	(void)s;
	double p[] = { 10, 10, 0, 5 }, E[] = { 1, 1, 1, 1.0000000000001 }, q[4];
	struct implied_report rep;
	/* no move, no gain: explained (the last gain is within IMPLIED_TOL) */
	assert_int_equal(implied_equity(p, E, 4, 1.0, NULL, q, &rep), 0);
	assert_true(q[3] == 1.0);
	double E2[] = { 1, 1.001, 1.001, 1.001 };
	assert_int_equal(implied_equity(p, E2, 4, 1.0, NULL, NULL, &rep), -1);
	assert_int_equal(rep.first_bad, 1);
	assert_int_equal(implied_equity(p, E2, 0, 1.0, NULL, NULL, &rep), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_buy_and_hold_golden),
		cmocka_unit_test(test_more_than_leverage_refused),
		cmocka_unit_test(test_forged_growth_refused),
		cmocka_unit_test(test_explained_curve_recomputes_to_itself),
		cmocka_unit_test(test_flat_prices_and_edges),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

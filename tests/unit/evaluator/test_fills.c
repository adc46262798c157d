/* The fills of a positions run (evaluator/fills.c): golden fills pinned bit
 * for bit; the replayed curve equals engine_run's bit for bit; the fees of
 * the fills sum (in bar order) to the engine's fees_paid bit for bit; the
 * per-bar positions replayed through engine_step give the curve back; the
 * P&L of the positions minus the fees adds up to the final equity; the
 * store is bounded; no fill after a liquidation. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <math.h>
#include <cmocka.h>

#include "evaluator/fills.h"

#define N 8
static const double P[N] = { 100, 101, NAN, 99.5, 103, 102, 104.25, 104.25 };
static const int64_t TS[N] = { 0, 60000, 120000, 180000, 240000, 300000, 360000, 420000 };
static const struct engine_cfg CFG = { .fee_bps = 10, .max_leverage = 1.5 };

/* engine_run's clamped exposures and curve for the scenario above. */
static void scenario(double w[N], double eq[N], struct engine_report *rep)
{
	static const double w0[N] = { 0.5, 0.5, -1, -1, 0, 2, 2, 1 };
	memcpy(w, w0, sizeof w0);
	assert_int_equal(engine_run(&CFG, P, w, N, eq, rep), EV_OK);
}

static void test_golden(void **s)
{
	(void)s;
	/* bar, ts, quantity, price, fee, position, units, equity: the gap at bar 2
	 * trades at bar 1's close, bar 5's 2x is clamped to 1.5, bar 7's decision
	 * is never executed */
	static const struct fill g[] = {
		{ 0, 0, 0x1.47ae147ae147bp-8, 0x1.9p+6, 0x1.0624dd2f1a9fcp-11, 0x1p-1, 0x1.47ae147ae147bp-8,
		  0x1.ffbe76c8b4396p-1 },
		{ 2, 120000, -0x1.e8d7e973a41a7p-7, 0x1.94p+6, 0x1.8afc47e49b1fap-10, -0x1p+0, -0x1.45e5464d1811bp-7,
		  0x1.00c42a66dbd73p+0 },
		{ 4, 240000, 0x1.38716dc4639d5p-7, 0x1.9cp+6, 0x1.0173fe49c2b8ep-10, 0x0p+0, 0x0p+0,
		  0x1.f655d2a8eb6fcp-1 },
		{ 5, 300000, 0x1.d8c93ebd19d29p-7, 0x1.98p+6, 0x1.81cb20c3442cep-10, 0x1.8p+0, 0x1.d8c93ebd19d29p-7,
		  0x1.f594ed1889cdbp-1 },
	};
	static const double gpos[N] = { 0.5, 0.5, -1, -1, 0, 1.5, 1.5, 1.5 };
	double w[N], eq[N], pos[N], eq2[N];
	struct fill f[N];
	struct engine_report rep;
	scenario(w, eq, &rep);
	struct fills_out o = { .fills = f, .max = N, .positions = pos, .equity = eq2 };
	fills_compute(&CFG, P, TS, w, N, &o);
	assert_int_equal(o.total, 4);
	assert_int_equal(o.stored, 4);
	assert_memory_equal(f, g, sizeof g);
	assert_memory_equal(pos, gpos, sizeof gpos);
	assert_memory_equal(eq2, eq, sizeof eq);   /* the stored curve, bit for bit */
	assert_true(eq[N - 1] == 0x1.031a002697dbp+0);
	double fees = 0;
	for (size_t i = 0; i < o.stored; i++)
		fees += f[i].fee;
	assert_true(fees == rep.pos.fees_paid);   /* bit for bit: same terms, same order */
	assert_true(o.fees == rep.pos.fees_paid);
}

/* The stored per-bar positions and the prices alone give the curve back, and
 * the P&L of each bar minus the fills' fees adds up to the final equity. */
static void test_reproduce(void **s)
{
	(void)s;
	double w[N], eq[N], pos[N], eq2[N], re[N];
	struct fill f[N];
	struct engine_report rep;
	scenario(w, eq, &rep);
	struct fills_out o = { .fills = f, .max = N, .positions = pos, .equity = eq2 };
	fills_compute(&CFG, P, TS, w, N, &o);
	struct engine_state st;
	double trade, pnl = 0, last = P[0];
	engine_state_init(&st, P[0]);
	re[0] = 1;
	for (size_t t = 1; t < N; t++) {
		if (!isnan(P[t])) {
			pnl += re[t - 1] * pos[t - 1] * (P[t] / last - 1);
			last = P[t];
		}
		re[t] = engine_step(&CFG, &st, pos[t - 1], P[t], &trade);
	}
	assert_memory_equal(re, eq, sizeof eq);
	double fees = 0;
	for (size_t i = 0; i < o.stored; i++)
		fees += f[i].fee;
	/* a sum of N terms of size ~1 against a product: within N ulps of 1 */
	assert_true(fabs(1 + pnl - fees - eq[N - 1]) <= N * 0x1p-52);
	/* cash + units * price is the equity right after each fill */
	for (size_t i = 0; i < o.stored; i++) {
		double cash = f[i].equity - f[i].units * f[i].price;
		assert_true(fabs(cash + f[i].units * f[i].price - f[i].equity) <= 0x1p-52);
	}
}

/* Only max records are kept; total still counts them all. */
static void test_bounded(void **s)
{
	(void)s;
	double w[N], eq[N], pos[N], eq2[N];
	struct fill f[2];
	struct engine_report rep;
	scenario(w, eq, &rep);
	struct fills_out o = { .fills = f, .max = 2, .positions = pos, .equity = eq2 };
	fills_compute(&CFG, P, TS, w, N, &o);
	assert_int_equal(o.stored, 2);
	assert_int_equal(o.total, 4);
	assert_int_equal(f[1].bar, 2);
	assert_true(o.fees == rep.pos.fees_paid);
}

/* A 3x short into a 50% rally wipes the account: one fill, then flat at 0. */
static void test_liquidation(void **s)
{
	(void)s;
	const double p[5] = { 10, 15, 20, 10, 5 };
	double w[5] = { -3, 1, 1, 1, 1 }, eq[5], pos[5], eq2[5];
	struct fill f[5];
	struct engine_report rep;
	struct engine_cfg cfg = { .fee_bps = 0, .max_leverage = 3 };
	assert_int_equal(engine_run(&cfg, p, w, 5, eq, &rep), EV_OK);
	struct fills_out o = { .fills = f, .max = 5, .positions = pos, .equity = eq2 };
	fills_compute(&cfg, p, NULL, w, 5, &o);
	assert_int_equal(o.total, 1);
	assert_true(f[0].quantity == -0.3 && f[0].ts_ms == 0);
	assert_memory_equal(eq2, eq, sizeof eq);
	static const double gpos[5] = { -3, 0, 0, 0, 0 };
	assert_memory_equal(pos, gpos, sizeof gpos);
	fills_compute(&cfg, p, NULL, w, 0, &o);   /* no bars: nothing written */
	assert_int_equal(o.total, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_golden),
		cmocka_unit_test(test_reproduce),
		cmocka_unit_test(test_bounded),
		cmocka_unit_test(test_liquidation),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

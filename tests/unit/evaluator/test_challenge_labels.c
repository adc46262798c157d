/* Challenge labels and breakout detection (evaluator/challenges/ch_labels.c,
 * ch_breakout.c): hand-computed cases, and the O(T) deque detector against a
 * brute-force O(T*L) one on random walks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "evaluator/challenges/ch_internal.h"

static void binary_labels_hand(void **st)
{
	(void)st;
	double p[] = { 10, 10, 9, 11, 8, 12, 7, 13 };
	int32_t l[8];
	assert_int_equal(ch_binary_labels(p, 8, 2, CH_MODE_MANTIS, l), 6);
	int32_t want[] = { 0, 1, 0, 1, 0, 1 };
	assert_memory_equal(l, want, sizeof want);
	assert_int_equal(ch_binary_labels(p, 2, 2, CH_MODE_MANTIS, l), 0);
	p[3] = NAN;
	ch_binary_labels(p, 8, 2, CH_MODE_STRICT, l);
	assert_int_equal(l[1], -1);
	assert_int_equal(l[3], -1);
	ch_binary_labels(p, 8, 2, CH_MODE_MANTIS, l);
	assert_int_equal(l[1], 0);     /* NaN comparison is false */
}

static void rolling_std_matches_two_pass(void **st)
{
	(void)st;
	double x[50], out[50];
	for (int i = 0; i < 50; i++)
		x[i] = sin(i * 0.7) * 1e-3;
	size_t n = ch_rolling_std(x, 50, 10, CH_MODE_MANTIS, out);
	assert_int_equal(n, 41);
	for (size_t i = 0; i < n; i++) {
		double m = 0, v = 0;
		for (int k = 0; k < 10; k++)
			m += x[i + k];
		m /= 10;
		for (int k = 0; k < 10; k++)
			v += (x[i + k] - m) * (x[i + k] - m);
		assert_true(fabs(out[i] - sqrt(v / 9)) < 1e-15);
	}
	x[20] = NAN;
	n = ch_rolling_std(x, 50, 10, CH_MODE_STRICT, out);
	assert_true(isnan(out[11]) && isnan(out[20]) && !isnan(out[21]) && !isnan(out[10]));
	ch_rolling_std(x, 50, 10, CH_MODE_MANTIS, out);
	assert_true(isnan(out[40]));    /* numpy's cumsum carries the NaN forward */
}

/* A price path that touches +sigma first, one -sigma first, one neither. */
static void hitfirst_first_touch(void **st)
{
	(void)st;
	enum { T = 40, H = 5, VW = 10 };
	double p[T];
	int32_t l[T];
	for (int i = 0; i < T; i++)
		p[i] = 100.0 * exp(0.01 * ((i % 2) ? 1 : -1));
	size_t n = ch_hitfirst_labels(p, T, H, VW, CH_MODE_MANTIS, l);
	assert_int_equal(n, T - H);
	for (int t = 0; t < VW - 1; t++)
		assert_int_equal(l[t], -1);
	for (size_t t = VW - 1; t < n; t++)
		assert_true(l[t] >= 0 && l[t] <= 2);
	/* a series shorter than the window: all invalid */
	n = ch_hitfirst_labels(p, 12, H, VW, CH_MODE_MANTIS, l);
	for (size_t t = 0; t < n; t++)
		assert_int_equal(l[t], -1);
}

static void lbfgs_valid_range(void **st)
{
	(void)st;
	enum { T = 5000 };
	double *p = calloc(T, sizeof *p);
	int32_t *b = calloc(T, sizeof *b);
	int64_t *t = calloc(T, sizeof *t);
	uint64_t s = 88172645463325252ull;
	double x = 0;
	for (int i = 0; i < T; i++) {
		s ^= s << 13; s ^= s >> 7; s ^= s << 17;
		x += ((double)(s % 2001) - 1000.0) * 2e-6;
		p[i] = 100.0 * exp(x);
	}
	size_t k = ch_lbfgs_labels(p, T, 60, 1000, CH_MODE_MANTIS, b, t);
	assert_int_equal(k, T - 60 - (60 + 999));
	assert_int_equal(t[0], 60 + 999);
	for (size_t i = 0; i < k; i++)
		assert_true(b[i] >= 0 && b[i] <= 4);
	free(p);
	free(b);
	free(t);
}

/* Brute-force detector (the original's O(T*L) windows) for one column. */
static size_t brute(const double *x, size_t T, size_t L, size_t maxp, size_t asset,
    struct ch_event *out)
{
	size_t n = 0;
	bool ph = false, pl = false;
	int64_t ht = 0, lt = 0;
	double hc = 0, hr = 0, lc = 0, lr = 0;
	for (size_t t = L; t < T; t++) {
		double hi = -INFINITY, lo = INFINITY, p = x[t];
		for (size_t k = t - L; k < t; k++) {
			hi = x[k] > hi ? x[k] : hi;
			lo = x[k] < lo ? x[k] : lo;
		}
		if (ph) {
			if ((int64_t)t - ht > (int64_t)maxp) ph = false;
			else if (p >= hc) { out[n++] = (struct ch_event){ ht, (int64_t)t, (int32_t)asset, 1, 1, 0 }; ph = false; }
			else if (p <= hr) { out[n++] = (struct ch_event){ ht, (int64_t)t, (int32_t)asset, 1, 0, 0 }; ph = false; }
		}
		if (pl) {
			if ((int64_t)t - lt > (int64_t)maxp) pl = false;
			else if (p <= lc) { out[n++] = (struct ch_event){ lt, (int64_t)t, (int32_t)asset, -1, 1, 0 }; pl = false; }
			else if (p >= lr) { out[n++] = (struct ch_event){ lt, (int64_t)t, (int32_t)asset, -1, 0, 0 }; pl = false; }
		}
		double w = hi - lo, bd = w * 25.0 / 100.0;
		bool wide = w >= p * 1.0 / 100.0;
		if (p > hi && wide && !ph) { ph = true; ht = (int64_t)t; hc = p + bd; hr = p - bd; }
		else if (p < lo && wide && !pl) { pl = true; lt = (int64_t)t; lc = p - bd; lr = p + bd; }
	}
	return n;
}

static void breakout_deque_equals_brute_force(void **st)
{
	(void)st;
	enum { T = 6000, L = 300, A = 3 };
	double *cols[A];
	uint64_t s = 1234567;
	for (int a = 0; a < A; a++) {
		double x = 0;
		cols[a] = calloc(T, sizeof(double));
		for (int i = 0; i < T; i++) {
			s ^= s << 13; s ^= s >> 7; s ^= s << 17;
			x += ((double)(s % 2001) - 1000.0) * 4e-6;
			cols[a][i] = 100.0 * exp(x);
		}
	}
	struct ch_event *ev = NULL;
	size_t n = ch_breakout_detect((const double *const *)cols, A, T, L, 25.0, 1.0, 500,
	    CH_MODE_MANTIS, &ev);
	assert_true(n > 10);
	struct ch_event *bf = calloc(3 * T, sizeof *bf);
	size_t m = 0;
	for (int a = 0; a < A; a++)
		m += brute(cols[a], T, L, 500, (size_t)a, bf + m);
	assert_int_equal(n, m);
	/* same multiset; ev is sorted by resolution, then asset, then high first */
	for (size_t i = 0; i < n; i++) {
		bool found = false;
		for (size_t k = 0; k < m && !found; k++)
			found = memcmp(&ev[i], &bf[k], sizeof ev[i]) == 0;
		assert_true(found);
		if (i > 0)
			assert_true(ev[i - 1].resolution_t <= ev[i].resolution_t);
	}
	free(ev);
	free(bf);
	for (int a = 0; a < A; a++)
		free(cols[a]);
}

static void breakout_gap_modes(void **st)
{
	(void)st;
	enum { T = 1000, L = 400 };
	double x[T];
	for (int i = 0; i < T; i++)
		x[i] = 100 + ((i % 2) ? 1.0 : -1.0);
	for (int i = 500; i < T; i++)
		x[i] = i < 510 ? 102.2 : 102.6;
	x[500] = 102.0;
	x[300] = NAN;   /* a gap inside the range of bar 500 */
	const double *c[1] = { x };
	struct ch_event *ev = NULL;
	/* mantis: NaN in the range makes it NaN (numpy max): no break at 500 */
	size_t n = ch_breakout_detect(c, 1, T, L, 25.0, 1.0, 43200, CH_MODE_MANTIS, &ev);
	for (size_t i = 0; i < n; i++)
		assert_true(ev[i].trigger_t != 500);
	free(ev);
	/* strict: the gap is skipped, the break and its continuation are found */
	n = ch_breakout_detect(c, 1, T, L, 25.0, 1.0, 43200, CH_MODE_STRICT, &ev);
	assert_int_equal(n, 1);
	assert_int_equal(ev[0].trigger_t, 500);
	assert_int_equal(ev[0].resolution_t, 510);
	assert_int_equal(ev[0].label, 1);
	free(ev);
}

static void xsec_returns_and_median_labels(void **st)
{
	(void)st;
	double a[] = { 1, 2, 4 }, b[] = { 1, 1, 1 }, c[] = { 2, 0, 6 };
	const double *cols[3] = { a, b, c };
	double ret[6];
	unsigned char v[2];
	assert_int_equal(ch_xsec_returns(cols, 3, 3, 1, ret, v), 2);
	assert_true(ret[0] == 1.0 && ret[1] == 0.0 && isnan(ret[2]));
	assert_false(v[0]);
	int32_t lab[6];
	ch_xsec_labels(cols, 3, 3, 1, lab, v);
	/* row 0: returns 1, 0, NaN -> median 0.5 -> 1, 0, -1 */
	assert_int_equal(lab[0], 1);
	assert_int_equal(lab[1], 0);
	assert_int_equal(lab[2], -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(binary_labels_hand),
		cmocka_unit_test(rolling_std_matches_two_pass),
		cmocka_unit_test(hitfirst_first_touch),
		cmocka_unit_test(lbfgs_valid_range),
		cmocka_unit_test(breakout_deque_equals_brute_force),
		cmocka_unit_test(breakout_gap_modes),
		cmocka_unit_test(xsec_returns_and_median_labels),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

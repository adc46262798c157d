/* Challenge metrics and numeric primitives (evaluator/challenges/ch_metrics.c,
 * ch_numeric.c, ch_result.c): known values, ties, edge cases. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdlib.h>
#include <cmocka.h>

#include "evaluator/challenges/ch_internal.h"

/* |a - b| <= eps (cmocka 1.1 has no double assertion). */
#define assert_double_equal(a, b, eps) do { \
		double a_ = (a), b_ = (b); \
		if (!(fabs(a_ - b_) <= (eps))) \
			fail_msg("%.17g != %.17g", a_, b_); \
	} while (0)

static void auc_known_values(void **st)
{
	(void)st;
	double s[] = { 0.1, 0.4, 0.35, 0.8 };
	unsigned char y[] = { 0, 0, 1, 1 };
	/* sklearn's docstring example */
	assert_double_equal(ch_roc_auc(s, y, 4), 0.75, 1e-15);
	double t[] = { 0.5, 0.5, 0.5, 0.5 };
	assert_double_equal(ch_roc_auc(t, y, 4), 0.5, 0);
	double u[] = { 0.1, 0.2, 0.2, 0.9 };
	unsigned char v[] = { 0, 1, 0, 1 };
	/* pairs (0.2+,0.1-)=1 (0.2+,0.2-)=.5 (0.9+,*)=2 -> 3.5/4 */
	assert_double_equal(ch_roc_auc(u, v, 4), 0.875, 1e-15);
	unsigned char one[] = { 1, 1, 1, 1 };
	assert_true(isnan(ch_roc_auc(s, one, 4)));
}

/* The AUC equals the Mann-Whitney statistic on random tied data. */
static void auc_equals_mann_whitney(void **st)
{
	(void)st;
	enum { N = 600 };
	double s[N];
	unsigned char y[N];
	srand(7);
	for (int i = 0; i < N; i++) {
		s[i] = (double)(rand() % 20);
		y[i] = (unsigned char)(rand() % 2);
	}
	double num = 0, np_ = 0, nn = 0;
	for (int i = 0; i < N; i++) {
		np_ += y[i];
		nn += !y[i];
		for (int k = 0; k < N; k++)
			if (y[i] && !y[k])
				num += s[i] > s[k] ? 1.0 : (s[i] == s[k] ? 0.5 : 0.0);
	}
	assert_double_equal(ch_roc_auc(s, y, N), num / (np_ * nn), 1e-12);
	float f[N];
	for (int i = 0; i < N; i++)
		f[i] = (float)s[i];
	assert_double_equal(ch_auc_f32(f, y, N, true), 1.0 - num / (np_ * nn), 1e-12);
}

static void spearman_cases(void **st)
{
	(void)st;
	double x[] = { 1, 2, 3, 4, 5 }, y[] = { 5, 6, 7, 8, 7 };
	/* ranks y: 1 2 3.5 5 3.5 -> rho = 0.8207826816681233 (scipy) */
	assert_double_equal(ch_spearman(x, y, 5), 0.8207826816681233, 1e-15);
	double r[] = { 5, 4, 3, 2, 1 };
	/* scipy gives -0.9999999999999999 here too (corrcoef rounding) */
	assert_double_equal(ch_spearman(x, r, 5), -0.9999999999999999, 0);
	double c[] = { 2, 2, 2, 2, 2 };
	assert_true(isnan(ch_spearman(x, c, 5)));
	assert_true(isnan(ch_spearman(x, y, 1)));
}

static void balanced_accuracy_cases(void **st)
{
	(void)st;
	int32_t y[] = { 0, 0, 1, 1, 1, 4 }, p[] = { 0, 1, 1, 1, 0, 2 };
	/* recalls: class0 1/2, class1 2/3, class4 0 -> mean over present classes */
	assert_double_equal(ch_balanced_accuracy(y, p, 6, 5), (0.5 + 2.0 / 3.0 + 0.0) / 3.0, 1e-15);
	assert_double_equal(ch_balanced_accuracy(y, p, 0, 5), 0.0, 0);
}

static void log_loss_clipping(void **st)
{
	(void)st;
	float pr[] = { 0.5f, 0.25f, 0.25f, 0.0f, 1.0f, 0.0f };
	int32_t y[] = { 0, 0 };
	/* row 2: p_true 0 -> clipped to float32 eps */
	double want = (-log(0.5) - log((double)1.1920928955078125e-07)) / 2.0;
	assert_double_equal(ch_log_loss3(pr, y, 2), want, 1e-15);
}

static void logit_and_slope(void **st)
{
	(void)st;
	assert_true(ch_logit32(0.5f) == 0.0f);
	assert_true(ch_logit32(1.0f) == 0.0f);      /* +Inf -> 0 */
	assert_true(ch_logit32(NAN) == 0.0f);
	assert_true(ch_logit32(0.0f) < -27.0f);     /* 1e-12 */
	double s[] = { 1, 2, 3, 4 };
	unsigned char y[] = { 0, 0, 1, 1 }, z[] = { 1, 1, 0, 0 };
	assert_int_equal(ch_logit_slope_sign(s, y, 4), 1);
	assert_int_equal(ch_logit_slope_sign(s, z, 4), -1);
	unsigned char w[] = { 1, 1, 1, 1 };
	assert_int_equal(ch_logit_slope_sign(s, w, 4), 0);
}

static void sums_and_means(void **st)
{
	(void)st;
	double x[300];
	for (int i = 0; i < 300; i++)
		x[i] = 0.1 * i;
	/* pairwise summation: exact for these, sum 0.1 * 44850 within rounding */
	assert_double_equal(ch_np_sum(x, 300), 4485.0, 1e-9);
	assert_double_equal(ch_np_sum(x, 0), 0.0, 0);
	double n[] = { 1, NAN, 3 };
	assert_double_equal(ch_nanmean(n, 3), 2.0, 0);
	double a[] = { NAN, NAN };
	assert_true(isnan(ch_nanmean(a, 2)));
	double f[] = { INFINITY, 1, 3 };
	assert_double_equal(ch_mean_finite(f, 3), 2.0, 0);
}

static void searchsorted_unsorted_like_numpy(void **st)
{
	(void)st;
	int64_t s[] = { 1, 3, 5, 7 };
	assert_int_equal(ch_searchsorted_left(s, 4, 5), 2);
	assert_int_equal(ch_searchsorted_left(s, 4, 0), 0);
	assert_int_equal(ch_searchsorted_left(s, 4, 9), 4);
	/* unsorted: numpy probes mid=2 (9 >= 6 -> hi=2), mid=1 (2 < 6 -> lo=2) */
	int64_t u[] = { 8, 2, 9, 1, 3 };
	assert_int_equal(ch_searchsorted_left(u, 5, 6), 2);
}

static void grid_modes(void **st)
{
	(void)st;
	struct ch_span *w = NULL;
	size_t n = ch_grid(560, 4000, 9000, 5000, CH_MODE_MANTIS, 0, &w);
	assert_int_equal(n, 3);
	assert_int_equal(w[1].start, 4560);
	assert_false(w[1].in_holdout);   /* straddles the boundary: dev */
	assert_int_equal(w[2].start, 8560);
	assert_int_equal(w[2].end, 9000);
	assert_true(w[2].in_holdout);
	free(w);
	n = ch_grid(560, 4000, 9000, 5000, CH_MODE_STRICT, 200, &w);
	assert_int_equal(n, 3);           /* [560,4560) [4560,5000) [5000,9000) */
	assert_int_equal(w[1].end, 5000);
	assert_int_equal(w[2].start, 5000);
	assert_true(w[2].in_holdout);
	free(w);
	n = ch_grid(560, 4000, 4700, 0, CH_MODE_STRICT, 200, &w);
	assert_int_equal(n, 1);           /* the 140-sample tail is dropped */
	free(w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(auc_known_values),
		cmocka_unit_test(auc_equals_mann_whitney),
		cmocka_unit_test(spearman_cases),
		cmocka_unit_test(balanced_accuracy_cases),
		cmocka_unit_test(log_loss_clipping),
		cmocka_unit_test(logit_and_slope),
		cmocka_unit_test(sums_and_means),
		cmocka_unit_test(searchsorted_unsorted_like_numpy),
		cmocka_unit_test(grid_modes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

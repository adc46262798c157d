/*
 * ch_metrics: the metric primitives, each equal to the library call the
 * original makes (sklearn roc_auc_score, log_loss of sklearn 1.7, balanced
 * accuracy over present classes, scipy spearmanr) with the same floating
 * point operations in the same order, so mantis results match bit for bit.
 * Sorting makes every metric O(n log n).
 */
#include <float.h>
#include <math.h>
#include <stdlib.h>

#include "xalloc.h"
#include "evaluator/challenges/ch_internal.h"

struct ch_sy {
	double s;
	unsigned char y;
};

/* Descending by score. */
static int ch_cmp_sy_desc(const void *a, const void *b)
{
	double x = ((const struct ch_sy *)a)->s, y = ((const struct ch_sy *)b)->s;
	return (x < y) - (x > y);
}

/*
 * Area under sklearn's ROC curve of n (score, label) pairs already sorted by
 * descending score: one point per distinct score (cumulative false and true
 * positives), collinear interior points dropped (drop_intermediate), (0,0)
 * prepended, rates divided by the totals, trapezoids summed pairwise.
 */
static double ch_auc_sorted(const struct ch_sy *v, size_t n)
{
	double *fp = xcalloc(n + 1, sizeof *fp), *tp = xcalloc(n + 1, sizeof *tp);
	double *area = NULL, r = NAN;
	size_t k = 0, m = 0;
	double cf = 0, ct = 0;

	for (size_t i = 0; i < n; i++) {
		if (v[i].y)
			ct += 1;
		else
			cf += 1;
		if (i + 1 == n || v[i + 1].s != v[i].s) {
			fp[k] = cf;
			tp[k] = ct;
			k++;
		}
	}
	if (cf == 0 || ct == 0)
		goto out;
	/* Keep point i if the second difference of fps or tps is non-zero. */
	if (k > 2) {
		size_t w = 1;
		for (size_t i = 1; i + 1 < k; i++) {
			double d2f = (fp[i + 1] - fp[i]) - (fp[i] - fp[i - 1]);
			double d2t = (tp[i + 1] - tp[i]) - (tp[i] - tp[i - 1]);
			if (d2f != 0 || d2t != 0) {
				fp[w] = fp[i];
				tp[w] = tp[i];
				w++;
			}
		}
		fp[w] = fp[k - 1];
		tp[w] = tp[k - 1];
		k = w + 1;
	}
	/* Prepend (0, 0), convert to rates. */
	for (size_t i = k; i > 0; i--) {
		fp[i] = fp[i - 1] / cf;
		tp[i] = tp[i - 1] / ct;
	}
	fp[0] = 0;
	tp[0] = 0;
	m = k;
	area = xcalloc(m, sizeof *area);
	for (size_t i = 0; i < m; i++)
		area[i] = (fp[i + 1] - fp[i]) * (tp[i + 1] + tp[i]) / 2.0;
	r = ch_np_sum(area, m);
out:
	free(fp);
	free(tp);
	free(area);
	return r;
}

/* sklearn roc_auc_score of double scores; NaN when a class is missing. */
double ch_roc_auc(const double *score, const unsigned char *y, size_t n)
{
	struct ch_sy *v;
	double r;

	if (n == 0)
		return NAN;
	v = xcalloc(n, sizeof *v);
	for (size_t i = 0; i < n; i++)
		v[i] = (struct ch_sy){ score[i], y[i] ? 1 : 0 };
	qsort(v, n, sizeof *v, ch_cmp_sy_desc);
	r = ch_auc_sorted(v, n);
	free(v);
	return r;
}

/* AUC of float32 scores (optionally negated, as a negative slope does). */
double ch_auc_f32(const float *s, const unsigned char *y, size_t n, bool negate)
{
	struct ch_sy *v;
	double r;

	if (n == 0)
		return NAN;
	v = xcalloc(n, sizeof *v);
	for (size_t i = 0; i < n; i++)
		v[i] = (struct ch_sy){ negate ? -(double)s[i] : (double)s[i], y[i] ? 1 : 0 };
	qsort(v, n, sizeof *v, ch_cmp_sy_desc);
	r = ch_auc_sorted(v, n);
	free(v);
	return r;
}

/* Mean of -ln(clip(p_true, eps32, 1 - eps32)) over n rows of 3 float32. */
double ch_log_loss3(const float *probs, const int32_t *y, size_t n)
{
	const float lo = FLT_EPSILON, hi = (float)(1.0 - (double)FLT_EPSILON);
	double *loss, r;

	if (n == 0)
		return NAN;
	loss = xcalloc(n, sizeof *loss);
	for (size_t i = 0; i < n; i++) {
		float q = (y[i] >= 0 && y[i] < 3) ? probs[i * 3 + (size_t)y[i]] : NAN;
		if (q < lo)
			q = lo;
		if (q > hi)
			q = hi;
		loss[i] = -log((double)q);
	}
	r = ch_np_sum(loss, n) / (double)n;
	free(loss);
	return r;
}

/* Balanced accuracy over the classes 0..k-1 present in y. */
double ch_balanced_accuracy(const int32_t *y, const int32_t *pred, size_t n, int k)
{
	size_t tot[64] = { 0 }, hit[64] = { 0 };
	double rec[64];
	size_t m = 0;

	if (k <= 0 || k > 64)
		return NAN;
	for (size_t i = 0; i < n; i++) {
		if (y[i] < 0 || y[i] >= k)
			continue;
		tot[y[i]]++;
		hit[y[i]] += pred[i] == y[i] ? 1 : 0;
	}
	for (int c = 0; c < k; c++)
		if (tot[c])
			rec[m++] = (double)hit[c] / (double)tot[c];
	return m ? ch_np_sum(rec, m) / (double)m : 0.0;
}

struct ch_iv {
	double v;
	size_t i;
};

/* Ascending by value. */
static int ch_cmp_iv(const void *a, const void *b)
{
	double x = ((const struct ch_iv *)a)->v, y = ((const struct ch_iv *)b)->v;
	return (x > y) - (x < y);
}

/* Average ranks (1-based, ties averaged) of n values into r. */
static void ch_avg_ranks(const double *x, size_t n, struct ch_iv *tmp, double *r)
{
	for (size_t i = 0; i < n; i++)
		tmp[i] = (struct ch_iv){ x[i], i };
	qsort(tmp, n, sizeof *tmp, ch_cmp_iv);
	for (size_t i = 0; i < n;) {
		size_t j = i;
		while (j + 1 < n && tmp[j + 1].v == tmp[i].v)
			j++;
		double avg = ((double)(i + 1) + (double)(j + 1)) / 2.0;
		for (size_t k = i; k <= j; k++)
			r[tmp[k].i] = avg;
		i = j + 1;
	}
}

/* Spearman rho as scipy.stats.spearmanr(x, y) computes it via np.corrcoef. */
double ch_spearman(const double *x, const double *y, size_t n)
{
	struct ch_iv *tmp;
	double *rx, *ry, mean, sxx = 0, syy = 0, sxy = 0, inv, rho;
	bool cx = true, cy = true;

	if (n < 2)
		return NAN;
	for (size_t i = 1; i < n; i++) {
		cx = cx && x[i] == x[0];
		cy = cy && y[i] == y[0];
	}
	if (cx || cy)
		return NAN;
	tmp = xcalloc(n, sizeof *tmp);
	rx = xcalloc(n, sizeof *rx);
	ry = xcalloc(n, sizeof *ry);
	ch_avg_ranks(x, n, tmp, rx);
	ch_avg_ranks(y, n, tmp, ry);
	/* Ranks are half-integers: the mean, deviations and dot products are
	 * exact, so only the scaling below rounds, in corrcoef's order. */
	mean = ((double)n * (double)(n + 1) / 2.0) / (double)n;
	for (size_t i = 0; i < n; i++) {
		double dx = rx[i] - mean, dy = ry[i] - mean;
		sxx += dx * dx;
		syy += dy * dy;
		sxy += dx * dy;
	}
	inv = 1.0 / (double)(n - 1);
	rho = (sxy * inv / sqrt(syy * inv)) / sqrt(sxx * inv);
	if (rho > 1.0)
		rho = 1.0;
	if (rho < -1.0)
		rho = -1.0;
	free(tmp);
	free(rx);
	free(ry);
	return rho;
}

/* Sign of the balanced 1-D logistic slope: sign(mean_pos - mean_neg). */
int ch_logit_slope_sign(const double *s, const unsigned char *y, size_t n)
{
	double sp = 0, sn = 0;
	size_t np_ = 0, nn = 0;

	for (size_t i = 0; i < n; i++) {
		if (y[i]) {
			sp += s[i];
			np_++;
		} else {
			sn += s[i];
			nn++;
		}
	}
	if (np_ == 0 || nn == 0)
		return 0;
	double mp = sp / (double)np_, mn = sn / (double)nn;
	return (mp > mn) - (mp < mn);
}

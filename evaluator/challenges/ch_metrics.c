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

/* Ascending by value. */
static int ch_cmp_iv(const void *a, const void *b)
{
	double x = ((const struct ch_iv *)a)->v, y = ((const struct ch_iv *)b)->v;
	return (x > y) - (x < y);
}

/*
 * Average ranks of n <= 64 values by counting: rank_i = #{x_j < x_i} +
 * (#{x_j == x_i} + 1) / 2, two values per SSE2 compare (GCC/Clang vector
 * extensions; padding is NaN, which compares false both ways). Branch-free,
 * so the 20-29-asset rows of the cross-sectional challenges cost no
 * mispredictions (an insertion sort there is all mispredictions). Exact:
 * the ranks are half-integers.
 */
typedef double ch_v2d __attribute__((vector_size(16)));
typedef long long ch_v2l __attribute__((vector_size(16)));

void ch_ranks_count(const double *x, size_t n, double *r)
{
	ch_v2d pad[32];
	size_t m = (n + 1) / 2;

	for (size_t k = 0; k < m; k++) {
		pad[k][0] = x[2 * k];
		pad[k][1] = 2 * k + 1 < n ? x[2 * k + 1] : NAN;
	}
	for (size_t i = 0; i < n; i++) {
		ch_v2d v = { x[i], x[i] };
		ch_v2l lt = { 0, 0 }, eq = { 0, 0 };
		for (size_t k = 0; k < m; k++) {
			lt -= (ch_v2l)(pad[k] < v);
			eq -= (ch_v2l)(pad[k] == v);
		}
		r[i] = (double)(lt[0] + lt[1]) + ((double)(eq[0] + eq[1]) + 1.0) / 2.0;
	}
}

typedef float ch_v4f __attribute__((vector_size(16)));
typedef int ch_v4i __attribute__((vector_size(16)));

/* ch_ranks_count for float32 values, four per compare (the scores of the
 * cross-sectional challenges are float32; comparing them as float32 is the
 * same as comparing their double conversions). n <= 64. */
void ch_ranks_count_f32(const float *x, size_t n, double *r)
{
	ch_v4f pad[16];
	size_t m = (n + 3) / 4;

	for (size_t k = 0; k < m; k++)
		for (size_t q = 0; q < 4; q++)
			pad[k][q] = 4 * k + q < n ? x[4 * k + q] : NAN;
	for (size_t i = 0; i < n; i++) {
		ch_v4f v = { x[i], x[i], x[i], x[i] };
		ch_v4i lt = { 0, 0, 0, 0 }, eq = { 0, 0, 0, 0 };
		for (size_t k = 0; k < m; k++) {
			lt -= (ch_v4i)(pad[k] < v);
			eq -= (ch_v4i)(pad[k] == v);
		}
		r[i] = (double)(lt[0] + lt[1] + lt[2] + lt[3]) +
		    ((double)(eq[0] + eq[1] + eq[2] + eq[3]) + 1.0) / 2.0;
	}
}

/* Average ranks (1-based, ties averaged) of n values into r. */
static void ch_avg_ranks(const double *x, size_t n, struct ch_iv *tmp, double *r)
{
	if (n <= 64) {
		ch_ranks_count(x, n, r);
		return;
	}
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

/* Spearman rho with caller scratch: rx, ry of n doubles, tmp of n pairs. */
double ch_spearman_buf(const double *x, const double *y, size_t n, double *rx, double *ry,
    struct ch_iv *tmp)
{
	if (n < 2)
		return NAN;
	for (size_t i = 0; i < n; i++)
		if (isnan(x[i]) || isnan(y[i]))
			return NAN;   /* scipy's nan_policy='propagate' */
	ch_avg_ranks(x, n, tmp, rx);
	ch_avg_ranks(y, n, tmp, ry);
	return ch_rho_ranks(rx, ry, n);
}

/* Pearson correlation of two rank vectors in np.corrcoef's order; NaN when a
 * side is constant (all ranks equal) or n < 2. */
double ch_rho_ranks(const double *rx, const double *ry, size_t n)
{
	double mean, sxx = 0, syy = 0, sxy = 0, inv, rho;
	bool cx = true, cy = true;

	if (n < 2)
		return NAN;
	for (size_t i = 1; i < n; i++) {
		cx = cx && rx[i] == rx[0];
		cy = cy && ry[i] == ry[0];
	}
	if (cx || cy)
		return NAN;
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
	return rho;
}

/* Spearman rho as scipy.stats.spearmanr(x, y) computes it via np.corrcoef. */
double ch_spearman(const double *x, const double *y, size_t n)
{
	struct ch_iv *tmp;
	double *rx, *ry, rho;

	if (n < 2)
		return NAN;
	tmp = xcalloc(n > 64 ? n : 64, sizeof *tmp);
	rx = xcalloc(n, sizeof *rx);
	ry = xcalloc(n, sizeof *ry);
	rho = ch_spearman_buf(x, y, n, rx, ry, tmp);
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

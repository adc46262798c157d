/*
 * ch_numeric: numeric primitives with numpy's exact arithmetic, so that
 * mantis-mode labels and metrics equal the original's bit for bit:
 * log prices, rolling std by double prefix sums (np.cumsum order), the
 * causal sigma series, numpy's pairwise summation (np.sum / np.mean),
 * np.nanmean, numpy's searchsorted probe sequence and the float32 logit.
 */
#include <math.h>
#include <string.h>

#include "xalloc.h"
#include "evaluator/challenges/ch_internal.h"

/* ln(p + EPS) elementwise. */
void ch_log_prices(const double *p, size_t n, double *out)
{
	for (size_t i = 0; i < n; i++)
		out[i] = log(p[i] + CH_EPS);
}

/*
 * Rolling sample std over windows of w by prefix sums c1 (of x) and c2 (of
 * x*x), leading zero, accumulated left to right as np.cumsum does. Strict:
 * NaN entries count as 0 in the sums and their windows yield NaN.
 */
size_t ch_rolling_std_impl(const double *x, size_t n, size_t w, bool strict, double *out)
{
	double *c1, *c2;
	size_t *cn = NULL;
	double dw = (double)w, den;

	if (w == 0 || n < w)
		return 0;
	c1 = xcalloc(n + 1, sizeof *c1);
	c2 = xcalloc(n + 1, sizeof *c2);
	if (strict)
		cn = xcalloc(n + 1, sizeof *cn);
	for (size_t i = 0; i < n; i++) {
		double v = x[i];
		if (strict) {
			cn[i + 1] = cn[i] + (isnan(v) ? 1 : 0);
			if (isnan(v))
				v = 0.0;
		}
		c1[i + 1] = c1[i] + v;
		c2[i + 1] = c2[i] + v * v;
	}
	den = (double)(w > 1 ? w - 1 : 1);
	for (size_t i = 0; i + w <= n; i++) {
		double s1 = c1[i + w] - c1[i];
		double s2 = c2[i + w] - c2[i];
		double var = (s2 - s1 * s1 / dw) / den;
		if (strict && cn[i + w] != cn[i]) {
			out[i] = NAN;
			continue;
		}
		/* np.maximum(var, 0) propagates NaN. */
		out[i] = sqrt(isnan(var) ? var : (var > 0.0 ? var : 0.0));
	}
	free(c1);
	free(c2);
	free(cn);
	return n - w + 1;
}

/* Exported form of the rolling std (mode: enum ch_mode). */
size_t ch_rolling_std(const double *x, size_t n, size_t w, int mode, double *out)
{
	return ch_rolling_std_impl(x, n, w, mode != CH_MODE_MANTIS, out);
}

/* out[t] = std of the vw h-bar log returns ending at or before price t. */
void ch_sigma_series(const double *p, size_t T, size_t h, size_t vw, int mode, double *out)
{
	double *lp, *r, *sr;
	size_t n, ns;

	for (size_t t = 0; t < T; t++)
		out[t] = NAN;
	if (T <= h || vw == 0)
		return;
	n = T - h;
	lp = xcalloc(T, sizeof *lp);
	r = xcalloc(n, sizeof *r);
	sr = xcalloc(n, sizeof *sr);
	ch_log_prices(p, T, lp);
	for (size_t k = 0; k < n; k++)
		r[k] = lp[k + h] - lp[k];
	ns = ch_rolling_std_impl(r, n, vw, mode != CH_MODE_MANTIS, sr);
	/* sig[k] = sr[k - vw + 1] for k >= vw - 1; out[t] = sig[t - h]. */
	for (size_t i = 0; i < ns; i++)
		out[i + vw - 1 + h] = sr[i];
	free(lp);
	free(r);
	free(sr);
}

/* numpy's pairwise sum of a contiguous float64 block (n >= 0). */
static double ch_pairwise(const double *a, size_t n)
{
	if (n < 8) {
		double res = 0.0;
		for (size_t i = 0; i < n; i++)
			res += a[i];
		return res;
	}
	if (n <= 128) {
		double r[8], res;
		size_t i;
		memcpy(r, a, sizeof r);
		for (i = 8; i < n - (n % 8); i += 8)
			for (size_t k = 0; k < 8; k++)
				r[k] += a[i + k];
		res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
		for (; i < n; i++)
			res += a[i];
		return res;
	}
	size_t n2 = n / 2;
	n2 -= n2 % 8;
	return ch_pairwise(a, n2) + ch_pairwise(a + n2, n - n2);
}

/* np.sum(x) of a contiguous float64 array. */
double ch_np_sum(const double *x, size_t n)
{
	return ch_pairwise(x, n);
}

/* np.nanmean(x): NaNs replaced by 0 in the sum, divided by the non-NaN count. */
double ch_nanmean(const double *x, size_t n)
{
	double *tmp, r;
	size_t cnt = 0;

	if (n == 0)
		return NAN;
	tmp = xcalloc(n, sizeof *tmp);
	for (size_t i = 0; i < n; i++) {
		tmp[i] = isnan(x[i]) ? 0.0 : x[i];
		cnt += isnan(x[i]) ? 0 : 1;
	}
	r = cnt ? ch_pairwise(tmp, n) / (double)cnt : NAN;
	free(tmp);
	return r;
}

/* np.mean of the finite entries (NaN when none). */
double ch_mean_finite(const double *x, size_t n)
{
	double *tmp, r;
	size_t k = 0;

	if (n == 0)
		return NAN;
	tmp = xcalloc(n, sizeof *tmp);
	for (size_t i = 0; i < n; i++)
		if (isfinite(x[i]))
			tmp[k++] = x[i];
	r = k ? ch_pairwise(tmp, k) / (double)k : NAN;
	free(tmp);
	return r;
}

/* numpy binsearch<left> for a single key: lower bound with numpy's midpoints,
 * which is what np.searchsorted returns even on an unsorted array. */
size_t ch_searchsorted_left(const int64_t *a, size_t n, int64_t key)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + ((hi - lo) >> 1);
		if (a[mid] < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* logit of a float32 probability as the original computes it in float32:
 * clip to [1e-12f, 1.0f] (1 - 1e-12 rounds to 1 in float32), ln p - ln(1-p)
 * with numpy's float32 logarithm (ch_npy_logf, what the original's np.log
 * runs on AVX2/AVX-512 CPUs), then NaN and +-Inf become 0. */
float ch_logit32(float p)
{
	const float lo = (float)CH_EPS, hi = (float)(1.0 - CH_EPS);
	float q = p, r;

	if (!isnan(q)) {
		if (q < lo)
			q = lo;
		if (q > hi)
			q = hi;
	}
	r = ch_npy_logf(q) - ch_npy_logf(1.0f - q);
	return isfinite(r) ? r : 0.0f;
}

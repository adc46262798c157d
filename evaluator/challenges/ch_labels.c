/*
 * ch_labels: label generation per challenge type (binary direction,
 * hitfirst barrier order, lbfgs z-bucket, cross-sectional returns and the
 * median-split labels). Mantis mode uses numpy's arithmetic and NaN
 * behaviour; strict mode marks any label that touches a missing bar invalid.
 * All loops are single passes in C (hitfirst scans at most h bars per
 * sample and stops at the first touch).
 */
#include <math.h>
#include <stdlib.h>

#include "xalloc.h"
#include "evaluator/challenges/ch_internal.h"

/* Binary direction labels; strict: -1 where a price is missing. */
size_t ch_binary_labels(const double *p, size_t T, size_t h, int mode, int32_t *out)
{
	if (T <= h)
		return 0;
	for (size_t t = 0; t + h < T; t++) {
		if (mode != CH_MODE_MANTIS && (!isfinite(p[t]) || !isfinite(p[t + h])))
			out[t] = -1;
		else
			out[t] = p[t + h] > p[t] ? 1 : 0;
	}
	return T - h;
}

/* First touch of +-sig within h bars after t: 0 up, 1 down, 2 neither. */
static int32_t ch_first_touch(const double *lp, size_t t, size_t h, double sig)
{
	double base = lp[t];

	for (size_t k = 1; k <= h; k++) {
		double path = lp[t + k] - base;
		if (path >= sig)
			return 0;
		if (path <= -sig)
			return 1;
	}
	return 2;
}

/* Hitfirst labels with sigma over the vw forward h-returns ending at t. */
size_t ch_hitfirst_labels(const double *p, size_t T, size_t h, size_t vw, int mode, int32_t *out)
{
	double *lp, *r, *sr;
	size_t n, ns;

	if (T <= h)
		return 0;
	n = T - h;
	for (size_t t = 0; t < n; t++)
		out[t] = -1;
	if (vw == 0 || n < vw)
		return n;
	lp = xcalloc(T, sizeof *lp);
	r = xcalloc(n, sizeof *r);
	sr = xcalloc(n, sizeof *sr);
	ch_log_prices(p, T, lp);
	for (size_t k = 0; k < n; k++)
		r[k] = lp[k + h] - lp[k];
	ns = ch_rolling_std_impl(r, n, vw, mode != CH_MODE_MANTIS, sr);
	for (size_t i = 0; i < ns; i++) {
		size_t t = i + vw - 1;
		double sig = sr[i];
		if (!(isfinite(sig) && sig > 0.0))
			continue;
		if (mode != CH_MODE_MANTIS && (!isfinite(lp[t]) || !isfinite(lp[t + h])))
			continue;
		out[t] = ch_first_touch(lp, t, h, sig);
	}
	free(lp);
	free(r);
	free(sr);
	return n;
}

/* Bucket of a z-score; NaN stays 0 as in the original. */
static int32_t ch_bucket(double z)
{
	if (z <= -2.0)
		return 0;
	if (z > -2.0 && z < -1.0)
		return 1;
	if (z >= -1.0 && z <= 1.0)
		return 2;
	if (z > 1.0 && z < 2.0)
		return 3;
	if (z >= 2.0)
		return 4;
	return 0;
}

/* LBFGS buckets of the valid times (causal sigma finite and > 0). */
size_t ch_lbfgs_labels(const double *p, size_t T, size_t h, size_t vw, int mode,
    int32_t *bucket, int64_t *times)
{
	double *sig, *lp;
	size_t k = 0;

	if (T <= h)
		return 0;
	sig = xcalloc(T, sizeof *sig);
	lp = xcalloc(T, sizeof *lp);
	ch_sigma_series(p, T, h, vw, mode, sig);
	ch_log_prices(p, T, lp);
	for (size_t t = 0; t + h < T; t++) {
		double r = lp[t + h] - lp[t];
		if (!(isfinite(sig[t]) && sig[t] > 0.0))
			continue;
		if (mode != CH_MODE_MANTIS && !isfinite(r))
			continue;
		bucket[k] = ch_bucket(r / (sig[t] + CH_EPS));
		times[k] = (int64_t)t;
		k++;
	}
	free(sig);
	free(lp);
	return k;
}

/* Simple h-bar returns p[t+h]/p[t] - 1 where both prices are > 0. */
size_t ch_xsec_returns(const double *const *cols, size_t A, size_t T, size_t h,
    double *ret, unsigned char *valid)
{
	if (T <= h)
		return 0;
	for (size_t t = 0; t + h < T; t++) {
		unsigned char ok = 1;
		for (size_t a = 0; a < A; a++) {
			double p0 = cols[a][t], p1 = cols[a][t + h];
			double v = (p0 > 0.0 && p1 > 0.0) ? p1 / p0 - 1.0 : NAN;
			ret[t * A + a] = v;
			ok &= isfinite(v) ? 1 : 0;
		}
		valid[t] = ok;
	}
	return T - h;
}

/* Differences f[t+h] - f[t]; a NULL column is all NaN. */
size_t ch_diff_returns(const double *const *cols, size_t A, size_t T, size_t h,
    double *ret, unsigned char *valid)
{
	if (T <= h)
		return 0;
	for (size_t t = 0; t + h < T; t++) {
		unsigned char ok = 1;
		for (size_t a = 0; a < A; a++) {
			double v = cols[a] ? cols[a][t + h] - cols[a][t] : NAN;
			ret[t * A + a] = v;
			ok &= isfinite(v) ? 1 : 0;
		}
		valid[t] = ok;
	}
	return T - h;
}

/* qsort order for doubles (no NaN reaches it). */
static int ch_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* Median of the non-NaN entries of one row (np.nanmedian), NaN if none. */
static double ch_nanmedian(const double *row, size_t A, double *tmp)
{
	size_t k = 0;

	for (size_t a = 0; a < A; a++)
		if (!isnan(row[a]))
			tmp[k++] = row[a];
	if (k == 0)
		return NAN;
	qsort(tmp, k, sizeof *tmp, ch_cmp_double);
	if (k % 2)
		return tmp[k / 2];
	return (tmp[k / 2 - 1] + tmp[k / 2]) / 2.0;
}

/* make_xsec_labels: above the row median -> 1, else 0, NaN return -> -1. */
size_t ch_xsec_labels(const double *const *cols, size_t A, size_t T, size_t h,
    int32_t *labels, unsigned char *valid)
{
	double *ret, *tmp;
	size_t n;

	if (T <= h || A == 0)
		return 0;
	n = T - h;
	ret = xcalloc(xmul(n, A), sizeof *ret);
	tmp = xcalloc(A, sizeof *tmp);
	ch_xsec_returns(cols, A, T, h, ret, valid);
	for (size_t t = 0; t < n; t++) {
		const double *row = ret + t * A;
		double med = ch_nanmedian(row, A, tmp);
		unsigned char ok = 1;
		for (size_t a = 0; a < A; a++) {
			int32_t l = isnan(row[a]) ? -1 : (row[a] > med ? 1 : 0);
			labels[t * A + a] = l;
			ok &= l >= 0 ? 1 : 0;
		}
		valid[t] = ok;
	}
	free(ret);
	free(tmp);
	return n;
}

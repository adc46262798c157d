/*
 * ch_eval_xsec: XSEC-RANK and FUNDING-XSEC. Per embedding row, Spearman rho
 * between the asset scores (columns in challenge asset order, zero-padded in
 * mantis mode) and the h-bar simple returns (xsec) or funding changes
 * (funding); windows of rows from 260 every 4000 need >= 50 rows, >= 50
 * valid rows and >= 20 finite rhos; value = mean rho. A valid row has every
 * asset's return (mantis) or at least 5 of them (strict: gaps drop only the
 * missing assets from that row).
 */
#include <math.h>
#include <stdlib.h>

#include "xalloc.h"
#include "evaluator/challenges/ch_internal.h"

#define XS_FIRST 260  /* 200 + lag 60 */
#define XS_STEP 4000
#define XS_MIN 50
#define XS_MIN_ASSETS 5
#define XS_MIN_RHO 20

/* Scratch for one row's correlation; perm/pmask carry the previous row's
 * order of the targets (see xs_ranks_adaptive). */
struct xs_buf {
	float *xf;
	double *x, *y, *rx, *ry;
	struct ch_iv *tmp;
	uint8_t perm[64];
	uint64_t pmask;     /* assets of the previous row; 0 = no previous order */
};

/*
 * Average ranks of the targets of one row. Consecutive rows' h-bar returns
 * overlap in all but one bar, so their order barely changes: starting from
 * the previous row's order, an insertion sort does about n compares, almost
 * all predicted. Exact (ties are grouped on the sorted values). m <= 64.
 */
static void xs_ranks_adaptive(const double *y, size_t m, uint64_t mask, struct xs_buf *b,
    double *r)
{
	uint8_t *pm = b->perm;

	if (mask != b->pmask)
		for (size_t i = 0; i < m; i++)
			pm[i] = (uint8_t)i;
	b->pmask = mask;
	for (size_t i = 1; i < m; i++) {
		uint8_t v = pm[i];
		double key = y[v];
		size_t k = i;
		while (k > 0 && y[pm[k - 1]] > key) {
			pm[k] = pm[k - 1];
			k--;
		}
		pm[k] = v;
	}
	for (size_t i = 0; i < m;) {
		size_t j = i;
		while (j + 1 < m && y[pm[j + 1]] == y[pm[i]])
			j++;
		double avg = ((double)(i + 1) + (double)(j + 1)) / 2.0;
		for (size_t k = i; k <= j; k++)
			r[pm[k]] = avg;
		i = j + 1;
	}
}

/* Spearman of one row over the assets where score and return are finite:
 * float32 scores ranked as float32 (same order as their doubles). */
static double xs_row_rho(const float *e, size_t dim, const double *ret, size_t A,
    struct xs_buf *b)
{
	size_t m = 0;
	uint64_t mask = 0;

	for (size_t a = 0; a < A; a++) {
		float s = a < dim ? e[a] : 0.0f;
		if (!isfinite(s) || !isfinite(ret[a]))
			continue;
		if (a < 64)
			mask |= (uint64_t)1 << a;
		b->xf[m] = s;
		b->x[m] = (double)s;
		b->y[m] = ret[a];
		m++;
	}
	if (m < XS_MIN_ASSETS)
		return NAN;
	if (A > 64)
		return ch_spearman_buf(b->x, b->y, m, b->rx, b->ry, b->tmp);
	ch_ranks_count_f32(b->xf, m, b->rx);
	xs_ranks_adaptive(b->y, m, mask, b, b->ry);
	return ch_rho_ranks(b->rx, b->ry, m);
}

/* Score the cross-sectional challenges. */
enum ch_err ch_score_xsec(const struct ch_job *j, json_object **result)
{
	const struct ch_prepared *p = j->p;
	bool strict = p->mode != CH_MODE_MANTIS, fund = p->def->type == CH_FUNDING_XSEC;
	size_t A = p->m.n_assets, T = p->m.T, h = p->def->horizon, n, nsp = 0, nh = 0, hs;
	double *ret = NULL, *rho = NULL, *hold = NULL;
	struct xs_buf b = { .pmask = 0 };
	unsigned char *valid = NULL;
	struct ch_span *sp = NULL;
	json_object *wins = NULL;
	enum ch_err rc;
	long n_usable;

	if (A < XS_MIN_ASSETS)
		return ch_fail(j, result, CH_ERR_EVAL, "only %zu %sassets available, need >= %d",
		    A, fund ? "funding " : "", XS_MIN_ASSETS);
	if (T <= h)
		return ch_fail(j, result, CH_ERR_EVAL, fund ? "not enough funding data for horizon" :
		    "not enough data for horizon");
	n = T - h;
	ret = xcalloc(xmul(n, A), sizeof *ret);
	valid = xcalloc(n, 1);
	if (fund) {
		/* ch_prepare gives a funding challenge one (maybe NULL) column per asset */
		ch_diff_returns(p->m.fields, A, T, h, ret, valid);
	} else {
		ch_xsec_returns(p->m.close, A, T, h, ret, valid);
	}
	if (strict)
		for (size_t t = 0; t < n; t++) {
			size_t c = 0;
			for (size_t a = 0; a < A; a++)
				c += isfinite(ret[t * A + a]) ? 1 : 0;
			valid[t] = c >= XS_MIN_ASSETS;
		}
	n_usable = (long)n - (long)j->warmup;
	if ((long)j->rows < n_usable)
		n_usable = (long)j->rows;
	if (n_usable <= 0) {
		rc = ch_fail(j, result, CH_ERR_EVAL, "not enough data");
		goto out;
	}
	if (strict && j->dim < A) {
		rc = ch_fail_dim(j, result, A);
		goto out;
	}
	hs = j->holdout_start > (long)j->warmup ? (size_t)j->holdout_start - j->warmup : 0;
	nsp = ch_grid(XS_FIRST, XS_STEP, (size_t)n_usable, hs, p->mode, XS_MIN, &sp);
	if (strict)
		for (size_t i = 0; i < (size_t)n_usable; i++) {
			const double *r = ret + (j->warmup + i) * A;
			if (!valid[j->warmup + i])
				continue;
			for (size_t a = 0; a < A; a++)
				if (isfinite(r[a]) && !isfinite(j->emb[i * j->dim + a])) {
					rc = ch_fail_nonfinite(j, result, i, a, j->emb[i * j->dim + a],
					    sp, nsp, i);
					goto out;
				}
		}
	b.xf = xcalloc(A, sizeof *b.xf);
	b.x = xcalloc(A, sizeof *b.x);
	b.y = xcalloc(A, sizeof *b.y);
	b.rx = xcalloc(A, sizeof *b.rx);
	b.ry = xcalloc(A, sizeof *b.ry);
	b.tmp = xcalloc(A > 64 ? A : 64, sizeof *b.tmp);
	rho = xcalloc(XS_STEP, sizeof *rho);
	hold = xcalloc(nsp ? nsp : 1, sizeof *hold);
	wins = json_object_new_array();
	for (size_t w = 0; w < nsp; w++) {
		size_t s = sp[w].start, e = sp[w].end, nvalid = 0, nr = 0;
		for (size_t i = s; i < e; i++)
			nvalid += valid[j->warmup + i];
		if (nvalid < XS_MIN)
			continue;
		for (size_t i = s; i < e; i++) {
			if (!valid[j->warmup + i])
				continue;
			double r = xs_row_rho(j->emb + i * j->dim, j->dim, ret + (j->warmup + i) * A,
			    A, &b);
			if (isfinite(r))
				rho[nr++] = r;
		}
		if (nr < XS_MIN_RHO)
			continue;
		double ms = ch_np_sum(rho, nr) / (double)nr;
		json_object *o = ch_window_obj(&sp[w]);
		json_object_object_add(o, "mean_spearman", ch_jdouble(ms));
		json_object_object_add(o, "n_timesteps", json_object_new_int64((int64_t)nr));
		json_object_object_add(o, "in_holdout", json_object_new_boolean(sp[w].in_holdout));
		json_object_object_add(o, "n_samples", json_object_new_int64((int64_t)nvalid));
		json_object_array_add(wins, o);
		if (sp[w].in_holdout)
			hold[nh++] = ms;
	}
	if (json_object_array_length(wins) == 0) {
		rc = ch_fail(j, result, CH_ERR_EVAL, "no valid walk-forward windows");
		goto out;
	}
	if (nh == 0) {
		rc = ch_fail(j, result, CH_ERR_EVAL, "no walk-forward windows in holdout period");
		goto out;
	}
	*result = ch_result_head(p);
	json_object_object_add(*result, "n_assets", json_object_new_int64((int64_t)A));
	json_object_object_add(*result, "n_timesteps", json_object_new_int64((int64_t)T));
	json_object_object_add(*result, "n_usable", json_object_new_int64(n_usable));
	json_object_object_add(*result, "horizon", json_object_new_int64((int64_t)h));
	json_object_object_add(*result, "windows", wins);
	wins = NULL;
	json_object_object_add(*result, "mean_spearman", ch_jdouble(ch_nanmean(hold, nh)));
	rc = CH_OK;
out:
	json_object_put(wins);
	free(ret);
	free(valid);
	free(b.xf);
	free(b.x);
	free(b.y);
	free(b.rx);
	free(b.ry);
	free(b.tmp);
	free(rho);
	free(hold);
	free(sp);
	return rc;
}

/*
 * ch_eval_xsec: XSEC-RANK and FUNDING-XSEC. Per embedding row, Spearman rho
 * between the asset scores (columns in challenge asset order, zero-padded in
 * mantis mode) and the h-bar simple returns (xsec) or funding changes
 * (funding); windows of rows from 260 every 4000 need >= 50 rows, >= 50
 * valid rows and >= 20 finite rhos; value = mean rho. A valid row has every
 * asset's return (mantis) or at least 5 of them (strict: gaps drop only the
 * missing assets from that row). The walk itself is ch_walk's.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "xalloc.h"
#include "evaluator/challenges/ch_walk.h"

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

/* True when a row scores every asset alike (the columns the row's
 * correlation uses; mantis mode zero-pads a narrow row). */
static bool xs_row_constant(const float *e, size_t dim, size_t A)
{
	float first = dim ? e[0] : 0.0f;

	for (size_t a = 1; a < A; a++)
		if ((a < dim ? e[a] : 0.0f) != first)
			return false;
	return true;
}

/* The scorer's samples: embedding rows 0..n_usable; row i's targets are
 * ret[(warmup + i) * A ...], valid[warmup + i] says whether it counts. */
struct xs_ctx {
	double *ret, *rho;      /* rho: one window's finite rhos (scratch) */
	unsigned char *valid;
	size_t A;
	long n_usable;
	struct xs_buf b;
};

/* ch_walk finite hook: row i's scores of the assets with a target. */
static bool xs_finite(void *ctx, const struct ch_job *j, size_t i, size_t *row, size_t *col,
    float *v)
{
	const struct xs_ctx *x = ctx;
	const double *r = x->ret + (j->warmup + i) * x->A;

	if (!x->valid[j->warmup + i])
		return true;
	for (size_t a = 0; a < x->A; a++)
		if (isfinite(r[a]) && !isfinite(j->emb[i * j->dim + a])) {
			*row = i;
			*col = a;
			*v = j->emb[i * j->dim + a];
			return false;
		}
	return true;
}

/* ch_walk window hook: the mean Spearman rho of the valid rows (enough
 * valid rows and finite rhos). */
static enum ch_err xs_window(void *ctx, const struct ch_job *j, const struct ch_span *w,
    json_object *o, struct ch_walk_win *out, json_object **result)
{
	struct xs_ctx *x = ctx;
	size_t nvalid = 0, nr = 0;

	(void)result;
	for (size_t i = w->start; i < w->end; i++)
		nvalid += x->valid[j->warmup + i];
	size_t nsame = 0;   /* valid rows whose predictions are one value for every asset */
	if (nvalid < XS_MIN) {
		snprintf(out->why, sizeof out->why, "has %zu rows with returns for at least %d assets, needs %d",
		    nvalid, XS_MIN_ASSETS, XS_MIN);
		return CH_OK;
	}
	for (size_t i = w->start; i < w->end; i++) {
		if (!x->valid[j->warmup + i])
			continue;
		double r = xs_row_rho(j->emb + i * j->dim, j->dim, x->ret + (j->warmup + i) * x->A,
		    x->A, &x->b);
		if (isfinite(r))
			x->rho[nr++] = r;
		else
			nsame += xs_row_constant(j->emb + i * j->dim, j->dim, x->A);
	}
	if (nr < XS_MIN_RHO) {
		if (nsame == nvalid)
			snprintf(out->why, sizeof out->why, "every row's predictions were identical across the %zu assets: "
			    "Spearman undefined (rank the assets: give them different scores)", x->A);
		else
			snprintf(out->why, sizeof out->why, "has %zu rows with a defined Spearman rho, needs %d (%zu rows "
			    "predicted one value for every asset)", nr, XS_MIN_RHO, nsame);
		return CH_OK;
	}
	out->v[0] = ch_np_sum(x->rho, nr) / (double)nr;
	out->n_samples = (int64_t)nvalid;
	out->keep = true;
	json_object_object_add(o, "mean_spearman", ch_jdouble(out->v[0]));
	json_object_object_add(o, "n_timesteps", json_object_new_int64((int64_t)nr));
	return CH_OK;
}

/* ch_walk head hook. */
static void xs_head(void *ctx, const struct ch_job *j, json_object *res)
{
	const struct xs_ctx *x = ctx;

	json_object_object_add(res, "n_assets", json_object_new_int64((int64_t)x->A));
	json_object_object_add(res, "n_timesteps", json_object_new_int64((int64_t)j->p->m.T));
	json_object_object_add(res, "n_usable", json_object_new_int64(x->n_usable));
	json_object_object_add(res, "horizon", json_object_new_int64((int64_t)j->p->def->horizon));
}

/* The n = T - h rows of targets and their validity (strict: >= 5 assets). */
static void xs_targets(const struct ch_job *j, struct xs_ctx *x, size_t n)
{
	const struct ch_prepared *p = j->p;
	size_t A = x->A;

	x->ret = xcalloc(xmul(n, A), sizeof *x->ret);
	x->valid = xcalloc(n, 1);
	if (p->def->type == CH_FUNDING_XSEC)
		/* ch_prepare gives a funding challenge one (maybe NULL) column per asset */
		ch_diff_returns(p->m.fields, A, p->m.T, p->def->horizon, x->ret, x->valid);
	else
		ch_xsec_returns(p->m.close, A, p->m.T, p->def->horizon, x->ret, x->valid);
	if (p->mode == CH_MODE_MANTIS)
		return;
	for (size_t t = 0; t < n; t++) {
		size_t c = 0;
		for (size_t a = 0; a < A; a++)
			c += isfinite(x->ret[t * A + a]) ? 1 : 0;
		x->valid[t] = c >= XS_MIN_ASSETS;
	}
}

/* Scratch of one row's correlation over A assets. */
static void xs_buf_init(struct xs_buf *b, size_t A)
{
	b->xf = xcalloc(A, sizeof *b->xf);
	b->x = xcalloc(A, sizeof *b->x);
	b->y = xcalloc(A, sizeof *b->y);
	b->rx = xcalloc(A, sizeof *b->rx);
	b->ry = xcalloc(A, sizeof *b->ry);
	b->tmp = xcalloc(A > 64 ? A : 64, sizeof *b->tmp);
	b->pmask = 0;
}

/* Release the scratch (any field may be NULL). */
static void xs_buf_free(struct xs_buf *b)
{
	free(b->xf);
	free(b->x);
	free(b->y);
	free(b->rx);
	free(b->ry);
	free(b->tmp);
}

/* Score the cross-sectional challenges. */
enum ch_err ch_score_xsec(const struct ch_job *j, json_object **result)
{
	const struct ch_prepared *p = j->p;
	bool fund = p->def->type == CH_FUNDING_XSEC;
	size_t T = p->m.T, h = p->def->horizon;
	struct xs_ctx x = { .A = p->m.n_assets };
	struct ch_walk_ops ops = { .first = XS_FIRST, .step = XS_STEP, .min_len = XS_MIN,
	    .no_windows = "no valid walk-forward windows", .nvals = 1,
	    .sum = { { "mean_spearman", ch_nanmean } },
	    .finite = xs_finite, .window = xs_window, .head = xs_head };
	enum ch_err rc;

	if (x.A < XS_MIN_ASSETS)
		return ch_fail(j, result, CH_ERR_EVAL, "only %zu %sassets available, need >= %d",
		    x.A, fund ? "funding " : "", XS_MIN_ASSETS);
	if (T <= h)
		return ch_fail(j, result, CH_ERR_EVAL, fund ? "not enough funding data for horizon" :
		    "not enough data for horizon");
	xs_targets(j, &x, T - h);
	x.n_usable = (long)(T - h) - (long)j->warmup;
	if ((long)j->rows < x.n_usable)
		x.n_usable = (long)j->rows;
	if (x.n_usable <= 0) {
		rc = ch_fail(j, result, CH_ERR_EVAL, "not enough data");
	} else if (p->mode != CH_MODE_MANTIS && j->dim < x.A) {
		rc = ch_fail_dim(j, result, x.A);
	} else {
		xs_buf_init(&x.b, x.A);
		x.rho = xcalloc(XS_STEP, sizeof *x.rho);
		ops.n = (size_t)x.n_usable;
		ops.hs = j->holdout_start > (long)j->warmup ? (size_t)j->holdout_start - j->warmup : 0;
		rc = ch_walk_run(j, &ops, &x, result);
	}
	xs_buf_free(&x.b);
	free(x.ret);
	free(x.valid);
	free(x.rho);
	return rc;
}

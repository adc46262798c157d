/*
 * ch_eval_lbfgs: ETH-LBFGS and BTC-LBFGS-6H. Valid label times t >= warmup
 * (compact); prediction = argmax of columns 0..4 clipped below at 1e-6 and
 * renormalised in float32 (first maximum, NaN counts as maximum as in
 * numpy); balanced accuracy per window from 560 every 6000 (>= 200 samples,
 * two classes at least); the q-path columns 5..16 are not scored. The walk
 * itself is ch_walk's.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "xalloc.h"
#include "evaluator/challenges/ch_walk.h"

#define LB_FIRST 560
#define LB_STEP 6000
#define LB_MIN 200
#define LB_MIN_VALID 500
#define LB_K 5

/* The scorer's samples: k valid label times tm[] with bucket bk[]. */
struct lb_ctx {
	int32_t *bk, *pred;
	int64_t *tm;
	size_t k, ncol;
};

/* numpy argmax of the normalised, clipped first ncol columns of a row. */
static int32_t lb_pred(const float *e, size_t ncol)
{
	const float lo = 1e-6f;
	float q[LB_K], s = 0.0f;
	size_t best = 0;

	for (size_t c = 0; c < ncol; c++) {
		q[c] = isnan(e[c]) ? e[c] : (e[c] < lo ? lo : e[c]);
		s += q[c];
	}
	for (size_t c = 0; c < ncol; c++)
		q[c] = q[c] / s;
	for (size_t c = 0; c < ncol; c++) {
		if (isnan(q[c]))
			return (int32_t)c;
		if (q[c] > q[best])
			best = c;
	}
	return (int32_t)best;
}

/* ch_walk finite hook: the probability columns of sample i's row. */
static bool lb_finite(void *ctx, const struct ch_job *j, size_t i, size_t *row, size_t *col,
    float *v)
{
	const struct lb_ctx *b = ctx;

	*row = (size_t)b->tm[i] - j->warmup;
	return ch_walk_row_finite(j, *row, b->ncol, col, v);
}

/* ch_walk window hook: balanced accuracy and its lift over 1/5 (two
 * classes at least). */
static enum ch_err lb_window(void *ctx, const struct ch_job *j, const struct ch_span *w,
    json_object *o, struct ch_walk_win *out, json_object **result)
{
	const struct lb_ctx *b = ctx;
	size_t s = w->start, e = w->end;
	bool multi = false;

	(void)j;
	(void)result;
	for (size_t i = s + 1; i < e && !multi; i++)
		multi = b->bk[i] != b->bk[s];
	if (!multi) {
		snprintf(out->why, sizeof out->why, "has every row in one return bucket: balanced accuracy undefined");
		return CH_OK;
	}
	out->v[0] = ch_balanced_accuracy(b->bk + s, b->pred + s, e - s, LB_K);
	out->v[1] = out->v[0] - 0.2;
	out->n_samples = (int64_t)(e - s);
	out->keep = true;
	json_object_object_add(o, "balanced_accuracy", ch_jdouble(out->v[0]));
	json_object_object_add(o, "lift_over_random", ch_jdouble(out->v[1]));
	return CH_OK;
}

/* ch_walk head hook. */
static void lb_head(void *ctx, const struct ch_job *j, json_object *res)
{
	const struct lb_ctx *b = ctx;

	json_object_object_add(res, "n_timesteps", json_object_new_int64((int64_t)j->p->m.T));
	json_object_object_add(res, "n_valid", json_object_new_int64((int64_t)b->k));
	json_object_object_add(res, "horizon", json_object_new_int64((int64_t)j->p->def->horizon));
}

/* Keep the label times inside the embedding (t >= warmup, row < rows). */
static void lb_compact(const struct ch_job *j, struct lb_ctx *b, size_t nv)
{
	for (size_t i = 0; i < nv; i++)
		if (b->tm[i] >= (int64_t)j->warmup && (size_t)b->tm[i] - j->warmup < j->rows) {
			b->bk[b->k] = b->bk[i];
			b->tm[b->k] = b->tm[i];
			b->k++;
		}
}

/* Score the LBFGS challenges. */
enum ch_err ch_score_lbfgs(const struct ch_job *j, json_object **result)
{
	const struct ch_prepared *p = j->p;
	bool strict = p->mode != CH_MODE_MANTIS;
	size_t T = p->m.T;
	struct lb_ctx b = { .ncol = j->dim < LB_K ? j->dim : LB_K };
	struct ch_walk_ops ops = { .first = LB_FIRST, .step = LB_STEP, .min_len = LB_MIN,
	    .no_windows = "no valid walk-forward windows", .nvals = 2,
	    .sum = { { "mean_balanced_accuracy", ch_nanmean }, { "mean_lift", ch_nanmean } },
	    .finite = lb_finite, .window = lb_window, .head = lb_head };
	enum ch_err rc;

	b.bk = xcalloc(T ? T : 1, sizeof *b.bk);
	b.tm = xcalloc(T ? T : 1, sizeof *b.tm);
	lb_compact(j, &b, ch_lbfgs_labels(p->m.close[0], T, p->def->horizon, p->def->vol_window,
	    p->mode, b.bk, b.tm));
	if (b.k < LB_MIN_VALID) {
		rc = ch_fail(j, result, CH_ERR_EVAL, "only %zu valid samples", b.k);
	} else if (b.ncol == 0 || (strict && b.ncol < LB_K)) {
		rc = strict ? ch_fail_dim(j, result, LB_K) : ch_fail(j, result, CH_ERR_PREDICTION,
		    "attempt to get argmax of an empty sequence");
	} else {
		b.pred = xcalloc(b.k, sizeof *b.pred);
		for (size_t i = 0; i < b.k; i++)
			b.pred[i] = lb_pred(j->emb + ((size_t)b.tm[i] - j->warmup) * j->dim, b.ncol);
		ops.n = b.k;
		ops.hs = ch_searchsorted_left(b.tm, b.k, (int64_t)j->holdout_start);
		rc = ch_walk_run(j, &ops, &b, result);
	}
	free(b.bk);
	free(b.tm);
	free(b.pred);
	return rc;
}

/*
 * ch_eval_binary: ETH-1H-BINARY. Labels close[t+h] > close[t]; score is
 * column 0 (p_up); ROC-AUC per window of embedding rows from 560 every 4000;
 * mean_auc over holdout windows. The walk itself is ch_walk's.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "xalloc.h"
#include "evaluator/challenges/ch_walk.h"

#define BIN_FIRST 560    /* min_train 500 + lag 60 */
#define BIN_STEP 4000
#define BIN_MIN_STRICT 200

/* The scorer's samples: embedding rows 0..n_usable, label lab[warmup + i]. */
struct bin_ctx {
	int32_t *lab;
	long n_usable;
	double *sc;             /* one window's scores and labels (scratch) */
	unsigned char *y;
};

/* sklearn's message for non-finite scores (inf_msg names the dtype), or NULL. */
static const char *bin_sklearn_check(const double *s, size_t n, const char *inf_msg)
{
	bool inf = false;
	for (size_t i = 0; i < n; i++) {
		if (isnan(s[i]))
			return "Input contains NaN.";
		inf = inf || isinf(s[i]);
	}
	return inf ? inf_msg : NULL;
}

/* ch_walk finite hook: row i's p_up, if its label is valid. */
static bool bin_finite(void *ctx, const struct ch_job *j, size_t i, size_t *row, size_t *col,
    float *v)
{
	const struct bin_ctx *b = ctx;

	*row = i;
	*col = 0;
	*v = j->emb[i * j->dim];
	return b->lab[j->warmup + i] < 0 || isfinite(*v);
}

/* ch_walk window hook: AUC of the rows with a valid label (two classes). */
static enum ch_err bin_window(void *ctx, const struct ch_job *j, const struct ch_span *w,
    json_object *o, struct ch_walk_win *out, json_object **result)
{
	struct bin_ctx *b = ctx;
	size_t m = 0, pos = 0;

	for (size_t i = w->start; i < w->end; i++) {
		int32_t l = b->lab[j->warmup + i];
		if (l < 0)
			continue;
		b->sc[m] = j->emb[i * j->dim];
		b->y[m] = (unsigned char)l;
		pos += (size_t)l;
		m++;
	}
	if (pos == 0 || pos == m) {
		if (m == 0)
			snprintf(out->why, sizeof out->why, "has no labelled rows");
		else
			snprintf(out->why, sizeof out->why, "has %zu labelled rows, all %s: AUC undefined", m,
			    pos ? "up" : "down");
		return CH_OK;
	}
	const char *bad = bin_sklearn_check(b->sc, m,
	    "Input contains infinity or a value too large for dtype('float32').");
	if (bad != NULL)
		return ch_fail(j, result, CH_ERR_PREDICTION, "%s", bad);
	out->v[0] = ch_roc_auc(b->sc, b->y, m);
	out->n_samples = (int64_t)m;
	out->keep = true;
	json_object_object_add(o, "auc", ch_jdouble(out->v[0]));
	return CH_OK;
}

/* ch_walk head hook. */
static void bin_head(void *ctx, const struct ch_job *j, json_object *res)
{
	const struct bin_ctx *b = ctx;

	json_object_object_add(res, "n_timesteps", json_object_new_int64((int64_t)j->p->m.T));
	json_object_object_add(res, "n_evaluated", json_object_new_int64(b->n_usable));
	json_object_object_add(res, "horizon", json_object_new_int64((int64_t)j->p->def->horizon));
}

/* Score ETH-1H-BINARY (see challenges.h for the contract). */
enum ch_err ch_score_binary(const struct ch_job *j, json_object **result)
{
	const struct ch_prepared *p = j->p;
	bool strict = p->mode != CH_MODE_MANTIS;
	size_t T = p->m.T, h = p->def->horizon;
	struct bin_ctx b = { .n_usable = (long)(T > h ? T - h : 0) - (long)j->warmup };
	struct ch_walk_ops ops = { .first = BIN_FIRST, .step = BIN_STEP,
	    .min_len = strict ? BIN_MIN_STRICT : 0,
	    .no_windows = "no valid walk-forward windows", .nvals = 1,
	    .sum = { { "mean_auc", ch_nanmean } },
	    .finite = bin_finite, .window = bin_window, .head = bin_head };
	enum ch_err rc;

	if (b.n_usable <= 0)
		return ch_fail(j, result, CH_ERR_EVAL, "not enough data after warmup");
	if (j->dim < 1)
		return strict ? ch_fail_dim(j, result, 1) : ch_fail(j, result, CH_ERR_PREDICTION,
		    "index 0 is out of bounds for axis 1 with size 0");
	b.lab = xcalloc(T, sizeof *b.lab);
	ch_binary_labels(p->m.close[0], T, h, p->mode, b.lab);
	ops.n = (size_t)b.n_usable;
	ops.hs = j->holdout_start > (long)j->warmup ? (size_t)j->holdout_start - j->warmup : 0;
	b.sc = xcalloc(BIN_STEP, sizeof *b.sc);
	b.y = xcalloc(BIN_STEP, sizeof *b.y);
	rc = ch_walk_run(j, &ops, &b, result);
	free(b.lab);
	free(b.sc);
	free(b.y);
	return rc;
}

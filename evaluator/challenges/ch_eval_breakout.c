/*
 * ch_eval_breakout: MULTI-BREAKOUT. Events from ch_breakout_detect on the
 * available assets' closes; each event with a trigger inside the embedding
 * is scored with the continuation column 2*asset of its trigger row (0.5 when
 * the embedding is narrower: n_fallback). Windows are chunks of the event
 * sequence (by resolution), AUC per chunk. Holdout: mantis reproduces the
 * original's searchsorted on the unsorted trigger times; strict puts every
 * event triggered before holdout_start first and the rest after, each in
 * resolution order, and aligns the grid to that boundary. The walk itself
 * is ch_walk's.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "xalloc.h"
#include "evaluator/challenges/ch_walk.h"

#define BO_MIN_ASSETS 5
#define BO_MIN_EVENTS 50
#define BO_MIN_SCORED 30
#define BO_MIN_WIN 20

struct bo_scored {
	int64_t trig;
	double score;
	size_t row, col;
	unsigned char y;
};

/* Strict order: dev events (trigger < hs) first, both parts keep their order. */
static size_t bo_partition(struct bo_scored *v, size_t n, int64_t hs)
{
	struct bo_scored *tmp = xcalloc(n ? n : 1, sizeof *tmp);
	size_t k = 0;

	for (size_t i = 0; i < n; i++)
		if (v[i].trig < hs)
			tmp[k++] = v[i];
	size_t ndev = k;
	for (size_t i = 0; i < n; i++)
		if (v[i].trig >= hs)
			tmp[k++] = v[i];
	for (size_t i = 0; i < n; i++)
		v[i] = tmp[i];
	free(tmp);
	return ndev;
}

/* The scorer's samples: the ns scored events, in window order. */
struct bo_ctx {
	struct bo_scored *v;
	size_t ne, ns, nfb;
	double *sc;             /* one window's scores and labels (scratch) */
	unsigned char *y;
};

/* ch_walk finite hook: event i's score. */
static bool bo_finite(void *ctx, const struct ch_job *j, size_t i, size_t *row, size_t *col,
    float *v)
{
	const struct bo_ctx *b = ctx;

	(void)j;
	*row = b->v[i].row;
	*col = b->v[i].col;
	*v = (float)b->v[i].score;
	return isfinite(b->v[i].score);
}

/* ch_walk window hook: AUC of the window's events (two classes). */
static enum ch_err bo_window(void *ctx, const struct ch_job *j, const struct ch_span *w,
    json_object *o, struct ch_walk_win *out, json_object **result)
{
	struct bo_ctx *b = ctx;
	size_t s = w->start, e = w->end, pos = 0;
	bool nan = false, inf = false;

	for (size_t i = s; i < e; i++) {
		b->sc[i - s] = b->v[i].score;
		b->y[i - s] = b->v[i].y;
		pos += b->v[i].y;
		nan = nan || isnan(b->v[i].score);
		inf = inf || isinf(b->v[i].score);
	}
	if (pos == 0 || pos == e - s) {
		snprintf(out->why, sizeof out->why, "has %zu breakout events, all %s: AUC undefined", e - s,
		    pos ? "continuations" : "reversals");
		return CH_OK;
	}
	if (nan || inf)
		return ch_fail(j, result, CH_ERR_PREDICTION, "%s", nan ? "Input contains NaN." :
		    "Input contains infinity or a value too large for dtype('float64').");
	out->v[0] = ch_roc_auc(b->sc, b->y, e - s);
	out->n_samples = (int64_t)(e - s);
	out->keep = true;
	json_object_object_add(o, "auc", ch_jdouble(out->v[0]));
	return CH_OK;
}

/* ch_walk head hook. */
static void bo_head(void *ctx, const struct ch_job *j, json_object *res)
{
	const struct bo_ctx *b = ctx;

	json_object_object_add(res, "n_assets", json_object_new_int64((int64_t)j->p->m.n_assets));
	json_object_object_add(res, "n_events", json_object_new_int64((int64_t)b->ne));
	json_object_object_add(res, "n_scored", json_object_new_int64((int64_t)b->ns));
	json_object_object_add(res, "n_fallback", json_object_new_int64((int64_t)b->nfb));
}

/* The events triggered inside the embedding, with their scores (0.5 past
 * the embedding's width: a fallback). */
static void bo_collect(const struct ch_job *j, const struct ch_event *ev, struct bo_ctx *b)
{
	b->v = xcalloc(b->ne, sizeof *b->v);
	for (size_t i = 0; i < b->ne; i++) {
		int64_t rel = ev[i].trigger_t - (int64_t)j->warmup;
		size_t col = 2 * (size_t)ev[i].asset;
		if (rel < 0 || (size_t)rel >= j->rows)
			continue;
		b->v[b->ns] = (struct bo_scored){ ev[i].trigger_t, 0.5, (size_t)rel, col,
		    (unsigned char)ev[i].label };
		if (col < j->dim)
			b->v[b->ns].score = j->emb[(size_t)rel * j->dim + col];
		else
			b->nfb++;
		b->ns++;
	}
}

/* The holdout boundary in event order (see the file comment). */
static size_t bo_holdout(const struct ch_job *j, struct bo_ctx *b)
{
	int64_t *trig;
	size_t hs;

	if (j->p->mode != CH_MODE_MANTIS)
		return bo_partition(b->v, b->ns, (int64_t)j->holdout_start);
	trig = xcalloc(b->ns, sizeof *trig);
	for (size_t i = 0; i < b->ns; i++)
		trig[i] = b->v[i].trig;
	hs = ch_searchsorted_left(trig, b->ns, (int64_t)j->holdout_start);
	free(trig);
	return hs;
}

/* Score MULTI-BREAKOUT. */
enum ch_err ch_score_breakout(const struct ch_job *j, json_object **result)
{
	const struct ch_prepared *p = j->p;
	const struct ch_def *d = p->def;
	size_t A = p->m.n_assets;
	struct ch_event *ev = NULL;
	struct bo_ctx b = { 0 };
	struct ch_walk_ops ops = { .min_len = BO_MIN_WIN,
	    .no_windows = "no valid walk-forward windows for breakout", .nvals = 1,
	    .sum = { { "mean_auc", ch_nanmean } },
	    .finite = bo_finite, .window = bo_window, .head = bo_head };
	enum ch_err rc;

	if (A < BO_MIN_ASSETS)
		return ch_fail(j, result, CH_ERR_EVAL, "only %zu assets available, need >= %d",
		    A, BO_MIN_ASSETS);
	b.ne = ch_breakout_detect(p->m.close, A, p->m.T, d->range_lookback, d->barrier_pct,
	    d->min_range_pct, d->max_pending, p->mode, &ev);
	if (b.ne < BO_MIN_EVENTS) {
		rc = ch_fail(j, result, CH_ERR_EVAL, "only %zu breakout events detected, need >= %d",
		    b.ne, BO_MIN_EVENTS);
		goto out;
	}
	if (p->mode != CH_MODE_MANTIS && j->dim < 2 * A) {
		rc = ch_fail_dim(j, result, 2 * A);
		goto out;
	}
	bo_collect(j, ev, &b);
	if (b.ns < BO_MIN_SCORED) {
		rc = ch_fail(j, result, CH_ERR_EVAL, "only %zu scored events, need >= %d",
		    b.ns, BO_MIN_SCORED);
		goto out;
	}
	ops.hs = bo_holdout(j, &b);
	ops.n = b.ns;
	ops.step = b.ns / 5 > 30 ? b.ns / 5 : 30;
	ops.first = b.ns / 4 > 30 ? b.ns / 4 : 30;
	b.sc = xcalloc(b.ns, sizeof *b.sc);
	b.y = xcalloc(b.ns, sizeof *b.y);
	rc = ch_walk_run(j, &ops, &b, result);
out:
	free(ev);
	free(b.v);
	free(b.sc);
	free(b.y);
	return rc;
}

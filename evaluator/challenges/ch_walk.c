/*
 * ch_walk: the walk-forward driver shared by the challenge scorers (the
 * theory of operation is in ch_walk.h).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "xalloc.h"
#include "evaluator/challenges/ch_walk.h"

/* State of one run of the driver. */
struct walk {
	const struct ch_job *j;
	const struct ch_walk_ops *ops;
	void *ctx;
	struct ch_span *sp;
	size_t nsp, nh;
	double *hold[CH_WALK_MAXV];   /* per value, the holdout windows' values */
	json_object *wins;
	size_t nskip;                 /* windows skipped, and the first one's index and reason */
	size_t skip_at;
	char skip_why[192];
};

/* Strict mode: refuse the first non-finite prediction of a scored sample. */
static enum ch_err walk_check_finite(struct walk *w, json_object **result)
{
	size_t row, col;
	float v;

	if (w->j->p->mode == CH_MODE_MANTIS || w->ops->finite == NULL)
		return CH_OK;
	for (size_t i = 0; i < w->ops->n; i++)
		if (!w->ops->finite(w->ctx, w->j, i, &row, &col, &v))
			return ch_fail_nonfinite(w->j, result, row, col, v, w->sp, w->nsp, i);
	return CH_OK;
}

/* Score every window; keep the holdout windows' values. */
static enum ch_err walk_windows(struct walk *w, json_object **result)
{
	for (size_t k = 0; k < w->ops->nvals; k++)
		w->hold[k] = xcalloc(w->nsp ? w->nsp : 1, sizeof *w->hold[k]);
	w->wins = json_object_new_array();
	for (size_t i = 0; i < w->nsp; i++) {
		const struct ch_span *s = &w->sp[i];
		struct ch_walk_win out = { .keep = false };
		json_object *o = ch_window_obj(s);
		enum ch_err rc = w->ops->window(w->ctx, w->j, s, o, &out, result);
		if (rc != CH_OK || !out.keep) {
			json_object_put(o);
			if (rc != CH_OK)
				return rc;
			if (w->nskip++ == 0) {
				w->skip_at = i;
				snprintf(w->skip_why, sizeof w->skip_why, "%s", out.why[0] ? out.why : "too few samples");
			}
			continue;
		}
		json_object_object_add(o, "in_holdout", json_object_new_boolean(s->in_holdout));
		if (out.late_key != NULL)
			json_object_object_add(o, out.late_key, ch_jdouble(out.late));
		json_object_object_add(o, "n_samples", json_object_new_int64(out.n_samples));
		json_object_array_add(w->wins, o);
		if (!s->in_holdout)
			continue;
		for (size_t k = 0; k < w->ops->nvals; k++)
			w->hold[k][w->nh] = out.v[k];
		w->nh++;
	}
	return CH_OK;
}

/* The failure when no window was kept: the scorer's message, and in
 * strict mode the first skipped window and why it could not be scored. */
static enum ch_err walk_no_windows(const struct walk *w, json_object **result)
{
	const struct ch_span *s;

	if (w->j->p->mode == CH_MODE_MANTIS)
		return ch_fail(w->j, result, CH_ERR_EVAL, "%s", w->ops->no_windows);
	if (w->nskip == 0)
		return ch_fail(w->j, result, CH_ERR_EVAL, "%s: %zu scored samples give no window of at least %zu "
		    "(windows start at sample %zu, every %zu); evaluate more days of history", w->ops->no_windows,
		    w->ops->n, w->ops->min_len, w->ops->first, w->ops->step);
	s = &w->sp[w->skip_at];
	if (w->nskip == 1)
		return ch_fail(w->j, result, CH_ERR_EVAL, "%s: window %zu [%zu, %zu): %s", w->ops->no_windows,
		    w->skip_at + 1, s->start, s->end, w->skip_why);
	return ch_fail(w->j, result, CH_ERR_EVAL, "%s: none of the %zu windows could be scored; the first, "
	    "window %zu [%zu, %zu): %s", w->ops->no_windows, w->nskip, w->skip_at + 1, s->start, s->end,
	    w->skip_why);
}

/* The result object: head, the scorer's keys, windows, holdout means. */
static json_object *walk_result(struct walk *w)
{
	json_object *res = ch_result_head(w->j->p);

	w->ops->head(w->ctx, w->j, res);
	json_object_object_add(res, "windows", w->wins);
	w->wins = NULL;
	for (size_t k = 0; k < w->ops->nvals; k++)
		json_object_object_add(res, w->ops->sum[k].key,
		    ch_jdouble(w->ops->sum[k].mean(w->hold[k], w->nh)));
	return res;
}

/* Check the first ncol columns of a row (see ch_walk.h). */
bool ch_walk_row_finite(const struct ch_job *j, size_t row, size_t ncol, size_t *col, float *v)
{
	const float *e = j->emb + row * j->dim;

	for (size_t c = 0; c < ncol; c++)
		if (!isfinite(e[c])) {
			*col = c;
			*v = e[c];
			return false;
		}
	return true;
}

/* The driver (see ch_walk.h). */
enum ch_err ch_walk_run(const struct ch_job *j, const struct ch_walk_ops *ops, void *ctx,
    json_object **result)
{
	struct walk w = { .j = j, .ops = ops, .ctx = ctx };
	enum ch_err rc;

	w.nsp = ch_grid(ops->first, ops->step, ops->n, ops->hs, j->p->mode, ops->min_len, &w.sp);
	rc = walk_check_finite(&w, result);
	if (rc == CH_OK)
		rc = walk_windows(&w, result);
	if (rc != CH_OK)
		goto out;
	if (json_object_array_length(w.wins) == 0)
		rc = walk_no_windows(&w, result);
	else if (w.nh == 0)
		rc = ch_fail(j, result, CH_ERR_EVAL, "no walk-forward windows in holdout period");
	else
		*result = walk_result(&w);
out:
	json_object_put(w.wins);
	for (size_t k = 0; k < CH_WALK_MAXV; k++)
		free(w.hold[k]);
	free(w.sp);
	return rc;
}

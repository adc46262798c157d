/*
 * ch_eval_breakout: MULTI-BREAKOUT. Events from ch_breakout_detect on the
 * available assets' closes; each event with a trigger inside the embedding
 * is scored with the continuation column 2*asset of its trigger row (0.5 when
 * the embedding is narrower: n_fallback). Windows are chunks of the event
 * sequence (by resolution), AUC per chunk. Holdout: mantis reproduces the
 * original's searchsorted on the unsorted trigger times; strict puts every
 * event triggered before holdout_start first and the rest after, each in
 * resolution order, and aligns the grid to that boundary.
 */
#include <math.h>
#include <stdlib.h>

#include "xalloc.h"
#include "evaluator/challenges/ch_internal.h"

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

/* Score MULTI-BREAKOUT. */
enum ch_err ch_score_breakout(const struct ch_job *j, json_object **result)
{
	const struct ch_prepared *p = j->p;
	const struct ch_def *d = p->def;
	bool strict = p->mode != CH_MODE_MANTIS;
	size_t A = p->m.n_assets, ne, ns = 0, nfb = 0, nsp = 0, nh = 0, hs;
	struct ch_event *ev = NULL;
	struct bo_scored *v = NULL;
	struct ch_span *sp = NULL;
	double *sc = NULL, *hold = NULL;
	unsigned char *y = NULL;
	int64_t *trig = NULL;
	json_object *wins = NULL;
	enum ch_err rc;

	if (A < BO_MIN_ASSETS)
		return ch_fail(j, result, CH_ERR_EVAL, "only %zu assets available, need >= %d",
		    A, BO_MIN_ASSETS);
	ne = ch_breakout_detect(p->m.close, A, p->m.T, d->range_lookback, d->barrier_pct,
	    d->min_range_pct, d->max_pending, p->mode, &ev);
	if (ne < BO_MIN_EVENTS) {
		rc = ch_fail(j, result, CH_ERR_EVAL, "only %zu breakout events detected, need >= %d",
		    ne, BO_MIN_EVENTS);
		goto out;
	}
	if (strict && j->dim < 2 * A) {
		rc = ch_fail_dim(j, result, 2 * A);
		goto out;
	}
	v = xcalloc(ne, sizeof *v);
	for (size_t i = 0; i < ne; i++) {
		int64_t rel = ev[i].trigger_t - (int64_t)j->warmup;
		size_t col = 2 * (size_t)ev[i].asset;
		if (rel < 0 || (size_t)rel >= j->rows)
			continue;
		v[ns] = (struct bo_scored){ ev[i].trigger_t, 0.5, (size_t)rel, col,
		    (unsigned char)ev[i].label };
		if (col < j->dim)
			v[ns].score = j->emb[(size_t)rel * j->dim + col];
		else
			nfb++;
		ns++;
	}
	if (ns < BO_MIN_SCORED) {
		rc = ch_fail(j, result, CH_ERR_EVAL, "only %zu scored events, need >= %d",
		    ns, BO_MIN_SCORED);
		goto out;
	}
	if (strict) {
		hs = bo_partition(v, ns, (int64_t)j->holdout_start);
	} else {
		trig = xcalloc(ns, sizeof *trig);
		for (size_t i = 0; i < ns; i++)
			trig[i] = v[i].trig;
		hs = ch_searchsorted_left(trig, ns, (int64_t)j->holdout_start);
	}
	size_t chunk = ns / 5 > 30 ? ns / 5 : 30, min_train = ns / 4 > 30 ? ns / 4 : 30;
	nsp = ch_grid(min_train, chunk, ns, hs, p->mode, BO_MIN_WIN, &sp);
	if (strict)
		for (size_t i = 0; i < ns; i++)
			if (!isfinite(v[i].score)) {
				rc = ch_fail_nonfinite(j, result, v[i].row, v[i].col, (float)v[i].score,
				    sp, nsp, i);
				goto out;
			}
	sc = xcalloc(ns, sizeof *sc);
	y = xcalloc(ns, sizeof *y);
	hold = xcalloc(nsp ? nsp : 1, sizeof *hold);
	wins = json_object_new_array();
	for (size_t w = 0; w < nsp; w++) {
		size_t s = sp[w].start, e = sp[w].end, pos = 0;
		bool nan = false, inf = false;
		for (size_t i = s; i < e; i++) {
			sc[i - s] = v[i].score;
			y[i - s] = v[i].y;
			pos += v[i].y;
			nan = nan || isnan(v[i].score);
			inf = inf || isinf(v[i].score);
		}
		if (pos == 0 || pos == e - s)
			continue;
		if (nan || inf) {
			rc = ch_fail(j, result, CH_ERR_PREDICTION, "%s", nan ? "Input contains NaN." :
			    "Input contains infinity or a value too large for dtype('float64').");
			goto out;
		}
		double auc = ch_roc_auc(sc, y, e - s);
		json_object *o = ch_window_obj(&sp[w]);
		json_object_object_add(o, "auc", ch_jdouble(auc));
		json_object_object_add(o, "in_holdout", json_object_new_boolean(sp[w].in_holdout));
		json_object_object_add(o, "n_samples", json_object_new_int64((int64_t)(e - s)));
		json_object_array_add(wins, o);
		if (sp[w].in_holdout)
			hold[nh++] = auc;
	}
	if (json_object_array_length(wins) == 0) {
		rc = ch_fail(j, result, CH_ERR_EVAL, "no valid walk-forward windows for breakout");
		goto out;
	}
	if (nh == 0) {
		rc = ch_fail(j, result, CH_ERR_EVAL, "no walk-forward windows in holdout period");
		goto out;
	}
	*result = ch_result_head(p);
	json_object_object_add(*result, "n_assets", json_object_new_int64((int64_t)A));
	json_object_object_add(*result, "n_events", json_object_new_int64((int64_t)ne));
	json_object_object_add(*result, "n_scored", json_object_new_int64((int64_t)ns));
	json_object_object_add(*result, "n_fallback", json_object_new_int64((int64_t)nfb));
	json_object_object_add(*result, "windows", wins);
	wins = NULL;
	json_object_object_add(*result, "mean_auc", ch_jdouble(ch_nanmean(hold, nh)));
	rc = CH_OK;
out:
	json_object_put(wins);
	free(ev);
	free(v);
	free(sp);
	free(sc);
	free(y);
	free(hold);
	free(trig);
	return rc;
}

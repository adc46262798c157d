/*
 * ch_eval_lbfgs: ETH-LBFGS and BTC-LBFGS-6H. Valid label times t >= warmup
 * (compact); prediction = argmax of columns 0..4 clipped below at 1e-6 and
 * renormalised in float32 (first maximum, NaN counts as maximum as in
 * numpy); balanced accuracy per window from 560 every 6000 (>= 200 samples,
 * two classes at least); the q-path columns 5..16 are not scored.
 */
#include <math.h>
#include <stdlib.h>

#include "xalloc.h"
#include "evaluator/challenges/ch_internal.h"

#define LB_FIRST 560
#define LB_STEP 6000
#define LB_MIN 200
#define LB_MIN_VALID 500
#define LB_K 5

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

/* Score the LBFGS challenges. */
enum ch_err ch_score_lbfgs(const struct ch_job *j, json_object **result)
{
	const struct ch_prepared *p = j->p;
	bool strict = p->mode != CH_MODE_MANTIS;
	size_t T = p->m.T, h = p->def->horizon, nv, k = 0, nsp = 0, nh = 0, hs;
	size_t ncol = j->dim < LB_K ? j->dim : LB_K;
	int32_t *bk = xcalloc(T ? T : 1, sizeof *bk), *pred = NULL;
	int64_t *tm = xcalloc(T ? T : 1, sizeof *tm);
	struct ch_span *sp = NULL;
	double *hb = NULL, *hlift = NULL;
	json_object *wins = NULL;
	enum ch_err rc;

	nv = ch_lbfgs_labels(p->m.close[0], T, h, p->def->vol_window, p->mode, bk, tm);
	for (size_t i = 0; i < nv; i++)
		if (tm[i] >= (int64_t)j->warmup && (size_t)tm[i] - j->warmup < j->rows) {
			bk[k] = bk[i];
			tm[k] = tm[i];
			k++;
		}
	if (k < LB_MIN_VALID) {
		rc = ch_fail(j, result, CH_ERR_EVAL, "only %zu valid samples", k);
		goto out;
	}
	hs = ch_searchsorted_left(tm, k, (int64_t)j->holdout_start);
	if (ncol == 0 || (strict && ncol < LB_K)) {
		rc = strict ? ch_fail_dim(j, result, LB_K) : ch_fail(j, result, CH_ERR_PREDICTION,
		    "attempt to get argmax of an empty sequence");
		goto out;
	}
	nsp = ch_grid(LB_FIRST, LB_STEP, k, hs, p->mode, LB_MIN, &sp);
	pred = xcalloc(k, sizeof *pred);
	for (size_t i = 0; i < k; i++) {
		size_t r = (size_t)tm[i] - j->warmup;
		const float *e = j->emb + r * j->dim;
		if (strict)
			for (size_t c = 0; c < ncol; c++)
				if (!isfinite(e[c])) {
					rc = ch_fail_nonfinite(j, result, r, c, e[c], sp, nsp, i);
					goto out;
				}
		pred[i] = lb_pred(e, ncol);
	}
	hb = xcalloc(nsp ? nsp : 1, sizeof *hb);
	hlift = xcalloc(nsp ? nsp : 1, sizeof *hlift);
	wins = json_object_new_array();
	for (size_t w = 0; w < nsp; w++) {
		size_t s = sp[w].start, e = sp[w].end;
		bool multi = false;
		for (size_t i = s + 1; i < e && !multi; i++)
			multi = bk[i] != bk[s];
		if (!multi)
			continue;
		double ba = ch_balanced_accuracy(bk + s, pred + s, e - s, LB_K);
		double lift = ba - 0.2;
		json_object *o = ch_window_obj(&sp[w]);
		json_object_object_add(o, "balanced_accuracy", ch_jdouble(ba));
		json_object_object_add(o, "lift_over_random", ch_jdouble(lift));
		json_object_object_add(o, "in_holdout", json_object_new_boolean(sp[w].in_holdout));
		json_object_object_add(o, "n_samples", json_object_new_int64((int64_t)(e - s)));
		json_object_array_add(wins, o);
		if (sp[w].in_holdout) {
			hb[nh] = ba;
			hlift[nh] = lift;
			nh++;
		}
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
	json_object_object_add(*result, "n_timesteps", json_object_new_int64((int64_t)T));
	json_object_object_add(*result, "n_valid", json_object_new_int64((int64_t)k));
	json_object_object_add(*result, "horizon", json_object_new_int64((int64_t)h));
	json_object_object_add(*result, "windows", wins);
	wins = NULL;
	json_object_object_add(*result, "mean_balanced_accuracy", ch_jdouble(ch_nanmean(hb, nh)));
	json_object_object_add(*result, "mean_lift", ch_jdouble(ch_nanmean(hlift, nh)));
	rc = CH_OK;
out:
	json_object_put(wins);
	free(bk);
	free(tm);
	free(pred);
	free(sp);
	free(hb);
	free(hlift);
	return rc;
}

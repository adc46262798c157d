/*
 * ch_eval_binary: ETH-1H-BINARY. Labels close[t+h] > close[t]; score is
 * column 0 (p_up); ROC-AUC per window of embedding rows from 560 every 4000;
 * mean_auc over holdout windows.
 */
#include <math.h>
#include <stdlib.h>

#include "xalloc.h"
#include "evaluator/challenges/ch_internal.h"

#define BIN_FIRST 560    /* min_train 500 + lag 60 */
#define BIN_STEP 4000
#define BIN_MIN_STRICT 200

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

/* Score ETH-1H-BINARY (see challenges.h for the contract). */
enum ch_err ch_score_binary(const struct ch_job *j, json_object **result)
{
	const struct ch_prepared *p = j->p;
	bool strict = p->mode != CH_MODE_MANTIS;
	size_t T = p->m.T, h = p->def->horizon, nspans = 0;
	long n_usable = (long)(T > h ? T - h : 0) - (long)j->warmup;
	int32_t *lab = NULL;
	struct ch_span *sp = NULL;
	double *sc = NULL, *hold = NULL;
	unsigned char *y = NULL;
	json_object *wins = NULL;
	enum ch_err rc;
	size_t nh = 0, hs;

	if (n_usable <= 0)
		return ch_fail(j, result, CH_ERR_EVAL, "not enough data after warmup");
	if (j->dim < 1)
		return strict ? ch_fail_dim(j, result, 1) : ch_fail(j, result, CH_ERR_PREDICTION,
		    "index 0 is out of bounds for axis 1 with size 0");
	lab = xcalloc(T, sizeof *lab);
	ch_binary_labels(p->m.close[0], T, h, p->mode, lab);
	hs = j->holdout_start > (long)j->warmup ? (size_t)j->holdout_start - j->warmup : 0;
	nspans = ch_grid(BIN_FIRST, BIN_STEP, (size_t)n_usable, hs, p->mode,
	    strict ? BIN_MIN_STRICT : 0, &sp);
	if (strict)
		for (size_t i = 0; i < (size_t)n_usable; i++)
			if (lab[j->warmup + i] >= 0 && !isfinite(j->emb[i * j->dim])) {
				rc = ch_fail_nonfinite(j, result, i, 0, j->emb[i * j->dim], sp, nspans, i);
				goto out;
			}
	sc = xcalloc(BIN_STEP, sizeof *sc);
	y = xcalloc(BIN_STEP, sizeof *y);
	hold = xcalloc(nspans ? nspans : 1, sizeof *hold);
	wins = json_object_new_array();
	for (size_t w = 0; w < nspans; w++) {
		size_t m = 0, pos = 0;
		for (size_t i = sp[w].start; i < sp[w].end; i++) {
			int32_t l = lab[j->warmup + i];
			if (l < 0)
				continue;
			sc[m] = j->emb[i * j->dim];
			y[m] = (unsigned char)l;
			pos += (size_t)l;
			m++;
		}
		if (pos == 0 || pos == m)
			continue;
		const char *bad = bin_sklearn_check(sc, m,
		    "Input contains infinity or a value too large for dtype('float32').");
		if (bad != NULL) {
			rc = ch_fail(j, result, CH_ERR_PREDICTION, "%s", bad);
			goto out;
		}
		double auc = ch_roc_auc(sc, y, m);
		json_object *o = ch_window_obj(&sp[w]);
		json_object_object_add(o, "auc", ch_jdouble(auc));
		json_object_object_add(o, "in_holdout", json_object_new_boolean(sp[w].in_holdout));
		json_object_object_add(o, "n_samples", json_object_new_int64((int64_t)m));
		json_object_array_add(wins, o);
		if (sp[w].in_holdout)
			hold[nh++] = auc;
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
	json_object_object_add(*result, "n_evaluated", json_object_new_int64(n_usable));
	json_object_object_add(*result, "horizon", json_object_new_int64((int64_t)h));
	json_object_object_add(*result, "windows", wins);
	wins = NULL;
	json_object_object_add(*result, "mean_auc", ch_jdouble(ch_nanmean(hold, nh)));
	rc = CH_OK;
out:
	json_object_put(wins);
	free(lab);
	free(sp);
	free(sc);
	free(y);
	free(hold);
	return rc;
}

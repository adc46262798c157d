/*
 * ch_eval_hitfirst: ETH-HITFIRST-100M. Compact samples are the embedding
 * rows whose label is valid; probabilities are columns 0..2, clipped and
 * renormalised in float32; per window (from 2060 every 4000, >= 200
 * samples): up/down AUC of the float32 logits through the sign of a
 * balanced 1-D logistic slope fitted on every earlier sample (prefix sums
 * make each window O(its size)), and the 3-class log loss.
 */
#include <math.h>
#include <stdlib.h>

#include "xalloc.h"
#include "evaluator/challenges/ch_internal.h"

#define HF_FIRST 2060   /* min_train 2000 + lag 60 */
#define HF_STEP 4000
#define HF_MIN 200
#define HF_MIN_VALID 500

struct hf_side {
	float *s;               /* logit per compact sample */
	unsigned char *y;       /* 1 if the label is this side's class */
	double *cs1, *cs0;      /* prefix sums of s over y=1 / y=0 */
	size_t *cn1;            /* prefix count of y=1 */
};

/* Build one side (class c) from the scores. */
static void hf_side_init(struct hf_side *d, const float *probs, const int32_t *lab, size_t k, int c)
{
	d->s = xcalloc(k ? k : 1, sizeof *d->s);
	d->y = xcalloc(k ? k : 1, sizeof *d->y);
	d->cs1 = xcalloc(k + 1, sizeof *d->cs1);
	d->cs0 = xcalloc(k + 1, sizeof *d->cs0);
	d->cn1 = xcalloc(k + 1, sizeof *d->cn1);
	for (size_t i = 0; i < k; i++) {
		d->s[i] = ch_logit32(probs[i * 3 + (size_t)c]);
		d->y[i] = lab[i] == c;
		d->cs1[i + 1] = d->cs1[i] + (d->y[i] ? (double)d->s[i] : 0.0);
		d->cs0[i + 1] = d->cs0[i] + (d->y[i] ? 0.0 : (double)d->s[i]);
		d->cn1[i + 1] = d->cn1[i] + d->y[i];
	}
}

/* Release a side. */
static void hf_side_free(struct hf_side *d)
{
	free(d->s);
	free(d->y);
	free(d->cs1);
	free(d->cs0);
	free(d->cn1);
}

/* AUC of the calibrated score on [s, e) after training on [0, s); NaN when
 * train or test lacks a class. */
static double hf_side_auc(const struct hf_side *d, size_t s, size_t e)
{
	size_t tp = d->cn1[s], tt = d->cn1[e] - d->cn1[s];
	double mp, mn;

	if (tp == 0 || tp == s || tt == 0 || tt == e - s)
		return NAN;
	mp = d->cs1[s] / (double)tp;
	mn = d->cs0[s] / (double)(s - tp);
	if (mp == mn)
		return 0.5;  /* zero slope: constant decision function */
	return ch_auc_f32(d->s + s, d->y + s, e - s, mp < mn);
}

/* Clipped, renormalised float32 probabilities of columns 0..2. */
static void hf_probs(const struct ch_job *j, const size_t *rows, size_t k, float *probs)
{
	const float lo = (float)CH_EPS, hi = (float)(1.0 - CH_EPS);

	for (size_t i = 0; i < k; i++) {
		const float *e = j->emb + rows[i] * j->dim;
		float q[3], s;
		for (int c = 0; c < 3; c++) {
			q[c] = e[c];
			if (!isnan(q[c]))
				q[c] = q[c] < lo ? lo : (q[c] > hi ? hi : q[c]);
		}
		s = (q[0] + q[1]) + q[2];
		if (s <= 0.0f)
			s = 1.0f;
		for (int c = 0; c < 3; c++)
			probs[i * 3 + (size_t)c] = q[c] / s;
	}
}

/* Score ETH-HITFIRST-100M. */
enum ch_err ch_score_hitfirst(const struct ch_job *j, json_object **result)
{
	const struct ch_prepared *p = j->p;
	bool strict = p->mode != CH_MODE_MANTIS;
	size_t T = p->m.T, h = p->def->horizon, k = 0, nsp = 0, nh = 0, hs;
	long n_usable = (long)(T > h ? T - h : 0) - (long)j->warmup;
	int32_t *lab = NULL, *cl = NULL;
	size_t *rows = NULL;
	int64_t *rel = NULL;
	float *probs = NULL;
	struct ch_span *sp = NULL;
	struct hf_side up = { 0 }, dn = { 0 };
	double *hl = NULL, *hu = NULL, *hd = NULL;
	json_object *wins = NULL;
	enum ch_err rc;

	if (n_usable <= 0)
		return ch_fail(j, result, CH_ERR_EVAL, "not enough data after warmup");
	lab = xcalloc(T, sizeof *lab);
	ch_hitfirst_labels(p->m.close[0], T, h, p->def->vol_window, p->mode, lab);
	rows = xcalloc((size_t)n_usable, sizeof *rows);
	rel = xcalloc((size_t)n_usable, sizeof *rel);
	cl = xcalloc((size_t)n_usable, sizeof *cl);
	for (size_t i = 0; i < (size_t)n_usable; i++)
		if (lab[j->warmup + i] >= 0) {
			rows[k] = i;
			rel[k] = (int64_t)i;
			cl[k] = lab[j->warmup + i];
			k++;
		}
	hs = ch_searchsorted_left(rel, k, j->holdout_start > (long)j->warmup ?
	    (int64_t)j->holdout_start - (int64_t)j->warmup : 0);
	if (k < HF_MIN_VALID) {
		rc = ch_fail(j, result, CH_ERR_EVAL, "only %zu valid samples, need >= %d", k, HF_MIN_VALID);
		goto out;
	}
	if (j->dim < 3) {
		rc = strict ? ch_fail_dim(j, result, 3) : ch_fail(j, result, CH_ERR_PREDICTION,
		    "hitfirst requires embedding dim >= 3, got shape (%zu, %zu)", k, j->dim);
		goto out;
	}
	nsp = ch_grid(HF_FIRST, HF_STEP, k, hs, p->mode, HF_MIN, &sp);
	if (strict)
		for (size_t i = 0; i < k; i++)
			for (size_t c = 0; c < 3; c++)
				if (!isfinite(j->emb[rows[i] * j->dim + c])) {
					rc = ch_fail_nonfinite(j, result, rows[i], c,
					    j->emb[rows[i] * j->dim + c], sp, nsp, i);
					goto out;
				}
	probs = xcalloc(xmul(k, 3), sizeof *probs);
	hf_probs(j, rows, k, probs);
	hf_side_init(&up, probs, cl, k, 0);
	hf_side_init(&dn, probs, cl, k, 1);
	hl = xcalloc(nsp ? nsp : 1, sizeof *hl);
	hu = xcalloc(nsp ? nsp : 1, sizeof *hu);
	hd = xcalloc(nsp ? nsp : 1, sizeof *hd);
	wins = json_object_new_array();
	for (size_t w = 0; w < nsp; w++) {
		size_t s = sp[w].start, e = sp[w].end;
		bool seen[3] = { false, false, false };
		double ua = hf_side_auc(&up, s, e), da = hf_side_auc(&dn, s, e), ll = NAN;
		for (size_t i = s; i < e; i++)
			seen[cl[i]] = true;
		bool multi = (seen[0] + seen[1] + seen[2]) >= 2;
		if (multi) {
			for (size_t i = s * 3; i < e * 3; i++)
				if (isnan(probs[i])) {
					rc = ch_fail(j, result, CH_ERR_PREDICTION, "Input contains NaN.");
					goto out;
				}
			ll = ch_log_loss3(probs + s * 3, cl + s, e - s);
		}
		json_object *o = ch_window_obj(&sp[w]);
		json_object_object_add(o, "up_auc", ch_jdouble(ua));
		json_object_object_add(o, "dn_auc", ch_jdouble(da));
		json_object_object_add(o, "in_holdout", json_object_new_boolean(sp[w].in_holdout));
		if (multi)
			json_object_object_add(o, "direct_log_loss", ch_jdouble(ll));
		json_object_object_add(o, "n_samples", json_object_new_int64((int64_t)(e - s)));
		json_object_array_add(wins, o);
		if (sp[w].in_holdout) {
			hl[nh] = ll;
			hu[nh] = ua;
			hd[nh] = da;
			nh++;
		}
	}
	if (nsp == 0) {
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
	json_object_object_add(*result, "direct_log_loss", ch_jdouble(ch_mean_finite(hl, nh)));
	json_object_object_add(*result, "up_auc", ch_jdouble(ch_mean_finite(hu, nh)));
	json_object_object_add(*result, "dn_auc", ch_jdouble(ch_mean_finite(hd, nh)));
	rc = CH_OK;
out:
	json_object_put(wins);
	hf_side_free(&up);
	hf_side_free(&dn);
	free(lab);
	free(rows);
	free(rel);
	free(cl);
	free(probs);
	free(sp);
	free(hl);
	free(hu);
	free(hd);
	return rc;
}

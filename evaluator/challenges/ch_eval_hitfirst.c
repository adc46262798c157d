/*
 * ch_eval_hitfirst: ETH-HITFIRST-100M. Compact samples are the embedding
 * rows whose label is valid; probabilities are columns 0..2, clipped and
 * renormalised in float32; per window (from 2060 every 4000, >= 200
 * samples): up/down AUC of the float32 logits through the sign of a
 * balanced 1-D logistic slope fitted on every earlier sample (prefix sums
 * make each window O(its size)), and the 3-class log loss. The walk itself
 * is ch_walk's.
 */
#include <math.h>
#include <stdlib.h>

#include "xalloc.h"
#include "evaluator/challenges/ch_walk.h"

#define HF_FIRST 2060   /* min_train 2000 + lag 60 */
#define HF_STEP 4000
#define HF_MIN 200
#define HF_MIN_VALID 500

/* The scorer's samples: k embedding rows rows[] whose label cl[] is valid. */
struct hf_ctx {
	int32_t *cl;
	size_t *rows;
	size_t k;
	float *probs;           /* k x 3 clipped, renormalised probabilities */
	struct hf_side *up, *dn;
};

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

/* ch_walk finite hook: the three probability columns of sample i's row. */
static bool hf_finite(void *ctx, const struct ch_job *j, size_t i, size_t *row, size_t *col,
    float *v)
{
	const struct hf_ctx *b = ctx;

	*row = b->rows[i];
	return ch_walk_row_finite(j, *row, 3, col, v);
}

/* ch_walk window hook: up/down AUC (NaN when undefined) and, with two
 * classes at least, the 3-class log loss. Every window is kept. */
static enum ch_err hf_window(void *ctx, const struct ch_job *j, const struct ch_span *w,
    json_object *o, struct ch_walk_win *out, json_object **result)
{
	const struct hf_ctx *b = ctx;
	size_t s = w->start, e = w->end;
	bool seen[3] = { false, false, false };

	out->v[0] = NAN;
	out->v[1] = hf_side_auc(b->up, s, e);
	out->v[2] = hf_side_auc(b->dn, s, e);
	for (size_t i = s; i < e; i++)
		seen[b->cl[i]] = true;
	if ((seen[0] + seen[1] + seen[2]) >= 2) {
		for (size_t i = s * 3; i < e * 3; i++)
			if (isnan(b->probs[i]))
				return ch_fail(j, result, CH_ERR_PREDICTION, "Input contains NaN.");
		out->v[0] = ch_log_loss3(b->probs + s * 3, b->cl + s, e - s);
		out->late_key = "direct_log_loss";
		out->late = out->v[0];
	}
	json_object_object_add(o, "up_auc", ch_jdouble(out->v[1]));
	json_object_object_add(o, "dn_auc", ch_jdouble(out->v[2]));
	out->n_samples = (int64_t)(e - s);
	out->keep = true;
	return CH_OK;
}

/* ch_walk head hook. */
static void hf_head(void *ctx, const struct ch_job *j, json_object *res)
{
	const struct hf_ctx *b = ctx;

	json_object_object_add(res, "n_timesteps", json_object_new_int64((int64_t)j->p->m.T));
	json_object_object_add(res, "n_valid", json_object_new_int64((int64_t)b->k));
	json_object_object_add(res, "horizon", json_object_new_int64((int64_t)j->p->def->horizon));
}

/* The valid samples of the first n_usable rows; returns the holdout
 * boundary in sample coordinates. */
static size_t hf_compact(const struct ch_job *j, const int32_t *lab, size_t n_usable,
    struct hf_ctx *b)
{
	int64_t *rel = xcalloc(n_usable, sizeof *rel);
	size_t hs;

	b->rows = xcalloc(n_usable, sizeof *b->rows);
	b->cl = xcalloc(n_usable, sizeof *b->cl);
	for (size_t i = 0; i < n_usable; i++)
		if (lab[j->warmup + i] >= 0) {
			b->rows[b->k] = i;
			rel[b->k] = (int64_t)i;
			b->cl[b->k] = lab[j->warmup + i];
			b->k++;
		}
	hs = ch_searchsorted_left(rel, b->k, j->holdout_start > (long)j->warmup ?
	    (int64_t)j->holdout_start - (int64_t)j->warmup : 0);
	free(rel);
	return hs;
}

/* Score ETH-HITFIRST-100M. */
enum ch_err ch_score_hitfirst(const struct ch_job *j, json_object **result)
{
	const struct ch_prepared *p = j->p;
	size_t T = p->m.T, h = p->def->horizon;
	long n_usable = (long)(T > h ? T - h : 0) - (long)j->warmup;
	struct hf_side up = { 0 }, dn = { 0 };
	struct hf_ctx b = { .up = &up, .dn = &dn };
	struct ch_walk_ops ops = { .first = HF_FIRST, .step = HF_STEP, .min_len = HF_MIN,
	    .no_windows = "no valid walk-forward windows", .nvals = 3,
	    .sum = { { "direct_log_loss", ch_mean_finite }, { "up_auc", ch_mean_finite },
	        { "dn_auc", ch_mean_finite } },
	    .finite = hf_finite, .window = hf_window, .head = hf_head };
	int32_t *lab;
	enum ch_err rc;

	if (n_usable <= 0)
		return ch_fail(j, result, CH_ERR_EVAL, "not enough data after warmup");
	lab = xcalloc(T, sizeof *lab);
	ch_hitfirst_labels(p->m.close[0], T, h, p->def->vol_window, p->mode, lab);
	ops.hs = hf_compact(j, lab, (size_t)n_usable, &b);
	free(lab);
	if (b.k < HF_MIN_VALID) {
		rc = ch_fail(j, result, CH_ERR_EVAL, "only %zu valid samples, need >= %d", b.k,
		    HF_MIN_VALID);
	} else if (j->dim < 3) {
		rc = p->mode != CH_MODE_MANTIS ? ch_fail_dim(j, result, 3) : ch_fail(j, result,
		    CH_ERR_PREDICTION, "hitfirst requires embedding dim >= 3, got shape (%zu, %zu)",
		    b.k, j->dim);
	} else {
		b.probs = xcalloc(xmul(b.k, 3), sizeof *b.probs);
		hf_probs(j, b.rows, b.k, b.probs);
		hf_side_init(&up, b.probs, b.cl, b.k, 0);
		hf_side_init(&dn, b.probs, b.cl, b.k, 1);
		ops.n = b.k;
		rc = ch_walk_run(j, &ops, &b, result);
	}
	hf_side_free(&up);
	hf_side_free(&dn);
	free(b.rows);
	free(b.cl);
	free(b.probs);
	return rc;
}

/*
 * ch_score: entry points of scoring: shape checks on the embedding matrix,
 * dispatch to the per-type scorer, and the ctypes-friendly JSON form.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xalloc.h"
#include "evaluator/challenges/ch_internal.h"

/* Score prepared series p (see challenges.h). */
enum ch_err ch_score_prepared(const struct ch_prepared *p, const float *emb,
    size_t rows, size_t dim, size_t warmup, long holdout_start,
    json_object **result, char *err, size_t errlen)
{
	struct ch_job j = { p, emb, rows, dim, warmup, holdout_start, err, errlen };
	size_t want;

	*result = NULL;
	if (err != NULL && errlen > 0)
		err[0] = '\0';
	if (p == NULL) {
		if (err != NULL && errlen > 0)
			snprintf(err, errlen, "no prepared series");
		return CH_ERR_INPUT;
	}
	want = warmup < p->m.T ? p->m.T - warmup : 0;
	if (rows != want || dim > CH_MAX_DIM || (rows > 0 && dim > 0 && emb == NULL) ||
	    warmup > CH_MAX_BARS) {
		if (err != NULL && errlen > 0)
			snprintf(err, errlen, "embedding matrix is %zu x %zu; expected %zu rows "
			    "(T=%zu bars, warmup=%zu) and at most %d columns",
			    rows, dim, want, p->m.T, warmup, CH_MAX_DIM);
		return CH_ERR_INPUT;
	}
	if (holdout_start < 0)
		holdout_start = 0;
	j.holdout_start = holdout_start;
	switch (p->def->type) {
	case CH_BINARY: return ch_score_binary(&j, result);
	case CH_HITFIRST: return ch_score_hitfirst(&j, result);
	case CH_LBFGS: return ch_score_lbfgs(&j, result);
	case CH_BREAKOUT: return ch_score_breakout(&j, result);
	case CH_XSEC_RANK:
	case CH_FUNDING_XSEC: return ch_score_xsec(&j, result);
	default: break;
	}
	if (err != NULL && errlen > 0)
		snprintf(err, errlen, "unknown challenge type");
	return CH_ERR_INPUT;
}

/* Prepare and score in one call. */
enum ch_err ch_score(const struct ch_def *def, enum ch_mode mode,
    const struct ch_market *m, const float *emb, size_t rows, size_t dim,
    size_t warmup, long holdout_start, json_object **result, char *err, size_t errlen)
{
	struct ch_prepared *p = NULL;
	enum ch_err rc;

	*result = NULL;
	rc = ch_prepare(def, mode, m, &p, err, errlen);
	if (rc != CH_OK)
		return rc;
	rc = ch_score_prepared(p, emb, rows, dim, warmup, holdout_start, result, err, errlen);
	ch_prepared_free(p);
	return rc;
}

/* Score by name and return JSON text (result, error object, or input error). */
char *ch_score_json(const char *name, int mode, const struct ch_market *m,
    const float *emb, size_t rows, size_t dim, size_t warmup, long holdout_start, int *rc)
{
	char err[512] = "";
	json_object *res = NULL;
	const struct ch_def *def = ch_lookup(name);
	enum ch_err e;
	char *s;

	if (def == NULL) {
		size_t off;
		e = CH_ERR_INPUT;
		snprintf(err, sizeof err, "unknown challenge '%.64s'; valid: ", name ? name : "(null)");
		for (size_t i = 0; i < ch_count(); i++) {
			off = strlen(err);
			snprintf(err + off, sizeof err - off, "%s%s", i ? ", " : "", ch_at(i)->name);
		}
	} else if (mode != CH_MODE_STRICT && mode != CH_MODE_MANTIS) {
		e = CH_ERR_INPUT;
		snprintf(err, sizeof err, "unknown mode %d", mode);
	} else {
		e = ch_score(def, (enum ch_mode)mode, m, emb, rows, dim, warmup, holdout_start,
		    &res, err, sizeof err);
	}
	if (res == NULL) {
		res = json_object_new_object();
		json_object_object_add(res, "error", json_object_new_string(err));
	}
	s = xstrdup(json_object_to_json_string_ext(res, JSON_C_TO_STRING_PLAIN));
	json_object_put(res);
	if (rc != NULL)
		*rc = (int)e;
	return s;
}

/* free() for library allocations. */
void ch_free(void *p)
{
	free(p);
}

/*
 * ch_internal: what the challenge files share and nothing else sees:
 * numeric helpers with numpy's exact arithmetic, the window grid, the
 * prepared-market layout and the per-type scorers.
 */
#ifndef AGENTTEST_EVALUATOR_CH_INTERNAL_H
#define AGENTTEST_EVALUATOR_CH_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "evaluator/challenges/challenges.h"

#define CH_EPS 1e-12           /* the original's EPS: ln(price + EPS) */
#define CH_MAX_BARS ((size_t)1 << 28)
#define CH_MAX_ASSETS 4096
#define CH_MAX_DIM 65536

struct ch_prepared {
	const struct ch_def *def;
	enum ch_mode mode;
	struct ch_market m;          /* T and the selected assets, challenge order */
	/* Owned storage behind m's pointer arrays. */
	const char **names;
	const double **cols[5];      /* open, high, low, close, volume */
	const double **fields;       /* one column per asset of def->field, or NULL */
	double *owned;               /* compacted or NaN-masked copies, if any */
	int64_t *ts_owned;           /* timestamps of a copied grid */
	const char *field_name;      /* def->field, for m.field_names */
};

/* A window of a walk-forward grid in the type's coordinates. */
struct ch_span {
	size_t start, end;
	bool in_holdout;
};

/* The inputs every scorer sees. */
struct ch_job {
	const struct ch_prepared *p;
	const float *emb;
	size_t rows, dim, warmup;
	long holdout_start;
	char *err;
	size_t errlen;
};

/* ln(p + EPS) of n prices. */
void ch_log_prices(const double *p, size_t n, double *out);
/* ch_rolling_std + the NaN-robust strict variant (internal entry point). */
size_t ch_rolling_std_impl(const double *x, size_t n, size_t w, bool strict, double *out);
/* numpy searchsorted(side=left) of one key in a (possibly unsorted) int64
 * array, with numpy's exact probe sequence. */
size_t ch_searchsorted_left(const int64_t *a, size_t n, int64_t key);
/* Mean of the finite values (NaN when none), numpy order. */
double ch_mean_finite(const double *x, size_t n);
/* logit(clip(p)) in float32 arithmetic, NaN/Inf -> 0 (the hitfirst scores). */
float ch_logit32(float p);

/*
 * Window grid over n samples: starts at first, step `step`. Mantis: the
 * original's grid, in_holdout = start >= hs. Strict: dev windows stop at hs,
 * holdout windows start at max(first, hs), windows shorter than min_len are
 * dropped. Returns the count; *out is malloc'd (free()).
 */
size_t ch_grid(size_t first, size_t step, size_t n, size_t hs, enum ch_mode mode,
    size_t min_len, struct ch_span **out);

/* A value and its position, for rank sorting. */
struct ch_iv {
	double v;
	size_t i;
};

/* Spearman rho with caller scratch (rx, ry: n doubles; tmp: max(n, 64) pairs). */
double ch_spearman_buf(const double *x, const double *y, size_t n, double *rx, double *ry,
    struct ch_iv *tmp);

/* Average ranks by counting, n <= 64 (double and float32 values). */
void ch_ranks_count(const double *x, size_t n, double *r);
void ch_ranks_count_f32(const float *x, size_t n, double *r);
/* Spearman from average ranks (corrcoef order); NaN if a side is constant. */
double ch_rho_ranks(const double *rx, const double *ry, size_t n);

/* AUC of float32 scores with y in {0,1}; optional negation of the scores. */
double ch_auc_f32(const float *s, const unsigned char *y, size_t n, bool negate);

/* Result helpers: NaN -> null. */
json_object *ch_jdouble(double v);
/* Set err/result to {"error": msg} and return code. */
enum ch_err ch_fail(const struct ch_job *j, json_object **result, enum ch_err code,
    const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* Append the window summary keys and return the window object. */
json_object *ch_window_obj(const struct ch_span *w);
/* Common head of a result: challenge, type. */
json_object *ch_result_head(const struct ch_prepared *p);
/* Strict-mode message for a non-finite prediction at embedding row `row`,
 * column col; names the window of `spans` holding coordinate `coord`. */
enum ch_err ch_fail_nonfinite(const struct ch_job *j, json_object **result, size_t row,
    size_t col, float v, const struct ch_span *spans, size_t nspans, size_t coord);
/* Strict-mode message for an embedding narrower than needed. */
enum ch_err ch_fail_dim(const struct ch_job *j, json_object **result, size_t need);

enum ch_err ch_score_binary(const struct ch_job *j, json_object **result);
enum ch_err ch_score_hitfirst(const struct ch_job *j, json_object **result);
enum ch_err ch_score_lbfgs(const struct ch_job *j, json_object **result);
enum ch_err ch_score_breakout(const struct ch_job *j, json_object **result);
enum ch_err ch_score_xsec(const struct ch_job *j, json_object **result);

#endif

/*
 * challenges: the MANTIS prediction-signal challenges, scored in C.
 *
 * What this component does, given price columns and an embedding matrix:
 * labels per challenge type, breakout event detection, metrics, window
 * grids, walk-forward scoring and the result dictionary (json-c). It does no
 * I/O and runs no strategy code: the runner (or the Python SDK, through the
 * shared library build/<variant>/libagenttest_eval.so and ctypes) streams the
 * bars into the strategy, collects one float32 embedding row per step and
 * hands the matrix here.
 *
 * Two modes (docs/challenges.md lists every difference):
 *   CH_MODE_STRICT (default) fixes the original's bugs: breakout holdout by
 *     trigger time, assets aligned by timestamp with explicit gaps, non-finite
 *     predictions rejected with an error naming the window and row, windows
 *     below the type's minimum size dropped, the holdout start aligned to the
 *     window grid.
 *   CH_MODE_MANTIS reproduces the original MANTIS tool bit for bit, quirks
 *     and error messages included (assets aligned by row: gaps are squeezed
 *     out of each asset and every asset cut to the shortest).
 *
 * The flow for a caller that streams bars:
 *   1. def = ch_lookup(name);
 *   2. ch_prepare(def, mode, &market, &prep, ...) selects the challenge's
 *      assets (in the challenge's order, which is the embedding column
 *      order) and, in mantis mode, aligns them by row. Stream exactly the
 *      bars of ch_prepared_market(prep) to the strategy: its T and its rows
 *      are the coordinates of the embedding matrix and of holdout_start.
 *   3. collect rows for t = warmup .. T-1 (row i <-> t = warmup + i, float32,
 *      row-major rows x dim);
 *   4. ch_score_prepared(prep, emb, rows, dim, warmup, holdout_start, &json).
 * ch_score() does 2 and 4 in one call when the caller already holds the
 * embeddings. holdout_start is an absolute bar index of the prepared series
 * (the original's agent script uses max(0, T - 20*1440)); 0 = everything is
 * holdout, as in the original.
 *
 * Result dictionaries have the original's keys in the original's order plus
 * "n_samples" (test samples actually scored) at the end of every window.
 * NaN metrics are written as JSON null. A failed evaluation is
 * {"error": "<message>"} (mantis: the original's message, including the text
 * of the numpy/scikit-learn exception where the original raised).
 *
 * Every function marked CH_API is exported from the shared library; the
 * array-level helpers (labels, events, metrics) exist so that tests can check
 * each piece against an independent numpy/scikit-learn reference.
 */
#ifndef AGENTTEST_EVALUATOR_CHALLENGES_H
#define AGENTTEST_EVALUATOR_CHALLENGES_H

#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#define CH_API __attribute__((visibility("default")))

enum ch_type {
	CH_BINARY,        /* ETH-1H-BINARY: direction over the horizon */
	CH_HITFIRST,      /* ETH-HITFIRST-100M: which sigma barrier is touched first */
	CH_LBFGS,         /* ETH-LBFGS, BTC-LBFGS-6H: z-scored return bucket */
	CH_BREAKOUT,      /* MULTI-BREAKOUT: continuation vs reversal after a range break */
	CH_XSEC_RANK,     /* XSEC-RANK: cross-sectional return rank */
	CH_FUNDING_XSEC,  /* FUNDING-XSEC: cross-sectional funding-rate change rank */
	CH_TYPE__MAX
};

enum ch_mode { CH_MODE_STRICT = 0, CH_MODE_MANTIS = 1, CH_MODE__MAX };

enum ch_err {
	CH_OK = 0,
	CH_ERR_INPUT,       /* caller error: bad arguments, shapes, unknown challenge */
	CH_ERR_EVAL,        /* evaluation refused (too little data, no windows, ...) */
	CH_ERR_PREDICTION,  /* the predictions are unusable (non-finite, too narrow) */
	CH_ERR__MAX
};

/* One challenge (a row of the original's CHALLENGES table). */
struct ch_def {
	const char *name;
	enum ch_type type;
	const char *primary_asset;
	const char *const *assets;  /* column order of the embedding */
	size_t n_assets;
	size_t emb_dim;             /* dimension the strategy should emit */
	size_t horizon;             /* bars (minutes); 0 for breakout */
	double weight;              /* informative only, never used in scoring */
	size_t vol_window;          /* hitfirst/lbfgs label volatility window */
	size_t range_lookback;      /* breakout */
	double barrier_pct;         /* breakout */
	double min_range_pct;       /* breakout */
	size_t max_pending;         /* breakout */
	const char *field;          /* extra field a challenge needs ("funding_1h") or NULL */
	const char *short_desc;     /* one line for listings */
	const char *desc;           /* the embedding format told to the strategy */
};

/*
 * Market data handed in by the caller: T bars on one timestamp grid. Every
 * per-asset pointer array has n_assets entries; a column has T doubles, NaN
 * where the asset has no bar (as evaluator/dataset.h stores gaps). Only
 * `close` is required; open/high/low/volume may be NULL (then the prepared
 * market has none either). valid, when given, marks bars that exist (1) or
 * not (0) in addition to NaN closes. fields holds extra per-asset columns
 * (e.g. funding_1h): fields[f * n_assets + a], NULL when the asset lacks it.
 * All memory stays the caller's.
 */
struct ch_market {
	size_t T;
	const int64_t *ts;                  /* T ms timestamps or NULL */
	size_t n_assets;
	const char *const *names;
	const double *const *open;
	const double *const *high;
	const double *const *low;
	const double *const *close;
	const double *const *volume;
	const unsigned char *const *valid;  /* NULL or n_assets masks (entries may be NULL) */
	size_t n_fields;
	const char *const *field_names;
	const double *const *fields;
};

/* A breakout event (see ch_breakout_detect). */
struct ch_event {
	int64_t trigger_t;
	int64_t resolution_t;
	int32_t asset;      /* column index in the detection input */
	int32_t direction;  /* +1 high break, -1 low break */
	int32_t label;      /* 1 continuation, 0 reversal */
	int32_t pad_;
};

struct ch_prepared;  /* opaque: the series a challenge is scored on */

/* ---- the table ---------------------------------------------------------- */

/* Number of challenges, FUNDING-XSEC included. */
CH_API size_t ch_count(void);
/* The i-th challenge (table order), or NULL when i >= ch_count(). */
CH_API const struct ch_def *ch_at(size_t i);
/* The challenge called `name` (exact), or NULL. */
CH_API const struct ch_def *ch_lookup(const char *name);
/* "binary", "hitfirst", "lbfgs", "breakout", "xsec_rank", "funding_xsec". */
CH_API const char *ch_type_name(enum ch_type t);
/* "strict" / "mantis"; ch_mode_parse returns -1 for anything else. */
CH_API const char *ch_mode_name(enum ch_mode m);
CH_API int ch_mode_parse(const char *s);
/* Message and machine code ("bad_request", "bad_output", ...) for an error. */
CH_API const char *ch_strerror(enum ch_err e);
CH_API const char *ch_errcode(enum ch_err e);
/*
 * The catalogue in the original's GET /api/challenges shape: name -> {type,
 * short, desc, asset, metric, metric_info {primary, all, direction, label,
 * baseline}, embedding_dim, horizon, assets}. Challenges that need an extra
 * field are listed only when has_field(field, ctx) returns non-zero
 * (has_field NULL lists none of them). Caller owns the object.
 */
json_object *ch_catalog(int (*has_field)(const char *field, void *ctx), void *ctx);
/* The catalogue as a malloc'd JSON string (ch_free), listing the challenges
 * whose extra field is among the n names in `fields` (for ctypes). */
CH_API char *ch_catalog_json(const char *const *fields, size_t n);

/* ---- scoring ------------------------------------------------------------ */

/*
 * Select the challenge's assets from `m` (those present, in the challenge's
 * order) and align them for `mode` (see the top of this file). Fails with
 * CH_ERR_INPUT on a malformed market, a single-asset challenge whose asset is
 * absent, or (strict) timestamps off the 1-minute grid; too few assets for a
 * multi-asset challenge is left to scoring, which reports it with the
 * original's message. *out must be freed with ch_prepared_free.
 */
CH_API enum ch_err ch_prepare(const struct ch_def *def, enum ch_mode mode,
    const struct ch_market *m, struct ch_prepared **out, char *err, size_t errlen);
/* The aligned market (names in challenge order; valid == NULL; no copies
 * unless alignment needed them). Valid while p lives. */
CH_API const struct ch_market *ch_prepared_market(const struct ch_prepared *p);
CH_API void ch_prepared_free(struct ch_prepared *p);

/*
 * Score the embeddings of prepared series p. emb is rows x dim float32,
 * row-major, row i <-> t = warmup + i; rows must be T - warmup (0 when
 * warmup >= T). On CH_OK *result is the result dictionary; on CH_ERR_EVAL
 * and CH_ERR_PREDICTION *result is {"error": msg} and err holds msg too; on
 * CH_ERR_INPUT *result is NULL. err may be NULL.
 */
CH_API enum ch_err ch_score_prepared(const struct ch_prepared *p, const float *emb,
    size_t rows, size_t dim, size_t warmup, long holdout_start,
    json_object **result, char *err, size_t errlen);
/* ch_prepare + ch_score_prepared. */
CH_API enum ch_err ch_score(const struct ch_def *def, enum ch_mode mode,
    const struct ch_market *m, const float *emb, size_t rows, size_t dim,
    size_t warmup, long holdout_start, json_object **result, char *err, size_t errlen);
/*
 * For ctypes: score challenge `name` and return the result (or the error
 * object {"error": msg}) as a malloc'd JSON string; free it with ch_free.
 * *rc receives the enum ch_err (may be NULL).
 */
CH_API char *ch_score_json(const char *name, int mode, const struct ch_market *m,
    const float *emb, size_t rows, size_t dim, size_t warmup, long holdout_start, int *rc);
/* free() for memory this library hands out (JSON strings, event arrays). */
CH_API void ch_free(void *p);

/* ---- SDK copy-on-write view memory (sdk_cowmem.c) ------------------------ */

/* Map bytes [off, off+nbytes) of fd MAP_PRIVATE, arm it for this thread's
 * next handler malloc of nbytes; 0 or -errno. */
CH_API int sdk_cow_arm(int fd, int64_t off, size_t nbytes);
/* Unmap an armed mapping that was not taken. */
CH_API void sdk_cow_disarm(void);
/* numpy PyDataMem_Handler (version 1) serving armed mappings. */
CH_API void *sdk_cow_handler(void);

/* ---- labels (array level; strict = NaN-robust, mantis = numpy's arithmetic) */

/* Sample std (ddof 1) of every length-w window of x by double prefix sums;
 * out gets n - w + 1 values; returns that count (0 when n < w). Strict mode
 * gives NaN for windows holding a NaN instead of poisoning all later ones. */
CH_API size_t ch_rolling_std(const double *x, size_t n, size_t w, int mode, double *out);
/* Causal sigma series (T values, NaN where undefined). */
CH_API void ch_sigma_series(const double *p, size_t T, size_t h, size_t vw, int mode, double *out);
/* label[t] = p[t+h] > p[t], t < T-h; returns T-h (0 if T <= h). Strict mode
 * writes -1 where either price is missing. */
CH_API size_t ch_binary_labels(const double *p, size_t T, size_t h, int mode, int32_t *out);
/* Hitfirst labels 0 up first, 1 down first, 2 neither, -1 invalid; returns T-h. */
CH_API size_t ch_hitfirst_labels(const double *p, size_t T, size_t h, size_t vw, int mode, int32_t *out);
/* LBFGS buckets 0..4 of valid times (ascending) into bucket/times (each of
 * capacity T); returns the count. */
CH_API size_t ch_lbfgs_labels(const double *p, size_t T, size_t h, size_t vw, int mode,
    int32_t *bucket, int64_t *times);
/* Simple h-bar returns of A columns: ret is (T-h) x A row-major, NaN unless
 * both prices > 0; valid[t] = all A finite. Returns T-h (0 if T <= h). */
CH_API size_t ch_xsec_returns(const double *const *cols, size_t A, size_t T, size_t h,
    double *ret, unsigned char *valid);
/* Differences f[t+h] - f[t] (funding change); same shapes as above. */
CH_API size_t ch_diff_returns(const double *const *cols, size_t A, size_t T, size_t h,
    double *ret, unsigned char *valid);
/* make_xsec_labels: 1 above the row's NaN-aware median, 0 otherwise, -1 where
 * the return is NaN; valid[t] iff no -1. Returns T-h. */
CH_API size_t ch_xsec_labels(const double *const *cols, size_t A, size_t T, size_t h,
    int32_t *labels, unsigned char *valid);
/* Breakout events of A close columns (T bars each), sorted by resolution
 * (stable: asset order, high before low). *events is malloc'd (ch_free);
 * returns the count. Mantis: NaN in a range disables breaks as numpy's max
 * does; strict: gaps are skipped. O(T) per asset. */
CH_API size_t ch_breakout_detect(const double *const *cols, size_t A, size_t T,
    size_t L, double barrier_pct, double min_range_pct, size_t max_pending,
    int mode, struct ch_event **events);

/* ---- metrics ------------------------------------------------------------ */

/* numpy's pairwise float64 sum (np.sum of a contiguous array), bit for bit. */
CH_API double ch_np_sum(const double *x, size_t n);
/* np.nanmean (NaN when no finite-or-infinite non-NaN value). */
CH_API double ch_nanmean(const double *x, size_t n);
/* sklearn roc_auc_score (binary) bit for bit: ROC curve with tied scores
 * grouped, collinear points dropped, trapezoid area. Both classes required
 * (else NaN). O(n log n). */
CH_API double ch_roc_auc(const double *score, const unsigned char *y, size_t n);
/* Multi-class log loss of n rows of 3 float32 probabilities against labels
 * {0,1,2}: clip to [eps32, 1-eps32], mean of -ln p_true (sklearn 1.7). */
CH_API double ch_log_loss3(const float *probs, const int32_t *y, size_t n);
/* Mean over classes present in y (0..k-1) of per-class recall; 0 if none. */
CH_API double ch_balanced_accuracy(const int32_t *y, const int32_t *pred, size_t n, int k);
/* Spearman rho (average ranks, Pearson on ranks, as scipy); NaN if n < 2 or
 * a side is constant. */
CH_API double ch_spearman(const double *x, const double *y, size_t n);
/* Sign of the slope of a 1-D class-balanced logistic regression of y on s:
 * sign(mean s | y=1 - mean s | y=0); 0 if equal or a class is missing. */
CH_API int ch_logit_slope_sign(const double *s, const unsigned char *y, size_t n);
/* ln(x) of a float32 bit for bit as numpy 1.24's SIMD np.log (AVX2/AVX-512F
 * CPUs), in portable C: the hitfirst logits use it (ch_npylog.c). */
CH_API float ch_npy_logf(float x);

#endif

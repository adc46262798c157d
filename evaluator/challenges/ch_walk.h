/*
 * ch_walk: the one walk-forward driver of the five challenge scorers.
 *
 * Theory of operation. Every scorer turns the embedding into a sequence of
 * n samples (embedding rows, compacted valid labels, or breakout events) and
 * names where the holdout starts in that sequence; everything after that is
 * the same for all of them and lives here once:
 *
 *   1. cut the samples into the window grid (ch_grid: the original's grid in
 *      mantis mode, dev windows ending at the holdout boundary in strict);
 *   2. in strict mode, refuse the first non-finite prediction a scored
 *      sample uses, naming its window (ops->finite says which value that is);
 *   3. score each window (ops->window adds its metric keys to the window
 *      object and hands back up to CH_WALK_MAXV values, or skips it, or
 *      fails); the driver adds in_holdout and n_samples and keeps the
 *      holdout windows' values;
 *   4. fail when no window was kept or none lies in the holdout; in strict
 *      mode the message then says why, from the first skipped window's
 *      reason (ch_walk_win.why: "window 3 [8260, 12260): ..."), so a user
 *      learns what to change; mantis mode keeps the original's words;
 *   5. build the result: {challenge, type}, the scorer's own keys
 *      (ops->head), the windows, and per value the mean over the holdout
 *      windows under the key and with the mean the scorer's table names.
 *
 * A scorer keeps only what differs: its labels and samples (before calling
 * ch_walk_run), its window metric and its summary table. The driver owns no
 * scorer memory: ctx is the scorer's and outlives the call.
 */
#ifndef AGENTTEST_EVALUATOR_CH_WALK_H
#define AGENTTEST_EVALUATOR_CH_WALK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "evaluator/challenges/ch_internal.h"

#define CH_WALK_MAXV 3

/* What one window gave: keep = false skips it (a window without two
 * classes, too few valid rows); v[] are its values, n_samples its size;
 * late_key, when set, is one more key (value late) that the original
 * writes after in_holdout (key order is part of the result). */
struct ch_walk_win {
	bool keep;
	double v[CH_WALK_MAXV];
	int64_t n_samples;
	const char *late_key;
	double late;
	/* A skipped window's reason in words (keep = false), e.g. "every row's
	 * predictions were identical across assets, Spearman undefined". */
	char why[192];
};

/* One summary key: the mean of value k over the holdout windows. */
struct ch_walk_sum {
	const char *key;
	double (*mean)(const double *x, size_t n);
};

/* What a scorer supplies. */
struct ch_walk_ops {
	/* The grid over n samples: first start, step, minimum window length
	 * (shorter windows are dropped), holdout boundary hs (ch_grid). */
	size_t first, step, min_len, n, hs;
	/* Message when no window was kept. */
	const char *no_windows;
	/* Summary keys, one per window value (nvals <= CH_WALK_MAXV). */
	size_t nvals;
	struct ch_walk_sum sum[CH_WALK_MAXV];
	/* Strict mode: false when sample i's prediction is non-finite, with the
	 * embedding row, column and value to report. May be NULL. */
	bool (*finite)(void *ctx, const struct ch_job *j, size_t i, size_t *row, size_t *col,
	    float *v);
	/* Score window w into o and *out. A failure returns its code after
	 * ch_fail(j, result, ...); CH_OK otherwise. */
	enum ch_err (*window)(void *ctx, const struct ch_job *j, const struct ch_span *w,
	    json_object *o, struct ch_walk_win *out, json_object **result);
	/* Add the scorer's keys (counts, horizon) to the result head. */
	void (*head)(void *ctx, const struct ch_job *j, json_object *res);
};

/* For finite hooks: true when columns 0..ncol of embedding row `row` are
 * finite, else false with the first non-finite column and its value. */
bool ch_walk_row_finite(const struct ch_job *j, size_t row, size_t ncol, size_t *col, float *v);

/* Run the walk-forward evaluation of job j (steps 1-5 above). On CH_OK
 * *result is the result object, otherwise the {"error"} object of
 * ch_fail; either way the caller owns it. */
enum ch_err ch_walk_run(const struct ch_job *j, const struct ch_walk_ops *ops, void *ctx,
    json_object **result);

#endif

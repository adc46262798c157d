/*
 * metrics: the standardized metrics of a run, computed by the trusted side
 * from an equity curve (docs/metrics.md has every definition).
 *
 * The original's set keeps its exact formulas (spec/agenttest.md §3.6):
 * total_return, cagr, max_drawdown, volatility, sharpe, score, with pandas
 * semantics for NaN (pct_change forward-fills, NaN returns are dropped,
 * cummax and min skip NaN). The annualisation factor S is an argument that
 * the caller takes from the dataset's bar interval, never from params.
 * Added: sortino, calmar, annualized_return, downside_deviation, hit_rate,
 * n_bars; for positions strategies turnover, average_exposure, fees_paid,
 * liquidation_events and capital_efficiency (null for simulate strategies).
 *
 * One pass over the curve, one division per bar, no allocation.
 */
#ifndef AGENTTEST_EVALUATOR_METRICS_H
#define AGENTTEST_EVALUATOR_METRICS_H

#include <stddef.h>

#include "buf.h"

enum metric_id {
	MET_TOTAL_RETURN = 0,
	MET_CAGR,
	MET_MAX_DRAWDOWN,
	MET_VOLATILITY,
	MET_SHARPE,
	MET_SCORE,
	MET_SORTINO,
	MET_CALMAR,
	MET_ANNUALIZED_RETURN,
	MET_DOWNSIDE_DEVIATION,
	MET_HIT_RATE,
	MET_N_BARS,
	MET_TURNOVER,
	MET_AVERAGE_EXPOSURE,
	MET_FEES_PAID,
	MET_LIQUIDATION_EVENTS,
	MET_CAPITAL_EFFICIENCY,
	MET_RUNTIME_S,
	MET__MAX
};

/* A metric is a double or null (undefined for this run, e.g. sortino with
 * no losing bar); null is never a stand-in for a non-finite value. */
struct metrics {
	double        v[MET__MAX];
	unsigned char present[MET__MAX]; /* 0: null */
};

/* Positions-engine figures that feed the positions-only metrics. */
struct metrics_positions {
	double turnover;           /* sum of |Δposition| over executed trades */
	double average_exposure;   /* mean |position| over held bars */
	double fees_paid;          /* sum of fees, in units of the initial capital */
	long   liquidation_events; /* bars at which the account was wiped out (0 or 1) */
};

/* JSON name of a metric ("total_return", ...). */
const char *metric_name(enum metric_id id);

/*
 * Compute every equity-curve metric of E[0..n-1] with S bars per year into m
 * (positions-only metrics null, runtime_s null until metrics_set()).
 */
void metrics_compute(const double *E, size_t n, double S, struct metrics *m);

/* Fill the positions-only metrics (capital_efficiency = total_return /
 * average_exposure, null when the exposure is 0). */
void metrics_add_positions(struct metrics *m, const struct metrics_positions *p);

/* Set metric id to v (present). */
void metrics_set(struct metrics *m, enum metric_id id, double v);

/* The first present metric that is NaN or infinite, or -1 if none. */
int metrics_first_non_finite(const struct metrics *m);

/* Append the metrics as one JSON object (table order; null for absent;
 * n_bars and liquidation_events as integers; floats as Python repr). */
void metrics_to_json(const struct metrics *m, struct buf *b);

#endif

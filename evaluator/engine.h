/*
 * engine: equity from target positions (the `positions` strategy kind).
 *
 * The strategy returns w[t], the target exposure (fraction of equity; 1 =
 * fully long, -1 fully short, 2 = twice levered) decided at the close of
 * bar t with data up to t. Next-bar execution: w[t] is held from t to t+1,
 * so it earns the return of bar t+1, and the trade into it pays the fee:
 *
 *   E[0] = 1
 *   E[t] = E[t-1] * (1 + w[t-1] * r[t] - fee * |w[t-1] - w[t-2]|),  t >= 1
 *   r[t] = p[t] / p[t-1] - 1  (prices forward-filled over gaps; 0 before
 *                              the first price), w[-1] = 0
 *
 * so the position is rebalanced to its target fraction of equity at every
 * bar (fees on |Δw|, i.e. on turnover, not on the drift between bars). The
 * last decision w[n-1] is never executed. Every w must be finite (else
 * EV_BAD_OUTPUT naming the bar); |w| above max_leverage is clamped to it and
 * counted. If a bar's growth factor is <= 0 the account is wiped out: that
 * bar's equity is 0, it counts as a liquidation event, and the account stays
 * flat at 0 afterwards. Fee and leverage come from the run's configuration,
 * never from the strategy's params.
 */
#ifndef AGENTTEST_EVALUATOR_ENGINE_H
#define AGENTTEST_EVALUATOR_ENGINE_H

#include <stddef.h>

#include "evaluator/errors.h"
#include "evaluator/metrics.h"

#define ENGINE_DEFAULT_FEE_BPS      10.0
#define ENGINE_MAX_FEE_BPS          1000.0
#define ENGINE_DEFAULT_MAX_LEVERAGE 1.0
#define ENGINE_MAX_LEVERAGE         100.0

struct engine_cfg {
	double fee_bps;      /* fee per unit of |Δw|, in basis points, 0..ENGINE_MAX_FEE_BPS */
	double max_leverage; /* bound on |w|, (0, ENGINE_MAX_LEVERAGE] */
};

struct engine_report {
	struct metrics_positions pos;
	size_t clamped;   /* positions whose |w| exceeded max_leverage */
	size_t bad_index; /* first offending bar on EV_BAD_OUTPUT */
};

/* Is cfg within the documented ranges? 1 yes, 0 no (msg says why). */
int engine_cfg_valid(const struct engine_cfg *cfg, char *msg, size_t msglen);

/*
 * Compute equity[0..n-1] from prices and positions w (n each; w may be
 * updated in place: clamped values are written back). Returns EV_OK or
 * EV_BAD_OUTPUT (rep->bad_index set) for a non-finite position.
 */
enum ev_err engine_run(const struct engine_cfg *cfg, const double *prices, double *w, size_t n,
		       double *equity, struct engine_report *rep);

/*
 * The engine's state between two bars, so that an account can be advanced
 * one bar at a time (paper trading) with exactly the arithmetic of
 * engine_run, which is itself a loop of engine_step: a curve advanced bar
 * by bar equals engine_run over the same bars and positions bit for bit.
 */
struct engine_state {
	double equity;    /* E after the last bar (1 at the first) */
	double held;      /* position executed over the last bar (w[-1] = 0) */
	double last;      /* last non-NaN price (NaN before the first) */
	double turnover;  /* sum |Δw| so far */
	double fees;      /* fees paid so far, in units of the initial capital */
	double exposure;  /* sum |w| over the held bars */
	long   steps;     /* bars advanced */
	int    wiped;     /* the account was liquidated (equity 0 from then on) */
};

/* The state at the first bar of a curve: E = 1, flat, last price p0. */
void engine_state_init(struct engine_state *s, double p0);

/*
 * Advance s over one bar with price p, holding w (the target decided at the
 * previous bar; already clamped and finite). Returns the new equity and puts
 * |Δw| (the trade executed at this bar, 0 once wiped) into *trade.
 */
double engine_step(const struct engine_cfg *cfg, struct engine_state *s, double w, double p, double *trade);

#endif

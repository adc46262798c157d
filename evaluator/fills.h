/*
 * fills: the trades of a `positions` run, derived on the trusted side from
 * the clamped target exposures the engine executed (engine.h), the dataset's
 * close prices and timestamps, never from anything else the strategy sent.
 *
 * The engine holds w[k] over bar k+1; the trade into it executes at the
 * close of bar k, at the last finite close up to k, with the equity E[k] of
 * that bar (units of the initial capital, E[0] = 1). A fill is a change of
 * target exposure, w[k] != w[k-1] (w[-1] = 0), k = 0..n-2 (the last
 * decision is never executed):
 *
 *   quantity = (w[k] - w[k-1]) * E[k] / price      units of the asset, signed
 *   fee      = E[k] * fee * |w[k] - w[k-1]|         as engine_step charges it
 *   equity   = E[k] - fee                           right after the fill
 *   units    = w[k] * E[k] / price                  held after the fill
 *   cash     = equity - units * price               (derived, not stored)
 *
 * Between fills the engine keeps the exposure at its target fraction of the
 * equity for free (fees are on turnover, not on drift), so the units held
 * drift with the equity and are not trades. fills_compute replays the
 * engine with engine_step itself, so the curve it returns equals
 * engine_run's bit for bit, and the sum of the fees in bar order equals
 * the engine's fees_paid bit for bit. No fill is made once the account is
 * wiped out.
 *
 * The per-bar position pos[t] is the exposure held after the close of bar
 * t: w[t] for t < n-1 while the account lives, w[n-2] at the last bar, 0
 * from a liquidation on. Replaying engine_step with pos[t-1] over bar t
 * gives the equity curve back.
 */
#ifndef AGENTTEST_EVALUATOR_FILLS_H
#define AGENTTEST_EVALUATOR_FILLS_H

#include <stddef.h>
#include <stdint.h>

#include "evaluator/engine.h"

#define FILLS_STORE_MAX 65536u   /* fills kept per run (4 MiB of records) */

/* One fill; the stored record (64 bytes, host byte order = little-endian on x86-64). */
struct fill {
	int64_t bar;       /* the bar at whose close it executes */
	int64_t ts_ms;     /* that bar's timestamp, ms since the epoch */
	double  quantity;  /* signed units: > 0 buy, < 0 sell; ±0 (the side's sign) before the first finite price */
	double  price;     /* the execution price (NaN before the first finite close) */
	double  fee;       /* in units of the initial capital */
	double  position;  /* exposure after the fill (fraction of equity) */
	double  units;     /* units of the asset held after the fill */
	double  equity;    /* equity right after the fill, fee paid */
};
_Static_assert(sizeof(struct fill) == 64, "the stored fill record is 64 bytes");

struct fills_out {
	struct fill *fills;     /* caller's array of max records, or NULL with max 0 */
	size_t       max;
	size_t       stored;    /* fills written (<= max) */
	size_t       total;     /* fills the run made (> stored when truncated) */
	double      *positions; /* caller's n values: pos[t] (see above) */
	double      *equity;    /* caller's n values: the replayed curve */
	double       fees;      /* sum of fees in bar order (== engine fees_paid) */
};

/*
 * Replay the engine over close[0..n) and the clamped, finite exposures
 * w[0..n) (engine_run's output), filling o (see above). ts may be NULL
 * (ts_ms 0). n 0 writes nothing.
 */
void fills_compute(const struct engine_cfg *cfg, const double *close, const int64_t *ts, const double *w,
		   size_t n, struct fills_out *o);

#endif

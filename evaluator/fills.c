/* fills: the trades and per-bar positions of a positions run (see fills.h). */
#include "evaluator/fills.h"

#include <math.h>

/* The fill of bar k, trading from `held` to `w` at equity e and price p. */
static struct fill fills_make(size_t k, const int64_t *ts, double held, double w, double e, double p, double fee)
{
	/* no price yet: quantity 0 carrying the side in its sign */
	struct fill f = { .bar = (int64_t)k, .ts_ms = ts ? ts[k] : 0, .quantity = copysign(0.0, w - held),
			  .price = p, .position = w };
	double tr = fabs(w - held);
	f.fee = e * fee * tr;   /* the very expression engine_step adds to its fees */
	f.equity = e - f.fee;
	if (isfinite(p) && p > 0) {
		f.quantity = (w - held) * e / p;
		f.units = w * e / p;
	}
	return f;
}

void fills_compute(const struct engine_cfg *cfg, const double *close, const int64_t *ts, const double *w,
		   size_t n, struct fills_out *o)
{
	o->stored = o->total = 0;
	o->fees = 0;
	if (n == 0)
		return;
	struct engine_state s;
	double trade, fee = cfg->fee_bps / 10000.0;
	engine_state_init(&s, close[0]);
	o->equity[0] = 1.0;
	for (size_t t = 1; t < n; t++) {
		double held = s.held, e = s.equity, p = s.last;
		int was_wiped = s.wiped;
		o->equity[t] = engine_step(cfg, &s, w[t - 1], close[t], &trade);
		o->positions[t - 1] = was_wiped ? 0.0 : w[t - 1];
		if (was_wiped || trade == 0.0)
			continue;
		o->total++;
		if (o->stored < o->max)
			o->fills[o->stored++] = fills_make(t - 1, ts, held, w[t - 1], e, p, fee);
	}
	/* the last decision is never executed: the last bar keeps the position before it */
	o->positions[n - 1] = s.wiped ? 0.0 : s.held;
	o->fees = s.fees;
}

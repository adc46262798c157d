/* engine: next-bar execution of target positions (see engine.h). */
#include "evaluator/engine.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

int engine_cfg_valid(const struct engine_cfg *cfg, char *msg, size_t msglen)
{
	if (!(cfg->fee_bps >= 0 && cfg->fee_bps <= ENGINE_MAX_FEE_BPS)) {
		snprintf(msg, msglen, "fee must be within 0..%g bps", ENGINE_MAX_FEE_BPS);
		return 0;
	}
	if (!(cfg->max_leverage > 0 && cfg->max_leverage <= ENGINE_MAX_LEVERAGE)) {
		snprintf(msg, msglen, "max leverage must be within (0, %g]", ENGINE_MAX_LEVERAGE);
		return 0;
	}
	return 1;
}

/* Validate and clamp w in place; EV_BAD_OUTPUT at the first non-finite one. */
static enum ev_err engine_clamp(const struct engine_cfg *cfg, double *w, size_t n, struct engine_report *rep)
{
	double L = cfg->max_leverage;
	for (size_t t = 0; t < n; t++) {
		if (!isfinite(w[t])) {
			rep->bad_index = t;
			return EV_BAD_OUTPUT;
		}
		if (w[t] > L) {
			w[t] = L;
			rep->clamped++;
		} else if (w[t] < -L) {
			w[t] = -L;
			rep->clamped++;
		}
	}
	return EV_OK;
}

void engine_state_init(struct engine_state *s, double p0)
{
	memset(s, 0, sizeof *s);
	s->equity = 1.0;
	s->last = p0;
}

double engine_step(const struct engine_cfg *cfg, struct engine_state *s, double w, double p, double *trade)
{
	*trade = 0.0;
	if (s->wiped)
		return 0.0;
	double fee = cfg->fee_bps / 10000.0;
	double tr = fabs(w - s->held);
	double r = 0.0;
	if (!isnan(p)) {
		if (!isnan(s->last))
			r = p / s->last - 1.0;
		s->last = p;
	}
	double g = 1.0 + w * r - fee * tr;
	s->turnover += tr;
	s->fees += s->equity * fee * tr;
	s->exposure += fabs(w);
	s->held = w;
	s->steps++;
	*trade = tr;
	if (!(g > 0)) {
		s->wiped = 1;
		s->equity = 0.0;
		return 0.0;
	}
	s->equity *= g;
	return s->equity;
}

enum ev_err engine_run(const struct engine_cfg *cfg, const double *prices, double *w, size_t n,
		       double *equity, struct engine_report *rep)
{
	memset(rep, 0, sizeof *rep);
	enum ev_err e = engine_clamp(cfg, w, n, rep);
	if (e != EV_OK)
		return e;
	if (n == 0)
		return EV_OK;
	struct engine_state s;
	double trade;
	engine_state_init(&s, prices[0]);
	equity[0] = 1.0;
	for (size_t t = 1; t < n; t++)
		equity[t] = engine_step(cfg, &s, w[t - 1], prices[t], &trade);
	rep->pos.turnover = s.turnover;
	rep->pos.fees_paid = s.fees;
	rep->pos.liquidation_events = s.wiped ? 1 : 0;
	rep->pos.average_exposure = s.exposure / (double)(n - 1 > 0 ? n - 1 : 1);
	return EV_OK;
}

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

enum ev_err engine_run(const struct engine_cfg *cfg, const double *prices, double *w, size_t n,
		       double *equity, struct engine_report *rep)
{
	memset(rep, 0, sizeof *rep);
	enum ev_err e = engine_clamp(cfg, w, n, rep);
	if (e != EV_OK)
		return e;
	if (n == 0)
		return EV_OK;
	double fee = cfg->fee_bps / 10000.0;
	double E = 1.0, held = 0.0, last = prices[0];
	double turnover = 0, fees = 0, expo = 0;
	equity[0] = 1.0;
	size_t t = 1;
	for (; t < n; t++) {
		double wt = w[t - 1];
		double trade = fabs(wt - held);
		double p = prices[t];
		double r = 0.0;
		if (!isnan(p)) {
			if (!isnan(last))
				r = p / last - 1.0;
			last = p;
		}
		double g = 1.0 + wt * r - fee * trade;
		turnover += trade;
		fees += E * fee * trade;
		expo += fabs(wt);
		held = wt;
		if (!(g > 0)) {
			equity[t] = 0.0;
			rep->pos.liquidation_events = 1;
			t++;
			break;
		}
		E *= g;
		equity[t] = E;
	}
	for (; t < n; t++)
		equity[t] = 0.0;
	rep->pos.turnover = turnover;
	rep->pos.fees_paid = fees;
	rep->pos.average_exposure = expo / (double)(n - 1 > 0 ? n - 1 : 1);
	return EV_OK;
}

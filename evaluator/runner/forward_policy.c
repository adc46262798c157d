/*
 * forward_policy: the pure rules of forward scores (forward.h): when a
 * forward score is final, which bars are forward, which number is the
 * score. No I/O; tests/unit/runner/test_forward_policy.c.
 */
#include <math.h>
#include <string.h>

#include "evaluator/runner/forward.h"

/* Default final periods in days, by challenge type (docs/forward-scores.md). */
static const double final_days[CH_TYPE__MAX] = {
	[CH_BINARY] = 7,         /* grid step 4000 bars: two and a half holdout windows */
	[CH_HITFIRST] = 7,       /* step 4000 */
	[CH_LBFGS] = 10,         /* step 6000 */
	[CH_BREAKOUT] = 14,      /* windows of events: sparse */
	[CH_XSEC_RANK] = 7,      /* step 4000 */
	[CH_FUNDING_XSEC] = 14,  /* funding moves hourly: sparse */
};

double forward_final_days(const struct ch_def *def, long override_minutes)
{
	if (override_minutes > 0)
		return (double)override_minutes / 1440.0;
	if (!def || def->type >= CH_TYPE__MAX) {
		double m = 0;
		for (size_t i = 0; i < CH_TYPE__MAX; i++)
			m = final_days[i] > m ? final_days[i] : m;
		return m;
	}
	return final_days[def->type];
}

const char *forward_state_name(enum fwd_state s)
{
	return s == FWD_FINAL ? "final" : "provisional";
}

enum fwd_state forward_state(size_t bars, int64_t interval_ms, double final_days_)
{
	if (interval_ms <= 0)
		return FWD_PROVISIONAL;
	/* integer minutes compared exactly: bars * interval against the period in ms, rounded to the ms */
	double need_ms = floor(final_days_ * 86400000.0 + 0.5);
	return (double)bars * (double)interval_ms >= need_ms ? FWD_FINAL : FWD_PROVISIONAL;
}

size_t forward_bars_after(const int64_t *ts, size_t n, int64_t cutoff)
{
	size_t lo = 0, hi = n;   /* first index with ts > cutoff lies in [lo, hi] */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (ts[mid] > cutoff)
			hi = mid;
		else
			lo = mid + 1;
	}
	return n - lo;
}

bool policy_primary_metric(json_object *res, const char **name, double *v)
{
	static const char *const keys[] = { "mean_auc", "direct_log_loss", "mean_balanced_accuracy", "mean_spearman" };
	json_object *x;
	*name = NULL;
	*v = 0;
	for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
		if (res && json_object_object_get_ex(res, keys[i], &x)) {
			*name = keys[i];
			if (!x || !(json_object_is_type(x, json_type_double) || json_object_is_type(x, json_type_int)))
				return false;
			*v = json_object_get_double(x);
			return isfinite(*v);
		}
	return false;
}

/* metrics: one-pass standardized metrics (see metrics.h, docs/metrics.md). */
#include "evaluator/metrics.h"

#include <math.h>
#include <string.h>

#include "evaluator/canon_json.h"

static const char *const met_names[MET__MAX] = {
	[MET_TOTAL_RETURN] = "total_return",
	[MET_CAGR] = "cagr",
	[MET_MAX_DRAWDOWN] = "max_drawdown",
	[MET_VOLATILITY] = "volatility",
	[MET_SHARPE] = "sharpe",
	[MET_SCORE] = "score",
	[MET_SORTINO] = "sortino",
	[MET_CALMAR] = "calmar",
	[MET_ANNUALIZED_RETURN] = "annualized_return",
	[MET_DOWNSIDE_DEVIATION] = "downside_deviation",
	[MET_HIT_RATE] = "hit_rate",
	[MET_N_BARS] = "n_bars",
	[MET_TURNOVER] = "turnover",
	[MET_AVERAGE_EXPOSURE] = "average_exposure",
	[MET_FEES_PAID] = "fees_paid",
	[MET_LIQUIDATION_EVENTS] = "liquidation_events",
	[MET_CAPITAL_EFFICIENCY] = "capital_efficiency",
	[MET_RUNTIME_S] = "runtime_s",
};

const char *metric_name(enum metric_id id)
{
	if ((unsigned)id >= MET__MAX)
		return "unknown";
	return met_names[id];
}

void metrics_set(struct metrics *m, enum metric_id id, double v)
{
	m->v[id] = v;
	m->present[id] = 1;
}

/* Running state of the single pass. */
struct met_pass {
	/* drawdown: pandas cummax (NaN skipped) and min of E/cummax - 1 */
	double peak;     /* running max, NaN before the first non-NaN value */
	double segmin;   /* min E since peak was set (peak > 0 finite only) */
	double mdd;      /* min drawdown so far, NaN if none */
	/* returns: pct_change on the forward-filled series, NaN dropped */
	double prev;     /* last non-NaN value (the fill), NaN if none yet */
	size_t k;        /* number of returns kept */
	double shift;    /* first return, subtracted for a stable variance */
	double s1, s2;   /* sums of (r - shift) and (r - shift)^2 */
	double down2;    /* sum of min(r, 0)^2 */
	size_t pos, nonzero;
};

/* Fold drawdown value dd into the running minimum (NaN skipped). */
static inline void met_dd(struct met_pass *p, double dd)
{
	if (!isnan(dd) && (isnan(p->mdd) || dd < p->mdd))
		p->mdd = dd;
}

/* Close the current peak segment: its deepest drawdown is segmin / peak - 1
 * (division is monotone, so this equals the min of the per-bar values). */
static inline void met_close_segment(struct met_pass *p)
{
	if (p->peak > 0 && isfinite(p->peak))
		met_dd(p, p->segmin / p->peak - 1.0);
}

/* Drawdown step for a non-NaN value x. */
static inline void met_dd_step(struct met_pass *p, double x)
{
	if (isnan(p->peak) || x > p->peak) {
		met_close_segment(p);
		p->peak = x;
		p->segmin = x;
		if (!(x > 0 && isfinite(x)))
			met_dd(p, x / x - 1.0);
		return;
	}
	if (p->peak > 0 && isfinite(p->peak)) {
		if (x < p->segmin)
			p->segmin = x;
	} else {
		met_dd(p, x / p->peak - 1.0);
	}
}

/* Return step: fold r = x / prev - 1 (prev the fill) into the sums. */
static inline void met_ret_step(struct met_pass *p, double r)
{
	if (isnan(r))
		return;
	if (p->k == 0)
		p->shift = r;
	double d = r - p->shift;
	p->k++;
	p->s1 += d;
	p->s2 += d * d;
	if (r < 0)
		p->down2 += r * r;
	p->pos += r > 0;
	p->nonzero += r != 0;
}

void metrics_compute(const double *E, size_t n, double S, struct metrics *m)
{
	memset(m, 0, sizeof *m);
	struct met_pass p = { .peak = NAN, .mdd = NAN, .prev = NAN };
	for (size_t t = 0; t < n; t++) {
		double x = E[t];
		if (isnan(x)) {
			/* ffilled: the return is prev/prev - 1 (0, or NaN if no fill) */
			if (t > 0)
				met_ret_step(&p, p.prev / p.prev - 1.0);
			continue;
		}
		met_dd_step(&p, x);
		if (t > 0)
			met_ret_step(&p, x / p.prev - 1.0);
		p.prev = x;
	}
	met_close_segment(&p);

	size_t N = n > 0 ? n - 1 : 0;
	double tr = n > 1 ? E[n - 1] / E[0] - 1.0 : 0.0;
	double mdd = n > 0 ? p.mdd : 0.0;
	double cagr = (N > 0 && E[0] != 0) ? pow(E[n - 1] / E[0], S / (double)N) - 1.0 : 0.0;
	double vol = 0.0, sharpe = 0.0, mean_ann = 0.0, ddev = 0.0;
	if (p.k > 0) {
		double kk = (double)p.k;
		double mean = p.shift + p.s1 / kk;
		double var = (p.s2 - p.s1 * p.s1 / kk) / kk;
		if (var < 0) /* rounding; NaN (from inf returns) stays NaN */
			var = 0.0;
		vol = sqrt(var) * sqrt(S);
		mean_ann = mean * S;
		sharpe = vol == 0 ? 0.0 : mean_ann / vol;
		ddev = sqrt(p.down2 / kk) * sqrt(S);
	}
	metrics_set(m, MET_TOTAL_RETURN, tr);
	metrics_set(m, MET_CAGR, cagr);
	metrics_set(m, MET_MAX_DRAWDOWN, mdd);
	metrics_set(m, MET_VOLATILITY, vol);
	metrics_set(m, MET_SHARPE, sharpe);
	metrics_set(m, MET_SCORE, cagr - 0.7 * fabs(mdd));
	if (ddev != 0 || isnan(ddev))
		metrics_set(m, MET_SORTINO, mean_ann / ddev);
	if (mdd != 0)
		metrics_set(m, MET_CALMAR, cagr / fabs(mdd));
	metrics_set(m, MET_ANNUALIZED_RETURN, mean_ann);
	metrics_set(m, MET_DOWNSIDE_DEVIATION, ddev);
	if (p.nonzero > 0)
		metrics_set(m, MET_HIT_RATE, (double)p.pos / (double)p.nonzero);
	metrics_set(m, MET_N_BARS, (double)n);
}

void metrics_add_positions(struct metrics *m, const struct metrics_positions *p)
{
	metrics_set(m, MET_TURNOVER, p->turnover);
	metrics_set(m, MET_AVERAGE_EXPOSURE, p->average_exposure);
	metrics_set(m, MET_FEES_PAID, p->fees_paid);
	metrics_set(m, MET_LIQUIDATION_EVENTS, (double)p->liquidation_events);
	if (p->average_exposure > 0 && m->present[MET_TOTAL_RETURN])
		metrics_set(m, MET_CAPITAL_EFFICIENCY, m->v[MET_TOTAL_RETURN] / p->average_exposure);
}

int metrics_first_non_finite(const struct metrics *m)
{
	for (int i = 0; i < MET__MAX; i++)
		if (m->present[i] && !isfinite(m->v[i]))
			return i;
	return -1;
}

void metrics_to_json(const struct metrics *m, struct buf *b)
{
	buf_putc(b, '{');
	for (int i = 0; i < MET__MAX; i++) {
		if (i)
			buf_putc(b, ',');
		buf_putc(b, '"');
		buf_puts(b, met_names[i]);
		buf_puts(b, "\":");
		if (!m->present[i])
			buf_puts(b, "null");
		else if ((i == MET_N_BARS || i == MET_LIQUIDATION_EVENTS) && isfinite(m->v[i]))
			buf_printf(b, "%.0f", m->v[i]);
		else
			cj_write_double(b, m->v[i]);
	}
	buf_putc(b, '}');
}

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

/*
 * The common case, all values finite and > 0 (every validated equity
 * curve): the same arithmetic as met_dd_step/met_ret_step in the same order,
 * on locals, with no data-dependent branch but the rare new peak. Runs from
 * *tp while the values stay in that domain; needs a previous value, a peak
 * and a first return already set up by the generic steps.
 */
static void met_fast(struct met_pass *p, const double *E, size_t n, size_t *tp)
__attribute__((noinline));
static void met_fast(struct met_pass *p, const double *E, size_t n, size_t *tp)
{
	size_t t = *tp, k = p->k, pos = p->pos, nz = p->nonzero;
	double prev = p->prev, peak = p->peak, segmin = p->segmin, mdd = p->mdd;
	double shift = p->shift, s1 = p->s1, s2 = p->s2, down2 = p->down2;
	for (; t < n; t++) {
		double x = E[t];
		if (!(x > 0 && x < INFINITY))
			break;
		if (x > peak) {
			double dd = segmin / peak - 1.0;
			if (!(dd >= mdd))
				mdd = dd;
			peak = x;
			segmin = x;
		} else {
			segmin = x < segmin ? x : segmin;
		}
		double r = x / prev - 1.0;
		prev = x;
		double d = r - shift;
		s1 += d;
		s2 += d * d;
		double neg = r < 0 ? r : 0.0;
		down2 += neg * neg;
		pos += r > 0;
		nz += r != 0;
		k++;
	}
	*tp = t;
	p->k = k;
	p->pos = pos;
	p->nonzero = nz;
	p->prev = prev;
	p->peak = peak;
	p->segmin = segmin;
	p->mdd = mdd;
	p->s1 = s1;
	p->s2 = s2;
	p->down2 = down2;
}

typedef double met_v4d __attribute__((vector_size(32)));
typedef long long met_v4l __attribute__((vector_size(32)));

/*
 * The fast domain four bars at a time (GCC vector extensions: one AVX2
 * instruction per operation where the CPU has it, two SSE2 ones otherwise,
 * chosen at load time). Each lane keeps its own sums, folded into *p at the
 * end (a different summation order than the scalar loop, well inside the
 * 1e-9 the metrics promise). A block holding a new peak or a value outside
 * the domain stops the loop; the caller does that block bar by bar.
 * Returns the first bar not done.
 */
__attribute__((target_clones("avx2", "default")))
static size_t met_vec(struct met_pass *p, const double *E, size_t n, size_t t)
{
	const met_v4d zero = { 0, 0, 0, 0 }, one = { 1, 1, 1, 1 }, inf = { INFINITY, INFINITY, INFINITY, INFINITY };
	const met_v4d shift = { p->shift, p->shift, p->shift, p->shift };
	const met_v4d peak = { p->peak, p->peak, p->peak, p->peak };
	met_v4d seg = { p->segmin, p->segmin, p->segmin, p->segmin };
	met_v4d s1 = zero, s2 = zero, dn = zero;
	met_v4l pos = { 0, 0, 0, 0 }, nz = { 0, 0, 0, 0 };
	size_t t0 = t;
	if (!(E[t - 1] == p->prev)) /* bar t-1 was a gap: its fill is not in E */
		return t;
	for (; t + 4 <= n; t += 4) {
		met_v4d x, xp;
		memcpy(&x, E + t, sizeof x);
		memcpy(&xp, E + t - 1, sizeof xp);
		met_v4l bad = ~((x > zero) & (x < inf)) | (x > peak);
		if (bad[0] | bad[1] | bad[2] | bad[3])
			break;
		met_v4d r = x / xp - one;
		met_v4d d = r - shift;
		s1 += d;
		s2 += d * d;
		met_v4d neg = (met_v4d)((met_v4l)r & (r < zero));
		dn += neg * neg;
		pos -= r > zero;
		nz -= r != zero;
		met_v4l lt = x < seg;
		seg = (met_v4d)(((met_v4l)x & lt) | ((met_v4l)seg & ~lt));
	}
	if (t == t0)
		return t;
	p->s1 += (s1[0] + s1[1]) + (s1[2] + s1[3]);
	p->s2 += (s2[0] + s2[1]) + (s2[2] + s2[3]);
	p->down2 += (dn[0] + dn[1]) + (dn[2] + dn[3]);
	p->pos += (size_t)(pos[0] + pos[1] + pos[2] + pos[3]);
	p->nonzero += (size_t)(nz[0] + nz[1] + nz[2] + nz[3]);
	p->k += t - t0;
	for (int i = 0; i < 4; i++)
		if (seg[i] < p->segmin)
			p->segmin = seg[i];
	p->prev = E[t - 1];
	return t;
}

/* Can met_fast take over after bar t-1? */
static inline int met_fast_ready(const struct met_pass *p)
{
	return p->k > 0 && p->prev > 0 && p->prev < INFINITY && p->peak > 0 && p->peak < INFINITY;
}

/* One bar the generic way (NaN, infinities, zero or negative values). */
static void met_generic(struct met_pass *p, double x, size_t t)
{
	if (isnan(x)) {
		/* ffilled: the return is prev/prev - 1 (0, or NaN if no fill) */
		if (t > 0)
			met_ret_step(p, p->prev / p->prev - 1.0);
		return;
	}
	met_dd_step(p, x);
	if (t > 0)
		met_ret_step(p, x / p->prev - 1.0);
	p->prev = x;
}

void metrics_compute(const double *E, size_t n, double S, struct metrics *m)
{
	memset(m, 0, sizeof *m);
	struct met_pass p = { .peak = NAN, .mdd = NAN, .prev = NAN };
	size_t t = 0;
	while (t < n) {
		if (met_fast_ready(&p)) {
			t = met_vec(&p, E, n, t);
			size_t lim = n - t > 4 ? t + 4 : n;
			met_fast(&p, E, lim, &t);
			if (t == lim)
				continue; /* a block with a new peak, or the tail */
		}
		met_generic(&p, E[t], t);
		t++;
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

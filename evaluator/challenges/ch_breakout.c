/*
 * ch_breakout: MULTI-BREAKOUT event detection in O(T) per asset.
 *
 * The range of the previous L closes (current bar excluded) comes from the
 * van Herk / Gil-Werman block decomposition: with blocks of L bars, the max
 * of any L consecutive bars is max(suffix max of its first block, prefix max
 * of its last block), so two branch-free passes per column give every
 * window's max (and min) with three comparisons per bar, instead of the
 * original's O(T*L) materialised windows. Missing bars (NaN) take no part in
 * the passes (they count as -Inf for the max, +Inf for the min); in mantis
 * mode a NaN anywhere in the range then makes the range NaN, as numpy's
 * max/min do, so no break can trigger; in strict mode the range is taken
 * over the bars that exist. The step order per bar (resolve the pending
 * high, then the pending low, then at most one new trigger) and the event
 * order (by resolution bar, asset order, high before low) are the
 * original's.
 */
#include <math.h>
#include <stdlib.h>

#include "xalloc.h"
#include "evaluator/challenges/ch_internal.h"

/* Scratch of one column: block prefix/suffix maxima and minima. */
struct ch_vhg {
	double *pmax, *smax, *pmin, *smin;
};

/* Fill the block prefix/suffix arrays of x (NaN ignored) for blocks of L. */
static void ch_vhg_fill(struct ch_vhg *g, const double *x, size_t T, size_t L)
{
	for (size_t b = 0; b < T; b += L) {
		size_t e = b + L < T ? b + L : T;
		double mx = -INFINITY, mn = INFINITY;
		for (size_t j = b; j < e; j++) {
			double v = x[j];
			mx = v > mx ? v : mx;     /* false for NaN: ignored */
			mn = v < mn ? v : mn;
			g->pmax[j] = mx;
			g->pmin[j] = mn;
		}
		mx = -INFINITY;
		mn = INFINITY;
		for (size_t j = e; j-- > b;) {
			double v = x[j];
			mx = v > mx ? v : mx;
			mn = v < mn ? v : mn;
			g->smax[j] = mx;
			g->smin[j] = mn;
		}
	}
}

struct ch_evlist {
	struct ch_event *v;
	size_t n, cap;
};

struct ch_pending {
	bool on;
	int64_t t;
	double cont, rev;
};

/* Append an event. */
static void ch_ev_push(struct ch_evlist *l, int64_t trig, int64_t res, size_t asset,
    int dir, int label)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 256;
		l->v = xreallocarray(l->v, l->cap, sizeof *l->v);
	}
	l->v[l->n++] = (struct ch_event){ trig, res, (int32_t)asset, dir, label, 0 };
}

/* Resolve or expire a pending trigger at bar t (dir +1 high, -1 low). */
static void ch_resolve(struct ch_pending *pd, int dir, int64_t t, double p, size_t max_pending,
    size_t asset, struct ch_evlist *out)
{
	if (!pd->on)
		return;
	if (t - pd->t > (int64_t)max_pending) {
		pd->on = false;
		return;
	}
	if (dir > 0 ? p >= pd->cont : p <= pd->cont) {
		ch_ev_push(out, pd->t, t, asset, dir, 1);
		pd->on = false;
	} else if (dir > 0 ? p <= pd->rev : p >= pd->rev) {
		ch_ev_push(out, pd->t, t, asset, dir, 0);
		pd->on = false;
	}
}

/* Events of one column, appended in bar order. */
static void ch_detect_one(const double *x, size_t T, size_t L, double barrier_pct,
    double min_range_pct, size_t max_pending, bool strict, size_t asset,
    struct ch_vhg *g, struct ch_evlist *out)
{
	long last_nan = -1;
	struct ch_pending ph = { 0 }, pl = { 0 };

	ch_vhg_fill(g, x, T, L);
	for (size_t t = 0; t < L && t < T; t++)
		if (isnan(x[t]))
			last_nan = (long)t;
	for (size_t t = L; t < T; t++) {
		/* the range of bar t is x[t-L .. t-1] */
		double p = x[t], hi, lo, width;
		double h1 = g->smax[t - L], h2 = g->pmax[t - 1];
		double l1 = g->smin[t - L], l2 = g->pmin[t - 1];
		hi = h1 > h2 ? h1 : h2;
		lo = l1 < l2 ? l1 : l2;
		if (!strict && last_nan >= (long)(t - L)) {
			hi = NAN;
			lo = NAN;
		}
		if (ph.on)
			ch_resolve(&ph, +1, (int64_t)t, p, max_pending, asset, out);
		if (pl.on)
			ch_resolve(&pl, -1, (int64_t)t, p, max_pending, asset, out);
		width = hi - lo;
		bool wide = width >= p * min_range_pct / 100.0;
		bool hb = p > hi && wide, lb = p < lo && wide;
		if (hb && !ph.on) {
			double bd = width * barrier_pct / 100.0;
			ph = (struct ch_pending){ true, (int64_t)t, p + bd, p - bd };
		} else if (lb && !pl.on) {
			double bd = width * barrier_pct / 100.0;
			pl = (struct ch_pending){ true, (int64_t)t, p - bd, p + bd };
		}
		if (isnan(p))
			last_nan = (long)t;
	}
}

/*
 * Order by resolution bar, then asset, then high before low: the order a
 * stable sort by resolution gives to the per-asset lists concatenated in
 * asset order (an asset resolves at most one high and one low per bar).
 */
static int ch_cmp_event(const void *a, const void *b)
{
	const struct ch_event *x = a, *y = b;
	if (x->resolution_t != y->resolution_t)
		return x->resolution_t < y->resolution_t ? -1 : 1;
	if (x->asset != y->asset)
		return x->asset < y->asset ? -1 : 1;
	return (x->direction < y->direction) - (x->direction > y->direction);
}

/* All events of A columns, stably sorted by resolution. */
size_t ch_breakout_detect(const double *const *cols, size_t A, size_t T,
    size_t L, double barrier_pct, double min_range_pct, size_t max_pending,
    int mode, struct ch_event **events)
{
	struct ch_evlist l = { NULL, 0, 0 };
	struct ch_vhg g;

	*events = NULL;
	if (T <= L || A == 0 || L == 0)
		return 0;
	g.pmax = xcalloc(T, sizeof *g.pmax);
	g.smax = xcalloc(T, sizeof *g.smax);
	g.pmin = xcalloc(T, sizeof *g.pmin);
	g.smin = xcalloc(T, sizeof *g.smin);
	for (size_t a = 0; a < A; a++)
		ch_detect_one(cols[a], T, L, barrier_pct, min_range_pct, max_pending,
		    mode != CH_MODE_MANTIS, a, &g, &l);
	free(g.pmax);
	free(g.smax);
	free(g.pmin);
	free(g.smin);
	if (l.n > 1)
		qsort(l.v, l.n, sizeof *l.v, ch_cmp_event);
	*events = l.v;
	return l.n;
}

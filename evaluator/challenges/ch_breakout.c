/*
 * ch_breakout: MULTI-BREAKOUT event detection in O(T) per asset.
 *
 * The range of the previous L closes (current bar excluded) is kept with two
 * monotone deques of bar indices (decreasing values for the max, increasing
 * for the min): each index enters and leaves each deque once, so a whole
 * column costs O(T) instead of the original's O(T*L) materialised windows.
 * Missing bars (NaN): in mantis mode a NaN anywhere in the range makes the
 * range NaN, as numpy's max/min do, so no break can trigger; in strict mode
 * gaps are skipped and the range is taken over the bars that exist. The
 * step order per bar (resolve the pending high, then the pending low, then
 * at most one new trigger) and the event order (stable by resolution bar,
 * asset order, high before low) are the original's.
 */
#include <math.h>
#include <stdlib.h>

#include "xalloc.h"
#include "evaluator/challenges/ch_internal.h"

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
    double min_range_pct, size_t max_pending, bool strict, size_t asset, struct ch_evlist *out)
{
	size_t *dmax = xcalloc(T, sizeof *dmax), *dmin = xcalloc(T, sizeof *dmin);
	size_t hmax = 0, tmax = 0, hmin = 0, tmin = 0;   /* head/tail of each deque */
	long last_nan = -1;
	struct ch_pending ph = { 0 }, pl = { 0 };

	for (size_t t = 0; t < T; t++) {
		if (t >= L) {
			double p = x[t], hi, lo, width;
			while (hmax < tmax && dmax[hmax] < t - L)
				hmax++;
			while (hmin < tmin && dmin[hmin] < t - L)
				hmin++;
			if ((!strict && last_nan >= (long)(t - L)) || hmax == tmax) {
				hi = NAN;
				lo = NAN;
			} else {
				hi = x[dmax[hmax]];
				lo = x[dmin[hmin]];
			}
			ch_resolve(&ph, +1, (int64_t)t, p, max_pending, asset, out);
			ch_resolve(&pl, -1, (int64_t)t, p, max_pending, asset, out);
			width = hi - lo;
			bool wide = width >= p * min_range_pct / 100.0;
			bool hb = p > hi && wide, lb = p < lo && wide;
			double bd = width * barrier_pct / 100.0;
			if (hb && !ph.on)
				ph = (struct ch_pending){ true, (int64_t)t, p + bd, p - bd };
			else if (lb && !pl.on)
				pl = (struct ch_pending){ true, (int64_t)t, p - bd, p + bd };
		}
		/* Bar t joins the range of later bars. */
		if (isnan(x[t])) {
			last_nan = (long)t;
			continue;
		}
		while (tmax > hmax && x[dmax[tmax - 1]] <= x[t])
			tmax--;
		dmax[tmax++] = t;
		while (tmin > hmin && x[dmin[tmin - 1]] >= x[t])
			tmin--;
		dmin[tmin++] = t;
	}
	free(dmax);
	free(dmin);
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

	*events = NULL;
	if (T <= L || A == 0)
		return 0;
	for (size_t a = 0; a < A; a++)
		ch_detect_one(cols[a], T, L, barrier_pct, min_range_pct, max_pending,
		    mode != CH_MODE_MANTIS, a, &l);
	if (l.n > 1)
		qsort(l.v, l.n, sizeof *l.v, ch_cmp_event);
	*events = l.v;
	return l.n;
}

/*
 * implied: what a `simulate` equity curve must be explained by.
 *
 * A simulate strategy reports its own equity E. The evaluator never scores
 * that curve as such: it derives the exposure the curve implies at every
 * bar from the curve and the prices, checks that trading the asset with an
 * exposure inside the leverage limit can explain it, and scores the equity
 * recomputed from that exposure.
 *
 *   r[t] = p[t] / p[t-1] - 1        the asset's return over bar t (0 when
 *                                   p[t-1] is not a positive finite price)
 *   g[t] = E[t] / E[t-1] - 1        the curve's growth over bar t
 *
 * Holding an exposure w over bar t (|w| <= L, the run's max_leverage) and
 * paying costs c >= 0 gives g = w·r - c, so the growth over a bar is
 * explained exactly when g[t] <= L·|r[t]| (+ IMPLIED_TOL for rounding):
 * a curve may lose more than trading explains (fees, slippage are its
 * business) but never gain more. Unexplained: any gain on a bar where the
 * asset did not move, or more than L times its move.
 *
 * For every bar the implied exposure is w[t] = clamp(g[t] / r[t], -L, L)
 * (0 when r[t] = 0), the implied cost c[t] = max(0, w[t]·r[t] - g[t]), and
 * the recomputed equity Q[0] = 1, Q[t] = Q[t-1]·(1 + w[t]·r[t] - c[t]).
 * For an explained curve Q equals E up to rounding; Q is what is ranked.
 */
#ifndef AGENTTEST_EVALUATOR_IMPLIED_H
#define AGENTTEST_EVALUATOR_IMPLIED_H

#include <stddef.h>

/* Growth allowed above L·|r| per bar, for the rounding of E's own
 * products (far below any gain worth forging: 1e-12 a bar is 1e-6 over a
 * million bars). */
#define IMPLIED_TOL 1e-12

struct implied_report {
	size_t unexplained;  /* bars whose growth is not explained */
	size_t first_bad;    /* the first of them (valid when unexplained > 0) */
	double growth;       /* g at first_bad */
	double ret;          /* r at first_bad */
	double max_abs_w;    /* largest |w| implied over the explained bars */
};

/*
 * Check E[0..n-1] (finite, > 0, E[0] = 1: validated by the caller) against
 * prices p[0..n-1] with leverage limit max_lev > 0. Writes the implied
 * exposure to w (may be NULL) and the recomputed equity to q (n values,
 * may be NULL), fills rep. Returns 0 when every bar is explained, -1
 * otherwise (rep->first_bad names the first bar; w and q are still
 * filled, with the growth of unexplained bars capped at L·|r|).
 */
int implied_equity(const double *p, const double *E, size_t n, double max_lev, double *w, double *q,
		   struct implied_report *rep);

#endif

/*
 * implied.c: the exposure a simulate equity curve implies, and the equity
 * recomputed from it (implied.h has the model). Pure: no I/O, no state.
 */
#include <math.h>
#include <string.h>

#include "evaluator/implied.h"

/* The asset's return over bar t (t >= 1). */
static double implied_ret(const double *p, size_t t)
{
	double a = p[t - 1], b = p[t];
	if (!(a > 0) || !isfinite(a) || !isfinite(b))
		return 0.0;
	return b / a - 1.0;
}

int implied_equity(const double *p, const double *E, size_t n, double max_lev, double *w, double *q,
		   struct implied_report *rep)
{
	double qt = 1.0;
	memset(rep, 0, sizeof *rep);
	if (n == 0)
		return 0;
	if (w)
		w[0] = 0.0;
	if (q)
		q[0] = 1.0;
	for (size_t t = 1; t < n; t++) {
		double r = implied_ret(p, t), g = E[t] / E[t - 1] - 1.0;
		double cap = max_lev * fabs(r);
		if (g > cap + IMPLIED_TOL) {
			if (rep->unexplained++ == 0) {
				rep->first_bad = t;
				rep->growth = g;
				rep->ret = r;
			}
			g = cap;
		}
		double wt = 0.0;
		if (r != 0.0) {
			wt = g / r;
			if (wt > max_lev)
				wt = max_lev;
			else if (wt < -max_lev)
				wt = -max_lev;
		}
		double gain = wt * r, cost = gain - g;
		if (cost < 0)
			cost = 0.0;  /* within IMPLIED_TOL: rounding, not a gain */
		qt *= 1.0 + gain - cost;
		if (fabs(wt) > rep->max_abs_w && rep->unexplained == 0)
			rep->max_abs_w = fabs(wt);
		if (w)
			w[t] = wt;
		if (q)
			q[t] = qt;
	}
	return rep->unexplained ? -1 : 0;
}

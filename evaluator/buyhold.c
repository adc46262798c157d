/* buyhold: the buy-and-hold benchmark curve (contract in buyhold.h). */
#include <math.h>

#include "evaluator/buyhold.h"

/* True for a close price that can anchor or continue the curve. */
static int usable(double p)
{
	return isfinite(p) && p > 0;
}

void buyhold_curve(const double *close, size_t n, double *out)
{
	double base = 0, last = 1.0;
	for (size_t t = 0; t < n; t++) {
		if (usable(close[t])) {
			if (base == 0)
				base = close[t];
			last = close[t] / base;
		}
		out[t] = last;
	}
}

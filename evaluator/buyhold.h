/*
 * buyhold: the buy-and-hold benchmark of a run, the equity of holding one
 * unit of the run's asset from its first bar, computed on the trusted side
 * from the dataset's close prices (never from anything the strategy sent):
 *
 *   B[t] = p[t] / p[f]    f = the first bar with a finite close > 0
 *
 * with prices forward-filled over gaps (a NaN or non-positive close keeps
 * the last value) and B[t] = 1 before f, so the curve has the run's length,
 * starts at 1.0 and is finite everywhere. No fee: it is the market's own
 * path, the yardstick an equity curve is read against.
 */
#ifndef AGENTTEST_EVALUATOR_BUYHOLD_H
#define AGENTTEST_EVALUATOR_BUYHOLD_H

#include <stddef.h>

/* Fill out[0..n) with the buy-and-hold curve of close[0..n) (see above).
 * out may not alias close. */
void buyhold_curve(const double *close, size_t n, double *out);

#endif

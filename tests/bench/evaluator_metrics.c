/*
 * Benchmark driver for tests/bench/evaluator.sh: metrics_compute over an
 * N-bar equity series (a seeded geometric random walk). Writes the series to
 * OUT (raw float64) so the pandas reference measures the very same numbers,
 * prints one JSON line: best-of-R seconds, ns/bar, and the metrics.
 *
 *   evaluator_metrics N R OUT
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "evaluator/metrics.h"
#include "xalloc.h"

int main(int argc, char **argv);

/* CPU seconds of this process: on a shared machine wall time measures the
 * neighbours; the pandas side uses time.process_time() the same way. */
static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Uniform (0, 1) from xorshift64*. */
static double unif(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return ((double)((*s * 2685821657736338717ULL) >> 11) + 0.5) / 9007199254740992.0;
}

int main(int argc, char **argv)
{
	if (argc != 4)
		return 2;
	size_t n = strtoul(argv[1], NULL, 10);
	int reps = atoi(argv[2]);
	double *e = xcalloc(n, sizeof *e);
	uint64_t s = 88172645463325252ULL;
	double v = 1.0;
	for (size_t i = 0; i < n; i++) {
		e[i] = v;
		/* Box-Muller normal, 1-minute-like volatility */
		double z = sqrt(-2 * log(unif(&s))) * cos(6.283185307179586 * unif(&s));
		v *= 1.0 + 0.0005 * z + 2e-7;
	}
	FILE *f = fopen(argv[3], "wb");
	if (!f || fwrite(e, sizeof *e, n, f) != n || fclose(f) != 0)
		return 3;
	struct metrics m;
	double best = 1e30;
	for (int r = 0; r < reps; r++) {
		double t = now();
		metrics_compute(e, n, 525600.0, &m);
		double d = now() - t;
		if (d < best)
			best = d;
	}
	printf("{\"bars\":%zu,\"seconds\":%.6f,\"ns_per_bar\":%.3f,\"total_return\":%.17g,\"cagr\":%.17g,"
	       "\"max_drawdown\":%.17g,\"volatility\":%.17g,\"sharpe\":%.17g,\"score\":%.17g}\n",
	       n, best, best * 1e9 / (double)n, m.v[MET_TOTAL_RETURN], m.v[MET_CAGR], m.v[MET_MAX_DRAWDOWN],
	       m.v[MET_VOLATILITY], m.v[MET_SHARPE], m.v[MET_SCORE]);
	free(e);
	return 0;
}

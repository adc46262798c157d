/*
 * limits: the sandbox limits of backtest runs, from the operator's
 * configuration (docs/configuration.md):
 *   AGENTTEST_RUN_CPU_SECONDS   CPU seconds per run        (default 60, 0.5 .. 86400)
 *   AGENTTEST_RUN_WALL_SECONDS  wall seconds per run       (default 2 x CPU, 1 .. 172800, >= CPU)
 *   AGENTTEST_RUN_MEMORY_MB     memory per run in MiB      (default 256, 32 .. 65536)
 * The values apply to every run a runner executes; the run's `resources`
 * record the limits that applied.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "config.h"
#include "evaluator/runner/runner.h"

/* Parse key as a number in [lo, hi] into *out (unset: keep *out). false with a message. */
static bool num_key(const struct config *cfg, const char *key, double lo, double hi, double *out, struct buf *err)
{
	const char *v = config_get(cfg, key);
	if (!v || !*v)
		return true;
	char *end;
	errno = 0;
	double x = strtod(v, &end);
	if (errno || end == v || *end || !isfinite(x) || x < lo || x > hi) {
		buf_printf(err, "%s must be a number in [%g, %g]", key, lo, hi);
		return false;
	}
	*out = x;
	return true;
}

bool runner_limits(const struct config *cfg, struct sbx_limits *l, struct buf *err)
{
	double cpu = RUNNER_RUN_CPU_S, wall = 0, mem_mb = RUNNER_RUN_MEMORY_MB;
	if (!num_key(cfg, "AGENTTEST_RUN_CPU_SECONDS", 0.5, 86400, &cpu, err) ||
	    !num_key(cfg, "AGENTTEST_RUN_WALL_SECONDS", 1, 172800, &wall, err) ||
	    !num_key(cfg, "AGENTTEST_RUN_MEMORY_MB", 32, 65536, &mem_mb, err))
		return false;
	if (wall == 0)
		wall = 2 * cpu;
	if (wall < cpu) {
		buf_printf(err, "AGENTTEST_RUN_WALL_SECONDS (%g) must be at least AGENTTEST_RUN_CPU_SECONDS (%g)",
			   wall, cpu);
		return false;
	}
	if (mem_mb != floor(mem_mb)) {
		buf_puts(err, "AGENTTEST_RUN_MEMORY_MB must be a whole number");
		return false;
	}
	*l = (struct sbx_limits){ .cpu_seconds = cpu, .wall_seconds = wall,
				  .memory_bytes = (uint64_t)mem_mb << 20 };
	return true;
}

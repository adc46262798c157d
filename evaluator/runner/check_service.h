/*
 * check_service.h: the runner's code-check service.
 *
 * The API pool must never start a sandbox (DESIGN, trust boundaries), yet
 * POST /strategies/submit has to tell a syntax error (with line and column)
 * or a missing `simulate` from good code before it stores anything. The
 * runner, which owns the sandbox and its pre-started zygotes, therefore
 * answers check requests on a unix stream socket; the pool is a client
 * (fcgi/handlers/strategy_check.c). The wire format both sides speak is the
 * shared contract common/check_wire.h; docs/runner.md describes the
 * protocol.
 */
#ifndef AGENTTEST_RUNNER_CHECK_SERVICE_H
#define AGENTTEST_RUNNER_CHECK_SERVICE_H

#include "check_wire.h"
#include "config.h"

/* ---- the service (check_service.c; the runner only) --------------------- */

struct check_service;

/*
 * Start the service: the worker threads and the acceptor, which takes the
 * socket as soon as it can (a second runner on the same host waits for the
 * first to go); then make sure the zygote pool has room for the checks on
 * top of the `run_slots` runs (AGENTTEST_CHECK_CONCURRENCY more zygotes,
 * warmed up from the first checks on; pre-started now when run_slots is 0)
 * and only then answer pings with {"ready":true} ({"ready":false} before).
 * Call it after the run slots' zygotes are pre-started and before the
 * slots run. Returns NULL only when the
 * service is disabled (AGENTTEST_CHECK_SOCKET=off) or cannot be set up
 * (logged).
 */
struct check_service *check_service_start(const struct config *cfg, unsigned run_slots);

/* Stop accepting, let running checks end (bounded by their limits), free. NULL is a no-op. */
void check_service_stop(struct check_service *s);

#endif

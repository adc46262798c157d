/*
 * run_wait: the bounded `wait` of POST /runs, POST /runs/{id}/cancel and
 * POST /runs/{id}/verify (issue 11 item 6, issue 12), also held by an
 * agent's event stream (agents_events.c). A wait is registered
 * before anything is queued or changed, under two caps (RUNS_MAX_WAITS for
 * the pool, RUNS_MAX_WAITS_PER_USER per user); over a cap the request is
 * answered 429 `rate_limited` with Retry-After and nothing was done. An
 * admitted wait sleeps on the runner's wake-up datagram (common/jobwait.h)
 * with a bounded timeout: the runner's "d<run id>" for its run ends it
 * without a read, another run's lets it sleep on, a plain wake-up makes it
 * re-read the run's status, and so does every RW_BACKSTOP_MS (250 ms)
 * without one (runners on other hosts wake nobody here).
 */
#ifndef AGENTTEST_FCGI_RUN_WAIT_H
#define AGENTTEST_FCGI_RUN_WAIT_H

#include <stdbool.h>

#include "jobwait.h"
#include "fcgi/handler.h"

/* One request's wait; seconds 0 when it does not wait. */
struct run_wait {
	struct jobwait jw;
	double         seconds;
};

/*
 * Register a wait of `seconds` (0: none) for the caller. False after
 * replying 429 (over a cap). Without a registry (RUNNER_NOTIFY_DIR unset or
 * unusable) the wait is dropped: w->seconds becomes 0 and the answer comes
 * at once, so a request can never hold a worker uncounted.
 */
bool run_wait_begin(struct fcgi_ctx *c, double seconds, struct run_wait *w);

/*
 * The same registration under the same caps, for a wait that may as well
 * not happen (GET /api/agents/{id}/events): false when over a cap, with
 * nothing replied and w->seconds 0 (the caller answers at once). Call
 * run_wait_end afterwards either way.
 */
bool run_wait_admit(struct fcgi_ctx *c, double seconds, struct run_wait *w);

/*
 * Wait until run id is finished or w's time is over, then unregister.
 * queued_now: the caller queued the run after registering w, so it is not
 * final yet and the first status read is skipped (a finish before the
 * sleep leaves its datagram queued on w's socket). Returns 1 finished (or
 * gone), 0 still going (or no wait), -1 after replying a database error.
 */
int run_wait_for(struct fcgi_ctx *c, struct run_wait *w, const char *id, bool queued_now);

/* Unregister without waiting (an error path between begin and for). */
void run_wait_end(struct run_wait *w);

/* Status of run id into out[16] ("" if gone); false after replying a DB error. */
bool run_wait_status(struct fcgi_ctx *c, const char *id, char out[16]);

#endif

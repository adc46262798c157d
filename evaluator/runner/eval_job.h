/*
 * eval_job.h: MANTIS challenge evaluations as runner jobs (eval_job.c).
 */
#ifndef AGENTTEST_RUNNER_EVAL_JOB_H
#define AGENTTEST_RUNNER_EVAL_JOB_H

#include "buf.h"

struct job_ctl;
struct db;

/*
 * Re-queue expired evaluation leases, claim the oldest queued evaluation
 * for `owner` and execute it in sandbox box `box_id` (ctl: the slot's
 * cancellation handle), writing its outcome once. Returns 1 when one was
 * executed, 0 when the queue was empty, -1 on a database error (err).
 */
int eval_job_try(struct db *c, const char *owner, unsigned box_id, struct job_ctl *ctl, struct buf *err);

#endif

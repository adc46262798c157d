/*
 * paper_queue: queue a paper-trading step of a window label (the paper job
 * kind, sql/019 paper_steps; evaluator/runner/paper_job.c), shared by the
 * runner (a prefetch that moved the label, a step that found more bars to
 * do) and the pool (a promotion on the label).
 */
#ifndef AGENTTEST_PAPER_QUEUE_H
#define AGENTTEST_PAPER_QUEUE_H

#include "db.h"

/*
 * Queue one step for each active paper account of label (its default's and
 * the shadows of its candidates, sql/024) that has no queued step already
 * (that one will see the newest version). Runs inside the caller's
 * transaction, if any. 1 queued, 0 nothing to do, -1 on a database error.
 */
int paper_queue_step(struct db *db, const char *label);

#endif

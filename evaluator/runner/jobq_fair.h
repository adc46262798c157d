/*
 * jobq_fair.h: whose turn it is in a kind's queue (private to jobq.c).
 */
#ifndef AGENTTEST_RUNNER_JOBQ_FAIR_H
#define AGENTTEST_RUNNER_JOBQ_FAIR_H

#include <stddef.h>

#include "buf.h"
#include "db.h"
#include "evaluator/runner/jobq.h"

#define JOBQ_FAIR_CANDIDATES 8    /* owners tried per claim before oldest-first */
#define JOBQ_FAIR_OWNER_MAX  64   /* an owner value as text: a BIGINT or a UUID */

/* Owners in the order they are to be served. */
struct jobq_fair {
	char   owner[JOBQ_FAIR_CANDIDATES][JOBQ_FAIR_OWNER_MAX];
	size_t n;
};

/*
 * The owners of kind k (k->owner_col set) with a queued row, best first:
 * fewest running jobs of the kind, then served least recently (never
 * served first), then the oldest queued row; at most JOBQ_FAIR_CANDIDATES.
 * A hint read without locks: the claim that follows locks the row. 0 or -1.
 */
int jobq_fair_owners(struct db *db, const struct job_kind *k, struct jobq_fair *out, struct buf *err);

#endif

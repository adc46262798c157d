/*
 * jobq_fair: the fair-share order of a kind's queue between owners.
 *
 * Theory of operation. Oldest-first lets one owner's backlog (150 queued
 * runs) hold every slot until it drains, so another owner's one-bar run
 * waits for all of it. Instead the claim first asks whose turn it is, in
 * one statement without a transaction or a lock: of the owners with a
 * queued row, the one with the fewest running jobs of the kind; among
 * equals the one served least recently (the latest started_at of its rows,
 * none counting as longest ago); then the owner of the oldest queued row.
 * That is round-robin between owners with equal shares and catches up an
 * owner who has fewer slots than the others. The answer is a hint: the
 * claim then takes that owner's oldest queued row (one locking UPDATE)
 * and goes on to the next owner when another runner took it first.
 *
 * Cost: one group per owner with queued rows over the index
 * (status, owner, seq), and per such owner one count over the same index
 * and one MAX over (owner, started_at) (migration 017), so the statement
 * does not grow with the number of rows, only with the number of owners
 * waiting.
 */
#include <stdbool.h>
#include <stdio.h>

#include "evaluator/runner/jobq_fair.h"

#define FAIR_SQL_MAX 1536

/* Row callback: append one owner to the list in ctx. */
static bool collect_owner(void *ctx, const struct db_col *c, size_t ncols)
{
	(void)ncols;
	struct jobq_fair *f = ctx;
	if (f->n == JOBQ_FAIR_CANDIDATES || c[0].is_null)
		return f->n < JOBQ_FAIR_CANDIDATES;
	snprintf(f->owner[f->n++], JOBQ_FAIR_OWNER_MAX, "%.*s", (int)c[0].len, c[0].buf);
	return true;
}

/* An owner never served has MAX(started_at) NULL, and NULL sorts first in
 * MariaDB's ascending order: a newcomer goes before everyone served. */
int jobq_fair_owners(struct db *db, const struct job_kind *k, struct jobq_fair *out, struct buf *err)
{
	char sql[FAIR_SQL_MAX], owner[JOBQ_FAIR_OWNER_MAX];
	struct db_col c[] = { DB_COL_TEXT(owner) };
	const char *t = k->table, *o = k->owner_col;
	out->n = 0;
	int len = snprintf(sql, sizeof sql,
			   "SELECT CAST(f.o AS CHAR) FROM (SELECT %s AS o, MIN(seq) AS first_seq FROM %s "
			   "WHERE status = 'queued' GROUP BY %s) AS f ORDER BY "
			   "(SELECT COUNT(*) FROM %s r WHERE r.status = 'running' AND r.%s = f.o), "
			   "(SELECT MAX(s.started_at) FROM %s s WHERE s.%s = f.o), "
			   "f.first_seq LIMIT %d",
			   o, t, o, t, o, t, o, JOBQ_FAIR_CANDIDATES);
	if (len < 0 || (size_t)len >= sizeof sql) {
		buf_printf(err, "the fair-share query of %s does not fit", k->name);
		return -1;
	}
	return db_run(db, sql, NULL, 0, c, 1, collect_owner, out, NULL, err);
}

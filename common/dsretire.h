/*
 * dsretire: retiring market-data dataset versions, shared by the pool
 * (POST /api/data-cache/delete) and the runner (the retention of the
 * prefetch job, MANTIS_DATA_KEEP_VERSIONS).
 *
 * A version is a `datasets` row plus its directory
 * <data dir>/versions/<dataset hash>/ and report <hash>.quality.json
 * (docs/market-data.md). A row may go only while nothing pins it: the one
 * definition of "pinned" is here (a run, an evaluation, an agent or an
 * active paper account references the row; sql/030: an account pins the
 * version its steps read, and only while it is active). The files go only once no row of any window uses
 * the bytes (two windows can hold identical
 * bytes under one hash).
 */
#ifndef AGENTTEST_DSRETIRE_H
#define AGENTTEST_DSRETIRE_H

#include <stdbool.h>

#include "db.h"

/* True for 64 lower-case hex digits (a dataset hash, safe as a file name). */
bool dsretire_is_hash(const char *s);

/*
 * Delete datasets row id unless it is pinned; the NOT EXISTS conditions and
 * the foreign keys of runs, evaluations, agents and paper accounts decide
 * atomically against a concurrent insert (or a paper step moving its pin). 1 deleted, 0 kept (pinned or gone), -1 database error.
 */
int dsretire_unregister(struct db *db, long long id);

/* Are the bytes of hash pinned (any datasets row with it pinned)? 1 yes, 0 no, -1 error. */
int dsretire_hash_pinned(struct db *db, const char *hash);

/* Does any datasets row still use the bytes of hash? 1 yes, 0 no, -1 error. */
int dsretire_hash_in_use(struct db *db, const char *hash);

/*
 * Remove data_dir/versions/<hash>/ (a flat directory) and its quality
 * report. hash must pass dsretire_is_hash. 0, or -1 with errno.
 */
int dsretire_remove_files(const char *data_dir, const char *hash);

#endif

/*
 * migrate: apply sql/NNN_name.sql migrations in order.
 *
 * Each file is applied once, inside a transaction together with its row in
 * `schema_migrations` (version, name, SHA-256 of the file bytes). MariaDB
 * commits DDL implicitly, so a migration's CREATE/ALTER statements cannot be
 * rolled back: migrations are written to be re-runnable (CREATE TABLE IF NOT
 * EXISTS, ADD COLUMN IF NOT EXISTS, ...), and a migration that failed half
 * way is simply run again after the fix. An applied migration whose file
 * changed since (checksum differs), or that has no file any more, stops the
 * run with an error: history is never rewritten, a new migration is added
 * instead. Concurrent migrators are serialised with GET_LOCK.
 */
#ifndef AGENTTEST_MIGRATE_H
#define AGENTTEST_MIGRATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "buf.h"
#include "db.h"

#define MIGRATE_MAX_FILES 1000
#define MIGRATE_MAX_BYTES (4u << 20)
#define MIGRATE_LOCK "agenttest.migrate"
#define MIGRATE_LOCK_WAIT_S 60

struct migration {
	long          version;
	char         *name;          /* file name, e.g. 001_init.sql */
	char         *sql;
	size_t        len;
	char          checksum[65];  /* SHA-256, lowercase hex */
	bool          applied;
};

/*
 * Read the migrations of dir, sorted by version. File names must match
 * NNN_name.sql (3+ digits, then [a-z0-9_]+); another *.sql name or a
 * duplicate version is an error. Other files are ignored.
 */
bool migrate_scan(const char *dir, struct migration **out, size_t *n, struct buf *err);
/* Free what migrate_scan returned. */
void migrate_free(struct migration *m, size_t n);

/*
 * Apply the pending migrations of dir. Progress lines go to `progress`
 * (may be NULL). *applied receives how many were applied. With dry_run,
 * only checks and reports what would be applied.
 */
bool migrate_run(struct db *db, const char *dir, bool dry_run, FILE *progress, size_t *applied, struct buf *err);

/* The SQL directory: the argument, else $AGENTTEST_SQL_DIR, else
 * <exe dir>/../share/agenttest/sql if it exists, else ./sql (caller frees). */
char *migrate_default_dir(const char *arg);

#endif

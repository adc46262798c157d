/*
 * tmariadb: a private MariaDB server for unit tests that need the real
 * database: a fresh data directory under /tmp, a unix socket, no network,
 * --skip-grant-tables so the test works as any user. Stopped and removed by
 * tmariadb_stop.
 */
#ifndef AGENTTEST_TESTS_TMARIADB_H
#define AGENTTEST_TESTS_TMARIADB_H

#include <stdbool.h>
#include <sys/types.h>

#include "common/db.h"

struct tmariadb {
	char  dir[64];
	char  sock[128];
	pid_t pid;
};

/* Install and start a server, create `database`; false with a message on
 * stderr (the log stays in t->dir). */
bool tmariadb_start(struct tmariadb *t, const char *database);

/* Restart support: stop the server keeping its data (tmariadb_halt), start
 * it again on the same directory and wait until it answers (false on a
 * timeout). */
void tmariadb_halt(struct tmariadb *t);
bool tmariadb_launch(struct tmariadb *t);

/* Run a shell command (printf format); its exit status or -1. */
int tmariadb_sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A new, connected handle to `database` (NULL on failure). */
struct db *tmariadb_connect(const struct tmariadb *t, const char *database);

/* Stop the server and remove its directory (also after a failed start). */
void tmariadb_stop(struct tmariadb *t);

/*
 * The group setup of a test on the real schema: start a server with
 * `database`, connect *db to it and apply every migration of sql/ (the unit
 * tests run from the repository root). On failure prints "<who> setup:
 * <why>" on stderr, frees the handle (*db NULL), stops and removes the
 * server (cmocka runs no teardown after a failed group setup) and returns
 * false.
 */
bool tmariadb_start_migrated(struct tmariadb *t, const char *database, struct db **db, const char *who);

/* One statement without arguments or results that must succeed: a cmocka
 * failure naming the statement and the server's error otherwise. */
void tmariadb_ok(struct db *db, const char *sql);

/* The group teardown: free db (NULL is fine), stop and remove the server. */
void tmariadb_finish(struct tmariadb *t, struct db *db);

#endif

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

#endif

/*
 * tmariadb: a private MariaDB server for unit tests (see tmariadb.h).
 */
#include <setjmp.h>
#include <signal.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/buf.h"
#include "common/migrate.h"
#include "tests/unit/lib/tmariadb.h"

/* Run a shell command (see tmariadb.h). */
int tmariadb_sh(const char *fmt, ...)
{
	char cmd[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof cmd, fmt, ap);
	va_end(ap);
	int st = system(cmd);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Exec mariadbd on t's directory (child side; never returns). */
static void tm_exec(const struct tmariadb *t)
{
	char datadir[128], sockarg[160], pidarg[160], logarg[160];
	snprintf(datadir, sizeof datadir, "--datadir=%s/data", t->dir);
	snprintf(sockarg, sizeof sockarg, "--socket=%s", t->sock);
	snprintf(pidarg, sizeof pidarg, "--pid-file=%s/mysqld.pid", t->dir);
	snprintf(logarg, sizeof logarg, "--log-error=%s/mysqld.err", t->dir);
	if (!freopen("/dev/null", "w", stdout) || !freopen("/dev/null", "w", stderr))
		_exit(127);
	execlp("mariadbd", "mariadbd", "--no-defaults", datadir, getuid() == 0 ? "--user=root" : "--skip-name-resolve",
	       "--skip-networking", "--skip-grant-tables", sockarg, pidarg, logarg, "--innodb-buffer-pool-size=16M",
	       (char *)NULL);
	_exit(127);
}

/* Start the server (see tmariadb.h). */
bool tmariadb_start(struct tmariadb *t, const char *database)
{
	char sql[160];
	snprintf(t->dir, sizeof t->dir, "/tmp/agenttest-tmariadb-XXXXXX");
	t->pid = -1;
	if (mkdtemp(t->dir) == NULL)
		return false;
	snprintf(t->sock, sizeof t->sock, "%s/mysqld.sock", t->dir);
	if (tmariadb_sh("mariadb-install-db --no-defaults --datadir=%s/data %s --skip-test-db >%s/install.log 2>&1",
		  t->dir, getuid() == 0 ? "--user=root" : "", t->dir) != 0) {
		fprintf(stderr, "mariadb-install-db failed, see %s/install.log\n", t->dir);
		return false;
	}
	if (!tmariadb_launch(t))
		return false;
	struct db *probe = tmariadb_connect(t, "mysql");
	if (probe == NULL)
		return false;
	int n = snprintf(sql, sizeof sql, "CREATE DATABASE IF NOT EXISTS `%s`", database);
	bool ok = db_exec_script(probe, sql, (size_t)n) == DB_OK;
	db_free(probe);
	return ok;
}

/* Start on the existing directory and wait (see tmariadb.h). */
bool tmariadb_launch(struct tmariadb *t)
{
	t->pid = fork();
	if (t->pid == 0)
		tm_exec(t);
	for (int i = 0; t->pid > 0 && i < 300; i++) {
		struct timespec ts = { 0, 100 * 1000000L };
		nanosleep(&ts, NULL);
		struct db *probe = tmariadb_connect(t, "mysql");
		if (probe != NULL) {
			db_free(probe);
			return true;
		}
	}
	fprintf(stderr, "mariadbd did not start, see %s/mysqld.err\n", t->dir);
	return false;
}

/* Stop, keeping the data (see tmariadb.h). */
void tmariadb_halt(struct tmariadb *t)
{
	if (t->pid > 0) {
		kill(t->pid, SIGTERM);
		waitpid(t->pid, NULL, 0);
		t->pid = -1;
	}
}

/* Connect (see tmariadb.h). */
struct db *tmariadb_connect(const struct tmariadb *t, const char *database)
{
	struct dburl u = { .host = "localhost", .database = (char *)(uintptr_t)database, .socket = (char *)(uintptr_t)t->sock };
	struct db *d = db_new(&u);
	if (d != NULL && db_connect(d) != DB_OK) {
		db_free(d);
		d = NULL;
	}
	return d;
}

/* Stop and remove (see tmariadb.h). */
void tmariadb_stop(struct tmariadb *t)
{
	tmariadb_halt(t);
	if (t->dir[0] != '\0')
		tmariadb_sh("rm -rf '%s'", t->dir);
}

/* Server, handle and schema in one step (see tmariadb.h). */
bool tmariadb_start_migrated(struct tmariadb *t, const char *database, struct db **db, const char *who)
{
	struct buf err = BUF_INIT;
	size_t applied = 0;
	*db = NULL;
	bool ok = tmariadb_start(t, database) && (*db = tmariadb_connect(t, database)) != NULL &&
		  migrate_run(*db, "sql", false, NULL, &applied, &err);
	if (!ok) {
		fprintf(stderr, "%s setup: %s\n", who, err.len ? buf_cstr(&err) : "no server or no connection");
		tmariadb_finish(t, *db);
		*db = NULL;
	}
	buf_free(&err);
	return ok;
}

/* Free the handle and stop (see tmariadb.h). */
void tmariadb_finish(struct tmariadb *t, struct db *db)
{
	db_free(db);
	tmariadb_stop(t);
}

void tmariadb_ok(struct db *db, const char *sql)
{
	if (db_exec(db, sql, NULL, 0, NULL, 0, NULL, NULL, NULL, 0) != DB_OK)
		fail_msg("%s: %s", sql, db_error(db));
}

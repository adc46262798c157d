/*
 * The database layer against a real, private MariaDB server: typed
 * arguments and results, error mapping, transactions, reconnection after a
 * server restart, migrations (order, idempotence, changed and missing files,
 * bad names, a failing migration) and the token store. The server runs in a
 * temporary directory on a unix socket, with --skip-grant-tables so that the
 * test works as any user; it is stopped and removed at the end.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include <sodium.h>

#include "common/db.h"
#include "common/migrate.h"
#include "common/tokstore.h"

static char dir[64];
static char sockpath[128];
static pid_t server = -1;
static struct db *db;
static int reconnects;

/* Run a shell command quietly; returns its exit status. */
static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...)
{
	char cmd[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof cmd, fmt, ap);
	va_end(ap);
	int st = system(cmd);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Start mariadbd on the private socket and wait until it answers. */
static bool server_start(void)
{
	char datadir[128], sockarg[160], pidarg[160], logarg[160];
	snprintf(datadir, sizeof datadir, "--datadir=%s/data", dir);
	snprintf(sockarg, sizeof sockarg, "--socket=%s", sockpath);
	snprintf(pidarg, sizeof pidarg, "--pid-file=%s/mysqld.pid", dir);
	snprintf(logarg, sizeof logarg, "--log-error=%s/mysqld.err", dir);
	server = fork();
	if (server == 0) {
		if (!freopen("/dev/null", "w", stdout) || !freopen("/dev/null", "w", stderr))
			_exit(127);
		if (getuid() == 0)
			execlp("mariadbd", "mariadbd", "--no-defaults", datadir, "--user=root", "--skip-networking",
			       "--skip-grant-tables", sockarg, pidarg, logarg, "--innodb-buffer-pool-size=16M", (char *)NULL);
		else
			execlp("mariadbd", "mariadbd", "--no-defaults", datadir, "--skip-networking",
			       "--skip-grant-tables", sockarg, pidarg, logarg, "--innodb-buffer-pool-size=16M", (char *)NULL);
		_exit(127);
	}
	struct dburl u = { .host = "localhost", .database = "mysql", .socket = sockpath };
	struct db *probe = db_new(&u);
	for (int i = 0; i < 300; i++) {
		struct timespec ts = { 0, 100 * 1000000L };
		nanosleep(&ts, NULL);
		if (db_ping(probe) == DB_OK) {
			db_exec_script(probe, "CREATE DATABASE IF NOT EXISTS agenttest_test", 44);
			db_free(probe);
			return true;
		}
	}
	db_free(probe);
	return false;
}

/* Stop the server and wait for it. */
static void server_stop(void)
{
	if (server > 0) {
		kill(server, SIGTERM);
		waitpid(server, NULL, 0);
		server = -1;
	}
}

static void on_reconnect(void)
{
	reconnects++;
}

static int setup(void **state)
{
	(void)state;
	if (sodium_init() < 0)
		return 1;
	snprintf(dir, sizeof dir, "/tmp/agenttest-dbtest-XXXXXX");
	if (mkdtemp(dir) == NULL)
		return 1;
	snprintf(sockpath, sizeof sockpath, "%s/mysqld.sock", dir);
	if (sh("mariadb-install-db --no-defaults --datadir=%s/data %s --skip-test-db >%s/install.log 2>&1", dir,
	       getuid() == 0 ? "--user=root" : "", dir) != 0) {
		fprintf(stderr, "mariadb-install-db failed, see %s/install.log\n", dir);
		return 1;
	}
	if (!server_start()) {
		fprintf(stderr, "mariadbd did not start, see %s/mysqld.err\n", dir);
		return 1;
	}
	struct dburl u = { .host = "localhost", .database = "agenttest_test", .socket = sockpath };
	db = db_new(&u);
	db_set_reconnect_hook(db, on_reconnect);
	return db_connect(db) != DB_OK;
}

static int teardown(void **state)
{
	(void)state;
	db_free(db);
	server_stop();
	sh("rm -rf %s", dir);
	return 0;
}

static void test_exec_types_and_errors(void **state)
{
	char text[16], small[4], blob[8];
	struct db_result res;
	static const char ddl[] = "CREATE TABLE t (id INT PRIMARY KEY, s VARCHAR(32), b VARBINARY(8), n INT NULL)";
	if (db_exec_script(db, ddl, sizeof ddl - 1) != DB_OK)
		fail_msg("%s", db_error(db));
	struct db_arg a1[4] = { DB_ARG_INT(1), DB_ARG_TEXT("héllo"), DB_ARG_BLOB("\0\1\2", 3), DB_ARG_NULL };
	assert_int_equal(db_exec(db, "INSERT INTO t VALUES (?, ?, ?, ?)", a1, 4, NULL, 0, NULL, NULL, &res, 0), DB_OK);
	assert_int_equal(res.affected, 1);
	assert_int_equal(db_exec(db, "INSERT INTO t VALUES (?, ?, ?, ?)", a1, 4, NULL, 0, NULL, NULL, &res, 0), DB_DUPLICATE);
	struct db_col cols[4] = { DB_COL_INT, DB_COL_TEXT(text), DB_COL_BLOB(blob), DB_COL_INT };
	struct db_arg key[1] = { DB_ARG_INT(1) };
	assert_int_equal(db_exec(db, "SELECT id, s, b, n FROM t WHERE id = ?", key, 1, cols, 4, NULL, NULL, &res,
	                         DB_IDEMPOTENT), DB_OK);
	assert_int_equal(res.rows, 1);
	assert_int_equal(cols[0].i, 1);
	assert_string_equal(text, "héllo");
	assert_int_equal(cols[2].len, 3);
	assert_memory_equal(blob, "\0\1\2", 3);
	assert_true(cols[3].is_null);
	/* a value larger than its buffer is an error, never truncated */
	struct db_col tiny[1] = { DB_COL_TEXT(small) };
	assert_int_equal(db_exec(db, "SELECT s FROM t", NULL, 0, tiny, 1, NULL, NULL, NULL, 0), DB_ERROR);
	/* column and argument count mismatches */
	assert_int_equal(db_exec(db, "SELECT id, s FROM t", NULL, 0, cols, 1, NULL, NULL, NULL, 0), DB_ERROR);
	assert_int_equal(db_exec(db, "SELECT id FROM t WHERE id = ?", NULL, 0, cols, 1, NULL, NULL, NULL, 0), DB_ERROR);
	assert_int_equal(db_exec(db, "SELEKT 1", NULL, 0, NULL, 0, NULL, NULL, NULL, 0), DB_ERROR);
	assert_non_null(strstr(db_error(db), "syntax"));
	/* transactions */
	struct db_arg a2[4] = { DB_ARG_INT(2), DB_ARG_TEXT("x"), DB_ARG_NULL, DB_ARG_INT(5) };
	assert_int_equal(db_begin(db), DB_OK);
	assert_int_equal(db_exec(db, "INSERT INTO t VALUES (?, ?, ?, ?)", a2, 4, NULL, 0, NULL, NULL, NULL, 0), DB_OK);
	db_rollback(db);
	assert_int_equal(db_exec(db, "SELECT id FROM t WHERE id = 2", NULL, 0, cols, 1, NULL, NULL, &res, 0), DB_OK);
	assert_int_equal(res.rows, 0);
	assert_int_equal(db_begin(db), DB_OK);
	assert_int_equal(db_exec(db, "INSERT INTO t VALUES (?, ?, ?, ?)", a2, 4, NULL, 0, NULL, NULL, NULL, 0), DB_OK);
	assert_int_equal(db_commit(db), DB_OK);
	assert_int_equal(db_exec(db, "SELECT id FROM t WHERE id = 2", NULL, 0, cols, 1, NULL, NULL, &res, 0), DB_OK);
	assert_int_equal(res.rows, 1);
	(void)state;
}

/* Write text to dir/sql/name. */
static void put_sql(const char *name, const char *text)
{
	char path[256];
	snprintf(path, sizeof path, "%s/sql/%s", dir, name);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

/* Run the migrator on dir/sql; returns success, message in err. */
static bool migrate(size_t *applied, struct buf *err)
{
	char sqldir[128];
	snprintf(sqldir, sizeof sqldir, "%s/sql", dir);
	buf_reset(err);
	return migrate_run(db, sqldir, false, NULL, applied, err);
}

static void test_migrations(void **state)
{
	struct buf err = BUF_INIT;
	size_t n = 0;
	char path[256];
	snprintf(path, sizeof path, "%s/sql", dir);
	assert_int_equal(mkdir(path, 0700), 0);
	assert_int_equal(sh("cp sql/001_init.sql %s/sql/", dir), 0);
	put_sql("002_extra.sql", "CREATE TABLE IF NOT EXISTS extra (id INT PRIMARY KEY);\n"
	                         "INSERT IGNORE INTO extra VALUES (1);\n");
	put_sql("README", "not a migration");
	assert_true(migrate(&n, &err));
	assert_int_equal(n, 2);
	assert_true(migrate(&n, &err));
	assert_int_equal(n, 0);
	/* an applied migration that changed is refused */
	put_sql("002_extra.sql", "CREATE TABLE IF NOT EXISTS extra (id INT PRIMARY KEY);\n");
	assert_false(migrate(&n, &err));
	assert_non_null(strstr(buf_cstr(&err), "002_extra.sql was changed after it was applied"));
	put_sql("002_extra.sql", "CREATE TABLE IF NOT EXISTS extra (id INT PRIMARY KEY);\n"
	                         "INSERT IGNORE INTO extra VALUES (1);\n");
	/* a failing migration names itself and is not recorded */
	put_sql("003_bad.sql", "CREATE TABLE IF NOT EXISTS bad (id INT PRIMARY KEY);\nINSERT INTO nosuch VALUES (1);\n");
	assert_false(migrate(&n, &err));
	assert_non_null(strstr(buf_cstr(&err), "003_bad.sql"));
	put_sql("003_bad.sql", "CREATE TABLE IF NOT EXISTS bad (id INT PRIMARY KEY);\n");
	assert_true(migrate(&n, &err)); /* re-runnable after the fix */
	assert_int_equal(n, 1);
	/* bad names and duplicate versions */
	put_sql("4_short.sql", "SELECT 1;");
	assert_false(migrate(&n, &err));
	assert_non_null(strstr(buf_cstr(&err), "4_short.sql"));
	snprintf(path, sizeof path, "%s/sql/4_short.sql", dir);
	unlink(path);
	put_sql("003_again.sql", "SELECT 1;");
	assert_false(migrate(&n, &err));
	assert_non_null(strstr(buf_cstr(&err), "same version"));
	snprintf(path, sizeof path, "%s/sql/003_again.sql", dir);
	unlink(path);
	/* a recorded migration whose file is gone */
	snprintf(path, sizeof path, "%s/sql/003_bad.sql", dir);
	unlink(path);
	assert_false(migrate(&n, &err));
	assert_non_null(strstr(buf_cstr(&err), "has no such file"));
	put_sql("003_bad.sql", "CREATE TABLE IF NOT EXISTS bad (id INT PRIMARY KEY);\n");
	assert_true(migrate(&n, &err));
	buf_free(&err);
	(void)state;
}

static void count_row(void *ctx, const struct tokstore_row *row)
{
	int *n = ctx;
	assert_true(row->prefix[0] == 'a' && strlen(row->prefix) == TOKEN_PREFIX_LEN);
	(*n)++;
}

static void test_tokstore(void **state)
{
	unsigned char key[SECRET_BYTES], h[TOKEN_HASH_BYTES];
	char tok[TOKEN_TEXT_LEN + 1], tok2[TOKEN_TEXT_LEN + 1];
	struct buf err = BUF_INIT;
	struct tokstore_identity who;
	long long id = 0, id2 = 0;
	bool found = false;
	int rows = 0;

	randombytes_buf(key, sizeof key);
	assert_int_equal(tokstore_create(db, key, "alice", TOKSTORE_ROLE_USER, tok, &id, &err), DB_OK);
	assert_true(token_well_formed(tok, strlen(tok)));
	assert_int_equal(tokstore_create(db, key, "alice", TOKSTORE_ROLE_USER, tok2, &id2, &err), DB_OK);
	assert_int_equal(tokstore_create(db, key, "alice", TOKSTORE_ROLE_ADMIN, tok2, &id2, &err), DB_DUPLICATE);
	assert_non_null(strstr(buf_cstr(&err), "exists with role user"));
	token_hash(key, tok, strlen(tok), h);
	assert_int_equal(tokstore_lookup(db, h, &who, &found), DB_OK);
	assert_true(found);
	assert_string_equal(who.name, "alice");
	assert_int_equal(who.role, TOKSTORE_ROLE_USER);
	assert_int_equal(who.token_id, id);
	assert_int_equal(who.last_used_age_s, -1);
	assert_int_equal(tokstore_touch(db, id), DB_OK);
	assert_int_equal(tokstore_lookup(db, h, &who, &found), DB_OK);
	assert_true(who.last_used_age_s >= 0 && who.last_used_age_s < 5);
	/* the token text itself is not stored anywhere */
	char probe[TOKEN_TEXT_LEN + 1];
	struct db_col c[1] = { DB_COL_TEXT(probe) };
	struct db_arg arg[1] = { DB_ARG_TEXT(tok) };
	struct db_result res;
	assert_int_equal(db_exec(db, "SELECT prefix FROM api_tokens WHERE prefix = ? OR token_hash = ?", (struct db_arg[]){
	                         arg[0], DB_ARG_BLOB(tok, TOKEN_HASH_BYTES) }, 2, c, 1, NULL, NULL, &res, 0), DB_OK);
	assert_int_equal(res.rows, 0);
	/* a different key does not verify */
	unsigned char other[SECRET_BYTES], h2[TOKEN_HASH_BYTES];
	memset(other, 9, sizeof other);
	token_hash(other, tok, strlen(tok), h2);
	assert_int_equal(tokstore_lookup(db, h2, &who, &found), DB_OK);
	assert_false(found);
	/* revoke */
	assert_int_equal(tokstore_revoke(db, id, &found), DB_OK);
	assert_true(found);
	assert_int_equal(tokstore_revoke(db, id, &found), DB_OK);
	assert_false(found);
	assert_int_equal(tokstore_lookup(db, h, &who, &found), DB_OK);
	assert_false(found);
	assert_int_equal(tokstore_list(db, count_row, &rows), DB_OK);
	assert_int_equal(rows, 2);
	/* the built-in admin users exist */
	char name[16];
	struct db_col nc[1] = { DB_COL_TEXT(name) };
	assert_int_equal(db_exec(db, "SELECT name FROM users WHERE role = 'admin' ORDER BY name", NULL, 0, nc, 1, NULL,
	                         NULL, &res, 0), DB_OK);
	assert_int_equal(res.rows, 2);
	buf_free(&err);
	(void)state;
}

static void test_reconnect_after_restart(void **state)
{
	struct db_col c[1] = { DB_COL_INT };
	reconnects = 0;
	assert_int_equal(db_exec(db, "SELECT 1", NULL, 0, c, 1, NULL, NULL, NULL, DB_IDEMPOTENT), DB_OK);
	server_stop();
	assert_int_equal(db_exec(db, "SELECT 1", NULL, 0, c, 1, NULL, NULL, NULL, DB_IDEMPOTENT), DB_UNAVAILABLE);
	assert_int_equal(db_ping(db), DB_UNAVAILABLE);
	assert_true(server_start());
	struct timespec ts = { 1, 200 * 1000000L }; /* past DB_RETRY_INTERVAL_MS */
	nanosleep(&ts, NULL);
	assert_int_equal(db_exec(db, "SELECT 1", NULL, 0, c, 1, NULL, NULL, NULL, DB_IDEMPOTENT), DB_OK);
	assert_int_equal(c[0].i, 1);
	assert_int_equal(reconnects, 1);
	/* an idle connection whose server restarted recovers on the next statement */
	server_stop();
	assert_true(server_start());
	assert_int_equal(db_exec(db, "SELECT 2", NULL, 0, c, 1, NULL, NULL, NULL, DB_IDEMPOTENT), DB_OK);
	assert_int_equal(c[0].i, 2);
	assert_int_equal(reconnects, 2);
	(void)state;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exec_types_and_errors),
		cmocka_unit_test(test_migrations),
		cmocka_unit_test(test_tokstore),
		cmocka_unit_test(test_reconnect_after_restart),
	};
	return cmocka_run_group_tests_name("db", tests, setup, teardown);
}

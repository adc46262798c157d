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
#include "common/dsretire.h"
#include "common/migrate.h"
#include "common/secret_store.h"
#include "common/tokstore.h"
#include "tests/unit/lib/tmariadb.h"

static struct tmariadb srv;
static struct db *db;
static int reconnects;

static void on_reconnect(void)
{
	reconnects++;
}

static int setup(void **state)
{
	(void)state;
	if (sodium_init() < 0 || !tmariadb_start(&srv, "agenttest_test") ||
	    !(db = tmariadb_connect(&srv, "agenttest_test"))) {
		tmariadb_stop(&srv);   /* cmocka runs no teardown after a failed setup */
		return 1;
	}
	db_set_reconnect_hook(db, on_reconnect);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	tmariadb_finish(&srv, db);
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
	snprintf(path, sizeof path, "%s/sql/%s", srv.dir, name);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

/* Run the migrator on dir/sql; returns success, message in err. */
static bool migrate(size_t *applied, struct buf *err)
{
	char sqldir[128];
	snprintf(sqldir, sizeof sqldir, "%s/sql", srv.dir);
	buf_reset(err);
	return migrate_run(db, sqldir, false, NULL, applied, err);
}

static void test_migrations(void **state)
{
	struct buf err = BUF_INIT;
	size_t n = 0;
	char path[256];
	snprintf(path, sizeof path, "%s/sql", srv.dir);
	assert_int_equal(mkdir(path, 0700), 0);
	assert_int_equal(tmariadb_sh("cp sql/001_init.sql %s/sql/", srv.dir), 0);
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
	snprintf(path, sizeof path, "%s/sql/4_short.sql", srv.dir);
	unlink(path);
	put_sql("003_again.sql", "SELECT 1;");
	assert_false(migrate(&n, &err));
	assert_non_null(strstr(buf_cstr(&err), "same version"));
	snprintf(path, sizeof path, "%s/sql/003_again.sql", srv.dir);
	unlink(path);
	/* a recorded migration whose file is gone */
	snprintf(path, sizeof path, "%s/sql/003_bad.sql", srv.dir);
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

/*
 * The secret store against MariaDB: the real migrations in a database of its
 * own, put/get/delete round trip, replace, owners apart, a row moved to
 * another owner in SQL does not open, another server key does not open, the
 * plaintext is nowhere in the table.
 */
static void test_secret_store_db(void **state)
{
	static const char v1[] = "sk-ant-api03-first-value-0123456789abcd";
	static const char v2[] = "sk-ant-api03-second-value-9876543210wxyz";
	unsigned char key[SECRET_BYTES], other[SECRET_BYTES];
	struct buf out = BUF_INIT, err = BUF_INIT;
	size_t applied = 0;

	assert_int_equal(db_exec_script(db, "CREATE DATABASE IF NOT EXISTS agenttest_secrets", 47), DB_OK);
	struct dburl u = { .host = "localhost", .database = "agenttest_secrets", .socket = srv.sock };
	struct db *sdb = db_new(&u);
	if (!migrate_run(sdb, "sql", false, NULL, &applied, &err))
		fail_msg("%s", buf_cstr(&err));
	randombytes_buf(key, sizeof key);
	memcpy(other, key, sizeof other);
	other[0] ^= 0xff;

	assert_int_equal(secret_store_get(sdb, key, 9, "anthropic", &out, &err), 0);
	assert_true(secret_store_put(sdb, key, 9, "anthropic", v1, &err));
	assert_true(secret_store_put(sdb, key, 0, "anthropic", v2, &err));
	assert_int_equal(secret_store_get(sdb, key, 9, "anthropic", &out, &err), 1);
	assert_string_equal(buf_cstr(&out), v1);
	assert_int_equal(secret_store_get(sdb, key, 0, "anthropic", &out, &err), 1);
	assert_string_equal(buf_cstr(&out), v2);
	assert_int_equal(secret_store_get(sdb, key, 9, "coinglass", &out, &err), 0);
	assert_int_equal(secret_store_get(sdb, key, 10, "anthropic", &out, &err), 0);
	/* replace keeps one row per (owner, kind) */
	assert_true(secret_store_put(sdb, key, 9, "anthropic", v2, &err));
	assert_int_equal(secret_store_get(sdb, key, 9, "anthropic", &out, &err), 1);
	assert_string_equal(buf_cstr(&out), v2);
	/* the plaintext is not stored */
	struct db_col cnt[1] = { DB_COL_INT };
	struct db_arg like[1] = { DB_ARG_TEXT("%second-value%") };
	assert_int_equal(db_exec(sdb, "SELECT COUNT(*) FROM secrets WHERE ciphertext LIKE ?",
	                         like, 1, cnt, 1, NULL, NULL, NULL, 0), DB_OK);
	assert_int_equal(cnt[0].i, 0);
	/* another server key does not open */
	buf_reset(&err);
	assert_int_equal(secret_store_get(sdb, other, 9, "anthropic", &out, &err), -1);
	assert_string_equal(buf_cstr(&out), "");
	assert_null(strstr(buf_cstr(&err), "second-value"));
	/* a ciphertext moved to another owner by SQL does not open there */
	assert_int_equal(db_exec(sdb, "UPDATE secrets SET owner_id = 11 WHERE owner_id = 9", NULL, 0, NULL, 0, NULL,
	                         NULL, NULL, 0), DB_OK);
	assert_int_equal(secret_store_get(sdb, key, 11, "anthropic", &out, &err), -1);
	/* a bad kind or a too long value is refused */
	assert_int_equal(secret_store_get(sdb, key, 0, "openai", &out, &err), -1);
	assert_false(secret_store_put(sdb, key, 0, "openai", v1, &err));
	assert_false(secret_store_put(sdb, key, 0, "anthropic", "", &err));
	/* delete */
	assert_int_equal(secret_store_delete(sdb, 0, "anthropic", &err), 1);
	assert_int_equal(secret_store_delete(sdb, 0, "anthropic", &err), 0);
	assert_int_equal(secret_store_get(sdb, key, 0, "anthropic", &out, &err), 0);
	sodium_memzero(out.data, out.len);
	buf_free(&out);
	buf_free(&err);
	db_free(sdb);
	(void)state;
}

/* A lock wait timeout is DB_CONFLICT (retried once outside a transaction,
 * then reported), and db_writes() counts only changes that took effect. */
static void test_lock_conflict(void **state)
{
	struct db *b = tmariadb_connect(&srv, "agenttest_test");
	assert_non_null(b);
	assert_int_equal(db_exec(db, "CREATE TABLE IF NOT EXISTS t_lock (id INT PRIMARY KEY, v INT)", NULL, 0, NULL, 0,
	                         NULL, NULL, NULL, 0), DB_OK);
	assert_int_equal(db_exec(db, "INSERT INTO t_lock VALUES (1, 0)", NULL, 0, NULL, 0, NULL, NULL, NULL, 0), DB_OK);
	assert_int_equal(db_exec(b, "SET SESSION innodb_lock_wait_timeout = 1", NULL, 0, NULL, 0, NULL, NULL, NULL, 0),
	                 DB_OK);
	unsigned long wb = db_writes(b), wa = db_writes(db);
	assert_int_equal(db_begin(db), DB_OK);
	assert_int_equal(db_exec(db, "UPDATE t_lock SET v = 1 WHERE id = 1", NULL, 0, NULL, 0, NULL, NULL, NULL, 0), DB_OK);
	assert_int_equal(db_writes(db), wa);   /* not yet: the transaction is open */
	/* autocommit on b waits for a's row lock, times out, is retried once, times out again */
	assert_int_equal(db_exec(b, "UPDATE t_lock SET v = 2 WHERE id = 1", NULL, 0, NULL, 0, NULL, NULL, NULL, 0),
	                 DB_CONFLICT);
	assert_string_equal(db_strerror(DB_CONFLICT), "conflict");
	assert_int_equal(db_writes(b), wb);
	/* inside a transaction it is reported at once and the caller rolls back */
	assert_int_equal(db_begin(b), DB_OK);
	assert_int_equal(db_exec(b, "UPDATE t_lock SET v = 3 WHERE id = 1", NULL, 0, NULL, 0, NULL, NULL, NULL, 0),
	                 DB_CONFLICT);
	db_rollback(b);
	assert_int_equal(db_commit(db), DB_OK);
	assert_int_equal(db_writes(db), wa + 1);
	struct db_result r = { 0 };
	assert_int_equal(db_exec(b, "UPDATE t_lock SET v = 4 WHERE id = 1", NULL, 0, NULL, 0, NULL, NULL, &r, 0), DB_OK);
	assert_int_equal(r.affected, 1);
	assert_int_equal(db_writes(b), wb + 1);
	/* a statement that changes nothing is not a write */
	assert_int_equal(db_exec(b, "UPDATE t_lock SET v = 4 WHERE id = 1", NULL, 0, NULL, 0, NULL, NULL, NULL, 0), DB_OK);
	assert_int_equal(db_writes(b), wb + 1);
	db_free(b);
	(void)state;
}

static void test_reconnect_after_restart(void **state)
{
	struct db_col c[1] = { DB_COL_INT };
	reconnects = 0;
	assert_int_equal(db_exec(db, "SELECT 1", NULL, 0, c, 1, NULL, NULL, NULL, DB_IDEMPOTENT), DB_OK);
	tmariadb_halt(&srv);
	assert_int_equal(db_exec(db, "SELECT 1", NULL, 0, c, 1, NULL, NULL, NULL, DB_IDEMPOTENT), DB_UNAVAILABLE);
	assert_int_equal(db_ping(db), DB_UNAVAILABLE);
	assert_true(tmariadb_launch(&srv));
	struct timespec ts = { 1, 200 * 1000000L }; /* past DB_RETRY_INTERVAL_MS */
	nanosleep(&ts, NULL);
	assert_int_equal(db_exec(db, "SELECT 1", NULL, 0, c, 1, NULL, NULL, NULL, DB_IDEMPOTENT), DB_OK);
	assert_int_equal(c[0].i, 1);
	assert_int_equal(reconnects, 1);
	/* an idle connection whose server restarted recovers on the next statement */
	tmariadb_halt(&srv);
	assert_true(tmariadb_launch(&srv));
	assert_int_equal(db_exec(db, "SELECT 2", NULL, 0, c, 1, NULL, NULL, NULL, DB_IDEMPOTENT), DB_OK);
	assert_int_equal(c[0].i, 2);
	assert_int_equal(reconnects, 2);
	(void)state;
}

/*
 * dsretire against the real schema: a version an agent references
 * (agents.dataset_id, sql/014) is pinned: delete and retention keep its
 * datasets row (dsretire_unregister 0, dsretire_hash_pinned 1), while an
 * unreferenced version of the same window goes; once the agent is gone the
 * version can go too, and then its bytes are in use by no row.
 */
static void test_dsretire_agent_pin(void **state)
{
	static const char h1[] = "1111111111111111111111111111111111111111111111111111111111111111";
	static const char h2[] = "2222222222222222222222222222222222222222222222222222222222222222";
	struct buf err = BUF_INIT;
	size_t applied = 0;
	(void)state;
	assert_int_equal(db_exec_script(db, "CREATE DATABASE IF NOT EXISTS agenttest_dsretire", 48), DB_OK);
	struct dburl u = { .host = "localhost", .database = "agenttest_dsretire", .socket = srv.sock };
	struct db *d = db_new(&u);
	if (!migrate_run(d, "sql", false, NULL, &applied, &err))
		fail_msg("%s", buf_cstr(&err));
	const char *setup_sql[] = {
		"INSERT INTO users (id, name, role) VALUES (7, 'pin-owner', 'user')",
		"INSERT INTO datasets (id, version, dataset_hash, path, assets, interval_ms, bars, first_ts, last_ts) "
		"VALUES (41, 'binance-1m-60d-20260101T0000Z', '1111111111111111111111111111111111111111111111111111111111111111',"
		" '/x/1', '[\"BTC\"]', 60000, 10, 0, 540000)",
		"INSERT INTO datasets (id, version, dataset_hash, path, assets, interval_ms, bars, first_ts, last_ts) "
		"VALUES (42, 'binance-1m-60d-20260102T0000Z', '2222222222222222222222222222222222222222222222222222222222222222',"
		" '/x/2', '[\"BTC\"]', 60000, 10, 0, 540000)",
		"INSERT INTO agents (id, owner_id, challenge, goal, dataset_id, dataset_version, dataset_hash) VALUES "
		"('00000000-0000-4000-8000-000000000001', 7, 'ETH-1H-BINARY', 'g', 41, 'binance-1m-60d-20260101T0000Z',"
		" '1111111111111111111111111111111111111111111111111111111111111111')",
	};
	for (size_t i = 0; i < sizeof setup_sql / sizeof *setup_sql; i++)
		if (db_exec(d, setup_sql[i], NULL, 0, NULL, 0, NULL, NULL, NULL, 0) != DB_OK)
			fail_msg("%s: %s", setup_sql[i], db_error(d));
	/* the agent's version is pinned and kept; the other one is not */
	assert_int_equal(dsretire_hash_pinned(d, h1), 1);
	assert_int_equal(dsretire_hash_pinned(d, h2), 0);
	assert_int_equal(dsretire_unregister(d, 41), 0);
	assert_int_equal(dsretire_hash_in_use(d, h1), 1);
	assert_int_equal(dsretire_unregister(d, 42), 1);
	assert_int_equal(dsretire_hash_in_use(d, h2), 0);
	/* without the agent, the version can go */
	assert_int_equal(db_exec(d, "DELETE FROM agents WHERE dataset_id = 41", NULL, 0, NULL, 0, NULL, NULL, NULL, 0),
			 DB_OK);
	assert_int_equal(dsretire_hash_pinned(d, h1), 0);
	assert_int_equal(dsretire_unregister(d, 41), 1);
	assert_int_equal(dsretire_hash_in_use(d, h1), 0);
	assert_int_equal(dsretire_unregister(d, 41), 0); /* gone: nothing to delete */
	db_free(d);
	buf_free(&err);
}

/*
 * dsretire and the paper pin (sql/030): a version an active paper account
 * reads (paper_accounts.dataset_id) is pinned and kept; once the account
 * drops the pin (a pause or a retirement clears it) the version can go,
 * and a pin on a version already gone is refused by the foreign key (1452,
 * which the paper step reads as "retired before it could be pinned").
 */
static void test_dsretire_paper_pin(void **state)
{
	static const char h5[] = "5555555555555555555555555555555555555555555555555555555555555555";
	static const char h6[] = "6666666666666666666666666666666666666666666666666666666666666666";
	struct buf err = BUF_INIT;
	size_t applied = 0;
	(void)state;
	assert_int_equal(db_exec_script(db, "CREATE DATABASE IF NOT EXISTS agenttest_dsretire_paper", 54), DB_OK);
	struct dburl u = { .host = "localhost", .database = "agenttest_dsretire_paper", .socket = srv.sock };
	struct db *d = db_new(&u);
	if (!migrate_run(d, "sql", false, NULL, &applied, &err))
		fail_msg("%s", buf_cstr(&err));
	const char *setup_sql[] = {
		"INSERT INTO datasets (id, version, dataset_hash, path, assets, interval_ms, bars, first_ts, last_ts) "
		"VALUES (51, 'binance-1m-60d-20260101T0000Z', '5555555555555555555555555555555555555555555555555555555555555555',"
		" '/x/5', '[\"BTC\"]', 60000, 10, 0, 540000)",
		"INSERT INTO datasets (id, version, dataset_hash, path, assets, interval_ms, bars, first_ts, last_ts) "
		"VALUES (52, 'binance-1m-60d-20260101T0001Z', '6666666666666666666666666666666666666666666666666666666666666666',"
		" '/x/6', '[\"BTC\"]', 60000, 10, 60000, 600000)",
		"INSERT INTO dataset_labels (label, dataset_id) VALUES ('binance-1m-60d', 52)",
		"INSERT INTO paper_accounts (id, promotion_id, role, label, strategy_version_id, run_id, dataset_id, kind, "
		"asset, fee_bps, max_leverage, start_ts, last_ts) VALUES (1, NULL, 'shadow', 'binance-1m-60d', 1, 'r1', 51, "
		"'positions', 'BTC', 10, 1, 0, 540000)",
	};
	for (size_t i = 0; i < sizeof setup_sql / sizeof *setup_sql; i++)
		if (db_exec(d, setup_sql[i], NULL, 0, NULL, 0, NULL, NULL, NULL, 0) != DB_OK)
			fail_msg("%s: %s", setup_sql[i], db_error(d));
	/* the account's version is pinned and kept, though the label moved on */
	assert_int_equal(dsretire_hash_pinned(d, h5), 1);
	assert_int_equal(dsretire_hash_pinned(d, h6), 0);
	assert_int_equal(dsretire_unregister(d, 51), 0);
	assert_int_equal(dsretire_hash_in_use(d, h5), 1);
	/* a pause drops the pin (paper_job.c): then the version goes */
	assert_int_equal(db_exec(d, "UPDATE paper_accounts SET state = 'paused', dataset_id = NULL WHERE id = 1", NULL, 0,
				 NULL, 0, NULL, NULL, NULL, 0), DB_OK);
	assert_int_equal(dsretire_hash_pinned(d, h5), 0);
	assert_int_equal(dsretire_unregister(d, 51), 1);
	assert_int_equal(dsretire_hash_in_use(d, h5), 0);
	/* pinning a version that is gone: refused by the foreign key */
	assert_int_equal(db_exec(d, "UPDATE paper_accounts SET dataset_id = 51 WHERE id = 1", NULL, 0, NULL, 0, NULL,
				 NULL, NULL, 0), DB_ERROR);
	assert_int_equal(db_errno(d), 1452);
	db_free(d);
	buf_free(&err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exec_types_and_errors),
		cmocka_unit_test(test_migrations),
		cmocka_unit_test(test_tokstore),
		cmocka_unit_test(test_secret_store_db),
		cmocka_unit_test(test_lock_conflict),
		cmocka_unit_test(test_dsretire_agent_pin),
		cmocka_unit_test(test_dsretire_paper_pin),
		cmocka_unit_test(test_reconnect_after_restart),
	};
	return cmocka_run_group_tests_name("db", tests, setup, teardown);
}

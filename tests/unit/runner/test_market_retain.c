/*
 * test_market_retain.c: retention of market-data versions (mk_retain,
 * evaluator/runner/market/register.h, the code the prefetch job and a
 * registering `agenttest data fetch` run after storing a new version;
 * docs/market-data.md, "Retention") against a private MariaDB with every
 * migration applied. Five registered versions of one window, the newest
 * just stored, keep = 1: the version a run references, the one an
 * evaluation references and the one an agent references each keep their
 * `datasets` row and their files (directory, quality report, midstates);
 * only the unreferenced one goes. Then each pin is dropped in turn and the
 * next retention retires exactly that version, so each of the three kinds
 * of reference alone is what kept its version.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/db.h"
#include "evaluator/runner/market/register.h"
#include "tests/unit/lib/tmariadb.h"

#define DBNAME "agenttest_retain"
#define WINDOW "retain-1m-60d"
#define NVER   5

static struct tmariadb srv;
static struct db *db;
static char data_dir[64];

/* One statement that must succeed. */
static void ok(const char *sql)
{
	if (db_exec(db, sql, NULL, 0, NULL, 0, NULL, NULL, NULL, 0) != DB_OK)
		fail_msg("%s: %s", sql, db_error(db));
}

/* The hash of version i (1..NVER): 64 copies of the digit. */
static const char *hash_of(int i)
{
	static char h[NVER + 1][65];
	memset(h[i], '0' + i, 64);
	h[i][64] = '\0';
	return h[i];
}

/* Does data_dir/versions/<hash of i><suffix> exist? */
static bool stored(int i, const char *suffix)
{
	char p[256];
	snprintf(p, sizeof p, "%s/versions/%s%s", data_dir, hash_of(i), suffix);
	return access(p, F_OK) == 0;
}

/* Is version i still registered? */
static bool registered(int i)
{
	char sql[128];
	struct db_col c = DB_COL_INT;
	snprintf(sql, sizeof sql, "SELECT COUNT(*) FROM datasets WHERE id = %d", i);
	if (db_exec(db, sql, NULL, 0, &c, 1, NULL, NULL, NULL, 0) != DB_OK)
		fail_msg("%s", db_error(db));
	return c.i == 1;
}

/* Version i: its files as mk_store leaves them, and its datasets row. */
static void add_version(int i)
{
	char p[256], sql[512];
	snprintf(p, sizeof p, "%s/versions/%s", data_dir, hash_of(i));
	assert_int_equal(mkdir(p, 0755), 0);
	static const char *const files[] = { "/manifest.json", "/ts.i64", ".quality.json", ".midstate" };
	for (size_t k = 0; k < sizeof files / sizeof *files; k++) {
		char f[300];
		snprintf(f, sizeof f, "%s%s", p, files[k]);
		FILE *fp = fopen(f, "w");
		assert_non_null(fp);
		fputs("x", fp);
		fclose(fp);
	}
	snprintf(sql, sizeof sql,
		 "INSERT INTO datasets (id, version, dataset_hash, path, assets, interval_ms, bars, first_ts, last_ts, "
		 "window_label) VALUES (%d, '" WINDOW "-2026010%dT0000Z', '%s', '%s', '[\"BTC\"]', 60000, 10, 0, 540000, "
		 "'" WINDOW "')", i, i, hash_of(i), p);
	ok(sql);
}

static int setup(void **state)
{
	(void)state;
	snprintf(data_dir, sizeof data_dir, "/tmp/agenttest-retain-XXXXXX");
	if (!mkdtemp(data_dir))
		return 1;
	char v[96];
	snprintf(v, sizeof v, "%s/versions", data_dir);
	if (mkdir(v, 0755) != 0)
		return 1;
	return tmariadb_start_migrated(&srv, DBNAME, &db, "retain test") ? 0 : 1;
}

static int teardown(void **state)
{
	(void)state;
	char cmd[128];
	tmariadb_finish(&srv, db);
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", data_dir);
	return system(cmd) == 0 ? 0 : 1;
}

/* Version i is kept: row, directory, report and midstates all there. */
static void assert_kept(int i)
{
	assert_true(registered(i));
	assert_true(stored(i, "/manifest.json"));
	assert_true(stored(i, ".quality.json"));
	assert_true(stored(i, ".midstate"));
}

/* Version i is retired: no row, no directory, no report, no midstates. */
static void assert_retired(int i)
{
	assert_false(registered(i));
	assert_false(stored(i, ""));
	assert_false(stored(i, ".quality.json"));
	assert_false(stored(i, ".midstate"));
}

static void test_retention_keeps_what_a_run_an_evaluation_or_an_agent_references(void **state)
{
	(void)state;
	ok("INSERT INTO users (id, name) VALUES (70, 'retain-owner')");
	ok("INSERT INTO strategies (id, owner_id, name) VALUES (70, 70, 's')");
	ok("INSERT INTO strategy_versions (id, strategy_id, code_hash, kind, code, params) "
	   "VALUES (70, 70, REPEAT('b', 64), 'simulate', 'x', '{}')");
	for (int i = 1; i <= NVER; i++)
		add_version(i);
	/* 1: a run, 2: an evaluation, 3: an agent; 4: nothing; 5: the new one */
	ok("INSERT INTO runs (id, owner_id, strategy_version_id, dataset_id, dataset_version, dataset_hash, code_hash, "
	   "config_hash, params) VALUES ('00000000-0000-4000-8000-00000000000a', 70, 70, 1, '" WINDOW "-20260101T0000Z', "
	   "REPEAT('1', 64), REPEAT('b', 64), REPEAT('c', 64), '{}')");
	ok("INSERT INTO evaluations (id, owner_id, challenge, dataset_id, dataset_version, dataset_hash, code_hash, code, "
	   "days_back, holdout_days) VALUES ('00000000-0000-4000-8000-00000000000b', 70, 'ETH-1H-BINARY', 2, '" WINDOW
	   "-20260102T0000Z', REPEAT('2', 64), REPEAT('b', 64), 'x', 1, 1)");
	ok("INSERT INTO agents (id, owner_id, challenge, goal, dataset_id, dataset_version, dataset_hash) VALUES "
	   "('00000000-0000-4000-8000-00000000000c', 70, 'ETH-1H-BINARY', 'g', 3, '" WINDOW "-20260103T0000Z', "
	   "REPEAT('3', 64))");

	assert_int_equal(mk_retain(db, data_dir, WINDOW, hash_of(5), 1), 1);
	assert_kept(1);
	assert_kept(2);
	assert_kept(3);
	assert_retired(4);
	assert_kept(5);

	/* each reference alone kept its version: drop it, the next retention retires it */
	static const char *const unpin[] = { "DELETE FROM runs WHERE dataset_id = 1",
					     "DELETE FROM evaluations WHERE dataset_id = 2",
					     "DELETE FROM agents WHERE dataset_id = 3" };
	for (int i = 1; i <= 3; i++) {
		ok(unpin[i - 1]);
		assert_int_equal(mk_retain(db, data_dir, WINDOW, hash_of(5), 1), 1);
		assert_retired(i);
		for (int j = i + 1; j <= 3; j++)
			assert_kept(j);
		assert_kept(5);
	}
	/* nothing older is left: a retention retires nothing, the newest stays */
	assert_int_equal(mk_retain(db, data_dir, WINDOW, hash_of(5), 1), 0);
	assert_kept(5);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_retention_keeps_what_a_run_an_evaluation_or_an_agent_references),
	};
	return cmocka_run_group_tests_name("market_retain", tests, setup, teardown);
}

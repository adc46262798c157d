/*
 * test_agent_best_db.c: the agent's best iteration (agent_set_best in
 * evaluator/runner/agent_job.c) against a private MariaDB with every
 * migration applied: the original's rule on the sealed holdout score,
 * highest (or lowest, for a lower-is-better metric) among the completed,
 * error-free iterations with a holdout score; ties keep the earliest;
 * failed, erroneous and unscored iterations never win, whatever their
 * score; an agent judged on forward scores is left alone.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include "common/db.h"
#include "evaluator/runner/agent.h"
#include "tests/unit/lib/tmariadb.h"

#define DBNAME "agenttest_best"
#define AG "cccccccc-0000-0000-0000-000000000001"

static struct tmariadb srv;
static struct db *db;

static int setup(void **state)
{
	(void)state;
	if (!tmariadb_start_migrated(&srv, DBNAME, &db, "agent_best test"))
		return -1;
	tmariadb_ok(db, "INSERT INTO users (id, name) VALUES (7, 'best-owner')");
	tmariadb_ok(db, "INSERT INTO datasets (id, version, dataset_hash, path, assets, interval_ms, bars, first_ts, last_ts) "
	   "VALUES (1, 'v1', REPEAT('a', 64), '/nonexistent', '[\"X\"]', 60000, 10, 0, 540000)");
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	tmariadb_finish(&srv, db);
	return 0;
}

/* A fresh agent AG with best_by `by` and no iterations. */
static void fresh_agent(const char *by)
{
	char sql[512];
	tmariadb_ok(db, "DELETE FROM agent_iterations WHERE agent_id = '" AG "'");
	tmariadb_ok(db, "DELETE FROM agents WHERE id = '" AG "'");
	snprintf(sql, sizeof sql, "INSERT INTO agents (id, owner_id, challenge, goal, driver, dataset_id, "
		 "dataset_version, dataset_hash, best_by) VALUES ('" AG "', 7, 'ETH-1H-BINARY', 'g', 'builtin', 1, "
		 "'v1', REPEAT('a', 64), '%s')", by);
	tmariadb_ok(db, sql);
}

/* Iteration n of AG: status, has_error, holdout score (NULL when score is "NULL"). */
static void iteration(int n, const char *status, int has_error, const char *score)
{
	char sql[512];
	snprintf(sql, sizeof sql, "INSERT INTO agent_iterations (id, agent_id, iteration, status, has_error, "
		 "holdout_score) VALUES (UUID(), '" AG "', %d, '%s', %d, %s)", n, status, has_error, score);
	tmariadb_ok(db, sql);
}

/* AG's best_iteration after agent_set_best(lower): its number, 0 when NULL. */
static long long best(bool lower, double *score)
{
	struct buf err = BUF_INIT;
	if (agent_set_best(db, AG, lower, &err) != 0)
		fail_msg("agent_set_best: %s", buf_cstr(&err));
	buf_free(&err);
	char sc[40] = "";
	struct db_col c[] = { DB_COL_INT, DB_COL_TEXT(sc) };
	if (db_exec(db, "SELECT best_iteration, CAST(best_score AS CHAR) FROM agents WHERE id = '" AG "'", NULL, 0, c, 2,
		    NULL, NULL, NULL, 0) != DB_OK)
		fail_msg("select: %s", db_error(db));
	if (score)
		*score = c[1].is_null ? -1 : strtod(sc, NULL);
	return c[0].is_null ? 0 : c[0].i;
}

/* Higher is better: the highest error-free, completed score wins; a higher
 * score on an erroneous, failed, running or unscored iteration does not. */
static void test_highest_among_error_free(void **state)
{
	(void)state;
	fresh_agent("holdout");
	assert_int_equal(best(false, NULL), 0);   /* nothing scored yet */
	iteration(1, "completed", 0, "0.52");
	iteration(2, "completed", 1, "0.90");     /* has_error */
	iteration(3, "failed", 0, "0.95");
	iteration(4, "running", 0, "0.97");
	iteration(5, "completed", 0, "NULL");
	iteration(6, "completed", 0, "0.56");
	iteration(7, "completed", 0, "0.54");
	double s;
	assert_int_equal(best(false, &s), 6);
	assert_true(s == 0.56);
}

/* Ties keep the earliest iteration, in both directions. */
static void test_ties_keep_the_earliest(void **state)
{
	(void)state;
	fresh_agent("holdout");
	iteration(1, "completed", 0, "0.50");
	iteration(2, "completed", 0, "0.58");
	iteration(3, "completed", 0, "0.58");
	iteration(4, "completed", 0, "0.50");
	assert_int_equal(best(false, NULL), 2);
	assert_int_equal(best(true, NULL), 1);
}

/* Lower is better (e.g. log loss): the lowest error-free score. */
static void test_lower_is_better(void **state)
{
	(void)state;
	fresh_agent("holdout");
	iteration(1, "completed", 0, "1.02");
	iteration(2, "completed", 1, "0.10");
	iteration(3, "completed", 0, "0.95");
	iteration(4, "completed", 0, "0.99");
	double s;
	assert_int_equal(best(true, &s), 3);
	assert_true(s == 0.95);
}

/* An agent judged on forward scores is the forward job's to update. */
static void test_forward_agents_are_left_alone(void **state)
{
	(void)state;
	fresh_agent("forward");
	iteration(1, "completed", 0, "0.60");
	assert_int_equal(best(false, NULL), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_highest_among_error_free),
		cmocka_unit_test(test_ties_keep_the_earliest),
		cmocka_unit_test(test_lower_is_better),
		cmocka_unit_test(test_forward_agents_are_left_alone),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}

/*
 * test_llm_reserve_db.c: reservations against the owner's LLM budget of
 * the day (common/llm_reserve.c) on a private MariaDB with every migration
 * applied (sql/015, sql/028).
 *
 * Two reservers in two processes (two connections, as two runner hosts)
 * wait on the owner's day row while a third transaction holds it (both seen
 * in PROCESSLIST at their first statement, which cannot end while the row
 * is held), then race for a token budget that has room for exactly 10
 * of their 20 reservations: exactly 10 are granted and what is reserved is
 * the budget, never more. Settling replaces the estimate with the real
 * usage (tokens, USD, one request) and frees the rest of the estimate; a
 * request budget counts requests in flight; an expired reservation (its
 * proxy died) stops counting and is swept; settling a swept reservation
 * still charges what was spent; another owner's day is independent.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include <mysql.h>

#include "common/db.h"
#include "common/llm_reserve.h"
#include "tests/unit/lib/tmariadb.h"

#define DBNAME "agenttest_llm_reserve"

static struct tmariadb srv;
static struct db *db;

/* One integer of a one-row query on d (0 when no row or NULL). */
static long long one_int_on(struct db *d, const char *sql)
{
	struct db_col c = DB_COL_INT;
	bool got = false;
	if (db_exec(d, sql, NULL, 0, &c, 1, db_row_once, &got, NULL, 0) != DB_OK)
		fail_msg("%s: %s", sql, db_error(d));
	return !got || c.is_null ? 0 : c.i;
}

static long long one_int(const char *sql)
{
	return one_int_on(db, sql);
}

/* One DOUBLE of a one-row query (as text). */
static double one_dbl(const char *sql)
{
	char b[64] = "";
	struct db_col c = DB_COL_TEXT(b);
	if (db_exec(db, sql, NULL, 0, &c, 1, db_row_once, &(bool){ false }, NULL, 0) != DB_OK)
		fail_msg("%s: %s", sql, db_error(db));
	return strtod(b, NULL);
}

static int setup(void **state)
{
	(void)state;
	if (!tmariadb_start_migrated(&srv, DBNAME, &db, "llm_reserve test"))
		return 1;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	tmariadb_finish(&srv, db);
	return 0;
}

static const struct llm_reserve_limits NOLIMIT = { -1, -1, -1.0 };

/* One reservation of owner that must be granted; its id. */
static uint64_t must_reserve(uint64_t owner, const struct llm_reserve_limits *lim, int64_t tokens, double usd)
{
	struct llm_reserve_who w = { .owner_id = owner, .agent_id = "a1", .kind = "turn" };
	struct llm_reserve_usage est = { .output = tokens, .usd = usd };
	struct buf why = BUF_INIT;
	uint64_t id = 0;
	int rc = llm_reserve(db, &w, lim, &est, 600, &id, &why);
	if (rc != 1)
		fail_msg("reserve %lld tokens: %d %s", (long long)tokens, rc, buf_cstr(&why));
	buf_free(&why);
	assert_true(id > 0);
	return id;
}

/* A reservation that must be refused; its reason must start with prefix. */
static void must_refuse(uint64_t owner, const struct llm_reserve_limits *lim, int64_t tokens, double usd,
			const char *prefix)
{
	struct llm_reserve_who w = { .owner_id = owner, .kind = "ask" };
	struct llm_reserve_usage est = { .input = tokens / 2, .output = tokens - tokens / 2, .usd = usd };
	struct buf why = BUF_INIT;
	uint64_t id = 7;
	assert_int_equal(llm_reserve(db, &w, lim, &est, 600, &id, &why), 0);
	assert_int_equal(id, 0);
	if (strncmp(buf_cstr(&why), prefix, strlen(prefix)) != 0)
		fail_msg("refused with '%s', not '%s...'", buf_cstr(&why), prefix);
	buf_free(&why);
}

/* The child of the race: 10 reservations of 100 tokens on its own connection; exits with how many were granted. */
static void racer(int go)
{
	char c;
	struct db *mine = tmariadb_connect(&srv, DBNAME);
	if (!mine || read(go, &c, 1) != 1)
		_exit(100);
	struct llm_reserve_limits lim = { .tokens = 1000, .requests = -1, .usd = -1.0 };
	struct llm_reserve_who w = { .owner_id = 1, .agent_id = "racer", .kind = "turn" };
	struct llm_reserve_usage est = { .input = 40, .output = 60, .usd = 0.001 };
	int granted = 0;
	for (int i = 0; i < 10; i++) {
		struct buf why = BUF_INIT;
		uint64_t id;
		int rc = llm_reserve(mine, &w, &lim, &est, 600, &id, &why);
		buf_free(&why);
		if (rc < 0)
			_exit(101);
		granted += rc;
	}
	db_free(mine);
	_exit(granted);
}

/* Two reservers on two connections: they queue on the owner's day row, and together never pass the budget. */
static void test_concurrent_reservers_cannot_pass_the_budget(void **state)
{
	(void)state;
	int go[2];
	pid_t kid[2];
	assert_int_equal(pipe(go), 0);
	/* hold the owner's day row so both reservers are seen waiting on it */
	tmariadb_ok(db, "INSERT INTO llm_owner_day (owner_id, day) VALUES (1, UTC_DATE())");
	assert_int_equal(db_begin(db), DB_OK);
	assert_int_equal(one_int("SELECT requests FROM llm_owner_day WHERE owner_id = 1 AND day = UTC_DATE() FOR UPDATE"), 0);
	for (int k = 0; k < 2; k++) {
		kid[k] = fork();
		assert_true(kid[k] >= 0);
		if (kid[k] == 0) {
			close(go[1]);
			racer(go[0]);
		}
	}
	close(go[0]);
	assert_int_equal(write(go[1], "gg", 2), 2);
	close(go[1]);
	struct db *watch = tmariadb_connect(&srv, DBNAME);
	assert_non_null(watch);
	long long waiting = 0;
	for (int i = 0; i < 200 && waiting < 2; i++) {
		waiting = one_int_on(watch, "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE COMMAND IN "
				     "('Query', 'Execute') AND INFO LIKE 'INSERT INTO llm_owner_day%'");
		if (waiting < 2)
			usleep(20000);
	}
	db_free(watch);
	assert_int_equal(waiting, 2);
	assert_int_equal(db_commit(db), DB_OK);
	int granted = 0;
	for (int k = 0; k < 2; k++) {
		int st = 0;
		assert_int_equal(waitpid(kid[k], &st, 0), kid[k]);
		assert_true(WIFEXITED(st) && WEXITSTATUS(st) <= 10);
		granted += WEXITSTATUS(st);
	}
	assert_int_equal(granted, 10);
	assert_int_equal(one_int("SELECT COUNT(*) FROM llm_reservations WHERE owner_id = 1"), 10);
	assert_int_equal(one_int("SELECT SUM(tokens) FROM llm_reservations WHERE owner_id = 1"), 1000);
	assert_int_equal(one_int("SELECT COUNT(*) FROM llm_reservations WHERE owner_id = 1 AND agent_id = 'racer' AND "
				 "kind = 'turn' AND day = UTC_DATE() AND expires_at > UTC_TIMESTAMP(6) + INTERVAL 500 "
				 "SECOND"), 10);
	tmariadb_ok(db, "DELETE FROM llm_reservations");
}

/* Settling: the real usage replaces the estimate; the rest of the estimate is free again. */
static void test_settle_charges_the_real_usage(void **state)
{
	(void)state;
	struct llm_reserve_limits lim = { .tokens = 1000, .requests = -1, .usd = -1.0 };
	uint64_t id = must_reserve(2, &lim, 900, 0.05);
	must_refuse(2, &lim, 101, 0.0, "owner daily tokens: 0 used + 900 reserved + 101 asked of 1000");
	struct llm_reserve_usage u = { .input = 100, .output = 30, .cache_write = 15, .cache_read = 5, .usd = 0.0025 };
	struct buf err = BUF_INIT;
	assert_int_equal(llm_reserve_settle(db, 2, id, &u, &err), 0);
	buf_free(&err);
	assert_int_equal(one_int("SELECT COUNT(*) FROM llm_reservations"), 0);
	assert_int_equal(one_int("SELECT input * 1000000 + output * 10000 + cache_write * 100 + cache_read FROM "
				 "llm_owner_day WHERE owner_id = 2 AND day = UTC_DATE()"), 100 * 1000000 + 30 * 10000 + 1505);
	assert_int_equal(one_int("SELECT requests FROM llm_owner_day WHERE owner_id = 2 AND day = UTC_DATE()"), 1);
	assert_float_equal(one_dbl("SELECT CAST(usd AS CHAR) FROM llm_owner_day WHERE owner_id = 2"), 0.0025, 1e-12);
	/* 150 used: 850 fit exactly, 851 do not */
	must_refuse(2, &lim, 851, 0.0, "owner daily tokens: 150 used + 0 reserved + 851");
	uint64_t id2 = must_reserve(2, &lim, 850, 0.0);
	struct llm_reserve_usage none = { 0 };
	assert_int_equal(llm_reserve_settle(db, 2, id2, &none, &err), 0);   /* a request that failed: one request, no tokens */
	assert_int_equal(one_int("SELECT requests FROM llm_owner_day WHERE owner_id = 2"), 2);
	assert_int_equal(one_int("SELECT input + output + cache_write + cache_read FROM llm_owner_day WHERE owner_id = 2"),
			 150);
	/* USD: the estimate counts against the day's USD budget */
	struct llm_reserve_limits usd = { .tokens = -1, .requests = -1, .usd = 0.01 };
	uint64_t id3 = must_reserve(2, &usd, 1, 0.0075);
	must_refuse(2, &usd, 1, 0.0001, "owner daily usd: 0.002500 used + 0.007500 reserved");
	assert_int_equal(llm_reserve_settle(db, 2, id3, &none, &err), 0);
	buf_free(&err);
}

/* A request budget counts the requests in flight; another owner is independent. */
static void test_request_budget_counts_requests_in_flight(void **state)
{
	(void)state;
	struct llm_reserve_limits lim = { .tokens = -1, .requests = 2, .usd = -1.0 };
	must_reserve(3, &lim, 10, 0.0);
	must_reserve(3, &lim, 10, 0.0);
	must_refuse(3, &lim, 10, 0.0, "owner daily requests: 0 used + 2 in flight of 2");
	must_reserve(4, &lim, 10, 0.0);
	must_reserve(3, &NOLIMIT, 10, 0.0);
	assert_int_equal(one_int("SELECT COUNT(*) FROM llm_reservations WHERE owner_id = 3"), 3);
	tmariadb_ok(db, "DELETE FROM llm_reservations");
}

/* A crashed proxy's reservation stops counting at its TTL and is swept; settling it late still charges. */
static void test_expired_reservations_stop_counting(void **state)
{
	(void)state;
	struct llm_reserve_limits lim = { .tokens = 1000, .requests = -1, .usd = -1.0 };
	uint64_t dead = must_reserve(5, &lim, 900, 0.0);
	must_refuse(5, &lim, 200, 0.0, "owner daily tokens: 0 used + 900 reserved");
	tmariadb_ok(db, "UPDATE llm_reservations SET expires_at = UTC_TIMESTAMP(6) - INTERVAL 1 SECOND WHERE owner_id = 5");
	uint64_t live = must_reserve(5, &lim, 200, 0.0);
	assert_int_equal(one_int("SELECT COUNT(*) FROM llm_reservations WHERE owner_id = 5"), 1);   /* swept */
	char sql[160];
	snprintf(sql, sizeof sql, "SELECT COUNT(*) FROM llm_reservations WHERE id = %llu", (unsigned long long)live);
	assert_int_equal(one_int(sql), 1);
	/* the dead proxy's request did end after all: its usage is charged to today */
	struct llm_reserve_usage u = { .output = 40 };
	struct buf err = BUF_INIT;
	assert_int_equal(llm_reserve_settle(db, 5, dead, &u, &err), 0);
	assert_int_equal(one_int("SELECT output FROM llm_owner_day WHERE owner_id = 5 AND day = UTC_DATE()"), 40);
	/* the global sweep: only expired rows of any owner go */
	must_reserve(6, &lim, 10, 0.0);
	tmariadb_ok(db, "UPDATE llm_reservations SET expires_at = UTC_TIMESTAMP(6) - INTERVAL 1 SECOND WHERE owner_id = 6");
	assert_int_equal(llm_reserve_sweep(db, &err), 1);
	assert_int_equal(one_int("SELECT COUNT(*) FROM llm_reservations"), 1);
	assert_int_equal(llm_reserve_settle(db, 5, live, &u, &err), 0);
	assert_int_equal(one_int("SELECT output FROM llm_owner_day WHERE owner_id = 5 AND day = UTC_DATE()"), 80);
	assert_int_equal(one_int("SELECT COUNT(*) FROM llm_reservations"), 0);
	buf_free(&err);
}

/* Bad arguments are refused before any statement. */
static void test_bad_arguments(void **state)
{
	(void)state;
	struct llm_reserve_who w = { .owner_id = 9, .kind = "turn" };
	struct llm_reserve_usage est = { .output = 1 };
	struct buf why = BUF_INIT;
	uint64_t id;
	assert_int_equal(llm_reserve(db, &w, &NOLIMIT, &est, 0, &id, &why), -1);
	est.usd = -1;
	assert_int_equal(llm_reserve(db, &w, &NOLIMIT, &est, 60, &id, &why), -1);
	buf_free(&why);
	assert_int_equal(one_int("SELECT COUNT(*) FROM llm_owner_day WHERE owner_id = 9"), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_concurrent_reservers_cannot_pass_the_budget),
		cmocka_unit_test(test_settle_charges_the_real_usage),
		cmocka_unit_test(test_request_budget_counts_requests_in_flight),
		cmocka_unit_test(test_expired_reservations_stop_counting),
		cmocka_unit_test(test_bad_arguments),
	};
	if (mysql_library_init(0, NULL, NULL) != 0)
		return 1;
	int rc = cmocka_run_group_tests(tests, setup, teardown);
	mysql_library_end();
	return rc;
}

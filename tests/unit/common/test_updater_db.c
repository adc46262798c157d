/*
 * test_updater_db.c: the default-strategy updater (common/updater.c)
 * against a private MariaDB with every migration applied (sql/024): a
 * default account and shadows with hand-written paper points on the same
 * bars. The rule's edges: a candidate that beats the default over the
 * common period is proposed, one with exactly the default's return is
 * refused (the margin is strict), one that beats it by less than a positive
 * margin is refused and one by more proposed, one whose run did not pass the audit is
 * refused, one younger than min_age_days and one with fewer common bars
 * than min_bars wait; each shadow is decided once per default; the
 * numbers are the returns recomputed here; an approval promotes (history
 * row with reason and numbers, the shadow becomes the default account, the
 * old one retired) and a second approval is refused. A label with a rule
 * but no paper account at all: a refresh queues no paper step (so nothing
 * discovers there); discovery, as PUT /defaults/rules runs it, opens the
 * shadow, and without a default no decision is made (docs/paper-trading.md).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <mysql.h>

#include "common/db.h"
#include "common/paper_queue.h"
#include "common/updater.h"
#include "tests/unit/lib/tmariadb.h"

#define DBNAME "agenttest_updater"
#define LABEL  "binance-1m-60d"

static struct tmariadb srv;
static struct db *db;

/* One integer of a one-row query (0 when no row). */
static long long one_int(const char *sql)
{
	struct db_col c = DB_COL_INT;
	if (db_exec(db, sql, NULL, 0, &c, 1, NULL, NULL, NULL, 0) != DB_OK)
		fail_msg("%s: %s", sql, db_error(db));
	return c.is_null ? 0 : c.i;
}

/* One text of a one-row query into out. */
static void one_text(const char *sql, char *out, size_t cap)
{
	struct db_col c = { .type = DB_T_TEXT, .buf = out, .cap = cap };
	out[0] = 0;
	if (db_exec(db, sql, NULL, 0, &c, 1, NULL, NULL, NULL, 0) != DB_OK)
		fail_msg("%s: %s", sql, db_error(db));
}

static int setup(void **state)
{
	(void)state;
	if (!tmariadb_start_migrated(&srv, DBNAME, &db, "updater test"))
		return 1;
	tmariadb_ok(db, "SET SESSION foreign_key_checks = 0");   /* runs and their datasets are not needed here */
	tmariadb_ok(db, "INSERT INTO users (id, name, role) VALUES (7, 'upd-admin', 'admin')");
	tmariadb_ok(db, "INSERT INTO strategies (id, owner_id, name) VALUES (1, 7, 'd'), (2, 7, 'win'), (3, 7, 'same'), "
	   "(4, 7, 'young'), (5, 7, 'unaudited'), (6, 7, 'late')");
	for (int i = 1; i <= 6; i++) {
		char sql[400];
		snprintf(sql, sizeof sql, "INSERT INTO strategy_versions (id, strategy_id, code_hash, kind, code, params, "
			 "created_at) VALUES (%d, %d, REPEAT('%d', 64), 'positions', 'x', '{}', NOW(6) - INTERVAL %d DAY)",
			 i, i, i, i == 4 ? 0 : 10);
		tmariadb_ok(db, sql);
		snprintf(sql, sizeof sql, "INSERT INTO run_metrics (run_id, run_seq, strategy_version_id, dataset_version, "
			 "total_return, cagr, max_drawdown, volatility, sharpe, liquidation_events, capital_efficiency, score, "
			 "runtime_s, eligible, completed_at) VALUES ('r%d', %d, %d, '" LABEL "-x', 0, 0, 0, 0, 0, 0, 0, 0, 0, "
			 "%d, NOW(6))", i, i, i, i == 5 ? 0 : 1);
		tmariadb_ok(db, sql);
	}
	tmariadb_ok(db, "INSERT INTO default_promotions (id, dataset_version, strategy_version_id, run_id, promoted_by, reason) "
	   "VALUES (1, '" LABEL "', 1, 'r1', 7, 'manual promotion')");
	/* the default from bar 0; shadows from bar 60000 (6: from 240000); last bar 300000 for all */
	tmariadb_ok(db, "INSERT INTO paper_accounts (id, promotion_id, label, role, strategy_version_id, run_id, kind, asset, fee_bps, "
	   "max_leverage, start_ts, last_ts, n_bars) VALUES "
	   "(1, 1, '" LABEL "', 'default', 1, 'r1', 'positions', 'X', 10, 1, 0, 300000, 5), "
	   "(2, NULL, '" LABEL "', 'shadow', 2, 'r2', 'positions', 'X', 10, 1, 60000, 300000, 4), "
	   "(3, NULL, '" LABEL "', 'shadow', 3, 'r3', 'positions', 'X', 10, 1, 60000, 300000, 4), "
	   "(4, NULL, '" LABEL "', 'shadow', 4, 'r4', 'positions', 'X', 10, 1, 60000, 300000, 4), "
	   "(5, NULL, '" LABEL "', 'shadow', 5, 'r5', 'positions', 'X', 10, 1, 60000, 300000, 4), "
	   "(6, NULL, '" LABEL "', 'shadow', 6, 'r6', 'positions', 'X', 10, 1, 240000, 300000, 1)");
	tmariadb_ok(db, "INSERT INTO paper_points (account_id, ts, equity, price) VALUES "
	   "(1, 60000, 1.01, 1), (1, 120000, 1.02, 1), (1, 180000, 1.03, 1), (1, 240000, 1.04, 1), (1, 300000, 1.05, 1), "
	   "(2, 120000, 1.0, 1), (2, 180000, 1.05, 1), (2, 240000, 1.1, 1), (2, 300000, 1.2, 1), "
	   "(4, 120000, 1.5, 1), (4, 180000, 1.5, 1), (4, 240000, 1.5, 1), (4, 300000, 1.5, 1), "
	   "(5, 120000, 1.5, 1), (5, 180000, 1.5, 1), (5, 240000, 1.5, 1), (5, 300000, 1.5, 1), "
	   "(6, 300000, 1.5, 1)");
	/* shadow 3: exactly the default's growth over the common period */
	tmariadb_ok(db, "INSERT INTO paper_points (account_id, ts, equity, price) SELECT 3, ts, equity / 1.01, 1 FROM paper_points "
	   "WHERE account_id = 1 AND ts > 60000");
	tmariadb_ok(db, "INSERT INTO updater_rules (label, min_age_days, margin, min_bars, auto_promote, updated_by) "
	   "VALUES ('" LABEL "', 1, 0, 4, 0, 7)");
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	tmariadb_finish(&srv, db);
	return 0;
}

/* The rule's edges, once per default. */
static void test_decisions(void **state)
{
	struct buf err = BUF_INIT;
	(void)state;
	assert_int_equal(updater_consider(db, LABEL, &err), 3);
	assert_int_equal(updater_consider(db, LABEL, &err), 0);   /* decided once per default */
	assert_int_equal(one_int("SELECT COUNT(*) FROM updater_proposals"), 3);
	assert_int_equal(one_int("SELECT shadow_account_id FROM updater_proposals WHERE status = 'proposed'"), 2);
	assert_int_equal(one_int("SELECT COUNT(*) FROM updater_proposals WHERE status = 'refused' "
				 "AND shadow_account_id IN (3, 5)"), 2);
	assert_int_equal(one_int("SELECT COUNT(*) FROM updater_proposals WHERE shadow_account_id IN (4, 6)"), 0);
	char t[1024];
	one_text("SELECT reason FROM updater_proposals WHERE shadow_account_id = 5", t, sizeof t);
	assert_non_null(strstr(t, "did not pass the audit"));
	/* the numbers: returns over (60000, 300000], 4 bars */
	one_text("SELECT numbers FROM updater_proposals WHERE shadow_account_id = 2", t, sizeof t);
	char want[200];
	snprintf(want, sizeof want, "\"candidate_return\":%.17g,\"default_return\":%.17g", 1.2 / 1.0 - 1.0,
		 1.05 / 1.01 - 1.0);
	assert_non_null(strstr(t, want));
	assert_non_null(strstr(t, "\"from_ts\":60000,\"to_ts\":300000,\"bars\":4"));
	buf_free(&err);
}

/* An approval promotes once; a second one is refused. */
static void test_approve(void **state)
{
	struct buf err = BUF_INIT;
	long long promo = 0, id = one_int("SELECT id FROM updater_proposals WHERE status = 'proposed'");
	(void)state;
	assert_int_equal(updater_promote(db, id, "approved", 7, &promo, &err), 1);
	assert_true(promo > 1);
	char sql[300];
	snprintf(sql, sizeof sql, "SELECT COUNT(*) FROM default_promotions d JOIN updater_proposals q ON q.id = d.proposal_id "
		 "WHERE d.id = %lld AND d.strategy_version_id = 2 AND d.reason = q.reason AND d.numbers = q.numbers", promo);
	assert_int_equal(one_int(sql), 1);
	snprintf(sql, sizeof sql, "SELECT COUNT(*) FROM paper_accounts WHERE id = 2 AND role = 'default' "
		 "AND promotion_id = %lld AND state = 'active'", promo);
	assert_int_equal(one_int(sql), 1);
	assert_int_equal(one_int("SELECT COUNT(*) FROM paper_accounts WHERE id = 1 AND state = 'retired'"), 1);
	snprintf(sql, sizeof sql, "SELECT COUNT(*) FROM updater_proposals WHERE id = %lld AND status = 'approved' "
		 "AND decided_by = 7 AND promotion_id = %lld", id, promo);
	assert_int_equal(one_int(sql), 1);
	buf_reset(&err);
	assert_int_equal(updater_promote(db, id, "approved", 7, &promo, &err), 0);
	assert_non_null(strstr(buf_cstr(&err), "not proposed"));
	/* against the new default (shadow 2 from 60000), shadow 3 is decided again: it loses */
	buf_reset(&err);
	assert_int_equal(updater_consider(db, LABEL, &err), 2);   /* 3 and 5 again; 4 and 6 still wait */
	snprintf(sql, sizeof sql, "SELECT status = 'refused' FROM updater_proposals WHERE shadow_account_id = 3 "
		 "AND default_promotion_id = %lld", promo);
	assert_int_equal(one_int(sql), 1);
	buf_free(&err);
}

/* A label with a rule and no paper account: the documented discovery gap. */
static void test_label_without_accounts(void **state)
{
	struct buf err = BUF_INIT;
	(void)state;
	tmariadb_ok(db, "INSERT INTO datasets (id, version, dataset_hash, path, assets, interval_ms, bars, first_ts, last_ts) VALUES "
	   "(1, 'bare-1m-7d-v1', REPEAT('b', 64), '/nowhere', '[\"BTC\"]', 60000, 11, 0, 600000)");
	tmariadb_ok(db, "INSERT INTO dataset_labels (label, dataset_id) VALUES ('bare-1m-7d', 1)");
	tmariadb_ok(db, "INSERT INTO strategies (id, owner_id, name) VALUES (7, 7, 'bare')");
	tmariadb_ok(db, "INSERT INTO strategy_versions (id, strategy_id, code_hash, kind, code, params, created_at) VALUES "
	   "(7, 7, REPEAT('7', 64), 'positions', 'x', '{}', NOW(6) - INTERVAL 10 DAY)");
	tmariadb_ok(db, "INSERT INTO runs (id, owner_id, strategy_version_id, dataset_id, dataset_version, dataset_hash, code_hash, "
	   "config_hash, params) VALUES ('r7', 7, 7, 1, 'bare-1m-7d', REPEAT('b', 64), REPEAT('7', 64), "
	   "REPEAT('c', 64), '{}')");
	tmariadb_ok(db, "INSERT INTO run_metrics (run_id, run_seq, strategy_version_id, dataset_version, total_return, cagr, "
	   "max_drawdown, volatility, sharpe, liquidation_events, capital_efficiency, score, runtime_s, eligible, "
	   "completed_at) VALUES ('r7', 7, 7, 'bare-1m-7d', 0, 0, 0, 0, 0, 0, 0, 1, 0, 1, NOW(6))");
	tmariadb_ok(db, "INSERT INTO updater_rules (label, min_age_days, margin, min_bars, max_shadows, auto_promote, updated_by) "
	   "VALUES ('bare-1m-7d', 0, 0, 1, 2, 1, 7)");
	/* new candles of the label queue a step per active account: none (the prefetch runs the discovery itself) */
	assert_int_equal(paper_queue_step(db, "bare-1m-7d"), 0);
	assert_int_equal(one_int("SELECT COUNT(*) FROM paper_steps WHERE label = 'bare-1m-7d'"), 0);
	assert_int_equal(one_int("SELECT COUNT(*) FROM paper_accounts WHERE label = 'bare-1m-7d'"), 0);
	/* what PUT /defaults/rules runs: the qualifying version gets a shadow from the label's last bar */
	assert_int_equal(updater_discover(db, "bare-1m-7d", 10, 1, &err), 1);
	assert_int_equal(one_int("SELECT COUNT(*) FROM paper_accounts WHERE label = 'bare-1m-7d' AND role = 'shadow' "
				 "AND origin = 'updater' AND strategy_version_id = 7 AND run_id = 'r7' AND asset = 'BTC' "
				 "AND start_ts = 600000 AND last_ts = 600000 AND state = 'active'"), 1);
	assert_int_equal(one_int("SELECT COUNT(*) FROM paper_steps WHERE label = 'bare-1m-7d'"), 1);
	assert_int_equal(updater_discover(db, "bare-1m-7d", 10, 1, &err), 0);   /* it has an account now */
	/* no default on paper: the shadow trades, but nothing is decided against it */
	assert_int_equal(updater_consider(db, "bare-1m-7d", &err), 0);
	assert_int_equal(one_int("SELECT COUNT(*) FROM updater_proposals WHERE label = 'bare-1m-7d'"), 0);
	buf_free(&err);
}

/* A positive margin: a candidate that beats the default by less than the margin is refused,
 * one that beats it by more is proposed; the margin is in the numbers. */
static void test_margin(void **state)
{
	struct buf err = BUF_INIT;
	(void)state;
	for (int i = 11; i <= 13; i++) {
		char sql[600];
		snprintf(sql, sizeof sql, "INSERT INTO strategies (id, owner_id, name) VALUES (%d, 7, 'm%d')", i, i);
		tmariadb_ok(db, sql);
		snprintf(sql, sizeof sql, "INSERT INTO strategy_versions (id, strategy_id, code_hash, kind, code, params, "
			 "created_at) VALUES (%d, %d, REPEAT('%d', 32), 'positions', 'x', '{}', NOW(6) - INTERVAL 10 DAY)",
			 i, i, i);
		tmariadb_ok(db, sql);
		snprintf(sql, sizeof sql, "INSERT INTO run_metrics (run_id, run_seq, strategy_version_id, dataset_version, "
			 "total_return, cagr, max_drawdown, volatility, sharpe, liquidation_events, capital_efficiency, "
			 "score, runtime_s, eligible, completed_at) VALUES ('r%d', %d, %d, 'margin-1m-7d-x', 0, 0, 0, 0, 0, "
			 "0, 0, 0, 0, 1, NOW(6))", i, i, i);
		tmariadb_ok(db, sql);
	}
	tmariadb_ok(db, "INSERT INTO default_promotions (id, dataset_version, strategy_version_id, run_id, promoted_by, reason) "
	   "VALUES (11, 'margin-1m-7d', 11, 'r11', 7, 'manual promotion')");
	tmariadb_ok(db, "INSERT INTO paper_accounts (id, promotion_id, label, role, strategy_version_id, run_id, kind, asset, fee_bps, "
	   "max_leverage, start_ts, last_ts, n_bars) VALUES "
	   "(11, 11, 'margin-1m-7d', 'default', 11, 'r11', 'positions', 'X', 10, 1, 0, 120000, 2), "
	   "(12, NULL, 'margin-1m-7d', 'shadow', 12, 'r12', 'positions', 'X', 10, 1, 0, 120000, 2), "
	   "(13, NULL, 'margin-1m-7d', 'shadow', 13, 'r13', 'positions', 'X', 10, 1, 0, 120000, 2)");
	/* over (0, 120000]: the default +1 %, shadow 12 +1.5 % (0.5 % better), shadow 13 +2.5 % (1.5 % better) */
	tmariadb_ok(db, "INSERT INTO paper_points (account_id, ts, equity, price) VALUES (11, 60000, 1.005, 1), (11, 120000, 1.01, 1), "
	   "(12, 60000, 1.0, 1), (12, 120000, 1.015, 1), (13, 60000, 1.0, 1), (13, 120000, 1.025, 1)");
	tmariadb_ok(db, "INSERT INTO updater_rules (label, min_age_days, margin, min_bars, auto_promote, updated_by) "
	   "VALUES ('margin-1m-7d', 1, 0.01, 2, 0, 7)");
	assert_int_equal(updater_consider(db, "margin-1m-7d", &err), 2);
	assert_int_equal(one_int("SELECT COUNT(*) FROM updater_proposals WHERE shadow_account_id = 12 AND "
				 "status = 'refused' AND default_promotion_id = 11"), 1);
	assert_int_equal(one_int("SELECT COUNT(*) FROM updater_proposals WHERE shadow_account_id = 13 AND "
				 "status = 'proposed' AND default_promotion_id = 11"), 1);
	char t[1024];
	one_text("SELECT numbers FROM updater_proposals WHERE shadow_account_id = 12", t, sizeof t);
	assert_non_null(strstr(t, "\"margin\":0.01"));
	buf_free(&err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_decisions),
		cmocka_unit_test(test_approve),
		cmocka_unit_test(test_label_without_accounts),
		cmocka_unit_test(test_margin),
	};
	if (mysql_library_init(0, NULL, NULL) != 0)
		return 1;
	int rc = cmocka_run_group_tests(tests, setup, teardown);
	mysql_library_end();
	return rc;
}

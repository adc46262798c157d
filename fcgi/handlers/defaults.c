/*
 * defaults: POST /defaults/promote (admin), GET /defaults.
 *
 * A promotion is a row of default_promotions (history, never rewritten);
 * the current default of a dataset version is its newest row. A version can
 * only be promoted on a dataset version where it has a completed run that
 * passed the audit with finite metrics (an eligible run_metrics row); the
 * best such run is recorded with the promotion. A market-data window label
 * (dataset_labels) qualifies with a run on any version a prefetch of the
 * window stored, and its promotion opens the label's paper account
 * (paper.c, docs/paper-trading.md) in the same transaction. Every row of
 * the history carries its reason and, for a promotion by the updater
 * (updater.c, common/updater.h), its proposal and the numbers it was
 * decided on.
 */
#include <stdio.h>
#include <string.h>

#include "updater.h"
#include "fcgi/handlers/handlers.h"
#include "fcgi/handlers/json_list.h"
#include "fcgi/handlers/paper.h"
#include "fcgi/handlers/runs_view.h"
#include "fcgi/handlers/defaults.h"

enum db_status defaults_qualifying_run(struct fcgi_ctx *c, long long vid, const char *dsv, char rid[40])
{
	struct db_col rcol = { .type = DB_T_TEXT, .buf = rid, .cap = 40 };
	struct db_arg args[] = { DB_ARG_INT(vid), DB_ARG_TEXT(dsv), DB_ARG_TEXT(dsv) };
	rid[0] = 0;
	return db_exec(fcgi_db(c),
		"SELECT run_id FROM run_metrics WHERE strategy_version_id = ? AND eligible = 1 AND (dataset_version = ? "
		"OR dataset_version IN (SELECT p.dataset_version FROM data_prefetches p WHERE p.window_label = ? "
		"AND p.status = 'completed' AND p.dataset_version IS NOT NULL)) "
		"ORDER BY score DESC, completed_at, run_id LIMIT 1", args, 3, &rcol, 1, NULL, NULL, NULL, DB_IDEMPOTENT);
}

/* POST /defaults/promote {strategy_version_id, dataset_version?} */
void h_defaults_promote(struct fcgi_ctx *c)
{
	static const char *const allowed[] = { "strategy_version_id", "dataset_version", NULL };
	json_object *body = fcgi_body(c);
	int64_t vid = 0;
	const char *dsv = NULL;
	long long uid;
	bool admin;
	if (!fcgi_json_only(c, body, allowed) ||
	    !fcgi_json_int(c, body, "strategy_version_id", FIELD_REQUIRED, 1, INT64_MAX - 1, &vid) ||
	    !fcgi_json_string(c, body, "dataset_version", FIELD_OPTIONAL | FIELD_NULLABLE, 0, 64, &dsv) ||
	    !rv_caller(c, &uid, &admin))
		return;
	if (!dsv || !*dsv)
		dsv = fcgi_config(c, "DATASET_VERSION");
	if (!dsv || !*dsv)
		dsv = "v1";
	struct db_col one = DB_COL_INT;
	struct db_arg varg = DB_ARG_INT(vid);
	struct db_result res = { 0 };
	enum db_status st = db_exec(fcgi_db(c), "SELECT id FROM strategy_versions WHERE id = ?", &varg, 1, &one, 1,
				    NULL, NULL, &res, DB_IDEMPOTENT);
	if (st != DB_OK)
		goto dberr;
	if (res.rows == 0) {
		fcgi_reply_error(c, 404, "not_found", "strategy_version_id not found");
		return;
	}
	char rid[40];
	if ((st = defaults_qualifying_run(c, vid, dsv, rid)) != DB_OK)
		goto dberr;
	if (!*rid) {
		fcgi_reply_error(c, 409, "conflict",
				 "strategy version %lld has no completed, audit-passed run on dataset version %s",
				 (long long)vid, dsv);
		return;
	}
	struct db_arg ins[] = { DB_ARG_TEXT(dsv), DB_ARG_INT(vid), DB_ARG_TEXT(rid), DB_ARG_INT(uid) };
	memset(&res, 0, sizeof res);
	if ((st = db_begin(fcgi_db(c))) != DB_OK)
		goto dberr;
	struct buf lerr = BUF_INIT;   /* the updater's lock order (common/updater.h) */
	st = updater_lock(fcgi_db(c), dsv, &lerr) != 0 ? DB_ERROR : DB_OK;
	buf_free(&lerr);
	if (st != DB_OK) {
		db_rollback(fcgi_db(c));
		goto dberr;
	}
	st = db_exec(fcgi_db(c),
		"INSERT INTO default_promotions (dataset_version, strategy_version_id, run_id, promoted_by, reason) "
		"VALUES (?, ?, ?, ?, 'manual promotion')",
		ins, 4, NULL, 0, NULL, NULL, &res, 0);
	if (st == DB_OK)
		st = paper_open_account(c, (long long)res.insert_id, dsv, rid);   /* a window label: paper trading */
	if (st == DB_OK)
		st = db_commit(fcgi_db(c));
	if (st != DB_OK) {
		db_rollback(fcgi_db(c));
		goto dberr;
	}
	rv_notify(c, "q");
	char at[RV_TS_LEN], who[130];
	struct db_col pcols[] = { DB_COL_TEXT(at), DB_COL_TEXT(who) };
	struct db_arg parg = DB_ARG_INT((long long)res.insert_id);
	st = db_exec(fcgi_db(c), "SELECT " RV_TS("p.promoted_at") ", u.name FROM default_promotions p "
		     "JOIN users u ON u.id = p.promoted_by WHERE p.id = ?", &parg, 1, pcols, 2, NULL, NULL, NULL,
		     DB_IDEMPOTENT);
	if (st != DB_OK)
		goto dberr;
	struct buf *b = fcgi_body_buf(c);
	buf_printf(b, "{\"ok\":true,\"strategy_version_id\":%lld,\"dataset_version\":", (long long)vid);
	rv_str(b, dsv);
	buf_puts(b, ",\"run_id\":");
	rv_str(b, rid);
	buf_puts(b, ",\"promoted_by\":");
	rv_str(b, who);
	buf_puts(b, ",\"promoted_at\":");
	rv_str(b, at);
	buf_putc(b, '}');
	fcgi_reply_buf(c, 200, "application/json");
	return;
dberr:
	fcgi_reply_db_error(c, st);
}

/* Row callback: one promotion. */
static bool promo_row(void *ctx, const struct db_col *col, size_t ncol)
{
	struct json_list *p = ctx;
	(void)ncol;
	jl_next(p);
	buf_puts(p->b, "{\"dataset_version\":");
	rv_str(p->b, col[0].buf);
	buf_printf(p->b, ",\"strategy_version_id\":%lld,\"strategy_name\":", col[1].i);
	rv_str(p->b, col[2].buf);
	buf_puts(p->b, ",\"run_id\":");
	rv_str(p->b, col[3].buf);
	buf_puts(p->b, ",\"score\":");
	rv_num(p->b, col[4].is_null ? NULL : col[4].buf);
	buf_puts(p->b, ",\"promoted_by\":");
	rv_str(p->b, col[5].buf);
	buf_puts(p->b, ",\"promoted_at\":");
	rv_str(p->b, col[6].buf);
	buf_puts(p->b, ",\"proposal_id\":");
	if (col[7].is_null)
		buf_puts(p->b, "null");
	else
		buf_printf(p->b, "%lld", col[7].i);
	buf_puts(p->b, ",\"reason\":");
	if (col[8].is_null)
		buf_puts(p->b, "null");
	else
		rv_str(p->b, col[8].buf);
	/* numbers: the updater's own JSON object (common/updater.c), written by the trusted side */
	buf_puts(p->b, ",\"numbers\":");
	buf_puts(p->b, col[9].is_null ? "null" : col[9].buf);
	buf_putc(p->b, '}');
	return true;
}

/* GET /defaults?dataset_version= */
void h_defaults_get(struct fcgi_ctx *c)
{
#define PROMO_SELECT                                                                                     \
	"SELECT p.dataset_version, p.strategy_version_id, s.name, p.run_id, CAST(m.score AS CHAR), u.name, " \
	RV_TS("p.promoted_at") ", p.proposal_id, p.reason, p.numbers FROM default_promotions p JOIN users u ON u.id = p.promoted_by "             \
	"JOIN strategy_versions v ON v.id = p.strategy_version_id JOIN strategies s ON s.id = v.strategy_id " \
	"LEFT JOIN run_metrics m ON m.run_id = p.run_id "
	const char *dsv = fcgi_query(c, "dataset_version");
	char dv[130], name[810], rid[40], score[40], who[130], at[RV_TS_LEN], reason[1024], numbers[1024];
	struct db_col cols[] = { DB_COL_TEXT(dv), DB_COL_INT, DB_COL_TEXT(name), DB_COL_TEXT(rid), DB_COL_TEXT(score),
				 DB_COL_TEXT(who), DB_COL_TEXT(at), DB_COL_INT, DB_COL_TEXT(reason), DB_COL_TEXT(numbers) };
	struct db_arg arg = DB_ARG_TEXT(dsv ? dsv : "");
	struct buf *b = fcgi_body_buf(c);
	struct json_list p = JSON_LIST(b, 0);
	buf_puts(b, "{\"defaults\":[");
	enum db_status st = db_exec(fcgi_db(c), PROMO_SELECT
		"WHERE p.id IN (SELECT MAX(id) FROM default_promotions GROUP BY dataset_version) "
		"AND (? = '' OR p.dataset_version = ?) ORDER BY p.dataset_version",
		(struct db_arg[]){ arg, arg }, 2, cols, 10, promo_row, &p, NULL, DB_IDEMPOTENT);
	if (st == DB_OK) {
		buf_puts(b, "],\"history\":[");
		p.n = 0;
		st = db_exec(fcgi_db(c), PROMO_SELECT "WHERE (? = '' OR p.dataset_version = ?) ORDER BY p.id DESC LIMIT 500",
			     (struct db_arg[]){ arg, arg }, 2, cols, 10, promo_row, &p, NULL, DB_IDEMPOTENT);
	}
	jl_reply(c, st, "]}");
#undef PROMO_SELECT
}

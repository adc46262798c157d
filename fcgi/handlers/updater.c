/*
 * updater: the default-strategy updater's endpoints (sql/024,
 * docs/paper-trading.md "The default-strategy updater"):
 *
 *   PUT  /defaults/rules                    (admin) set a label's rule
 *   GET  /defaults/rules                    the rules
 *   POST /defaults/candidates               (admin) nominate a candidate: its shadow paper account
 *   GET  /defaults/candidates               the label's shadow accounts
 *   GET  /defaults/proposals                the updater's decisions, newest first
 *   POST /defaults/proposals/{id}/approve   (admin) promote a proposal
 *   POST /defaults/proposals/{id}/reject    (admin) refuse it
 *
 * The decisions themselves are taken by the runner's paper job
 * (common/updater.c); an approval runs the same promotion code.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "updater.h"
#include "evaluator/engine.h"
#include "fcgi/handlers/handlers.h"
#include "fcgi/handlers/json_list.h"
#include "fcgi/handlers/paper.h"
#include "fcgi/handlers/runs_view.h"
#include "fcgi/handlers/defaults.h"

#define UPD_PROPOSALS_MAX 500
#define UPD_MAX_SHADOWS   1000   /* max_shadows of a rule (each shadow costs a sandbox call per bar) */

/* 1 when label is a market-data window label (dataset_labels), 0 not, -1 error (replied). */
static int upd_is_label(struct fcgi_ctx *c, const char *label)
{
	struct db_arg a = DB_ARG_TEXT(label);
	struct db_result res = { 0 };
	struct db_col one = DB_COL_INT;
	enum db_status st = db_exec(fcgi_db(c), "SELECT 1 FROM dataset_labels WHERE label = ?", &a, 1, &one, 1, NULL,
				    NULL, &res, DB_IDEMPOTENT);
	if (st != DB_OK) {
		fcgi_reply_db_error(c, st);
		return -1;
	}
	if (res.rows == 0) {
		fcgi_reply_error(c, 404, "not_found", "%s is not a market-data window label", label);
		return 0;
	}
	return 1;
}

/* PUT /defaults/rules {dataset_version, min_age_days, margin, min_bars, auto_promote?, enabled?} */
void h_defaults_rules_put(struct fcgi_ctx *c)
{
	static const char *const allowed[] = { "dataset_version", "min_age_days", "margin", "min_bars", "auto_promote",
					       "enabled", "max_shadows", NULL };
	json_object *body = fcgi_body(c);
	const char *label = NULL;
	double age = 0, margin = 0;
	int64_t bars = 0, maxsh = 0;
	bool autop = false, enabled = true;
	long long uid;
	bool admin;
	if (!fcgi_json_only(c, body, allowed) ||
	    !fcgi_json_string(c, body, "dataset_version", FIELD_REQUIRED, 1, 64, &label) ||
	    !fcgi_json_number(c, body, "min_age_days", FIELD_REQUIRED, 0, 3650, &age) ||
	    !fcgi_json_number(c, body, "margin", FIELD_REQUIRED, -1, 100, &margin) ||
	    !fcgi_json_int(c, body, "min_bars", FIELD_REQUIRED, 1, 10000000, &bars) ||
	    !fcgi_json_int(c, body, "max_shadows", FIELD_OPTIONAL, 0, UPD_MAX_SHADOWS, &maxsh) ||
	    !fcgi_json_bool(c, body, "auto_promote", FIELD_OPTIONAL, &autop) ||
	    !fcgi_json_bool(c, body, "enabled", FIELD_OPTIONAL, &enabled) || !rv_caller(c, &uid, &admin))
		return;
	if (upd_is_label(c, label) <= 0)
		return;
	char ta[32], tm[32];
	snprintf(ta, sizeof ta, "%.17g", age);
	snprintf(tm, sizeof tm, "%.17g", margin);
	struct db_arg a[] = { DB_ARG_TEXT(label), DB_ARG_TEXT(ta), DB_ARG_TEXT(tm), DB_ARG_INT(bars), DB_ARG_INT(maxsh),
			      DB_ARG_INT(autop), DB_ARG_INT(enabled), DB_ARG_INT(uid) };
	struct db *db = fcgi_db(c);
	enum db_status st = db_begin(db);
	if (st == DB_OK)
		st = db_exec(db, "INSERT INTO updater_rules (label, min_age_days, margin, min_bars, max_shadows, auto_promote, "
			     "enabled, updated_by) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON DUPLICATE KEY UPDATE "
			     "min_age_days = VALUES(min_age_days), margin = VALUES(margin), min_bars = VALUES(min_bars), "
			     "max_shadows = VALUES(max_shadows), auto_promote = VALUES(auto_promote), "
			     "enabled = VALUES(enabled), updated_by = VALUES(updated_by)", a, 8, NULL, 0, NULL, NULL, NULL, 0);
	/* the rule's candidates at once (the paper steps find later ones) */
	struct buf why = BUF_INIT;
	int found = 0;
	if (st == DB_OK && (updater_lock(db, label, &why) != 0 ||
			    (found = updater_discover(db, label, ENGINE_DEFAULT_FEE_BPS, ENGINE_DEFAULT_MAX_LEVERAGE,
						      &why)) < 0))
		st = DB_ERROR;
	buf_free(&why);
	if (st == DB_OK)
		st = db_commit(db);
	if (st != DB_OK) {
		db_rollback(db);
		fcgi_reply_db_error(c, st);
		return;
	}
	if (found > 0)
		rv_notify(c, "q");
	struct buf *b = fcgi_body_buf(c);
	buf_puts(b, "{\"ok\":true,\"dataset_version\":");
	rv_str(b, label);
	buf_printf(b, ",\"min_age_days\":%s,\"margin\":%s,\"min_bars\":%lld,\"max_shadows\":%lld,"
		   "\"auto_promote\":%s,\"enabled\":%s,\"discovered\":%d}", ta, tm, (long long)bars, (long long)maxsh,
		   autop ? "true" : "false", enabled ? "true" : "false", found);
	fcgi_reply_buf(c, 200, "application/json");
}

/* Row callback: one rule. */
static bool rule_row(void *ctx, const struct db_col *col, size_t ncol)
{
	struct json_list *l = ctx;
	(void)ncol;
	jl_next(l);
	buf_puts(l->b, "{\"dataset_version\":");
	rv_str(l->b, col[0].buf);
	buf_puts(l->b, ",\"min_age_days\":");
	rv_num(l->b, col[1].buf);
	buf_puts(l->b, ",\"margin\":");
	rv_num(l->b, col[2].buf);
	buf_printf(l->b, ",\"min_bars\":%lld,\"auto_promote\":%s,\"enabled\":%s,\"max_shadows\":%lld,"
		   "\"updated_by\":", col[3].i, col[4].i ? "true" : "false", col[5].i ? "true" : "false", col[8].i);
	rv_str(l->b, col[6].buf);
	buf_puts(l->b, ",\"updated_at\":");
	rv_str(l->b, col[7].buf);
	buf_putc(l->b, '}');
	return true;
}

/* GET /defaults/rules */
void h_defaults_rules_get(struct fcgi_ctx *c)
{
	char label[80], age[40], margin[40], who[130], at[RV_TS_LEN];
	struct db_col col[] = { DB_COL_TEXT(label), DB_COL_TEXT(age), DB_COL_TEXT(margin), DB_COL_INT, DB_COL_INT,
				DB_COL_INT, DB_COL_TEXT(who), DB_COL_TEXT(at), DB_COL_INT };
	struct buf *b = fcgi_body_buf(c);
	struct json_list l = JSON_LIST(b, 0);
	buf_puts(b, "{\"rules\":[");
	enum db_status st = db_exec(fcgi_db(c), "SELECT r.label, CAST(r.min_age_days AS CHAR), CAST(r.margin AS CHAR), "
		"r.min_bars, r.auto_promote, r.enabled, u.name, " RV_TS("r.updated_at") ", r.max_shadows FROM updater_rules r "
		"JOIN users u ON u.id = r.updated_by ORDER BY r.label", NULL, 0, col, 9, rule_row, &l, NULL, DB_IDEMPOTENT);
	jl_reply(c, st, "]}");
}

/* POST /defaults/candidates {strategy_version_id, dataset_version} */
void h_defaults_candidates_post(struct fcgi_ctx *c)
{
	static const char *const allowed[] = { "strategy_version_id", "dataset_version", NULL };
	json_object *body = fcgi_body(c);
	int64_t vid = 0;
	const char *label = NULL;
	if (!fcgi_json_only(c, body, allowed) ||
	    !fcgi_json_int(c, body, "strategy_version_id", FIELD_REQUIRED, 1, INT64_MAX - 1, &vid) ||
	    !fcgi_json_string(c, body, "dataset_version", FIELD_REQUIRED, 1, 64, &label))
		return;
	if (upd_is_label(c, label) <= 0)
		return;
	char rid[40];
	enum db_status st = defaults_qualifying_run(c, vid, label, rid);
	if (st != DB_OK)
		goto dberr;
	if (!*rid) {
		fcgi_reply_error(c, 409, "conflict", "strategy version %lld has no completed, audit-passed run on %s",
				 (long long)vid, label);
		return;
	}
	struct db_arg a[] = { DB_ARG_TEXT(label), DB_ARG_INT(vid) };
	struct db_result res = { 0 };
	long long acc = 0;
	if ((st = db_begin(fcgi_db(c))) != DB_OK)
		goto dberr;
	struct db_col one = DB_COL_INT;
	st = db_exec(fcgi_db(c), "SELECT id FROM paper_accounts WHERE label = ? AND strategy_version_id = ? "
		     "AND state = 'active' FOR UPDATE", a, 2, &one, 1, NULL, NULL, &res, 0);
	if (st == DB_OK && res.rows > 0) {
		db_rollback(fcgi_db(c));
		fcgi_reply_error(c, 409, "conflict", "strategy version %lld already trades on paper on %s",
				 (long long)vid, label);
		return;
	}
	if (st == DB_OK)
		st = paper_open_shadow(c, label, rid, &acc);
	if (st == DB_OK && acc == 0) {
		db_rollback(fcgi_db(c));
		fcgi_reply_error(c, 409, "conflict", "strategy version %lld is no positions or simulate strategy",
				 (long long)vid);
		return;
	}
	if (st == DB_OK)
		st = db_commit(fcgi_db(c));
	if (st != DB_OK) {
		db_rollback(fcgi_db(c));
		goto dberr;
	}
	rv_notify(c, "q");
	struct buf *b = fcgi_body_buf(c);
	buf_printf(b, "{\"ok\":true,\"account_id\":%lld,\"strategy_version_id\":%lld,\"dataset_version\":", acc,
		   (long long)vid);
	rv_str(b, label);
	buf_puts(b, ",\"run_id\":");
	rv_str(b, rid);
	buf_putc(b, '}');
	fcgi_reply_buf(c, 201, "application/json");
	return;
dberr:
	fcgi_reply_db_error(c, st);
}

/* Row callback: one shadow account. */
static bool shadow_row(void *ctx, const struct db_col *col, size_t ncol)
{
	struct json_list *l = ctx;
	(void)ncol;
	jl_next(l);
	buf_printf(l->b, "{\"account_id\":%lld,\"strategy_version_id\":%lld,\"strategy_name\":", col[0].i, col[1].i);
	rv_str(l->b, col[2].buf);
	buf_puts(l->b, ",\"run_id\":");
	rv_str(l->b, col[3].buf);
	buf_puts(l->b, ",\"state\":");
	rv_str(l->b, col[4].buf);
	buf_puts(l->b, ",\"pause_reason\":");
	if (col[5].is_null)
		buf_puts(l->b, "null");
	else
		rv_str(l->b, col[5].buf);
	buf_printf(l->b, ",\"start_ts\":%lld,\"last_ts\":%lld,\"bars\":%lld,\"equity\":", col[6].i, col[7].i,
		   col[8].i);
	rv_num(l->b, col[9].buf);
	buf_puts(l->b, ",\"origin\":");
	rv_str(l->b, col[10].buf);
	buf_putc(l->b, '}');
	return true;
}

/* GET /defaults/candidates?dataset_version= : the label's shadow accounts (not the retired ones). */
void h_defaults_candidates_get(struct fcgi_ctx *c)
{
	const char *label = fcgi_query(c, "dataset_version");
	if (!label || !*label) {
		fcgi_reply_error(c, 400, "missing_field", "dataset_version: required");
		return;
	}
	if (strlen(label) > 64) {
		fcgi_reply_error(c, 400, "invalid_field", "dataset_version: at most 64 bytes");
		return;
	}
	char name[810], run[40], state[16], why[1024], eq[40], origin[16];
	struct db_col col[] = { DB_COL_INT, DB_COL_INT, DB_COL_TEXT(name), DB_COL_TEXT(run), DB_COL_TEXT(state),
				DB_COL_TEXT(why), DB_COL_INT, DB_COL_INT, DB_COL_INT, DB_COL_TEXT(eq), DB_COL_TEXT(origin) };
	struct db_arg la = DB_ARG_TEXT(label);
	struct buf *b = fcgi_body_buf(c);
	struct json_list l = JSON_LIST(b, 0);
	buf_puts(b, "{\"candidates\":[");
	enum db_status st = db_exec(fcgi_db(c), "SELECT a.id, a.strategy_version_id, s.name, a.run_id, a.state, "
		"LEFT(a.pause_reason, 1000), a.start_ts, a.last_ts, a.n_bars, CAST(a.equity AS CHAR), a.origin FROM paper_accounts a "
		"JOIN strategy_versions v ON v.id = a.strategy_version_id JOIN strategies s ON s.id = v.strategy_id "
		"WHERE a.label = ? AND a.role = 'shadow' AND a.state <> 'retired' ORDER BY a.id", &la, 1, col, 11,
		shadow_row, &l, NULL, DB_IDEMPOTENT);
	jl_reply(c, st, "]}");
}

/* Row callback: one proposal. */
static bool proposal_row(void *ctx, const struct db_col *col, size_t ncol)
{
	struct json_list *l = ctx;
	(void)ncol;
	jl_next(l);
	buf_printf(l->b, "{\"id\":%lld,\"dataset_version\":", col[0].i);
	rv_str(l->b, col[1].buf);
	buf_puts(l->b, ",\"status\":");
	rv_str(l->b, col[2].buf);
	buf_printf(l->b, ",\"strategy_version_id\":%lld,\"strategy_name\":", col[3].i);
	rv_str(l->b, col[4].buf);
	buf_puts(l->b, ",\"run_id\":");
	rv_str(l->b, col[5].buf);
	buf_printf(l->b, ",\"shadow_account_id\":%lld,\"default_promotion_id\":%lld,\"default_account_id\":%lld,"
		   "\"reason\":", col[6].i, col[7].i, col[8].i);
	rv_str(l->b, col[9].buf);
	/* numbers: the updater's own JSON object (common/updater.c), written by the trusted side */
	buf_puts(l->b, ",\"numbers\":");
	buf_puts(l->b, col[10].buf);
	buf_puts(l->b, ",\"promotion_id\":");
	if (col[11].is_null)
		buf_puts(l->b, "null");
	else
		buf_printf(l->b, "%lld", col[11].i);
	buf_puts(l->b, ",\"decided_by\":");
	if (col[12].is_null)
		buf_puts(l->b, "null");
	else
		rv_str(l->b, col[12].buf);
	buf_puts(l->b, ",\"created_at\":");
	rv_str(l->b, col[13].buf);
	buf_puts(l->b, ",\"decided_at\":");
	if (col[14].is_null)
		buf_puts(l->b, "null");
	else
		rv_str(l->b, col[14].buf);
	buf_putc(l->b, '}');
	return true;
}

/* GET /defaults/proposals?dataset_version=&status= */
void h_defaults_proposals_get(struct fcgi_ctx *c)
{
	static const char *const statuses[] = { "refused", "proposed", "approved", "rejected", "promoted", "superseded",
						NULL };
	const char *label = fcgi_query(c, "dataset_version"), *status = fcgi_query(c, "status");
	if (label && strlen(label) > 64) {
		fcgi_reply_error(c, 400, "invalid_field", "dataset_version: at most 64 bytes");
		return;
	}
	if (status) {
		size_t i = 0;
		while (statuses[i] && strcmp(statuses[i], status) != 0)
			i++;
		if (!statuses[i]) {
			fcgi_reply_error(c, 400, "invalid_field", "status: one of refused, proposed, approved, rejected, "
					 "promoted, superseded");
			return;
		}
	}
	char lab[80], st_[16], name[810], run[40], reason[1024], numbers[1024], who[130], at[RV_TS_LEN],
		dat[RV_TS_LEN];
	struct db_col col[] = { DB_COL_INT, DB_COL_TEXT(lab), DB_COL_TEXT(st_), DB_COL_INT, DB_COL_TEXT(name),
				DB_COL_TEXT(run), DB_COL_INT, DB_COL_INT, DB_COL_INT, DB_COL_TEXT(reason),
				DB_COL_TEXT(numbers), DB_COL_INT, DB_COL_TEXT(who), DB_COL_TEXT(at), DB_COL_TEXT(dat) };
	struct db_arg la = DB_ARG_TEXT(label ? label : ""), sa = DB_ARG_TEXT(status ? status : "");
	struct buf *b = fcgi_body_buf(c);
	struct json_list l = JSON_LIST(b, 0);
	buf_puts(b, "{\"proposals\":[");
	enum db_status st = db_exec(fcgi_db(c), "SELECT q.id, q.label, q.status, q.strategy_version_id, s.name, "
		"q.run_id, q.shadow_account_id, q.default_promotion_id, q.default_account_id, q.reason, q.numbers, "
		"q.promotion_id, u.name, " RV_TS("q.created_at") ", " RV_TS("q.decided_at") " FROM updater_proposals q "
		"JOIN strategy_versions v ON v.id = q.strategy_version_id JOIN strategies s ON s.id = v.strategy_id "
		"LEFT JOIN users u ON u.id = q.decided_by WHERE (? = '' OR q.label = ?) AND (? = '' OR q.status = ?) "
		"ORDER BY q.id DESC LIMIT " "500", (struct db_arg[]){ la, la, sa, sa }, 4, col, 15, proposal_row, &l, NULL,
		DB_IDEMPOTENT);
	jl_reply(c, st, "]}");
}

/* The {id} of the path as a proposal id, or 0 after a 404. */
static long long upd_id(struct fcgi_ctx *c)
{
	const char *s = fcgi_param(c, "id");
	char *end = NULL;
	long long id = s && *s >= '0' && *s <= '9' ? strtoll(s, &end, 10) : 0;
	if (id <= 0 || !end || *end) {
		fcgi_reply_error(c, 404, "not_found", "no proposal %s", s ? s : "");
		return 0;
	}
	return id;
}

/* POST /defaults/proposals/{id}/approve or /reject. */
static void upd_answer(struct fcgi_ctx *c, bool approve)
{
	long long uid, id = upd_id(c), promo = 0;
	bool admin;
	if (!id || !rv_caller(c, &uid, &admin))
		return;
	struct db *db = fcgi_db(c);
	struct db_arg ia = DB_ARG_INT(id);
	struct db_result res = { 0 };
	struct buf why = BUF_INIT;
	int rc;
	enum db_status st = db_begin(db);
	if (st != DB_OK)
		goto dberr;
	char label[80];
	struct db_col lc = DB_COL_TEXT(label);
	if ((st = db_exec(db, "SELECT label FROM updater_proposals WHERE id = ?", &ia, 1, &lc, 1, NULL, NULL, &res, 0)) !=
	    DB_OK)
		goto dberr;
	if (res.rows == 0) {
		db_rollback(db);
		fcgi_reply_error(c, 404, "not_found", "no proposal %lld", id);
		goto out;
	}
	if (updater_lock(db, label, &why) != 0) {   /* the order the runner's paper steps lock in */
		st = DB_ERROR;
		goto dberr;
	}
	if (approve) {
		rc = updater_promote(db, id, "approved", uid, &promo, &why);
	} else {
		struct db_arg ra[] = { DB_ARG_INT(uid), DB_ARG_INT(id) };
		memset(&res, 0, sizeof res);
		st = db_exec(db, "UPDATE updater_proposals SET status = 'rejected', decided_by = ?, decided_at = NOW(6) "
			     "WHERE id = ? AND status = 'proposed'", ra, 2, NULL, 0, NULL, NULL, &res, 0);
		if (st != DB_OK)
			goto dberr;
		rc = res.affected > 0;
		if (!rc)
			buf_printf(&why, "proposal %lld is not proposed (decided already)", id);
	}
	if (rc < 0) {
		st = DB_ERROR;   /* the message (in why) is the database's: not for the client */
		goto dberr;
	}
	if ((st = db_commit(db)) != DB_OK)
		goto dberr;
	if (rc == 0) {
		fcgi_reply_error(c, 409, "conflict", "%s", buf_cstr(&why));
		goto out;
	}
	if (approve)
		rv_notify(c, "q");
	struct buf *b = fcgi_body_buf(c);
	buf_printf(b, "{\"ok\":true,\"id\":%lld,\"status\":\"%s\",\"promotion_id\":", id, approve ? "approved" : "rejected");
	if (promo)
		buf_printf(b, "%lld}", promo);
	else
		buf_puts(b, "null}");
	fcgi_reply_buf(c, 200, "application/json");
	goto out;
dberr:
	db_rollback(db);
	fcgi_reply_db_error(c, st);
out:
	buf_free(&why);
}

/* POST /defaults/proposals/{id}/approve */
void h_defaults_proposal_approve(struct fcgi_ctx *c)
{
	upd_answer(c, true);
}

/* POST /defaults/proposals/{id}/reject */
void h_defaults_proposal_reject(struct fcgi_ctx *c)
{
	upd_answer(c, false);
}

/*
 * runs_view: see runs_view.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "evaluator/canon_json.h"
#include "evaluator/pyrepr.h"
#include "notify.h"
#include "uuid.h"
#include "fcgi/handlers/runs_view.h"

bool rv_caller(struct fcgi_ctx *c, long long *uid, bool *admin)
{
	if (!fcgi_user_id(c, uid))
		return false;
	*admin = fcgi_who(c)->admin;
	return true;
}

void rv_str(struct buf *b, const char *s)
{
	if (!s) {
		buf_puts(b, "null");
		return;
	}
	cj_write_string(b, s, strlen(s));
}

void rv_num(struct buf *b, const char *text)
{
	char out[PYREPR_MAX];
	char *end;
	if (!text || !*text) {
		buf_puts(b, "null");
		return;
	}
	double x = strtod(text, &end);
	if (*end) {
		buf_puts(b, "null");
		return;
	}
	pyrepr_double(x, out);
	buf_puts(b, out);
}

void rv_raw(struct buf *b, const char *json)
{
	buf_puts(b, json && *json ? json : "null");
}

void rv_uuid(char out[37])
{
	unsigned char r[16];
	randombytes_buf(r, sizeof r);
	r[6] = (unsigned char)((r[6] & 0x0f) | 0x40);
	r[8] = (unsigned char)((r[8] & 0x3f) | 0x80);
	snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		 r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9], r[10], r[11], r[12], r[13],
		 r[14], r[15]);
}

void rv_notify(struct fcgi_ctx *c, const char *msg)
{
	notify_all(fcgi_config(c, "RUNNER_NOTIFY_DIR"), msg);
}

/* Arena copy of a text column, NULL for SQL NULL. */
static char *dup_col(struct fcgi_ctx *c, const struct db_col *col)
{
	return col->is_null ? NULL : arena_strndup(fcgi_arena(c), col->buf, col->len);
}

/* Copy a text column into a fixed field ("" for NULL). */
static void copy_col(char *dst, size_t cap, const struct db_col *col)
{
	if (col->is_null || !col->len) {
		dst[0] = '\0';
		return;
	}
	snprintf(dst, cap, "%.*s", (int)col->len, col->buf);
}

enum {
	C_ID, C_OWNER, C_VERSION, C_DSV, C_DSH, C_CFG, C_CODE, C_STATUS, C_PARAMS, C_ASSET,
	C_AUDIT, C_AUDIT_RES, C_AUDIT_OK, C_ECODE, C_EMSG, C_ETAIL, C_QAT, C_SAT, C_CAT, C_RT,
	C_ATT, C_RES, C_VERIF, C_VOF, C_CANCEL, C_ARTERR, C_SID, C_SNAME, C_OWNER_NAME, C_TRADES, C_MJSON, C_M0, C__N = C_M0 + 9
};

/* Row callback of rv_load_run. */
static bool load_row(void *ctx, const struct db_col *col, size_t n)
{
	void **pair = ctx;
	struct fcgi_ctx *c = pair[0];
	struct rv_run *r = pair[1];
	(void)n;
	copy_col(r->id, sizeof r->id, &col[C_ID]);
	r->owner_id = col[C_OWNER].i;
	r->strategy_version_id = col[C_VERSION].i;
	copy_col(r->dataset_version, sizeof r->dataset_version, &col[C_DSV]);
	copy_col(r->dataset_hash, sizeof r->dataset_hash, &col[C_DSH]);
	copy_col(r->config_hash, sizeof r->config_hash, &col[C_CFG]);
	copy_col(r->code_hash, sizeof r->code_hash, &col[C_CODE]);
	copy_col(r->status, sizeof r->status, &col[C_STATUS]);
	r->params = dup_col(c, &col[C_PARAMS]);
	r->asset = dup_col(c, &col[C_ASSET]);
	r->audit_requested = col[C_AUDIT].i != 0;
	r->audit_result = dup_col(c, &col[C_AUDIT_RES]);
	r->audit_passed = col[C_AUDIT_OK].is_null ? -1 : (int)col[C_AUDIT_OK].i;
	r->error_code = dup_col(c, &col[C_ECODE]);
	r->error_message = dup_col(c, &col[C_EMSG]);
	r->error_log_tail = dup_col(c, &col[C_ETAIL]);
	copy_col(r->queued_at, RV_TS_LEN, &col[C_QAT]);
	copy_col(r->started_at, RV_TS_LEN, &col[C_SAT]);
	copy_col(r->completed_at, RV_TS_LEN, &col[C_CAT]);
	copy_col(r->runtime_s, sizeof r->runtime_s, &col[C_RT]);
	r->attempts = col[C_ATT].i;
	r->resources = dup_col(c, &col[C_RES]);
	r->verification = dup_col(c, &col[C_VERIF]);
	r->verify_of = dup_col(c, &col[C_VOF]);
	r->cancel_requested = col[C_CANCEL].i != 0;
	r->artifacts_error = dup_col(c, &col[C_ARTERR]);
	r->strategy_id = col[C_SID].i;
	copy_col(r->strategy_name, sizeof r->strategy_name, &col[C_SNAME]);
	copy_col(r->owner, sizeof r->owner, &col[C_OWNER_NAME]);
	r->has_trades = col[C_TRADES].i != 0;
	r->has_metrics = !col[C_M0].is_null;
	r->metrics_json = dup_col(c, &col[C_MJSON]);
	for (int i = 0; i < 9; i++)
		copy_col(r->m[i], sizeof r->m[i], &col[C_M0 + i]);
	return false;
}

/* A text result column of cap bytes carved from the arena. */
static struct db_col text_col(struct fcgi_ctx *c, size_t cap)
{
	struct db_col col = { .type = DB_T_TEXT, .cap = cap };
	col.buf = arena_alloc(fcgi_arena(c), cap);
	return col;
}

int rv_load_run(struct fcgi_ctx *c, const char *id, struct rv_run *r)
{
	static const char sql[] =
		"SELECT r.id, r.owner_id, r.strategy_version_id, r.dataset_version, r.dataset_hash, r.config_hash, "
		"r.code_hash, r.status, r.params, r.asset, r.audit, r.audit_result, r.audit_passed, "
		"r.error_code, r.error_message, r.error_log_tail, " RV_TS("r.queued_at") ", " RV_TS("r.started_at")
		", " RV_TS("r.completed_at") ", CAST(r.runtime_s AS CHAR), r.attempts, r.resources, r.verification, "
		"r.verify_of, r.cancel_requested, r.artifacts_error, v.strategy_id, s.name, u.name, "
		"EXISTS(SELECT 1 FROM run_trades t WHERE t.run_id = r.id), m.extra, CAST(m.total_return AS CHAR), "
		"CAST(m.cagr AS CHAR), "
		"CAST(m.max_drawdown AS CHAR), CAST(m.volatility AS CHAR), CAST(m.sharpe AS CHAR), "
		"CAST(m.liquidation_events AS CHAR), CAST(m.capital_efficiency AS CHAR), CAST(m.score AS CHAR), "
		"CAST(m.runtime_s AS CHAR) FROM runs r JOIN strategy_versions v ON v.id = r.strategy_version_id "
		"JOIN strategies s ON s.id = v.strategy_id JOIN users u ON u.id = r.owner_id "
		"LEFT JOIN run_metrics m ON m.run_id = r.id WHERE r.id = ?";
	struct db_col col[C__N];
	static const size_t caps[C__N] = {
		[C_ID] = 40, [C_DSV] = 130, [C_DSH] = 65, [C_CFG] = 65, [C_CODE] = 65, [C_STATUS] = 16,
		/* params are at most 16 KiB (POST /runs); the other texts are written
		 * by the runner and far below their caps */
		[C_PARAMS] = 16385, [C_ASSET] = 70, [C_AUDIT_RES] = 8192, [C_ECODE] = 40,
		[C_EMSG] = 4096, [C_ETAIL] = 4608, [C_QAT] = RV_TS_LEN, [C_SAT] = RV_TS_LEN, [C_CAT] = RV_TS_LEN,
		[C_RT] = 40, [C_RES] = 4096, [C_ARTERR] = 520, [C_VERIF] = 2048, [C_VOF] = 40, [C_MJSON] = 8192,
		[C_SNAME] = RV_NAME_LEN, [C_OWNER_NAME] = RV_NAME_LEN,
	};
	void *pair[2] = { c, r };
	if (!uuid_is_canonical(id))
		return 0;
	memset(r, 0, sizeof *r);
	for (int i = 0; i < C__N; i++) {
		if (i == C_OWNER || i == C_VERSION || i == C_AUDIT || i == C_AUDIT_OK || i == C_ATT || i == C_CANCEL ||
		    i == C_SID || i == C_TRADES)
			col[i] = (struct db_col){ .type = DB_T_INT };
		else
			col[i] = text_col(c, caps[i] ? caps[i] : 40);
	}
	struct db_arg arg = DB_ARG_TEXT(id);
	struct db_result res = { 0 };
	enum db_status st = db_exec(fcgi_db(c), sql, &arg, 1, col, C__N, load_row, pair, &res, DB_IDEMPOTENT);
	if (st != DB_OK) {
		fcgi_reply_db_error(c, st);
		return -1;
	}
	return r->id[0] ? 1 : 0;
}

/* Append `"key":` to b. */
static void key(struct buf *b, const char *k)
{
	buf_printf(b, ",\"%s\":", k);
}

/* Append the metrics object of r. */
static void write_metrics(struct buf *b, const struct rv_run *r)
{
	static const char *const names[9] = { "total_return", "cagr", "max_drawdown", "volatility", "sharpe",
					      "liquidation_events", "capital_efficiency", "score", "runtime_s" };
	if (!r->has_metrics) {
		buf_puts(b, "null");
		return;
	}
	if (r->metrics_json && r->metrics_json[0] == '{') {
		buf_puts(b, r->metrics_json);
		return;
	}
	buf_putc(b, '{');
	for (int i = 0; i < 9; i++) {
		buf_printf(b, "%s\"%s\":", i ? "," : "", names[i]);
		if (i == 5)
			buf_puts(b, r->m[i][0] ? r->m[i] : "null");
		else
			rv_num(b, r->m[i]);
	}
	buf_putc(b, '}');
}

/* Append a timestamp field value (null when empty). */
static void ts(struct buf *b, const char *v)
{
	rv_str(b, v[0] ? v : NULL);
}

void rv_write_run(struct buf *b, const struct rv_run *r)
{
	buf_puts(b, "{\"run_id\":");
	rv_str(b, r->id);
	buf_printf(b, ",\"strategy_version_id\":%lld,\"strategy_id\":%lld", r->strategy_version_id, r->strategy_id);
	key(b, "strategy_name");
	rv_str(b, r->strategy_name);
	key(b, "owner");
	rv_str(b, r->owner);
	key(b, "dataset_version");
	rv_str(b, r->dataset_version);
	key(b, "dataset_hash");
	rv_str(b, r->dataset_hash);
	key(b, "config_hash");
	rv_str(b, r->config_hash);
	key(b, "status");
	rv_str(b, r->status);
	/* the artifacts by their routes, never the server directory they are in */
	key(b, "artifacts");
	if (strcmp(r->status, "completed") == 0) {
		buf_printf(b, "{\"equity\":\"/runs/%s/equity\",\"trades\":", r->id);
		if (r->has_trades)
			buf_printf(b, "\"/runs/%s/trades\"}", r->id);
		else
			buf_puts(b, "null}");
	} else {
		buf_puts(b, "null");
	}
	key(b, "artifacts_error");
	if (r->artifacts_error) {
		buf_puts(b, "{\"code\":\"artifacts_failed\",\"detail\":");
		rv_str(b, r->artifacts_error);
		buf_putc(b, '}');
	} else {
		buf_puts(b, "null");
	}
	key(b, "metrics");
	write_metrics(b, r);
	key(b, "code_hash");
	rv_str(b, r->code_hash);
	key(b, "params");
	rv_raw(b, r->params);
	key(b, "asset");
	rv_str(b, r->asset);
	key(b, "error");
	if (r->error_code) {
		buf_puts(b, "{\"code\":");
		rv_str(b, r->error_code);
		buf_puts(b, ",\"message\":");
		rv_str(b, r->error_message ? r->error_message : "");
		buf_puts(b, ",\"log_tail\":");
		rv_str(b, r->error_log_tail ? r->error_log_tail : "");
		buf_putc(b, '}');
	} else {
		buf_puts(b, "null");
	}
	key(b, "audit");
	buf_printf(b, "{\"requested\":%s,\"passed\":%s,\"report\":", r->audit_requested ? "true" : "false",
		   r->audit_passed < 0 ? "null" : r->audit_passed ? "true" : "false");
	rv_raw(b, r->audit_result);
	buf_putc(b, '}');
	key(b, "queued_at");
	ts(b, r->queued_at);
	key(b, "started_at");
	ts(b, r->started_at);
	key(b, "completed_at");
	ts(b, r->completed_at);
	key(b, "runtime_s");
	rv_num(b, r->runtime_s);
	buf_printf(b, ",\"attempts\":%lld", r->attempts);
	key(b, "cancel_requested");
	buf_puts(b, r->cancel_requested ? "true" : "false");
	key(b, "resources");
	rv_raw(b, r->resources);
	key(b, "verification");
	rv_raw(b, r->verification);
	key(b, "verify_of");
	rv_str(b, r->verify_of);
	buf_putc(b, '}');
}

void rv_reply_run(struct fcgi_ctx *c, int status, const char *id)
{
	struct rv_run *r = arena_alloc(fcgi_arena(c), sizeof *r);
	int got = rv_load_run(c, id, r);
	if (got < 0)
		return;
	if (got == 0) {
		fcgi_reply_error(c, 404, "not_found", "run_id not found");
		return;
	}
	struct buf *b = fcgi_body_buf(c);
	rv_write_run(b, r);
	fcgi_reply_buf(c, status, "application/json");
}

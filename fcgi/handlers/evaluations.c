/*
 * evaluations: MANTIS challenge evaluations as jobs.
 *
 *   POST /api/evaluations {challenge, code, dataset_version?, days_back?,
 *        holdout_days?, mode?, dev_only?, name?, note?}
 *        -> 202 {id, status: "queued", ...}: a row in `evaluations`
 *        (sql/004) that agenttest-runner claims and executes in the sandbox
 *        with lockstep streaming (evaluator/runner/eval_job.c), then a
 *        wake-up datagram to the runners.
 *   GET  /api/evaluations/{id}
 *        -> the row: status, error, and the result dictionary once done.
 *        Owners see their evaluations, admins every one; others get 404.
 *   GET  /api/evaluations?challenge=&status=&limit=&cursor=
 *        -> {evaluations: [summary], next_cursor}: newest first, the caller's
 *        own (admins: everyone's), paged by `seq` like GET /runs (the
 *        cursor is opaque and the caller's: common/cursor.h). One
 *        statement; the owner's name comes from a join.
 */
#include <stdio.h>
#include <string.h>

#include "evaluator/challenges/challenges.h"
#include "evaluator/hashes.h"
#include "fcgi/handlers/agents.h"
#include "fcgi/handlers/forward_view.h"
#include "fcgi/handlers/handlers.h"
#include "fcgi/handlers/runs_view.h"
#include "job_status.h"

#define EVAL_MAX_CODE   (1u << 20)
#define EVAL_MAX_QUEUED 50
#define EVAL_MAX_SAME   1   /* queued or running, per user, challenge and dataset */
#define EVAL_LIST_MAX   200
#define EVAL_NAME_MAX   128   /* bytes; evaluations.name (sql/016) */
#define EVAL_NOTE_MAX   1024  /* bytes; evaluations.note */

/* True if s holds a control character (below U+0020, or DEL); with
 * lines, tab, LF and CR are allowed (a note may have lines; a name is one
 * line as lists and leaderboards show it). */
static bool has_control(const char *s, bool lines)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (lines && (*p == '\t' || *p == '\n' || *p == '\r'))
			continue;
		if (*p < 0x20 || *p == 0x7f)
			return true;
	}
	return false;
}

/* The optional name and note of POST /api/evaluations: name 1..128 bytes of
 * one line, note 0..1024 bytes; "" or null is absent (NULL). Replies 400
 * invalid_field on failure. */
static bool eval_labels(struct fcgi_ctx *c, json_object *body, const char **name, const char **note)
{
	*name = *note = NULL;
	if (!fcgi_json_string(c, body, "name", FIELD_OPTIONAL | FIELD_NULLABLE, 0, EVAL_NAME_MAX, name) ||
	    !fcgi_json_string(c, body, "note", FIELD_OPTIONAL | FIELD_NULLABLE, 0, EVAL_NOTE_MAX, note))
		return false;
	if (*name && has_control(*name, false)) {
		fcgi_reply_error(c, 400, "invalid_field", "field 'name' must be one line without control characters");
		return false;
	}
	if (*note && has_control(*note, true)) {
		fcgi_reply_error(c, 400, "invalid_field", "field 'note' may not hold control characters other than tab and newline");
		return false;
	}
	if (*name && !**name)
		*name = NULL;
	if (*note && !**note)
		*note = NULL;
	return true;
}

/* The per-user limits checked at enqueue, and the insert, in one
 * transaction that locks the caller's user row (so two concurrent POSTs
 * cannot both pass a count): at most EVAL_MAX_QUEUED queued evaluations
 * (429 rate_limited) and at most EVAL_MAX_SAME queued or running
 * evaluations of the same challenge on the same dataset (429
 * concurrency_limit: two evaluations of one user running side by side
 * could pass each other what they see, docs/api.md). Replies on failure. */
static bool eval_enqueue(struct fcgi_ctx *c, long long uid, const char *challenge, long long dataset_id,
			 const struct db_arg *ins, size_t nins)
{
	struct db *db = fcgi_db(c);
	struct db_col q = DB_COL_INT, same = DB_COL_INT, lk = DB_COL_INT;
	struct db_arg uarg = DB_ARG_INT(uid);
	struct db_arg sargs[] = { DB_ARG_INT(uid), DB_ARG_TEXT(challenge), DB_ARG_INT(dataset_id) };
	enum db_status st = db_begin(db);
	if (st == DB_OK)
		st = db_exec(db, "SELECT id FROM users WHERE id = ? FOR UPDATE", &uarg, 1, &lk, 1, NULL, NULL, NULL, 0);
	if (st == DB_OK)
		st = db_exec(db, "SELECT COUNT(*) FROM evaluations WHERE owner_id = ? AND status = 'queued'", &uarg, 1,
			     &q, 1, NULL, NULL, NULL, 0);
	if (st == DB_OK)
		st = db_exec(db, "SELECT COUNT(*) FROM evaluations WHERE owner_id = ? AND challenge = ? AND dataset_id = ? "
			     "AND status IN ('queued', 'running')", sargs, 3, &same, 1, NULL, NULL, NULL, 0);
	if (st == DB_OK && q.i >= EVAL_MAX_QUEUED) {
		db_rollback(db);
		fcgi_reply_error(c, 429, "rate_limited", "%d evaluations already queued; wait for some to finish",
				 EVAL_MAX_QUEUED);
		return false;
	}
	if (st == DB_OK && same.i >= EVAL_MAX_SAME) {
		db_rollback(db);
		fcgi_reply_error(c, 429, "concurrency_limit",
				 "an evaluation of %s on this dataset is already queued or running; at most %d at a time",
				 challenge, EVAL_MAX_SAME);
		return false;
	}
	if (st == DB_OK)
		st = db_exec(db, "INSERT INTO evaluations (id, owner_id, challenge, mode, dataset_id, dataset_version, "
			     "dataset_hash, code_hash, code, days_back, holdout_days, dev_only, name, note) "
			     "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", ins, nins, NULL, 0, NULL, NULL, NULL, 0);
	if (st == DB_OK)
		st = db_commit(db);
	if (st != DB_OK) {
		db_rollback(db);
		fcgi_reply_db_error(c, st);
		return false;
	}
	return true;
}

void h_evaluations_create(struct fcgi_ctx *c)
{
	static const char *const allowed[] = { "challenge", "code", "dataset_version", "days_back", "holdout_days",
					       "mode", "dev_only", "name", "note", NULL };
	json_object *body = fcgi_body(c);
	const char *challenge = NULL, *code = NULL, *dsv = NULL, *mode = "strict", *ename, *enote;
	double days_back = 60, holdout_days = 20;
	bool dev_only = false;
	long long uid;
	bool admin;
	if (!fcgi_json_only(c, body, allowed) ||
	    !fcgi_json_string(c, body, "challenge", FIELD_REQUIRED, 1, 64, &challenge) ||
	    !fcgi_json_string(c, body, "code", FIELD_REQUIRED, 1, EVAL_MAX_CODE, &code) ||
	    !fcgi_json_string(c, body, "dataset_version", FIELD_OPTIONAL | FIELD_NULLABLE, 1, 64, &dsv) ||
	    !fcgi_json_number(c, body, "days_back", FIELD_OPTIONAL | FIELD_NULLABLE, 1, 3650, &days_back) ||
	    !fcgi_json_number(c, body, "holdout_days", FIELD_OPTIONAL | FIELD_NULLABLE, 0, 3650, &holdout_days) ||
	    !fcgi_json_string(c, body, "mode", FIELD_OPTIONAL | FIELD_NULLABLE, 1, 16, &mode) ||
	    !fcgi_json_bool(c, body, "dev_only", FIELD_OPTIONAL | FIELD_NULLABLE, &dev_only) ||
	    !eval_labels(c, body, &ename, &enote))
		return;
	const struct ch_def *def = ch_lookup(challenge);
	if (!def) {
		ag_bad_challenge(c, challenge);   /* challenge: at most 64 bytes, so the message is the same */
		return;
	}
	if (ch_mode_parse(mode) < 0) {
		fcgi_reply_error(c, 400, "invalid_field", "mode must be strict or mantis");
		return;
	}
	if (!dsv) {
		dsv = fcgi_config(c, "DATASET_VERSION");
		if (!dsv || !*dsv)
			dsv = "v1";
	}
	if (!rv_caller(c, &uid, &admin))
		return;
	/* the dataset, pinned now */
	char dhash[70], dver[65], dpath[1030];
	struct db_col dcols[] = { DB_COL_INT, DB_COL_TEXT(dhash), DB_COL_TEXT(dver), DB_COL_INT, DB_COL_TEXT(dpath) };
	struct db_arg darg[] = { DB_ARG_TEXT(dsv), DB_ARG_TEXT(dsv) };
	struct db_result dres = { 0 };
	/* a registered version, else a market-data window label (sql/013 dataset_labels) */
	enum db_status st = db_exec(fcgi_db(c), "SELECT id, dataset_hash, version, 0 AS p, path FROM datasets WHERE version = ? "
				    "UNION ALL SELECT d.id, d.dataset_hash, d.version, 1, d.path FROM dataset_labels l "
				    "JOIN datasets d ON d.id = l.dataset_id WHERE l.label = ? ORDER BY p LIMIT 1", darg, 2,
				    dcols, 5, NULL, NULL, &dres, DB_IDEMPOTENT);
	if (st != DB_OK) {
		fcgi_reply_db_error(c, st);
		return;
	}
	if (dres.rows == 0) {
		fcgi_reply_error(c, 404, "not_found", "dataset_version '%s' is not registered (see GET /datasets)", dsv);
		return;
	}
	long long dataset_id = dcols[0].i;
	dsv = dver;   /* pin the version, not a moving label */
	if (!ch_dataset_fits(c, def, dsv, dpath))
		return;
	char id[37], chash[HASH_HEX_LEN + 1], days[40], hold[40];
	rv_uuid(id);
	hash_code(code, strlen(code), chash);
	snprintf(days, sizeof days, "%.17g", days_back);
	snprintf(hold, sizeof hold, "%.17g", holdout_days);
	struct db_arg args[] = {
		DB_ARG_TEXT(id), DB_ARG_INT(uid), DB_ARG_TEXT(def->name), DB_ARG_TEXT(mode), DB_ARG_INT(dataset_id),
		DB_ARG_TEXT(dsv), DB_ARG_TEXT(dhash), DB_ARG_TEXT(chash), DB_ARG_TEXT(code), DB_ARG_TEXT(days),
		DB_ARG_TEXT(hold), DB_ARG_INT(dev_only ? 1 : 0), ename ? DB_ARG_TEXT(ename) : DB_ARG_NULL,
		enote ? DB_ARG_TEXT(enote) : DB_ARG_NULL,
	};
	if (!eval_enqueue(c, uid, def->name, dataset_id, args, sizeof args / sizeof args[0]))
		return;
	rv_notify(c, "q");
	struct buf *b = fcgi_body_buf(c);
	buf_puts(b, "{\"id\":");
	rv_str(b, id);
	buf_puts(b, ",\"status\":\"queued\",\"challenge\":");
	rv_str(b, def->name);
	buf_puts(b, ",\"mode\":");
	rv_str(b, mode);
	buf_puts(b, ",\"dataset_version\":");
	rv_str(b, dsv);
	buf_puts(b, ",\"dataset_hash\":");
	rv_str(b, dhash);
	buf_puts(b, ",\"code_hash\":");
	rv_str(b, chash);
	buf_puts(b, ",\"name\":");
	rv_str(b, ename);
	buf_puts(b, ",\"note\":");
	rv_str(b, enote);
	buf_printf(b, ",\"days_back\":%s,\"holdout_days\":%s,\"dev_only\":%s,\"url\":\"/api/evaluations/%s\"}", days,
		   hold, dev_only ? "true" : "false", id);
	fcgi_reply_buf(c, 202, "application/json");
}

/*
 * Append `,"progress":` to b: {"done","total","unit":"steps"} from the
 * runner's heartbeat (sql/031) while the evaluation is running and its
 * stream has started, else null.
 */
static void progress_json(struct buf *b, bool running, const struct db_col *done, const struct db_col *total)
{
	buf_puts(b, ",\"progress\":");
	if (!running || done->is_null || total->is_null) {
		buf_puts(b, "null");
		return;
	}
	long long t = total->i, d = done->i < 0 ? 0 : done->i > t ? t : done->i;
	buf_printf(b, "{\"done\":%lld,\"total\":%lld,\"unit\":\"steps\"}", d, t);
}

/* One evaluation row as read by h_evaluations_get (buffers in the arena). */
struct erow {
	bool found;
	struct buf *b;
};

static bool erow_cb(void *ctx, const struct db_col *col, size_t ncol)
{
	struct erow *e = ctx;
	struct buf *b = e->b;
	(void)ncol;
	e->found = true;
	static const char *const str_keys[] = { "id", "challenge", "mode", "dataset_version", "dataset_hash",
						"code_hash" };
	for (int i = 0; i < 6; i++) {
		buf_printf(b, "%s\"%s\":", i ? "," : "{", str_keys[i]);
		rv_str(b, col[i].buf);
	}
	buf_puts(b, ",\"days_back\":");
	rv_num(b, col[6].buf);
	buf_puts(b, ",\"holdout_days\":");
	rv_num(b, col[7].buf);
	buf_printf(b, ",\"dev_only\":%s,\"status\":", col[8].i ? "true" : "false");
	rv_str(b, col[9].buf);
	buf_puts(b, ",\"error\":");
	if (col[10].is_null) {
		buf_puts(b, "null");
	} else {
		buf_puts(b, "{\"code\":");
		rv_str(b, col[10].buf);
		buf_puts(b, ",\"message\":");
		rv_str(b, col[11].is_null ? "" : col[11].buf);
		buf_putc(b, '}');
	}
	buf_puts(b, ",\"metric\":");
	rv_str(b, col[12].is_null ? NULL : col[12].buf);
	buf_puts(b, ",\"score\":");
	rv_num(b, col[13].is_null ? NULL : col[13].buf);
	static const char *const ts_keys[] = { "queued_at", "started_at", "completed_at" };
	for (int i = 0; i < 3; i++) {
		buf_printf(b, ",\"%s\":", ts_keys[i]);
		rv_str(b, col[14 + i].is_null ? NULL : col[14 + i].buf);
	}
	buf_puts(b, ",\"runtime_s\":");
	rv_num(b, col[17].is_null ? NULL : col[17].buf);
	buf_puts(b, ",\"result\":");
	rv_raw(b, col[18].is_null ? NULL : col[18].buf);
	buf_puts(b, ",\"code\":");
	rv_str(b, col[19].is_null ? NULL : col[19].buf);
	buf_puts(b, ",\"name\":");
	rv_str(b, col[20].is_null ? NULL : col[20].buf);
	buf_puts(b, ",\"note\":");
	rv_str(b, col[21].is_null ? NULL : col[21].buf);
	progress_json(b, strcmp(col[9].buf, "running") == 0, &col[22], &col[23]);
	buf_putc(b, '}');
	return true;
}

void h_evaluations_get(struct fcgi_ctx *c)
{
	const char *id = fcgi_param(c, "id");
	long long uid;
	bool admin;
	if (!rv_caller(c, &uid, &admin))
		return;
	if (!id || strlen(id) != 36) {
		fcgi_reply_error(c, 404, "not_found", "no evaluation %s", id ? id : "");
		return;
	}
	char s[6][130], days[40], hold[40], status[16], ecode[40], metric[40], score[40], ts[3][RV_TS_LEN], rt[40];
	char *emsg = arena_alloc(fcgi_arena(c), 65536), *result = arena_alloc(fcgi_arena(c), 1u << 20);
	char *code = arena_alloc(fcgi_arena(c), EVAL_MAX_CODE + 1);
	char ename[EVAL_NAME_MAX + 1], enote[EVAL_NOTE_MAX + 1];
	struct db_col cols[] = {
		DB_COL_TEXT(s[0]), DB_COL_TEXT(s[1]), DB_COL_TEXT(s[2]), DB_COL_TEXT(s[3]), DB_COL_TEXT(s[4]),
		DB_COL_TEXT(s[5]), DB_COL_TEXT(days), DB_COL_TEXT(hold), DB_COL_INT, DB_COL_TEXT(status),
		DB_COL_TEXT(ecode), { .type = DB_T_TEXT, .buf = emsg, .cap = 65536 }, DB_COL_TEXT(metric),
		DB_COL_TEXT(score), DB_COL_TEXT(ts[0]), DB_COL_TEXT(ts[1]), DB_COL_TEXT(ts[2]), DB_COL_TEXT(rt),
		{ .type = DB_T_TEXT, .buf = result, .cap = 1u << 20 },
		{ .type = DB_T_TEXT, .buf = code, .cap = EVAL_MAX_CODE + 1 }, DB_COL_TEXT(ename), DB_COL_TEXT(enote),
		DB_COL_INT, DB_COL_INT,
	};
	struct db_arg args[] = { DB_ARG_TEXT(id), DB_ARG_INT(uid), DB_ARG_INT(admin ? 1 : 0) };
	struct buf *b = fcgi_body_buf(c);
	struct erow e = { false, b };
	enum db_status st = db_exec(fcgi_db(c),
		"SELECT id, challenge, mode, dataset_version, dataset_hash, code_hash, CAST(days_back AS CHAR), "
		"CAST(holdout_days AS CHAR), dev_only, status, error_code, error_message, metric, CAST(score AS CHAR), "
		RV_TS("queued_at") ", " RV_TS("started_at") ", " RV_TS("completed_at") ", CAST(runtime_s AS CHAR), result, code, "
		"name, note, progress_done, progress_total FROM evaluations WHERE id = ? AND (owner_id = ? OR ? = 1)",
		args, 3, cols, sizeof cols / sizeof cols[0], erow_cb, &e, NULL, DB_IDEMPOTENT);
	if (st != DB_OK) {
		buf_reset(b);
		fcgi_reply_db_error(c, st);
		return;
	}
	if (!e.found) {
		buf_reset(b);
		fcgi_reply_error(c, 404, "not_found", "no evaluation %s", id);
		return;
	}
	/* the forward score (issue 18): one more key before the closing brace */
	json_object *fwd = NULL;
	if ((st = fwd_view_evaluation(c, id, true, &fwd)) != DB_OK) {
		buf_reset(b);
		fcgi_reply_db_error(c, st);
		return;
	}
	b->len--;
	buf_puts(b, ",\"forward\":");
	buf_puts(b, fwd ? json_object_to_json_string_ext(fwd, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE) : "null");
	buf_putc(b, '}');
	json_object_put(fwd);
	fcgi_reply_buf(c, 200, "application/json");
}

/*
 * POST /api/evaluations/{id}/cancel: a queued evaluation is cancelled at
 * once, a running one is stopped by its runner within a tick (the queue's
 * cancel, common/job_status.h); 409 conflict once it is final. Answers the
 * evaluation as GET does.
 */
/* Row callback: note that a row came (its values stay in the columns). */
static bool first_row(void *ctx, const struct db_col *cols, size_t ncols)
{
	(void)cols;
	(void)ncols;
	*(bool *)ctx = true;
	return false;
}

void h_evaluations_cancel(struct fcgi_ctx *c)
{
	const char *id = fcgi_param(c, "id");
	long long uid;
	bool admin;
	char status[16] = "";
	bool found = false;
	if (!rv_caller(c, &uid, &admin))
		return;
	if (!id || strlen(id) != 36) {
		fcgi_reply_error(c, 404, "not_found", "no evaluation %s", id ? id : "");
		return;
	}
	struct db_col col[] = { DB_COL_TEXT(status) };
	struct db_arg args[] = { DB_ARG_TEXT(id), DB_ARG_INT(uid), DB_ARG_INT(admin ? 1 : 0) };
	enum db_status st = db_exec(fcgi_db(c), "SELECT status FROM evaluations WHERE id = ? AND (owner_id = ? OR ? = 1)",
				    args, 3, col, 1, first_row, &found, NULL, DB_IDEMPOTENT);
	uint64_t changed = 0;
	if (st == DB_OK && found)
		st = job_request_cancel(fcgi_db(c), "evaluations", id, &changed);
	if (st != DB_OK) {
		fcgi_reply_db_error(c, st);
		return;
	}
	if (!found) {
		fcgi_reply_error(c, 404, "not_found", "no evaluation %s", id);
		return;
	}
	enum job_status js;
	if (changed == 0 && job_status_parse(status, &js) && job_status_final(js)) {
		fcgi_reply_error(c, 409, "conflict", "evaluation %s is already %s", id, status);
		return;
	}
	rv_notify(c, "c");
	h_evaluations_get(c);
}

/* List state of GET /api/evaluations. */
struct elist {
	struct buf *b;
	size_t      n, limit;
	long long   last_seq;
};

/* Row callback of GET /api/evaluations: one evaluation summary. */
static bool elist_row(void *ctx, const struct db_col *col, size_t ncol)
{
	struct elist *l = ctx;
	struct buf *b = l->b;
	(void)ncol;
	if (l->n == l->limit) {
		l->n++;   /* one more exists: there is a next page */
		return false;
	}
	buf_puts(b, l->n ? ",{\"id\":" : "{\"id\":");
	rv_str(b, col[0].buf);
	static const char *const keys[] = { "challenge", "status", "owner", "mode", "dataset_version", "metric" };
	for (int i = 0; i < 6; i++) {
		buf_printf(b, ",\"%s\":", keys[i]);
		rv_str(b, col[1 + i].is_null ? NULL : col[1 + i].buf);
	}
	buf_puts(b, ",\"score\":");
	rv_num(b, col[7].is_null ? NULL : col[7].buf);
	buf_puts(b, ",\"error_code\":");
	rv_str(b, col[8].is_null ? NULL : col[8].buf);
	buf_puts(b, ",\"queued_at\":");
	rv_str(b, col[9].buf);
	buf_puts(b, ",\"completed_at\":");
	rv_str(b, col[10].is_null ? NULL : col[10].buf);
	buf_puts(b, ",\"name\":");
	rv_str(b, col[12].is_null ? NULL : col[12].buf);
	buf_putc(b, '}');
	l->last_seq = col[11].i;
	l->n++;
	return true;
}

/* GET /api/evaluations: the caller's evaluations (admins: all), newest first, paged. */
void h_evaluations_list(struct fcgi_ctx *c)
{
	static const char *const statuses[] = { "queued", "running", "completed", "failed", "cancelled", NULL };
	const char *challenge = fcgi_query(c, "challenge"), *status = fcgi_query(c, "status");
	int64_t limit, cursor;
	long long uid;
	bool admin;
	char scope[32];
	if (!rv_caller(c, &uid, &admin))
		return;
	snprintf(scope, sizeof scope, "u:%lld", uid);   /* the caller's cursors only */
	if (!fcgi_query_int(c, "limit", 1, EVAL_LIST_MAX, 50, &limit) ||
	    !fcgi_query_cursor(c, CURSOR_EVALUATIONS, scope, INT64_MAX - 1, &cursor, NULL))
		return;
	if (status) {
		bool ok = false;
		for (int i = 0; statuses[i]; i++)
			ok |= strcmp(status, statuses[i]) == 0;
		if (!ok) {
			fcgi_reply_error(c, 400, "invalid_field",
					 "status must be one of queued, running, completed, failed, cancelled");
			return;
		}
	}
	if (challenge && (strlen(challenge) > 64 || !ch_lookup(challenge))) {
		fcgi_reply_error(c, 400, "invalid_field", "unknown challenge '%.64s' (see GET /api/challenges)",
				 challenge);
		return;
	}
	struct buf sql = BUF_INIT;
	struct db_arg args[5];
	size_t na = 0;
	buf_puts(&sql, "SELECT e.id, e.challenge, e.status, u.name, e.mode, e.dataset_version, e.metric, "
		       "CAST(e.score AS CHAR), e.error_code, " RV_TS("e.queued_at") ", " RV_TS("e.completed_at")
		       ", e.seq, e.name FROM evaluations e JOIN users u ON u.id = e.owner_id WHERE e.seq < ?");
	args[na++] = DB_ARG_INT(cursor);
	if (!admin) {
		buf_puts(&sql, " AND e.owner_id = ?");
		args[na++] = DB_ARG_INT(uid);
	}
	if (challenge) {
		buf_puts(&sql, " AND e.challenge = ?");
		args[na++] = DB_ARG_TEXT(challenge);
	}
	if (status) {
		buf_puts(&sql, " AND e.status = ?");
		args[na++] = DB_ARG_TEXT(status);
	}
	buf_puts(&sql, " ORDER BY e.seq DESC LIMIT ?");
	args[na++] = DB_ARG_INT(limit + 1);
	char id[40], ch[70], st[16], owner[RV_NAME_LEN], mode[16], dsv[130], metric[40], score[40], ec[40];
	char qa[RV_TS_LEN], ca[RV_TS_LEN], ename[EVAL_NAME_MAX + 1];
	struct db_col cols[] = { DB_COL_TEXT(id), DB_COL_TEXT(ch), DB_COL_TEXT(st), DB_COL_TEXT(owner),
				 DB_COL_TEXT(mode), DB_COL_TEXT(dsv), DB_COL_TEXT(metric), DB_COL_TEXT(score),
				 DB_COL_TEXT(ec), DB_COL_TEXT(qa), DB_COL_TEXT(ca), DB_COL_INT, DB_COL_TEXT(ename) };
	struct buf *b = fcgi_body_buf(c);
	struct elist l = { .b = b, .limit = (size_t)limit };
	buf_puts(b, "{\"evaluations\":[");
	enum db_status dst = db_exec(fcgi_db(c), sql.data, args, na, cols, sizeof cols / sizeof cols[0], elist_row,
				     &l, NULL, DB_IDEMPOTENT);
	buf_free(&sql);
	if (dst != DB_OK) {
		buf_reset(b);
		fcgi_reply_db_error(c, dst);
		return;
	}
	buf_puts(b, "],\"next_cursor\":");
	if (l.n > l.limit)
		fcgi_put_cursor(c, b, CURSOR_EVALUATIONS, scope, l.last_seq);
	else
		buf_puts(b, "null");
	buf_putc(b, '}');
	fcgi_reply_buf(c, 200, "application/json");
}

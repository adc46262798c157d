/*
 * eval_job: the runner's second job kind, MANTIS challenge evaluations
 * (rows of `evaluations`, sql/004, queued by POST /api/evaluations).
 *
 * A slot that finds no queued run calls eval_job_try(): re-queue (or fail,
 * runner_lost) evaluations whose lease expired, claim the oldest queued one
 * (one short transaction, FOR UPDATE SKIP LOCKED), execute it with
 * stream_evaluate (open the pinned dataset, check its hash, stream the bars
 * into the confined host in lockstep, score in C) and write the outcome
 * once, guarded by (id, status running, lease_owner, attempts) exactly as
 * runs are. An evaluation's lease covers its whole CPU budget (no
 * heartbeat): twice STREAM_CPU_S plus ten minutes. SIGTERM hand-back
 * (job_cancel with hand_back) puts it back in the queue without counting
 * the attempt.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db.h"
#include "xalloc.h"
#include "evaluator/dataset.h"
#include "evaluator/protocol.h"
#include "evaluator/runner/eval_job.h"
#include "evaluator/runner/runner.h"
#include "evaluator/stream.h"

#define EVAL_LEASE_S ((int)(2 * STREAM_CPU_S) + 600)

/* A claimed evaluation. */
struct ejob {
	char     id[37];
	unsigned attempt;
	char    *challenge, *mode, *path, *hash, *code;
	size_t   code_len;
	double   days_back, holdout_days;
	int      dev_only;
};

/* Release the strings of e. */
static void ejob_free(struct ejob *e)
{
	free(e->challenge);
	free(e->mode);
	free(e->path);
	free(e->hash);
	free(e->code);
	memset(e, 0, sizeof *e);
}

/* One statement; -1 with the message in err. */
static int ex(struct db *db, const char *sql, const struct db_arg *a, size_t na, struct db_col *c, size_t nc,
	      db_row_fn fn, void *ctx, struct db_result *res, struct buf *err)
{
	if (db_exec(db, sql, a, na, c, nc, fn, ctx, res, 0) != DB_OK) {
		buf_printf(err, "database: %s", db_error(db));
		return -1;
	}
	return 0;
}

/* Row callback: note the row and stop (its values stay in the columns). */
static bool got_row(void *ctx, const struct db_col *cols, size_t ncols)
{
	(void)cols;
	(void)ncols;
	*(bool *)ctx = true;
	return false;
}

/* Expired leases: back to the queue, or failed once the attempts are used. */
static int reap(struct db *db, struct buf *err)
{
	return ex(db, "UPDATE evaluations SET status = IF(attempts < max_attempts, 'queued', 'failed'), "
		      "error_code = IF(attempts < max_attempts, NULL, 'runner_lost'), "
		      "error_message = IF(attempts < max_attempts, NULL, 'the runner executing it disappeared'), "
		      "completed_at = IF(attempts < max_attempts, NULL, NOW(6)), lease_owner = NULL, "
		      "lease_expires_at = NULL WHERE status = 'running' AND lease_expires_at < NOW(6)",
		  NULL, 0, NULL, 0, NULL, NULL, NULL, err);
}

/* Claim the oldest queued evaluation. 1 claimed (e filled), 0 none, -1 error. */
static int claim(struct db *db, const char *owner, struct ejob *e, struct buf *err)
{
	char id[64] = "";
	struct db_col c[] = { DB_COL_TEXT(id), DB_COL_INT };
	bool found = false;
	int rc = -1;
	memset(e, 0, sizeof *e);
	if (ex(db, "SET TRANSACTION ISOLATION LEVEL READ COMMITTED", NULL, 0, NULL, 0, NULL, NULL, NULL, err) != 0)
		return -1;
	if (db_begin(db) != DB_OK) {
		buf_printf(err, "database: %s", db_error(db));
		return -1;
	}
	if (ex(db, "SELECT id, attempts FROM evaluations WHERE status = 'queued' "
		   "ORDER BY seq LIMIT 1 FOR UPDATE SKIP LOCKED", NULL, 0, c, 2, got_row, &found, NULL, err) != 0)
		goto fail;
	if (!found) {
		rc = 0;
		goto fail;
	}
	snprintf(e->id, sizeof e->id, "%.36s", id);
	e->attempt = (unsigned)c[1].i + 1;
	struct db_arg a[] = { DB_ARG_TEXT(owner), DB_ARG_INT(EVAL_LEASE_S), DB_ARG_INT(e->attempt), DB_ARG_TEXT(e->id) };
	if (ex(db, "UPDATE evaluations SET status = 'running', lease_owner = ?, "
		   "lease_expires_at = NOW(6) + INTERVAL ? SECOND, attempts = ?, started_at = NOW(6) WHERE id = ?",
	       a, 4, NULL, 0, NULL, NULL, NULL, err) != 0)
		goto fail;
	if (db_commit(db) != DB_OK) {
		buf_printf(err, "database: %s", db_error(db));
		goto fail;
	}
	char ch[256] = "", mode[64] = "", path[4097] = "", hash[256] = "", days[64] = "", hold[64] = "";
	struct db_col d[] = { DB_COL_TEXT(ch), DB_COL_TEXT(mode), DB_COL_TEXT(path), DB_COL_TEXT(hash),
			      { .type = DB_T_TEXT, .buf = xmalloc(STREAM_MAX_CODE + 1), .cap = STREAM_MAX_CODE + 1 },
			      DB_COL_TEXT(days), DB_COL_TEXT(hold), DB_COL_INT };
	struct db_arg k[] = { DB_ARG_TEXT(e->id) };
	found = false;
	if (ex(db, "SELECT e.challenge, e.mode, d.path, e.dataset_hash, e.code, CAST(e.days_back AS CHAR), "
		   "CAST(e.holdout_days AS CHAR), e.dev_only FROM evaluations e JOIN datasets d ON d.id = e.dataset_id "
		   "WHERE e.id = ?", k, 1, d, 8, got_row, &found, NULL, err) == 0 && !found)
		buf_printf(err, "claimed evaluation %s vanished", e->id);
	if (found) {
		e->challenge = xstrdup(d[0].is_null ? "" : ch);
		e->mode = xstrdup(d[1].is_null ? "strict" : mode);
		e->path = xstrdup(d[2].is_null ? "" : path);
		e->hash = xstrdup(d[3].is_null ? "" : hash);
		e->code_len = d[4].is_null ? 0 : d[4].len;
		e->code = xmalloc(e->code_len + 1);
		memcpy(e->code, d[4].buf, e->code_len);
		e->code[e->code_len] = '\0';
		e->days_back = d[5].is_null ? 60 : atof(days);
		e->holdout_days = d[6].is_null ? 20 : atof(hold);
		e->dev_only = !d[7].is_null && d[7].i != 0;
		rc = 1;
	}
	free(d[4].buf);
	return rc;
fail:
	db_rollback(db);
	return rc;
}

/* The primary metric of a result dictionary: its name and finite value. */
static bool primary(json_object *res, const char **name, double *v)
{
	static const char *const keys[] = { "mean_auc", "direct_log_loss", "mean_balanced_accuracy", "mean_spearman" };
	json_object *x;
	for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
		if (json_object_object_get_ex(res, keys[i], &x)) {
			*name = keys[i];
			if (!x || !(json_object_is_type(x, json_type_double) || json_object_is_type(x, json_type_int)))
				return false;
			*v = json_object_get_double(x);
			return isfinite(*v);
		}
	return false;
}

/* Write the outcome (guarded by the lease). 1 written, 0 lease lost, -1 error. */
static int finish(struct db *db, const char *owner, const struct ejob *e, enum ev_err rc, json_object *out,
		  double runtime, bool hand_back, struct buf *err)
{
	const char *text = out ? json_object_to_json_string_ext(out, JSON_C_TO_STRING_PLAIN) : "null";
	struct db_arg guard[] = { DB_ARG_TEXT(e->id), DB_ARG_TEXT(owner), DB_ARG_INT(e->attempt) };
	struct db_arg a[8];
	struct db_result res = { 0 };
	char score[32], rt[32];
	size_t n = 0;
	const char *sql;
	snprintf(rt, sizeof rt, "%.6f", runtime);
	if (hand_back) {
		a[n++] = DB_ARG_INT((long long)e->attempt - 1);
		sql = "UPDATE evaluations SET status = 'queued', attempts = ?, lease_owner = NULL, "
		      "lease_expires_at = NULL, started_at = NULL "
		      "WHERE id = ? AND status = 'running' AND lease_owner = ? AND attempts = ?";
	} else if (rc == EV_OK) {
		const char *metric = NULL;
		double v = 0;
		bool ok = primary(out, &metric, &v);
		snprintf(score, sizeof score, "%.17g", v);
		a[n++] = metric ? DB_ARG_TEXT(metric) : DB_ARG_NULL;
		a[n++] = ok ? DB_ARG_TEXT(score) : DB_ARG_NULL;
		a[n++] = DB_ARG_TEXT(text);
		a[n++] = DB_ARG_TEXT(rt);
		sql = "UPDATE evaluations SET status = 'completed', error_code = NULL, error_message = NULL, metric = ?, "
		      "score = ?, result = ?, completed_at = NOW(6), runtime_s = ?, lease_owner = NULL, "
		      "lease_expires_at = NULL WHERE id = ? AND status = 'running' AND lease_owner = ? AND attempts = ?";
	} else {
		json_object *m = NULL;
		const char *code = ev_errcode(rc), *msg = "evaluation failed";
		if (out && json_object_object_get_ex(out, "code", &m))
			code = json_object_get_string(m);
		if (out && json_object_object_get_ex(out, "error", &m))
			msg = json_object_get_string(m);
		a[n++] = DB_ARG_TEXTN(code, strnlen(code, 32));
		a[n++] = DB_ARG_TEXTN(msg, strnlen(msg, 60000));
		a[n++] = DB_ARG_TEXT(text);
		a[n++] = DB_ARG_TEXT(rt);
		sql = "UPDATE evaluations SET status = 'failed', error_code = ?, error_message = ?, result = ?, "
		      "completed_at = NOW(6), runtime_s = ?, lease_owner = NULL, lease_expires_at = NULL "
		      "WHERE id = ? AND status = 'running' AND lease_owner = ? AND attempts = ?";
	}
	for (size_t i = 0; i < 3; i++)
		a[n++] = guard[i];
	if (ex(db, sql, a, n, NULL, 0, NULL, NULL, &res, err) != 0)
		return -1;
	return res.affected > 0 ? 1 : 0;
}

/* Execute e: open the pinned dataset and run stream_evaluate. */
static enum ev_err execute(const struct ejob *e, unsigned box_id, struct job_ctl *ctl, json_object **out)
{
	enum ds_err de;
	char msg[512];
	struct dataset *ds = ds_open(e->path, 0, &de, msg, sizeof msg);
	*out = NULL;
	if (!ds) {
		*out = json_object_new_object();
		json_object_object_add(*out, "error", json_object_new_string(msg));
		json_object_object_add(*out, "code", json_object_new_string("dataset_error"));
		return EV_DATASET;
	}
	if (strcmp(ds_hash(ds), e->hash) != 0) {
		ds_close(ds);
		*out = json_object_new_object();
		json_object_object_add(*out, "error", json_object_new_string("the dataset changed since the evaluation was queued"));
		json_object_object_add(*out, "code", json_object_new_string("dataset_error"));
		return EV_DATASET;
	}
	struct stream_eval_opts o = {
		.challenge = e->challenge, .mode = ch_mode_parse(e->mode) == CH_MODE_MANTIS ? CH_MODE_MANTIS : CH_MODE_STRICT,
		.days_back = e->days_back, .holdout_days = e->holdout_days, .dev_only = e->dev_only,
		.code = e->code, .code_len = e->code_len,
		.sbx = { .mode = SBX_CONFINED, .box_id = box_id },
		.on_host = job_on_host, .on_host_arg = ctl,
	};
	enum ev_err rc = stream_evaluate(ds, &o, out);
	ds_close(ds);
	return rc;
}

int eval_job_try(struct db *c, const char *owner, unsigned box_id, struct job_ctl *ctl, struct buf *err)
{
	struct ejob e;
	if (reap(c, err) != 0)
		return -1;
	int got = claim(c, owner, &e, err);
	if (got <= 0)
		return got;
	double t0 = proto_now();
	json_object *out = NULL;
	enum ev_err rc = execute(&e, box_id, ctl, &out);
	bool hand_back = false;
	bool cancelled = job_cancelled(ctl, &hand_back);
	if (cancelled && !hand_back && rc == EV_OK) {
		json_object_put(out);
		out = NULL;
		rc = EV_CRASHED;
	}
	int w = finish(c, owner, &e, rc, out, proto_now() - t0, cancelled && hand_back, err);
	job_ctl_reset(ctl);
	json_object_put(out);
	ejob_free(&e);
	return w < 0 ? -1 : 1;
}

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

/* One statement; -1 with the server message in err. */
static int eq(MYSQL *c, const struct buf *sql, struct buf *err)
{
	if (mysql_real_query(c, sql->data, (unsigned long)sql->len) != 0) {
		buf_printf(err, "database: %s", mysql_error(c));
		return -1;
	}
	return 0;
}

/* Expired leases: back to the queue, or failed once the attempts are used. */
static int reap(MYSQL *c, struct buf *err)
{
	struct buf sql = BUF_INIT;
	buf_puts(&sql, "UPDATE evaluations SET status = IF(attempts < max_attempts, 'queued', 'failed'), "
		       "error_code = IF(attempts < max_attempts, NULL, 'runner_lost'), "
		       "error_message = IF(attempts < max_attempts, NULL, 'the runner executing it disappeared'), "
		       "completed_at = IF(attempts < max_attempts, NULL, NOW(6)), lease_owner = NULL, "
		       "lease_expires_at = NULL WHERE status = 'running' AND lease_expires_at < NOW(6)");
	int rc = eq(c, &sql, err);
	buf_free(&sql);
	return rc;
}

/* Claim the oldest queued evaluation. 1 claimed (e filled), 0 none, -1 error. */
static int claim(MYSQL *c, const char *owner, struct ejob *e, struct buf *err)
{
	struct buf sql = BUF_INIT;
	MYSQL_RES *res = NULL;
	int rc = -1;
	memset(e, 0, sizeof *e);
	if (mysql_query(c, "START TRANSACTION") != 0 ||
	    mysql_query(c, "SELECT id, attempts FROM evaluations WHERE status = 'queued' "
			   "ORDER BY seq LIMIT 1 FOR UPDATE SKIP LOCKED") != 0 ||
	    !(res = mysql_store_result(c))) {
		buf_printf(err, "database: %s", mysql_error(c));
		goto fail;
	}
	MYSQL_ROW row = mysql_fetch_row(res);
	if (!row) {
		rc = 0;
		goto fail;
	}
	snprintf(e->id, sizeof e->id, "%s", row[0]);
	e->attempt = (unsigned)strtoul(row[1], NULL, 10) + 1;
	mysql_free_result(res);
	res = NULL;
	buf_puts(&sql, "UPDATE evaluations SET status = 'running', lease_owner = ");
	rdb_quote(c, &sql, owner, strlen(owner));
	buf_printf(&sql, ", lease_expires_at = NOW(6) + INTERVAL %d SECOND, attempts = %u, started_at = NOW(6) "
			 "WHERE id = ", EVAL_LEASE_S, e->attempt);
	rdb_quote(c, &sql, e->id, strlen(e->id));
	if (eq(c, &sql, err) != 0 || mysql_query(c, "COMMIT") != 0)
		goto fail;
	buf_reset(&sql);
	buf_puts(&sql, "SELECT e.challenge, e.mode, d.path, e.dataset_hash, e.code, CAST(e.days_back AS CHAR), "
		       "CAST(e.holdout_days AS CHAR), e.dev_only FROM evaluations e JOIN datasets d ON d.id = e.dataset_id "
		       "WHERE e.id = ");
	rdb_quote(c, &sql, e->id, strlen(e->id));
	if (eq(c, &sql, err) != 0 || !(res = mysql_store_result(c)))
		goto out;
	row = mysql_fetch_row(res);
	unsigned long *len = mysql_fetch_lengths(res);
	if (!row || !len) {
		buf_printf(err, "claimed evaluation %s vanished", e->id);
		goto out;
	}
	e->challenge = xstrdup(row[0] ? row[0] : "");
	e->mode = xstrdup(row[1] ? row[1] : "strict");
	e->path = xstrdup(row[2] ? row[2] : "");
	e->hash = xstrdup(row[3] ? row[3] : "");
	e->code = xmalloc(len[4] + 1);
	memcpy(e->code, row[4] ? row[4] : "", len[4]);
	e->code[len[4]] = '\0';
	e->code_len = len[4];
	e->days_back = row[5] ? atof(row[5]) : 60;
	e->holdout_days = row[6] ? atof(row[6]) : 20;
	e->dev_only = row[7] && atoi(row[7]) != 0;
	rc = 1;
	goto out;
fail:
	(void)mysql_query(c, "ROLLBACK");
out:
	if (res)
		mysql_free_result(res);
	buf_free(&sql);
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
static int finish(MYSQL *c, const char *owner, const struct ejob *e, enum ev_err rc, json_object *out,
		  double runtime, bool hand_back, struct buf *err)
{
	struct buf sql = BUF_INIT;
	const char *text = out ? json_object_to_json_string_ext(out, JSON_C_TO_STRING_PLAIN) : "null";
	if (hand_back) {
		buf_printf(&sql, "UPDATE evaluations SET status = 'queued', attempts = %u, lease_owner = NULL, "
				 "lease_expires_at = NULL, started_at = NULL", e->attempt - 1);
	} else if (rc == EV_OK) {
		const char *metric = NULL;
		double v = 0;
		bool ok = primary(out, &metric, &v);
		buf_puts(&sql, "UPDATE evaluations SET status = 'completed', error_code = NULL, error_message = NULL, metric = ");
		if (metric)
			rdb_quote(c, &sql, metric, strlen(metric));
		else
			buf_puts(&sql, "NULL");
		if (ok)
			buf_printf(&sql, ", score = %.17g", v);
		else
			buf_puts(&sql, ", score = NULL");
	} else {
		json_object *m = NULL;
		const char *code = ev_errcode(rc), *msg = "evaluation failed";
		if (out && json_object_object_get_ex(out, "code", &m))
			code = json_object_get_string(m);
		if (out && json_object_object_get_ex(out, "error", &m))
			msg = json_object_get_string(m);
		buf_puts(&sql, "UPDATE evaluations SET status = 'failed', error_code = ");
		rdb_quote(c, &sql, code, strnlen(code, 32));
		buf_puts(&sql, ", error_message = ");
		rdb_quote(c, &sql, msg, strnlen(msg, 60000));
	}
	if (!hand_back) {
		buf_puts(&sql, ", result = ");
		rdb_quote(c, &sql, text, strlen(text));
		buf_printf(&sql, ", completed_at = NOW(6), runtime_s = %.6f, lease_owner = NULL, lease_expires_at = NULL",
			   runtime);
	}
	buf_puts(&sql, " WHERE id = ");
	rdb_quote(c, &sql, e->id, strlen(e->id));
	buf_puts(&sql, " AND status = 'running' AND lease_owner = ");
	rdb_quote(c, &sql, owner, strlen(owner));
	buf_printf(&sql, " AND attempts = %u", e->attempt);
	int r = eq(c, &sql, err) != 0 ? -1 : mysql_affected_rows(c) > 0 ? 1 : 0;
	buf_free(&sql);
	return r;
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

int eval_job_try(MYSQL *c, const char *owner, unsigned box_id, struct job_ctl *ctl, struct buf *err)
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

/*
 * eval_job: the runner's second job kind, MANTIS challenge evaluations
 * (rows of `evaluations`, sql/004, queued by POST /api/evaluations).
 *
 * A kind of the job queue (jobq.h): claimed after the runs (a slot takes an
 * evaluation when no run is queued), with the same lease, heartbeat,
 * cancel, reap and guarded finish as every kind. What is its own: loading
 * the pinned inputs, executing with stream_evaluate (open the pinned
 * dataset, check its hash, stream the bars into the confined host in
 * lockstep, score in C), and its result columns (metric, score, result).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db.h"
#include "xalloc.h"
#include "evaluator/dataset.h"
#include "evaluator/runner/drive/protocol.h"
#include "evaluator/runner/forward.h"
#include "evaluator/runner/jobq.h"
#include "evaluator/runner/jobs.h"
#include "evaluator/runner/runner.h"
#include "evaluator/runner/drive/stream.h"

/* A claimed evaluation: its inputs and, once executed, its result object. */
struct ejob {
	char     id[37];
	char    *challenge, *mode, *path, *hash, *code;
	size_t   code_len;
	double   days_back, holdout_days;
	int      dev_only;
	enum ev_err rc;
	json_object *out;
	char     score[32];
};

/* Release the strings of e. */
static void ejob_free(struct ejob *e)
{
	free(e->challenge);
	free(e->mode);
	free(e->path);
	free(e->hash);
	free(e->code);
	json_object_put(e->out);
	memset(e, 0, sizeof *e);
}

/* kind->load: the pinned inputs of claimed evaluation l->id. 1, 0 vanished, -1 error. */
static int eval_load(struct db *db, const struct jobq_lease *l, void *job, struct buf *err)
{
	struct ejob *e = job;
	bool found = false;
	int rc = -1;
	snprintf(e->id, sizeof e->id, "%s", l->id);
	char ch[256] = "", mode[64] = "", path[4097] = "", hash[256] = "", days[64] = "", hold[64] = "";
	struct db_col d[] = { DB_COL_TEXT(ch), DB_COL_TEXT(mode), DB_COL_TEXT(path), DB_COL_TEXT(hash),
			      { .type = DB_T_TEXT, .buf = xmalloc(STREAM_MAX_CODE + 1), .cap = STREAM_MAX_CODE + 1 },
			      DB_COL_TEXT(days), DB_COL_TEXT(hold), DB_COL_INT };
	struct db_arg k[] = { DB_ARG_TEXT(e->id) };
	found = false;
	if (db_run(db, "SELECT e.challenge, e.mode, d.path, e.dataset_hash, e.code, CAST(e.days_back AS CHAR), "
		   "CAST(e.holdout_days AS CHAR), e.dev_only FROM evaluations e JOIN datasets d ON d.id = e.dataset_id "
		   "WHERE e.id = ?", k, 1, d, 8, db_row_once, &found, NULL, err) == 0 && !found)
		rc = 0;
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
}

/* kind->columns: the primary metric and its score (completed), and the result object. */
static void eval_columns(void *job, const struct job_outcome *o, struct jobq_set *set)
{
	struct ejob *e = job;
	const char *text = e->out ? json_object_to_json_string_ext(e->out, JSON_C_TO_STRING_PLAIN) : "null";
	if (o->status == JOB_COMPLETED) {
		const char *metric = NULL;
		double v = 0;
		bool ok = policy_primary_metric(e->out, &metric, &v);
		snprintf(e->score, sizeof e->score, "%.17g", v);
		jobq_set_col(set, "metric", metric ? DB_ARG_TEXT(metric) : DB_ARG_NULL);
		jobq_set_col(set, "score", ok ? DB_ARG_TEXT(e->score) : DB_ARG_NULL);
	}
	jobq_set_col(set, "result", DB_ARG_TEXT(text));
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
		.on_progress = job_progress, .on_progress_arg = ctl,   /* written by the heartbeat */
	};
	enum ev_err rc = stream_evaluate(ds, &o, out);
	ds_close(ds);
	return rc;
}

/* kind->execute: stream_evaluate on the slot's box, mapped onto the common outcome. */
static void eval_execute(const struct jobq_slot *s, const struct jobq_lease *l, void *job, struct job_outcome *o)
{
	struct ejob *e = job;
	double t0 = proto_now();
	(void)l;
	e->rc = execute(e, s->box_id, s->ctl, &e->out);
	o->runtime_s = proto_now() - t0;
	if (e->rc == EV_OK) {
		o->status = JOB_COMPLETED;
		return;
	}
	policy_cap_untrusted(e->out);   /* what the strategy wrote comes back bounded */
	json_object *m = NULL;
	const char *code = ev_errcode(e->rc), *msg = "evaluation failed";
	if (e->out && json_object_object_get_ex(e->out, "code", &m))
		code = json_object_get_string(m);
	if (e->out && json_object_object_get_ex(e->out, "error", &m))
		msg = json_object_get_string(m);
	job_outcome_fail(o, code, "%s", msg);
	o->retry = e->rc == EV_INTERNAL;
}

/* kind->release. */
static void eval_release(void *job)
{
	ejob_free(job);
}

const struct job_kind eval_kind = {
	.name = "evaluation", .table = "evaluations", .lease_s = RUNNER_LEASE_S, .job_size = sizeof(struct ejob),
	.load = eval_load, .execute = eval_execute, .columns = eval_columns, .release = eval_release,
	.owner_col = "owner_id", .progress = true,
};

/*
 * forward_job: the runner's forward-score kind (rows of forward_jobs,
 * sql/022; queued by the prefetch job's finishing transaction when it moves
 * a window's label to a new version). docs/forward-scores.md.
 *
 * Theory of operation. A kind of the one job queue (jobq.h), claimed last
 * (it is background work). One job is one batch for one window:
 *   load     the version the window's label points at now, and up to
 *            FWD_BATCH_MAX completed evaluations and agent iterations
 *            pinned to any version of the window that have no final
 *            forward score and none computed on this version yet, each
 *            with its cutoff: the newest bar of the window that existed
 *            when it was submitted (the evaluation queued, the iteration
 *            completed), kept from its first forward score on
 *   execute  opens the version once (its hash checked against the
 *            registration) and, per subject, counts the bars after the
 *            cutoff within the subject's days_back window; with at least
 *            one, runs the same walk-forward evaluation an evaluation job
 *            runs (stream_evaluate: lockstep in the confined sandbox,
 *            scored in C) with the holdout being exactly those bars. So a
 *            forward score equals a fresh evaluation of the same code on
 *            that version with holdout_days = bars / bars-per-day. A
 *            cancel or SIGTERM stops between subjects.
 *   commit   in the finishing transaction: one forward_scores row per
 *            scored subject (provisional while the forward period is
 *            shorter than the challenge's final period, final after; a
 *            final row and a row computed on newer bars are never
 *            overwritten, so two jobs of one window racing cannot move a
 *            score back), the best iteration of agents judged on forward
 *            scores, and, when the batch was full, the next job.
 * Trusted-side failures (the dataset unreadable, an internal error) write
 * nothing for that subject: the next job retries it. A strategy that fails
 * on the forward bars gets a forward score with its error and no number.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "db.h"
#include "xalloc.h"
#include "evaluator/dataset.h"
#include "evaluator/runner/drive/protocol.h"
#include "evaluator/runner/drive/stream.h"
#include "evaluator/runner/forward.h"
#include "evaluator/runner/jobq.h"
#include "evaluator/runner/jobs.h"
#include "evaluator/runner/runner.h"

/* One evaluation or iteration to score, and what scoring it gave. */
struct fsub {
	bool        iteration;        /* agent iteration (else evaluation) */
	char        id[37], challenge[70], mode[16], agent_id[37];
	double      days_back;
	long long   cutoff;
	char       *code;
	size_t      code_len;
	/* results */
	bool        write;            /* a forward score to write */
	bool        skipped;          /* trusted-side failure: left for the next job */
	size_t      bars;
	long long   first_ts, last_ts;
	enum fwd_state state;
	double      final_days, forward_days;
	json_object *out;
	char        score[40], ecode[JOBQ_CODE_MAX];
	const char *metric;
	bool        has_score;
};

/* A claimed forward job. */
struct fjob {
	char         id[37], window[70], version[70], path[4097], hash[70];
	long long    dataset_id;       /* 0: the window has no label (nothing to score) */
	struct fsub *s;
	size_t       n, cap;
	unsigned     scored, skipped;
};

/* Release what load and execute allocated in f. */
static void fjob_free(struct fjob *f)
{
	for (size_t i = 0; i < f->n; i++) {
		free(f->s[i].code);
		json_object_put(f->s[i].out);
	}
	free(f->s);
	memset(f, 0, sizeof *f);
}

/* Row callback of the subject queries: columns id, challenge, mode, days_back, code, cutoff, agent_id. */
static bool sub_row(void *ctx, const struct db_col *c, size_t nc)
{
	struct fjob *f = ctx;
	(void)nc;
	if (f->n == f->cap) {
		f->cap = f->cap ? f->cap * 2 : 16;
		f->s = xreallocarray(f->s, f->cap, sizeof *f->s);
	}
	struct fsub *s = &f->s[f->n++];
	memset(s, 0, sizeof *s);
	s->iteration = !c[6].is_null;
	snprintf(s->id, sizeof s->id, "%s", c[0].buf);
	snprintf(s->challenge, sizeof s->challenge, "%s", c[1].buf);
	snprintf(s->mode, sizeof s->mode, "%s", c[2].is_null ? "strict" : c[2].buf);
	s->days_back = c[3].is_null ? 0 : atof(c[3].buf);
	s->code_len = c[4].is_null ? 0 : c[4].len;
	s->code = xmalloc(s->code_len + 1);
	memcpy(s->code, c[4].buf, s->code_len);
	s->code[s->code_len] = '\0';
	s->cutoff = c[5].i;
	if (s->iteration)
		snprintf(s->agent_id, sizeof s->agent_id, "%s", c[6].buf);
	return f->n < FWD_BATCH_MAX;
}

/* The subject selections: completed, on a version of window ?, no final score, none on version ?. */
#define FWD_SUBJECT_GUARD                                                                                  \
	"AND (f.subject_id IS NULL OR (f.state = 'provisional' AND f.dataset_id <> ?)) "
static const char fwd_eval_sql[] =
	"SELECT e.id, e.challenge, e.mode, CAST(e.days_back AS CHAR), e.code, COALESCE(f.cutoff_ts, "
	"(SELECT MAX(d2.last_ts) FROM datasets d2 WHERE d2.window_label = d.window_label AND "
	"d2.created_at <= e.queued_at), d.last_ts), NULL FROM evaluations e JOIN datasets d ON d.id = e.dataset_id "
	"LEFT JOIN forward_scores f ON f.subject = 'evaluation' AND f.subject_id = e.id "
	"WHERE d.window_label = ? AND e.status = 'completed' " FWD_SUBJECT_GUARD "ORDER BY e.seq LIMIT ?";
static const char fwd_iter_sql[] =
	"SELECT i.id, a.challenge, 'strict', CAST(a.days_back AS CHAR), i.code, COALESCE(f.cutoff_ts, "
	"(SELECT MAX(d2.last_ts) FROM datasets d2 WHERE d2.window_label = d.window_label AND "
	"d2.created_at <= i.completed_at), d.last_ts), a.id FROM agent_iterations i JOIN agents a ON a.id = i.agent_id "
	"JOIN datasets d ON d.id = a.dataset_id "
	"LEFT JOIN forward_scores f ON f.subject = 'iteration' AND f.subject_id = i.id "
	"WHERE d.window_label = ? AND i.status = 'completed' AND i.has_error = 0 AND i.code IS NOT NULL "
	"AND a.deleted_at IS NULL " FWD_SUBJECT_GUARD "ORDER BY i.seq LIMIT ?";

/* kind->load: the window's current version and the subjects to score. 1, 0 vanished, -1 error. */
static int fwd_load(struct db *db, const struct jobq_lease *l, void *job, struct buf *err)
{
	struct fjob *f = job;
	bool found = false;
	int rc = -1;
	snprintf(f->id, sizeof f->id, "%s", l->id);
	struct db_col w[] = { DB_COL_TEXT(f->window) };
	struct db_arg k[] = { DB_ARG_TEXT(f->id) };
	if (db_run(db, "SELECT window_label FROM forward_jobs WHERE id = ?", k, 1, w, 1, db_row_once, &found, NULL,
		   err) != 0)
		return -1;
	if (!found)
		return 0;
	struct db_col v[] = { DB_COL_INT, DB_COL_TEXT(f->version), DB_COL_TEXT(f->path), DB_COL_TEXT(f->hash) };
	struct db_arg wa[] = { DB_ARG_TEXT(f->window) };
	found = false;
	if (db_run(db, "SELECT d.id, d.version, d.path, d.dataset_hash FROM dataset_labels l JOIN datasets d ON "
		   "d.id = l.dataset_id WHERE l.label = ?", wa, 1, v, 4, db_row_once, &found, NULL, err) != 0)
		return -1;
	if (!found)
		return 1;   /* the label was deleted: nothing to score */
	f->dataset_id = v[0].i;
	char id[40], ch[70], mode[16], days[40], agent[40];
	struct db_col c[] = { DB_COL_TEXT(id), DB_COL_TEXT(ch), DB_COL_TEXT(mode), DB_COL_TEXT(days),
			      { .type = DB_T_TEXT, .buf = xmalloc(STREAM_MAX_CODE + 1), .cap = STREAM_MAX_CODE + 1 },
			      DB_COL_INT, DB_COL_TEXT(agent) };
	struct db_arg a[] = { DB_ARG_TEXT(f->window), DB_ARG_INT(f->dataset_id), DB_ARG_INT(FWD_BATCH_MAX) };
	if (db_run(db, fwd_eval_sql, a, 3, c, 7, sub_row, f, NULL, err) == 0) {
		a[2] = DB_ARG_INT((long long)(FWD_BATCH_MAX - f->n));
		if (f->n >= FWD_BATCH_MAX || db_run(db, fwd_iter_sql, a, 3, c, 7, sub_row, f, NULL, err) == 0)
			rc = 1;
	}
	free(c[4].buf);
	return rc;
}

/* Score subject s on ds (see the top of this file). */
static void score_one(const struct dataset *ds, struct fsub *s, const struct jobq_slot *slot, long final_minutes)
{
	int64_t iv = ds_interval_ms(ds);
	double per_day = iv > 0 ? 86400000.0 / (double)iv : 1440;
	size_t T0 = ds_bars(ds), back = s->days_back > 0 ? stream_days_bars(s->days_back, per_day) : 0;
	size_t start = back > 0 && back < T0 ? T0 - back : 0, n = T0 - start;
	const int64_t *ts = ds_timestamps(ds) + start;
	s->bars = forward_bars_after(ts, n, s->cutoff);
	if (s->bars == 0)
		return;   /* nothing arrived after it inside its window */
	s->first_ts = ts[n - s->bars];
	s->last_ts = ts[n - 1];
	const struct ch_def *def = ch_lookup(s->challenge);
	s->final_days = forward_final_days(def, final_minutes);
	s->forward_days = (double)s->bars / per_day;
	s->state = forward_state(s->bars, iv, s->final_days);
	struct stream_eval_opts o = {
		.challenge = s->challenge, .mode = ch_mode_parse(s->mode) == CH_MODE_MANTIS ? CH_MODE_MANTIS : CH_MODE_STRICT,
		.days_back = s->days_back, .holdout_bars = s->bars, .code = s->code, .code_len = s->code_len,
		.sbx = { .mode = SBX_CONFINED, .box_id = slot->box_id },
		.on_host = job_on_host, .on_host_arg = slot->ctl,
	};
	enum ev_err rc = stream_evaluate(ds, &o, &s->out);
	if (rc == EV_INTERNAL || rc == EV_DATASET || job_cancelled(slot->ctl, NULL)) {
		s->skipped = true;
		return;
	}
	s->write = true;
	if (rc != EV_OK) {
		policy_cap_untrusted(s->out);   /* what the strategy wrote comes back bounded */
		json_object *m;
		const char *code = ev_errcode(rc);
		if (s->out && json_object_object_get_ex(s->out, "code", &m) && json_object_get_string(m))
			code = json_object_get_string(m);
		snprintf(s->ecode, sizeof s->ecode, "%s", code);
		return;
	}
	double v = 0;
	s->has_score = policy_primary_metric(s->out, &s->metric, &v);
	snprintf(s->score, sizeof s->score, "%.17g", v);
}

/* kind->execute: open the version once, score every subject. */
static void fwd_execute(const struct jobq_slot *slot, const struct jobq_lease *l, void *job, struct job_outcome *o)
{
	struct fjob *f = job;
	const struct forward_env *env = slot->env;
	double t0 = proto_now();
	enum ds_err de;
	char msg[512];
	(void)l;
	o->status = JOB_COMPLETED;
	if (f->dataset_id == 0 || f->n == 0)
		goto out;
	struct dataset *ds = ds_open(f->path, 0, &de, msg, sizeof msg);
	if (!ds) {
		job_outcome_fail(o, "dataset_error", "version %s: %s", f->version, msg);
		o->retry = true;
		goto out;
	}
	if (strcmp(ds_hash(ds), f->hash) != 0) {
		ds_close(ds);
		job_outcome_fail(o, "dataset_mismatch", "version %s changed since it was registered", f->version);
		goto out;
	}
	for (size_t i = 0; i < f->n; i++) {
		bool hand_back = false;
		if (job_cancelled(slot->ctl, &hand_back)) {
			o->status = JOB_CANCELLED;
			snprintf(o->error_code, sizeof o->error_code, "cancelled");
			buf_puts(&o->message, hand_back ? "runner stopped" : "cancelled while running");
			break;
		}
		score_one(ds, &f->s[i], slot, env ? env->final_minutes : 0);
		f->scored += f->s[i].write;
		f->skipped += f->s[i].skipped;
	}
	ds_close(ds);
out:
	o->runtime_s = proto_now() - t0;
}

/* kind->columns: the version scored on and the counts. */
static void fwd_columns(void *job, const struct job_outcome *o, struct jobq_set *set)
{
	struct fjob *f = job;
	(void)o;
	jobq_set_col(set, "dataset_id", f->dataset_id ? DB_ARG_INT(f->dataset_id) : DB_ARG_NULL);
	jobq_set_col(set, "subjects", DB_ARG_INT((long long)f->n));
	jobq_set_col(set, "scored", DB_ARG_INT(f->scored));
	jobq_set_col(set, "skipped", DB_ARG_INT(f->skipped));
}

/* Write s's forward score: a new row, or an update of a provisional row on older bars. 0 or -1. */
static int write_score(struct db *db, const struct fjob *f, const struct fsub *s, struct buf *err)
{
	const char *text = s->out ? json_object_to_json_string_ext(s->out, JSON_C_TO_STRING_PLAIN) : "null";
	char fd[40], fin[40];
	json_object *m;
	const char *emsg = s->ecode[0] && s->out && json_object_object_get_ex(s->out, "error", &m) ?
			   json_object_get_string(m) : NULL;
	snprintf(fd, sizeof fd, "%.17g", s->forward_days);
	snprintf(fin, sizeof fin, "%.17g", s->final_days);
	struct db_arg v[] = {
		DB_ARG_TEXT(forward_state_name(s->state)), DB_ARG_INT(s->first_ts), DB_ARG_INT(s->last_ts),
		DB_ARG_INT((long long)s->bars), DB_ARG_TEXT(fd), DB_ARG_TEXT(fin), DB_ARG_INT(f->dataset_id),
		DB_ARG_TEXT(f->version), s->metric ? DB_ARG_TEXT(s->metric) : DB_ARG_NULL,
		s->has_score ? DB_ARG_TEXT(s->score) : DB_ARG_NULL, DB_ARG_TEXT(text),
		s->ecode[0] ? DB_ARG_TEXT(s->ecode) : DB_ARG_NULL, emsg ? DB_ARG_TEXT(emsg) : DB_ARG_NULL,
		DB_ARG_TEXT(f->id), DB_ARG_TEXT(s->iteration ? "iteration" : "evaluation"), DB_ARG_TEXT(s->id),
		DB_ARG_INT(s->last_ts),
	};
	struct db_arg ins[] = { DB_ARG_TEXT(s->iteration ? "iteration" : "evaluation"), DB_ARG_TEXT(s->id),
				DB_ARG_TEXT(f->window), DB_ARG_TEXT(s->challenge), DB_ARG_TEXT(s->mode),
				DB_ARG_INT(s->cutoff), v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9], v[10],
				v[11], v[12], v[13] };
	struct db_result r = { 0 };
	if (db_run(db, "INSERT IGNORE INTO forward_scores (subject, subject_id, window_label, challenge, mode, "
		   "cutoff_ts, state, first_ts, last_ts, bars, forward_days, final_days, dataset_id, dataset_version, "
		   "metric, score, result, error_code, error_message, job_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, "
		   "?, ?, ?, ?, ?, ?, ?, ?, ?)", ins, 20, NULL, 0, NULL, NULL, &r, err) != 0)
		return -1;
	if (r.affected > 0)
		return 0;
	return db_run(db, "UPDATE forward_scores SET state = ?, first_ts = ?, last_ts = ?, bars = ?, forward_days = ?, "
		      "final_days = ?, dataset_id = ?, dataset_version = ?, metric = ?, score = ?, result = ?, "
		      "error_code = ?, error_message = ?, job_id = ? WHERE subject = ? AND subject_id = ? AND "
		      "state = 'provisional' AND last_ts < ?", v, 17, NULL, 0, NULL, NULL, NULL, err);
}

/* The best iteration of agent `agent` by forward score, when it is judged on them. 0 or -1. */
static int agent_best(struct db *db, const char *agent, const char *challenge, struct buf *err)
{
	const struct ch_def *def = ch_lookup(challenge);
	bool lower = def && def->type == CH_HITFIRST;   /* log loss: lower is better */
	struct db_arg k[] = { DB_ARG_TEXT(agent), DB_ARG_TEXT(agent) };
#define FWD_BEST_SQL(dir)                                                                                   \
	"UPDATE agents a JOIN (SELECT i.iteration, f.score FROM agent_iterations i JOIN forward_scores f ON "   \
	"f.subject = 'iteration' AND f.subject_id = i.id WHERE i.agent_id = ? AND f.score IS NOT NULL ORDER BY " \
	"f.score " dir ", i.iteration ASC LIMIT 1) b SET a.best_iteration = b.iteration, a.best_score = b.score " \
	"WHERE a.id = ? AND a.best_by = 'forward'"
	return db_run(db, lower ? FWD_BEST_SQL("ASC") : FWD_BEST_SQL("DESC"), k, 2, NULL, 0, NULL, NULL, NULL, err);
#undef FWD_BEST_SQL
}

/* kind->commit: the forward scores, agents' best iterations, the next batch. 0 or -1. */
static int fwd_commit(struct db *db, const struct jobq_lease *l, void *job, const struct job_outcome *o,
		      struct buf *err)
{
	struct fjob *f = job;
	(void)l;
	if (o->status == JOB_FAILED)
		return 0;
	for (size_t i = 0; i < f->n; i++)
		if (f->s[i].write && write_score(db, f, &f->s[i], err) != 0)
			return -1;
	for (size_t i = 0; i < f->n; i++) {
		bool seen = false;
		if (!f->s[i].write || !f->s[i].iteration)
			continue;
		for (size_t j = 0; j < i && !seen; j++)
			seen = f->s[j].write && f->s[j].iteration && strcmp(f->s[j].agent_id, f->s[i].agent_id) == 0;
		if (!seen && agent_best(db, f->s[i].agent_id, f->s[i].challenge, err) != 0)
			return -1;
	}
	if (o->status == JOB_COMPLETED && f->n >= FWD_BATCH_MAX)
		return forward_enqueue(db, f->window, err);
	return 0;
}

int forward_enqueue(struct db *db, const char *window, struct buf *err)
{
	/* A plain read, then a plain insert: no INSERT ... SELECT, whose shared
	 * gap locks on forward_jobs made two prefetches finishing at once (two
	 * windows) deadlock each other's finishing transaction. Two queued jobs
	 * of one window would need two prefetches of it at once, which the one
	 * prefetch per window rule excludes (and would only cost a second pass). */
	struct db_arg a[] = { DB_ARG_TEXT(window) };
	struct db_col one = DB_COL_INT;
	bool queued = false;
	if (db_run(db, "SELECT 1 FROM forward_jobs WHERE window_label = ? AND status = 'queued' LIMIT 1", a, 1, &one,
		   1, db_row_once, &queued, NULL, err) != 0)
		return -1;
	if (queued)
		return 0;
	return db_run(db, "INSERT INTO forward_jobs (id, window_label) VALUES (UUID(), ?)", a, 1, NULL, 0, NULL, NULL,
		      NULL, err);
}

/* kind->release. */
static void fwd_release(void *job)
{
	fjob_free(job);
}

const struct job_kind forward_kind = {
	.name = "forward", .table = "forward_jobs", .lease_s = RUNNER_LEASE_S, .job_size = sizeof(struct fjob),
	.load = fwd_load, .execute = fwd_execute, .columns = fwd_columns, .commit = fwd_commit, .release = fwd_release,
};

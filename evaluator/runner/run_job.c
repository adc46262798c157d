/*
 * run_job: backtest runs (the `runs` table) as a kind of the job queue
 * (jobq.h). The queue mechanics (claim, lease, heartbeat, reap, cancel,
 * retry, the guarded finish) are jobq.c's; this file holds what is a run's
 * own: loading its pinned inputs, executing it (job.c), its result columns,
 * and, inside the finishing transaction, its metrics, equity and
 * leaderboard rows and, for a verification run, the record on the original.
 *
 * Every statement is a prepared statement of common/db.h (cached per
 * connection); values travel only as bound parameters.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db.h"
#include "xalloc.h"
#include "evaluator/runner/drive/backtest.h"
#include "log.h"
#include "evaluator/runner/jobq.h"
#include "evaluator/runner/jobs.h"
#include "evaluator/runner/runner.h"

#define RDB_TEXT_MAX 65536u   /* a TEXT column */

struct db *rdb_connect(const char *url, struct buf *err)
{
	struct dburl u;
	struct db *db = NULL;
	if (!dburl_parse(url, &u, err))
		return NULL;
	db = db_new(&u);
	db_set_read_committed(db);   /* every runner transaction is READ COMMITTED (jobq.c) */
	if (db_connect(db) != DB_OK) {
		buf_printf(err, "database: %s", db_error(db));
		db_free(db);
		db = NULL;
	}
	dburl_free(&u);
	return db;
}

void rjob_free(struct rjob *j)
{
	free(j->dataset_version);
	free(j->dataset_path);
	free(j->params);
	free(j->asset);
	free(j->verify_of);
	free(j->code);
	free(j->kind);
	free(j->engine);
	memset(j, 0, sizeof *j);
}


/* A heap-backed TEXT/BLOB result column of cap bytes. */
static struct db_col heap_col(enum db_type t, size_t cap)
{
	return (struct db_col){ .type = t, .buf = xmalloc(cap), .cap = cap };
}

/* strdup of a nullable text column. */
static char *col_str(const struct db_col *c)
{
	return c->is_null ? NULL : xstrndup(c->buf, c->len);
}

/* Copy a hash column into a 65-byte field. */
static void hash_col(char dst[65], const struct db_col *c)
{
	size_t n = c->is_null ? 0 : c->len;
	if (n > 64)
		n = 64;
	if (n)
		memcpy(dst, c->buf, n);
	dst[n] = '\0';
}

/*
 * Load the execution details of a claimed run: of run j->id when l is NULL,
 * else of the row runner `owner` just claimed as l->seq (JOBQ_CLAIMED), whose
 * id, attempts and max_attempts then go into l and j in the same statement.
 * 1 ok, 0 not found, -1 error (l->id is set once the row was read).
 */
static int load_run(struct db *db, struct rjob *j, const char *owner, struct jobq_lease *l, struct buf *err)
{
	enum { C_SEQ, C_SV, C_DV, C_PATH, C_DH, C_CH, C_CFH, C_PARAMS, C_ASSET, C_AUDIT, C_VERIFY, C_CODE, C_KIND,
	       C_ENGINE, C_ID, C_ATT, C_MAX, C__N };
	struct db_col c[C__N] = {
		[C_SEQ] = { .type = DB_T_INT }, [C_SV] = { .type = DB_T_INT }, [C_AUDIT] = { .type = DB_T_INT },
		[C_ATT] = { .type = DB_T_INT }, [C_MAX] = { .type = DB_T_INT },
	};
	c[C_DV] = heap_col(DB_T_TEXT, 256);
	c[C_PATH] = heap_col(DB_T_TEXT, 4096 + 1);
	c[C_DH] = heap_col(DB_T_TEXT, 256);
	c[C_CH] = heap_col(DB_T_TEXT, 256);
	c[C_CFH] = heap_col(DB_T_TEXT, 256);
	c[C_PARAMS] = heap_col(DB_T_TEXT, RDB_TEXT_MAX + 1);
	c[C_ASSET] = heap_col(DB_T_TEXT, 256);
	c[C_VERIFY] = heap_col(DB_T_TEXT, 64);
	c[C_CODE] = heap_col(DB_T_TEXT, BT_MAX_CODE + 1);
	c[C_KIND] = heap_col(DB_T_TEXT, 64);
	c[C_ENGINE] = heap_col(DB_T_TEXT, RDB_TEXT_MAX + 1);
	c[C_ID] = heap_col(DB_T_TEXT, 64);
	struct db_arg by_id[] = { DB_ARG_TEXT(j->id) };
	struct db_arg by_seq[] = { DB_ARG_INT(l ? (long long)l->seq : 0), DB_ARG_TEXT(owner ? owner : "") };
	bool found = false;
	int rc = -1;
#define LOAD_RUN_SQL(where) \
	"SELECT r.seq, r.strategy_version_id, r.dataset_version, d.path, r.dataset_hash, " \
	"r.code_hash, r.config_hash, r.params, r.asset, r.audit, r.verify_of, v.code, v.kind, r.engine, " \
	"r.id, r.attempts, r.max_attempts " \
	"FROM runs r JOIN strategy_versions v ON v.id = r.strategy_version_id " \
	"JOIN datasets d ON d.id = r.dataset_id WHERE " where
	if (db_run(db, l ? LOAD_RUN_SQL("r.seq = ? AND r.status = 'running' AND r.lease_owner = ?")
			 : LOAD_RUN_SQL("r.id = ?"),
		   l ? by_seq : by_id, l ? 2 : 1, c, C__N, db_row_once, &found, NULL, err) != 0)
		goto out;
#undef LOAD_RUN_SQL
	rc = 0;
	if (!found)
		goto out;
	if (l) {
		snprintf(l->id, sizeof l->id, "%.*s", c[C_ID].is_null ? 0 : (int)(c[C_ID].len > 36 ? 36 : c[C_ID].len),
			 c[C_ID].buf);
		l->attempt = (unsigned)c[C_ATT].i;
		l->max_attempts = (unsigned)c[C_MAX].i;
		snprintf(j->id, sizeof j->id, "%s", l->id);
		j->attempt = l->attempt;
		j->max_attempts = l->max_attempts;
	}
	j->seq = (uint64_t)c[C_SEQ].i;
	j->strategy_version_id = (uint64_t)c[C_SV].i;
	j->dataset_version = col_str(&c[C_DV]);
	j->dataset_path = col_str(&c[C_PATH]);
	hash_col(j->dataset_hash, &c[C_DH]);
	hash_col(j->code_hash, &c[C_CH]);
	hash_col(j->config_hash, &c[C_CFH]);
	j->params = col_str(&c[C_PARAMS]);
	j->asset = col_str(&c[C_ASSET]);
	j->audit = !c[C_AUDIT].is_null && c[C_AUDIT].i != 0;
	j->verify_of = col_str(&c[C_VERIFY]);
	j->code = col_str(&c[C_CODE]);
	j->kind = col_str(&c[C_KIND]);
	j->engine = col_str(&c[C_ENGINE]);
	rc = j->dataset_version && j->dataset_path && j->params && j->code ? 1 : -1;
	if (rc < 0)
		buf_printf(err, "run %s lacks a required column", j->id);
out:
	for (size_t i = 0; i < C__N; i++)
		if (c[i].type != DB_T_INT)
			free(c[i].buf);
	return rc;
}

/* A text argument, NULL for an empty buffer. */
static struct db_arg text_or_null(const struct buf *v)
{
	return v->len ? DB_ARG_TEXTN(v->data, v->len) : DB_ARG_NULL;
}

/* A metric argument: its value, or NULL when absent. */
static struct db_arg metric_arg(const struct metrics *m, enum metric_id id, char txt[32])
{
	if (!m->present[id])
		return DB_ARG_NULL;
	if (id == MET_LIQUIDATION_EVENTS)
		return DB_ARG_INT((long long)m->v[id]);
	/* %.17g text round-trips the double; the server converts it to DOUBLE */
	snprintf(txt, 32, "%.17g", m->v[id]);
	return DB_ARG_TEXT(txt);
}

/*
 * INSERTs of metrics, equity and the leaderboard row of a completed run.
 * Their completed_at is the one the guarded UPDATE of the same transaction
 * just wrote on the run, read by a subquery inside each INSERT rather than
 * by a round trip of its own.
 */
static int write_completed(struct db *db, const struct rjob *j, struct rresult *r, struct buf *err)
{
	static const enum metric_id cols[] = { MET_TOTAL_RETURN, MET_CAGR, MET_MAX_DRAWDOWN, MET_VOLATILITY,
					       MET_SHARPE, MET_LIQUIDATION_EVENTS, MET_CAPITAL_EFFICIENCY,
					       MET_SCORE, MET_RUNTIME_S };
	enum { NM = sizeof cols / sizeof cols[0] };
	char txt[NM][32], score[32];
	const struct metrics *m = &r->m;
	bool eligible = !j->verify_of && r->audit_ran && r->audit_passed && policy_metrics_finite(m) &&
			m->present[MET_SCORE];
	struct db_arg a[4 + NM + 3];
	const char *id = j->id;
	size_t n = 0;
	a[n++] = DB_ARG_TEXT(j->id);
	a[n++] = DB_ARG_INT((long long)j->seq);
	a[n++] = DB_ARG_INT((long long)j->strategy_version_id);
	a[n++] = DB_ARG_TEXT(j->dataset_version);
	for (size_t i = 0; i < NM; i++)
		a[n++] = metric_arg(m, cols[i], txt[i]);
	a[n++] = r->metrics_json.len ? DB_ARG_TEXTN(r->metrics_json.data, r->metrics_json.len) : DB_ARG_TEXT("{}");
	a[n++] = DB_ARG_INT(eligible ? 1 : 0);
	a[n++] = DB_ARG_TEXT(id);
	if (db_run(db, "INSERT INTO run_metrics (run_id, run_seq, strategy_version_id, dataset_version, "
		  "total_return, cagr, max_drawdown, volatility, sharpe, liquidation_events, "
		  "capital_efficiency, score, runtime_s, extra, eligible, completed_at) "
		  "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, (SELECT completed_at FROM runs WHERE id = ?))", a, n, NULL, 0, NULL, NULL, NULL, err) != 0)
		return -1;
	struct db_arg e[] = { DB_ARG_TEXT(j->id), DB_ARG_INT((long long)r->n),
			      DB_ARG_BLOB(r->equity, xmul(r->n, sizeof(double))),
			      r->benchmark ? DB_ARG_BLOB(r->benchmark, xmul(r->n, sizeof(double))) : DB_ARG_NULL };
	if (db_run(db, "INSERT INTO run_equity (run_id, n, data, benchmark) VALUES (?, ?, ?, ?)", e, 4, NULL, 0, NULL,
		   NULL, NULL, err) != 0)
		return -1;
	if (r->positions) {   /* a positions run's trades (fills.h; sql/025_run_trades.sql) */
		struct db_arg t[] = { DB_ARG_TEXT(j->id), DB_ARG_INT((long long)r->n), DB_ARG_INT((long long)r->n_fills),
				      DB_ARG_INT((long long)r->fills_total),
				      DB_ARG_BLOB(r->fills, xmul(r->n_fills, sizeof(struct fill))),
				      DB_ARG_BLOB(r->positions, xmul(r->n, sizeof(double))) };
		if (db_run(db, "INSERT INTO run_trades (run_id, n_bars, n_fills, fills_total, fills, positions) "
			  "VALUES (?, ?, ?, ?, ?, ?)", t, 6, NULL, 0, NULL, NULL, NULL, err) != 0)
			return -1;
	}
	if (!eligible)
		return 0;
	snprintf(score, sizeof score, "%.17g", m->v[MET_SCORE]);
	struct db_arg l[] = { DB_ARG_TEXT(j->dataset_version), DB_ARG_INT((long long)j->strategy_version_id),
			      DB_ARG_TEXT(j->id), DB_ARG_INT((long long)j->seq), DB_ARG_TEXT(score), DB_ARG_TEXT(id) };
	if (db_run(db, "INSERT INTO leaderboard_best (dataset_version, strategy_version_id, run_id, run_seq, score, "
		  "completed_at) VALUES (?, ?, ?, ?, ?, (SELECT completed_at FROM runs WHERE id = ?)) "
		  "ON DUPLICATE KEY UPDATE "
		  "run_id = IF(VALUES(score) > score, VALUES(run_id), run_id), "
		  "run_seq = IF(VALUES(score) > score, VALUES(run_seq), run_seq), "
		  "completed_at = IF(VALUES(score) > score, VALUES(completed_at), completed_at), "
		  "score = GREATEST(score, VALUES(score))", l, 6, NULL, 0, NULL, NULL, NULL, err) != 0)
		return -1;
	/* the leaderboard of this dataset version changed (API caches key on it) */
	struct db_arg g[] = { DB_ARG_TEXT(j->dataset_version) };
	return db_run(db, "INSERT INTO leaderboard_gen (dataset_version, gen) VALUES (?, 1) "
		     "ON DUPLICATE KEY UPDATE gen = gen + 1", g, 1, NULL, 0, NULL, NULL, NULL, err);
}

int rdb_load_reference(struct db *db, const char *run_id, struct buf *metrics_json, struct buf *equity,
		       struct buf *err)
{
	struct db_col nc[] = { DB_COL_INT };
	struct db_arg a[] = { DB_ARG_TEXT(run_id) };
	bool found = false;
	int rc = -1;
	/* the curve's size first, so the blob gets a buffer of exactly that */
	if (db_run(db, "SELECT n FROM run_equity WHERE run_id = ?", a, 1, nc, 1, db_row_once, &found, NULL, err) != 0)
		return -1;
	if (!found)
		return 0;
	if (nc[0].i < 0 || (unsigned long long)nc[0].i > RUNNER_EQUITY_MAX) {
		buf_printf(err, "run %s has an equity curve of %lld values", run_id, nc[0].i);
		return -1;
	}
	struct db_col c[2] = { heap_col(DB_T_TEXT, RDB_TEXT_MAX + 1),
			       heap_col(DB_T_BLOB, xmul((size_t)nc[0].i, sizeof(double)) + 1) };
	found = false;
	if (db_run(db, "SELECT m.extra, e.data FROM run_metrics m JOIN run_equity e ON e.run_id = m.run_id "
		  "WHERE m.run_id = ?", a, 1, c, 2, db_row_once, &found, NULL, err) != 0)
		goto out;
	rc = 0;
	if (!found)
		goto out;
	if (!c[0].is_null)
		buf_append(metrics_json, c[0].buf, c[0].len);
	buf_append(equity, c[1].buf, c[1].len);
	rc = 1;
out:
	free(c[0].buf);
	free(c[1].buf);
	return rc;
}

int rdb_load_trades(struct db *db, const char *run_id, struct buf *fills, struct buf *positions, size_t *fills_total,
		    struct buf *err)
{
	struct db_col nc[3] = { DB_COL_INT, DB_COL_INT, DB_COL_INT };
	struct db_arg a[] = { DB_ARG_TEXT(run_id) };
	bool found = false;
	int rc = -1;
	/* the counts first, so the blobs get buffers of exactly their size */
	if (db_run(db, "SELECT n_bars, n_fills, fills_total FROM run_trades WHERE run_id = ?", a, 1, nc, 3,
		   db_row_once, &found, NULL, err) != 0)
		return -1;
	if (!found)
		return 0;
	if (nc[0].i < 0 || (unsigned long long)nc[0].i > RUNNER_EQUITY_MAX || nc[1].i < 0 ||
	    (unsigned long long)nc[1].i > FILLS_STORE_MAX || nc[2].i < nc[1].i) {
		buf_printf(err, "run %s has trades of %lld bars and %lld of %lld fills", run_id, nc[0].i, nc[1].i, nc[2].i);
		return -1;
	}
	size_t nf = xmul((size_t)nc[1].i, sizeof(struct fill)), np = xmul((size_t)nc[0].i, sizeof(double));
	struct db_col c[2] = { heap_col(DB_T_BLOB, nf + 1), heap_col(DB_T_BLOB, np + 1) };
	found = false;
	if (db_run(db, "SELECT fills, positions FROM run_trades WHERE run_id = ?", a, 1, c, 2, db_row_once, &found,
		   NULL, err) != 0)
		goto out;
	if (!found || c[0].is_null || c[1].is_null || c[0].len != nf || c[1].len != np) {
		buf_printf(err, "run %s: the stored trades do not match their counts", run_id);
		goto out;
	}
	buf_append(fills, c[0].buf, c[0].len);
	buf_append(positions, c[1].buf, c[1].len);
	*fills_total = (size_t)nc[2].i;
	rc = 1;
out:
	free(c[0].buf);
	free(c[1].buf);
	return rc;
}

/* A run as a job of the queue: its inputs, its result and its artifacts directory. */
struct run_job {
	struct rjob    j;
	struct rresult r;
	struct buf     art;
	bool           have_result;
};

/* kind->load: the pinned inputs of the claimed run. */
static int run_load(struct db *db, const struct jobq_lease *l, void *job, struct buf *err)
{
	struct run_job *rj = job;
	snprintf(rj->j.id, sizeof rj->j.id, "%s", l->id);
	rj->j.attempt = l->attempt;
	rj->j.max_attempts = l->max_attempts;
	return load_run(db, &rj->j, NULL, NULL, err);
}

/* kind->load_claimed: the lease and the pinned inputs of the run just claimed, in one statement. */
static int run_load_claimed(struct db *db, const char *owner, struct jobq_lease *l, void *job, struct buf *err)
{
	return load_run(db, &((struct run_job *)job)->j, owner, l, err);
}

/* kind->execute: job_execute on the slot's box, its result mapped onto the common outcome. */
static void run_execute(const struct jobq_slot *s, const struct jobq_lease *l, void *job, struct job_outcome *o)
{
	struct run_job *rj = job;
	struct job_env env = *(const struct job_env *)s->env;
	(void)l;
	env.box_id = s->box_id;
	env.spare_box_id = s->spare_box_id;
	rresult_init(&rj->r);
	rj->have_result = true;
	job_execute(&env, s->ctl, &rj->j, &rj->r, &rj->art);
	o->runtime_s = rj->r.runtime_s;
	switch (rj->r.status) {
	case RJOB_COMPLETED: o->status = JOB_COMPLETED; break;
	case RJOB_CANCELLED: o->status = JOB_CANCELLED; break;
	default:             o->status = JOB_FAILED; break;
	}
	if (o->status != JOB_COMPLETED) {
		snprintf(o->error_code, sizeof o->error_code, "%s", rj->r.error_code);
		buf_reset(&o->message);
		buf_append(&o->message, rj->r.error_message.data, rj->r.error_message.len);
	}
	/* internal comes only from the trusted side (sandbox, environment): try again elsewhere */
	o->retry = o->status == JOB_FAILED && strcmp(rj->r.error_code, "internal") == 0;
}

/* kind->columns: resources, audit and artifacts (completed) or the log tail (failed). */
static void run_columns(void *job, const struct job_outcome *o, struct jobq_set *set)
{
	struct run_job *rj = job;
	struct rresult *r = &rj->r;
	if (!rj->have_result)
		return;
	jobq_set_col(set, "resources", text_or_null(&r->resources_json));
	jobq_set_col(set, "audit_result", text_or_null(&r->audit_json));
	jobq_set_col(set, "audit_passed", r->audit_ran ? DB_ARG_INT(r->audit_passed ? 1 : 0) : DB_ARG_NULL);
	if (o->status == JOB_COMPLETED) {
		jobq_set_col(set, "error_log_tail", DB_ARG_NULL);
		jobq_set_col(set, "artifacts_dir", rj->art.len ? DB_ARG_TEXT(rj->art.data) : DB_ARG_NULL);
		jobq_set_col(set, "artifacts_error", text_or_null(&r->artifacts_error));
	} else {
		jobq_set_col(set, "error_log_tail", text_or_null(&r->log_tail));
	}
}

/*
 * Compare the trades of re-execution r with those stored for run ref_id
 * (policy_compare_trades); true if identical, else the first difference in
 * diff (a reference that cannot be read is a difference too).
 */
static bool same_trades(struct db *c, const char *ref_id, const struct rresult *r, struct buf *diff)
{
	struct buf fills = BUF_INIT, pos = BUF_INIT, err = BUF_INIT;
	struct rtrades ref = { 0 }, got = { .has = r->positions != NULL, .fills = r->fills, .n_fills = r->n_fills,
					    .fills_total = r->fills_total, .positions = r->positions, .n = r->n };
	bool same = false;
	int rc = rdb_load_trades(c, ref_id, &fills, &pos, &ref.fills_total, &err);
	if (rc < 0) {
		buf_puts(diff, "{\"what\":\"reference\",\"actual\":\"the original run's stored trades cannot be read\"}");
		goto out;
	}
	ref.has = rc == 1;
	ref.fills = (const struct fill *)(const void *)fills.data;
	ref.n_fills = fills.len / sizeof(struct fill);
	ref.positions = (const double *)(const void *)pos.data;
	ref.n = pos.len / sizeof(double);
	same = policy_compare_trades(&ref, &got, diff);
out:
	buf_free(&fills);
	buf_free(&pos);
	buf_free(&err);
	return same;
}

/*
 * The verification record of re-execution rj of run rj->j.verify_of: compare
 * the result with the stored metrics and equity (bit for bit, runtime_s
 * aside), then the stored trades (byte for byte, same_trades), and write
 * the JSON object into out.
 */
static void build_verification(struct db *c, const struct run_job *rj, const struct job_outcome *o,
			       struct buf *out)
{
	const struct rjob *j = &rj->j;
	const struct rresult *r = &rj->r;
	struct buf mj = BUF_INIT, eq = BUF_INIT, diff = BUF_INIT, err = BUF_INIT;
	struct metrics ref;
	bool identical = false;
	buf_puts(out, "{\"verification_run_id\":\"");
	buf_puts(out, j->id);
	buf_puts(out, "\",\"verified_at\":\"");
	log_time(out);
	buf_puts(out, "\",");
	if (o->status != JOB_COMPLETED) {
		buf_printf(out, "\"identical\":false,\"first_difference\":{\"what\":\"status\",\"actual\":\"%s\"}}",
			   o->error_code[0] ? o->error_code : "failed");
		goto out;
	}
	int got = rdb_load_reference(c, j->verify_of, &mj, &eq, &err);
	if (got <= 0 || !policy_metrics_from_json(buf_cstr(&mj), &ref) || eq.len % sizeof(double)) {
		buf_puts(out, "\"identical\":false,\"first_difference\":{\"what\":\"reference\",\"actual\":\"the original "
			      "run's stored results cannot be read\"}}");
		goto out;
	}
	identical = policy_compare(&ref, (const double *)(const void *)eq.data, eq.len / sizeof(double), &r->m,
				   r->equity, r->n, &diff);
	if (identical)
		identical = same_trades(c, j->verify_of, r, &diff);
	buf_printf(out, "\"identical\":%s,\"first_difference\":%s}", identical ? "true" : "false",
		   identical ? "null" : buf_cstr(&diff));
out:
	buf_free(&mj);
	buf_free(&eq);
	buf_free(&diff);
	buf_free(&err);
}

/* kind->commit: metrics, equity and leaderboard rows; the verification record on the original run. */
static int run_commit(struct db *db, const struct jobq_lease *l, void *job, const struct job_outcome *o,
		      struct buf *err)
{
	struct run_job *rj = job;
	if (!rj->have_result)
		return 0;
	(void)l;   /* rj->j.id is the leased id (run_load) */
	if (o->status == JOB_COMPLETED && write_completed(db, &rj->j, &rj->r, err) != 0)
		return -1;
	if (rj->j.verify_of) {
		struct buf v = BUF_INIT;
		build_verification(db, rj, o, &v);
		struct db_arg a[] = { DB_ARG_TEXTN(v.data, v.len), DB_ARG_TEXT(rj->j.verify_of) };
		int rc = db_run(db, "UPDATE runs SET verification = ? WHERE id = ?", a, 2, NULL, 0, NULL, NULL, NULL, err);
		buf_free(&v);
		if (rc != 0)
			return -1;
	}
	return 0;
}

/* kind->release. */
static void run_release(void *job)
{
	struct run_job *rj = job;
	if (rj->have_result)
		rresult_free(&rj->r);
	buf_free(&rj->art);
	rjob_free(&rj->j);
}

const struct job_kind run_kind = {
	.name = "run", .table = "runs", .lease_s = RUNNER_LEASE_S, .job_size = sizeof(struct run_job),
	.load = run_load, .load_claimed = run_load_claimed, .execute = run_execute, .columns = run_columns, .commit = run_commit,
	.release = run_release, .owner_col = "owner_id", .queues_nothing = true,
};

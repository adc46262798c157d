/*
 * rdb: the runner's SQL against the queue (the `runs` table).
 *
 * Every statement that changes a claimed run is guarded by the lease:
 * `WHERE id = ? AND status = 'running' AND lease_owner = ? AND attempts = ?`.
 * A runner whose lease expired (and whose run was re-queued and perhaps
 * claimed again, which bumps `attempts`) therefore matches zero rows and
 * writes nothing: the result of a run is written exactly once. Transactions
 * are short and READ COMMITTED: a claim is one SELECT ... FOR UPDATE SKIP
 * LOCKED and one UPDATE; the final write is one UPDATE plus the inserts of
 * the metrics, equity and leaderboard rows, committed together.
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
#include "evaluator/backtest.h"
#include "evaluator/runner/runner.h"

#define RDB_TEXT_MAX 65536u   /* a TEXT column */

/* Run one statement; on error put the message in err and return -1. */
static int x(struct db *db, const char *sql, const struct db_arg *a, size_t na, struct db_col *c, size_t nc,
	     db_row_fn fn, void *ctx, struct db_result *res, struct buf *err)
{
	enum db_status st = db_exec(db, sql, a, na, c, nc, fn, ctx, res, 0);
	if (st != DB_OK) {
		buf_printf(err, "database: %s", db_error(db));
		return -1;
	}
	return 0;
}

/* Row callback: note that a row came and stop (its values stay in the columns). */
static bool one_row(void *ctx, const struct db_col *cols, size_t ncols)
{
	(void)cols;
	(void)ncols;
	*(bool *)ctx = true;
	return false;
}

/* Start a READ COMMITTED transaction. 0 or -1. */
static int begin(struct db *db, struct buf *err)
{
	if (x(db, "SET TRANSACTION ISOLATION LEVEL READ COMMITTED", NULL, 0, NULL, 0, NULL, NULL, NULL, err) != 0)
		return -1;
	if (db_begin(db) != DB_OK) {
		buf_printf(err, "database: %s", db_error(db));
		return -1;
	}
	return 0;
}

/* Commit. 0 or -1. */
static int commit(struct db *db, struct buf *err)
{
	if (db_commit(db) != DB_OK) {
		buf_printf(err, "database: %s", db_error(db));
		return -1;
	}
	return 0;
}

struct db *rdb_connect(const char *url, struct buf *err)
{
	struct dburl u;
	struct db *db = NULL;
	if (!dburl_parse(url, &u, err))
		return NULL;
	db = db_new(&u);
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

/* Load the execution details of claimed run j->id. 1 ok, 0 vanished, -1 error. */
static int load_job(struct db *db, struct rjob *j, struct buf *err)
{
	enum { C_SEQ, C_SV, C_DV, C_PATH, C_DH, C_CH, C_CFH, C_PARAMS, C_ASSET, C_AUDIT, C_VERIFY, C_CODE, C_KIND,
	       C_ENGINE, C__N };
	struct db_col c[C__N] = {
		[C_SEQ] = { .type = DB_T_INT }, [C_SV] = { .type = DB_T_INT }, [C_AUDIT] = { .type = DB_T_INT },
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
	struct db_arg a[] = { DB_ARG_TEXT(j->id) };
	bool found = false;
	int rc = -1;
	if (x(db, "SELECT r.seq, r.strategy_version_id, r.dataset_version, d.path, r.dataset_hash, "
		  "r.code_hash, r.config_hash, r.params, r.asset, r.audit, r.verify_of, v.code, v.kind, r.engine "
		  "FROM runs r JOIN strategy_versions v ON v.id = r.strategy_version_id "
		  "JOIN datasets d ON d.id = r.dataset_id WHERE r.id = ?",
	      a, 1, c, C__N, one_row, &found, NULL, err) != 0)
		goto out;
	rc = 0;
	if (!found)
		goto out;
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

int rdb_claim(struct db *db, const char *owner, struct rjob *j, struct buf *err)
{
	char id[64] = "";
	struct db_col c[] = { DB_COL_TEXT(id), DB_COL_INT, DB_COL_INT };
	struct db_result res;
	bool found = false;
	int rc = -1;
	memset(j, 0, sizeof *j);
	if (begin(db, err) != 0)
		return -1;
	if (x(db, "SELECT id, attempts, max_attempts FROM runs WHERE status = 'queued' "
		  "ORDER BY seq LIMIT 1 FOR UPDATE SKIP LOCKED", NULL, 0, c, 3, one_row, &found, NULL, err) != 0)
		goto fail;
	if (!found) {
		db_rollback(db);
		return 0;
	}
	snprintf(j->id, sizeof j->id, "%.36s", id);
	j->attempt = (unsigned)c[1].i + 1;
	j->max_attempts = (unsigned)c[2].i;
	struct db_arg a[] = { DB_ARG_TEXT(owner), DB_ARG_INT(RUNNER_LEASE_S), DB_ARG_INT(j->attempt),
			      DB_ARG_TEXT(j->id) };
	if (x(db, "UPDATE runs SET status = 'running', lease_owner = ?, "
		  "lease_expires_at = NOW(6) + INTERVAL ? SECOND, attempts = ?, started_at = NOW(6) WHERE id = ?",
	      a, 4, NULL, 0, NULL, NULL, &res, err) != 0 || commit(db, err) != 0)
		goto fail;
	rc = load_job(db, j, err);
	if (rc == 0)
		buf_printf(err, "claimed run %s vanished", j->id);
	return rc;
fail:
	db_rollback(db);
	return -1;
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

/* INSERTs of metrics, equity and the leaderboard row of a completed run. */
static int write_completed(struct db *db, const struct rjob *j, struct rresult *r, const char *now,
			   struct buf *err)
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
	size_t n = 0;
	a[n++] = DB_ARG_TEXT(j->id);
	a[n++] = DB_ARG_INT((long long)j->seq);
	a[n++] = DB_ARG_INT((long long)j->strategy_version_id);
	a[n++] = DB_ARG_TEXT(j->dataset_version);
	for (size_t i = 0; i < NM; i++)
		a[n++] = metric_arg(m, cols[i], txt[i]);
	a[n++] = r->metrics_json.len ? DB_ARG_TEXTN(r->metrics_json.data, r->metrics_json.len) : DB_ARG_TEXT("{}");
	a[n++] = DB_ARG_INT(eligible ? 1 : 0);
	a[n++] = DB_ARG_TEXT(now);
	if (x(db, "INSERT INTO run_metrics (run_id, run_seq, strategy_version_id, dataset_version, "
		  "total_return, cagr, max_drawdown, volatility, sharpe, liquidation_events, "
		  "capital_efficiency, score, runtime_s, extra, eligible, completed_at) "
		  "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", a, n, NULL, 0, NULL, NULL, NULL, err) != 0)
		return -1;
	struct db_arg e[] = { DB_ARG_TEXT(j->id), DB_ARG_INT((long long)r->n),
			      DB_ARG_BLOB(r->equity, xmul(r->n, sizeof(double))) };
	if (x(db, "INSERT INTO run_equity (run_id, n, data) VALUES (?, ?, ?)", e, 3, NULL, 0, NULL, NULL, NULL,
	      err) != 0)
		return -1;
	if (!eligible)
		return 0;
	snprintf(score, sizeof score, "%.17g", m->v[MET_SCORE]);
	struct db_arg l[] = { DB_ARG_TEXT(j->dataset_version), DB_ARG_INT((long long)j->strategy_version_id),
			      DB_ARG_TEXT(j->id), DB_ARG_INT((long long)j->seq), DB_ARG_TEXT(score), DB_ARG_TEXT(now) };
	if (x(db, "INSERT INTO leaderboard_best (dataset_version, strategy_version_id, run_id, run_seq, score, "
		  "completed_at) VALUES (?, ?, ?, ?, ?, ?) ON DUPLICATE KEY UPDATE "
		  "run_id = IF(VALUES(score) > score, VALUES(run_id), run_id), "
		  "run_seq = IF(VALUES(score) > score, VALUES(run_seq), run_seq), "
		  "completed_at = IF(VALUES(score) > score, VALUES(completed_at), completed_at), "
		  "score = GREATEST(score, VALUES(score))", l, 6, NULL, 0, NULL, NULL, NULL, err) != 0)
		return -1;
	/* the leaderboard of this dataset version changed (API caches key on it) */
	struct db_arg g[] = { DB_ARG_TEXT(j->dataset_version) };
	return x(db, "INSERT INTO leaderboard_gen (dataset_version, gen) VALUES (?, 1) "
		     "ON DUPLICATE KEY UPDATE gen = gen + 1", g, 1, NULL, 0, NULL, NULL, NULL, err);
}

/* Cut the error message at RUNNER_MESSAGE_MAX bytes, on a character boundary. */
static void cut_message(struct buf *msg)
{
	size_t cut = msg->len;
	if (cut <= RUNNER_MESSAGE_MAX)
		return;
	cut = RUNNER_MESSAGE_MAX;
	while (cut && ((unsigned char)msg->data[cut] & 0xC0) == 0x80)
		cut--;
	msg->len = cut;
	msg->data[cut] = '\0';
}

int rdb_finish(struct db *db, const char *owner, const struct rjob *j, struct rresult *r,
	       const char *artifacts_dir, struct buf *err)
{
	static const char *const names[] = { "completed", "failed", "cancelled" };
	char now[32] = "", runtime[32];
	struct db_col nc[] = { DB_COL_TEXT(now) };
	struct db_result res = { 0 };
	bool found = false;
	if (begin(db, err) != 0)
		return -1;
	if (x(db, "SELECT CAST(NOW(6) AS CHAR)", NULL, 0, nc, 1, one_row, &found, NULL, err) != 0)
		goto fail;
	if (!found) {
		buf_puts(err, "database: SELECT NOW(6) returned no row");
		goto fail;
	}
	snprintf(runtime, sizeof runtime, "%.17g", r->runtime_s);
	bool done = r->status == RJOB_COMPLETED;
	const char *code = r->error_code[0] ? r->error_code : (r->status == RJOB_CANCELLED ? "cancelled" : "internal");
	cut_message(&r->error_message);   /* the API reads messages into 4 KiB */
	struct db_arg a[13];
	size_t n = 0;
	a[n++] = DB_ARG_TEXT(names[r->status]);
	a[n++] = DB_ARG_TEXT(now);
	a[n++] = DB_ARG_TEXT(runtime);
	a[n++] = text_or_null(&r->resources_json);
	a[n++] = text_or_null(&r->audit_json);
	a[n++] = r->audit_ran ? DB_ARG_INT(r->audit_passed ? 1 : 0) : DB_ARG_NULL;
	if (done) {
		a[n++] = artifacts_dir ? DB_ARG_TEXT(artifacts_dir) : DB_ARG_NULL;
	} else {
		a[n++] = DB_ARG_TEXT(code);
		a[n++] = text_or_null(&r->error_message);
		a[n++] = text_or_null(&r->log_tail);
	}
	a[n++] = DB_ARG_TEXT(j->id);
	a[n++] = DB_ARG_TEXT(owner);
	a[n++] = DB_ARG_INT(j->attempt);
	const char *sql = done ?
		"UPDATE runs SET status = ?, completed_at = ?, runtime_s = ?, lease_owner = NULL, "
		"lease_expires_at = NULL, resources = ?, audit_result = ?, audit_passed = ?, error_code = NULL, "
		"error_message = NULL, error_log_tail = NULL, artifacts_dir = ? "
		"WHERE id = ? AND status = 'running' AND lease_owner = ? AND attempts = ?" :
		"UPDATE runs SET status = ?, completed_at = ?, runtime_s = ?, lease_owner = NULL, "
		"lease_expires_at = NULL, resources = ?, audit_result = ?, audit_passed = ?, error_code = ?, "
		"error_message = ?, error_log_tail = ? "
		"WHERE id = ? AND status = 'running' AND lease_owner = ? AND attempts = ?";
	if (x(db, sql, a, n, NULL, 0, NULL, NULL, &res, err) != 0)
		goto fail;
	if (res.affected != 1) {
		db_rollback(db);   /* the lease was lost: the other runner's result counts */
		return 0;
	}
	if (done && write_completed(db, j, r, now, err) != 0)
		goto fail;
	if (j->verify_of && r->verification_json.len) {
		struct db_arg v[] = { DB_ARG_TEXTN(r->verification_json.data, r->verification_json.len),
				      DB_ARG_TEXT(j->verify_of) };
		if (x(db, "UPDATE runs SET verification = ? WHERE id = ?", v, 2, NULL, 0, NULL, NULL, NULL, err) != 0)
			goto fail;
	}
	if (commit(db, err) != 0)
		goto fail;
	return 1;
fail:
	db_rollback(db);
	return -1;
}

int rdb_heartbeat(struct db *db, const char *owner, struct buf *err)
{
	struct db_arg a[] = { DB_ARG_INT(RUNNER_LEASE_S), DB_ARG_TEXT(owner) };
	return x(db, "UPDATE runs SET lease_expires_at = NOW(6) + INTERVAL ? SECOND "
		     "WHERE status = 'running' AND lease_owner = ?", a, 2, NULL, 0, NULL, NULL, NULL, err);
}

/* Row callback: append the id column NUL-terminated to the buffer in ctx. */
static bool collect_id(void *ctx, const struct db_col *cols, size_t ncols)
{
	(void)ncols;
	struct buf *out = ctx;
	buf_append(out, cols[0].buf, cols[0].len);
	buf_putc(out, '\0');
	return true;
}

int rdb_cancel_requests(struct db *db, const char *owner, struct buf *out, struct buf *err)
{
	char id[64] = "";
	struct db_col c[] = { DB_COL_TEXT(id) };
	struct db_arg a[] = { DB_ARG_TEXT(owner) };
	struct db_result res = { 0 };
	if (x(db, "SELECT id FROM runs WHERE status = 'running' AND cancel_requested = 1 AND lease_owner = ?",
	      a, 1, c, 1, collect_id, out, &res, err) != 0)
		return -1;
	return (int)res.rows;
}

struct expired {
	char     id[37];
	unsigned attempts, max;
	bool     cancel;
};

struct expired_list {
	struct expired e[32];
	size_t         n;
};

/* Row callback: collect one expired run. */
static bool collect_expired(void *ctx, const struct db_col *c, size_t ncols)
{
	(void)ncols;
	struct expired_list *l = ctx;
	if (l->n == sizeof l->e / sizeof l->e[0])
		return false;
	struct expired *e = &l->e[l->n++];
	snprintf(e->id, sizeof e->id, "%.*s", (int)c[0].len, c[0].buf);
	e->attempts = (unsigned)c[1].i;
	e->max = (unsigned)c[2].i;
	e->cancel = c[3].i != 0;
	return true;
}

int rdb_reap(struct db *db, struct buf *err)
{
	char id[64] = "";
	struct db_col c[] = { DB_COL_TEXT(id), DB_COL_INT, DB_COL_INT, DB_COL_INT };
	struct expired_list l = { .n = 0 };
	int requeued = 0;
	if (begin(db, err) != 0)
		return -1;
	if (x(db, "SELECT id, attempts, max_attempts, cancel_requested FROM runs "
		  "WHERE status = 'running' AND lease_expires_at < NOW(6) "
		  "ORDER BY lease_expires_at LIMIT 32 FOR UPDATE SKIP LOCKED", NULL, 0, c, 4, collect_expired, &l,
	      NULL, err) != 0)
		goto fail;
	for (size_t i = 0; i < l.n; i++) {
		const struct expired *e = &l.e[i];
		char msg[160];
		struct db_arg a[2] = { DB_ARG_TEXT(e->id) };
		int rc;
		if (e->cancel) {
			rc = x(db, "UPDATE runs SET status = 'cancelled', completed_at = NOW(6), error_code = 'cancelled', "
				   "error_message = 'cancelled while its runner was lost', lease_owner = NULL, "
				   "lease_expires_at = NULL WHERE id = ?", a, 1, NULL, 0, NULL, NULL, NULL, err);
		} else if (e->attempts >= e->max) {
			snprintf(msg, sizeof msg, "the runner executing this run was lost %u times (lease expired); "
				 "giving up", e->attempts);
			a[0] = DB_ARG_TEXT(msg);
			a[1] = DB_ARG_TEXT(e->id);
			rc = x(db, "UPDATE runs SET status = 'failed', completed_at = NOW(6), error_code = 'runner_lost', "
				   "error_message = ?, lease_owner = NULL, lease_expires_at = NULL WHERE id = ?",
			       a, 2, NULL, 0, NULL, NULL, NULL, err);
		} else {
			rc = x(db, "UPDATE runs SET status = 'queued', lease_owner = NULL, lease_expires_at = NULL "
				   "WHERE id = ?", a, 1, NULL, 0, NULL, NULL, NULL, err);
			requeued++;
		}
		if (rc != 0)
			goto fail;
	}
	if (commit(db, err) != 0)
		goto fail;
	return requeued;
fail:
	db_rollback(db);
	return -1;
}

int rdb_hand_back(struct db *db, const char *owner, const struct rjob *j, struct buf *err)
{
	struct db_arg a[] = { DB_ARG_TEXT(j->id), DB_ARG_TEXT(owner), DB_ARG_INT(j->attempt) };
	return x(db, "UPDATE runs SET status = 'queued', lease_owner = NULL, lease_expires_at = NULL, "
		     "attempts = attempts - 1, started_at = NULL "
		     "WHERE id = ? AND status = 'running' AND lease_owner = ? AND attempts = ?",
		 a, 3, NULL, 0, NULL, NULL, NULL, err);
}

int rdb_requeue(struct db *db, const char *owner, const struct rjob *j, struct buf *err)
{
	struct db_arg a[] = { DB_ARG_TEXT(j->id), DB_ARG_TEXT(owner), DB_ARG_INT(j->attempt) };
	return x(db, "UPDATE runs SET status = 'queued', lease_owner = NULL, lease_expires_at = NULL "
		     "WHERE id = ? AND status = 'running' AND lease_owner = ? AND attempts = ?",
		 a, 3, NULL, 0, NULL, NULL, NULL, err);
}

int rdb_load_reference(struct db *db, const char *run_id, struct buf *metrics_json, struct buf *equity,
		       struct buf *err)
{
	struct db_col nc[] = { DB_COL_INT };
	struct db_arg a[] = { DB_ARG_TEXT(run_id) };
	bool found = false;
	int rc = -1;
	/* the curve's size first, so the blob gets a buffer of exactly that */
	if (x(db, "SELECT n FROM run_equity WHERE run_id = ?", a, 1, nc, 1, one_row, &found, NULL, err) != 0)
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
	if (x(db, "SELECT m.extra, e.data FROM run_metrics m JOIN run_equity e ON e.run_id = m.run_id "
		  "WHERE m.run_id = ?", a, 1, c, 2, one_row, &found, NULL, err) != 0)
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

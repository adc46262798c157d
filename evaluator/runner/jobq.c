/*
 * jobq: the one job queue of the runner, over the kinds of jobq.h.
 *
 * Theory of operation. Every statement names the kind's table, which is a
 * constant of the kind (never input), so the SQL is formatted per call into
 * a stack buffer and the prepared-statement cache of common/db.h keys on the
 * resulting text: each kind gets its own cached statements. Values travel
 * only as bound parameters. Transactions are short and READ COMMITTED: a
 * claim is one SELECT ... FOR UPDATE SKIP LOCKED and one UPDATE; the finish
 * is one guarded UPDATE plus the kind's own statements, committed together
 * or not at all. Every statement that changes a claimed row carries the
 * guard `id = ? AND status = 'running' AND lease_owner = ? AND attempts = ?`.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xalloc.h"
#include "evaluator/runner/jobq.h"
#include "evaluator/runner/runner.h"

#define SQL_MAX 2048
#define GUARD   "id = ? AND status = 'running' AND lease_owner = ? AND attempts = ?"

void job_outcome_init(struct job_outcome *o)
{
	memset(o, 0, sizeof *o);
	o->status = JOB_COMPLETED;
}

void job_outcome_free(struct job_outcome *o)
{
	buf_free(&o->message);
}

void job_outcome_fail(struct job_outcome *o, const char *code, const char *fmt, ...)
{
	va_list ap;
	o->status = JOB_FAILED;
	snprintf(o->error_code, sizeof o->error_code, "%s", code);
	buf_reset(&o->message);
	va_start(ap, fmt);
	buf_vprintf(&o->message, fmt, ap);
	va_end(ap);
}

void jobq_set_col(struct jobq_set *s, const char *col, struct db_arg a)
{
	if (s->n == JOBQ_SET_MAX)
		abort();   /* a kind declares more columns than JOBQ_SET_MAX */
	s->col[s->n] = col;
	s->arg[s->n++] = a;
}

void jobq_init(struct jobq *q, const char *owner)
{
	memset(q, 0, sizeof *q);
	snprintf(q->owner, sizeof q->owner, "%s", owner);
}

bool jobq_add(struct jobq *q, const struct job_kind *k, void *env)
{
	if (q->n == JOBQ_KINDS_MAX)
		return false;
	q->k[q->n].kind = k;
	q->k[q->n].env = env;
	q->n++;
	return true;
}

/* Run one statement; on error put the message in err and return -1. */
static int x(struct db *db, const char *sql, const struct db_arg *a, size_t na, struct db_col *c, size_t nc,
	     db_row_fn fn, void *ctx, struct db_result *res, struct buf *err)
{
	if (db_exec(db, sql, a, na, c, nc, fn, ctx, res, 0) != DB_OK) {
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

/* Format a statement (about a kind's table) into sql, SQL_MAX bytes. */
static const char *sqlf(char *sql, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static const char *sqlf(char *sql, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(sql, SQL_MAX, fmt, ap);
	va_end(ap);
	return sql;
}

/*
 * Claim the first queued row of kind k. 1 claimed (l filled), 0 none, -1
 * error.
 */
static int claim_row(struct db *db, const char *owner, const struct job_kind *k, struct jobq_lease *l,
		     struct buf *err)
{
	char sql[SQL_MAX], id[64] = "";
	struct db_col c[] = { DB_COL_TEXT(id), DB_COL_INT, DB_COL_INT };
	bool found = false;
	if (begin(db, err) != 0)
		return -1;
	if (x(db, sqlf(sql, "SELECT id, attempts, max_attempts FROM %s WHERE status = 'queued' "
			    "ORDER BY seq LIMIT 1 FOR UPDATE SKIP LOCKED", k->table),
	      NULL, 0, c, 3, one_row, &found, NULL, err) != 0)
		goto fail;
	if (!found) {
		db_rollback(db);
		return 0;
	}
	memset(l, 0, sizeof *l);
	l->kind = k;
	snprintf(l->id, sizeof l->id, "%.36s", id);
	l->attempt = (unsigned)c[1].i + 1;
	l->max_attempts = (unsigned)c[2].i;
	struct db_arg a[] = { DB_ARG_TEXT(owner), DB_ARG_INT(k->lease_s), DB_ARG_INT(l->attempt), DB_ARG_TEXT(l->id) };
	if (x(db, sqlf(sql, "UPDATE %s SET status = 'running', lease_owner = ?, "
			    "lease_expires_at = NOW(6) + INTERVAL ? SECOND, attempts = ?, started_at = NOW(6) "
			    "WHERE id = ?", k->table),
	      a, 4, NULL, 0, NULL, NULL, NULL, err) != 0 || commit(db, err) != 0)
		goto fail;
	return 1;
fail:
	db_rollback(db);
	return -1;
}

int jobq_claim(struct db *db, const struct jobq *q, struct jobq_job *j, struct buf *err)
{
	memset(j, 0, sizeof *j);
	for (size_t i = 0; i < q->n; i++) {
		const struct job_kind *k = q->k[i].kind;
		int got = claim_row(db, q->owner, k, &j->lease, err);
		if (got < 0)
			return -1;
		if (got == 0)
			continue;
		j->job = xcalloc(1, k->job_size);
		j->env = q->k[i].env;
		struct buf why = BUF_INIT;
		int rc = k->load(db, &j->lease, j->job, &why);
		if (rc > 0) {
			buf_free(&why);
			return 1;
		}
		/* the row cannot be executed by anyone: final, not retried */
		struct job_outcome o;
		job_outcome_init(&o);
		job_outcome_fail(&o, "internal", "the %s cannot be loaded: %s", k->name,
				 rc == 0 ? "its row vanished" : buf_cstr(&why));
		buf_free(&why);
		struct jobq_job bare = { .lease = j->lease, .job = NULL, .env = j->env };
		int w = rc == 0 ? 1 : jobq_finish(db, q->owner, &bare, &o, err);
		job_outcome_free(&o);
		jobq_job_free(j);
		if (w < 0)
			return -1;
		/* try the next row of this kind: go round again from the first kind */
		i = (size_t)-1;
	}
	return 0;
}

void jobq_job_free(struct jobq_job *j)
{
	if (j->job && j->lease.kind && j->lease.kind->release)
		j->lease.kind->release(j->job);
	free(j->job);
	memset(j, 0, sizeof *j);
}

/* Cut the message at JOBQ_MESSAGE_MAX bytes, on a UTF-8 character boundary: its length. */
static size_t cut_len(const struct buf *msg)
{
	size_t cut = msg->len;
	if (cut <= JOBQ_MESSAGE_MAX)
		return cut;
	cut = JOBQ_MESSAGE_MAX;
	while (cut && ((unsigned char)msg->data[cut] & 0xC0) == 0x80)
		cut--;
	return cut;
}

int jobq_finish(struct db *db, const char *owner, struct jobq_job *j, const struct job_outcome *o,
		struct buf *err)
{
	const struct job_kind *k = j->lease.kind;
	struct jobq_set set = { .n = 0 };
	struct db_arg a[5 + JOBQ_SET_MAX + 3];
	struct db_result res = { 0 };
	struct buf sql = BUF_INIT;
	char runtime[32];
	size_t n = 0;
	int rc = -1;
	enum job_status st = o->status == JOB_COMPLETED || o->status == JOB_CANCELLED ? o->status : JOB_FAILED;
	const char *code = o->error_code[0] ? o->error_code : (st == JOB_CANCELLED ? "cancelled" : "internal");
	if (j->job && k->columns)
		k->columns(j->job, o, &set);
	snprintf(runtime, sizeof runtime, "%.17g", o->runtime_s);
	buf_printf(&sql, "UPDATE %s SET status = ?, completed_at = NOW(6), runtime_s = ?, error_code = ?, "
			 "error_message = ?, lease_owner = NULL, lease_expires_at = NULL", k->table);
	a[n++] = DB_ARG_TEXT(job_status_name(st));
	a[n++] = DB_ARG_TEXT(runtime);
	if (st == JOB_COMPLETED) {
		a[n++] = DB_ARG_NULL;
		a[n++] = DB_ARG_NULL;
	} else {
		a[n++] = DB_ARG_TEXTN(code, strnlen(code, JOBQ_CODE_MAX - 1));
		a[n++] = o->message.len ? DB_ARG_TEXTN(o->message.data, cut_len(&o->message)) : DB_ARG_NULL;
	}
	for (size_t i = 0; i < set.n; i++) {
		buf_printf(&sql, ", %s = ?", set.col[i]);
		a[n++] = set.arg[i];
	}
	buf_puts(&sql, " WHERE " GUARD);
	a[n++] = DB_ARG_TEXT(j->lease.id);
	a[n++] = DB_ARG_TEXT(owner);
	a[n++] = DB_ARG_INT(j->lease.attempt);
	if (begin(db, err) != 0)
		goto out;
	if (x(db, buf_cstr(&sql), a, n, NULL, 0, NULL, NULL, &res, err) != 0)
		goto fail;
	if (res.affected != 1) {
		db_rollback(db);   /* the lease was lost: the other claim's result counts */
		rc = 0;
		goto out;
	}
	if (j->job && k->commit && k->commit(db, &j->lease, j->job, o, err) != 0)
		goto fail;
	if (commit(db, err) != 0)
		goto fail;
	rc = 1;
	goto out;
fail:
	db_rollback(db);
out:
	buf_free(&sql);
	return rc;
}

/* A guarded change of a claimed row back to queued (uncount: the attempt does not count). 1, 0 lost, -1. */
static int back_to_queue(struct db *db, const char *owner, const struct jobq_lease *l, bool uncount,
			 struct buf *err)
{
	char sql[SQL_MAX];
	struct db_arg a[] = { DB_ARG_TEXT(l->id), DB_ARG_TEXT(owner), DB_ARG_INT(l->attempt) };
	struct db_result res = { 0 };
	snprintf(sql, sizeof sql, "UPDATE %s SET status = 'queued', lease_owner = NULL, lease_expires_at = NULL, "
		 "started_at = NULL%s WHERE " GUARD, l->kind->table, uncount ? ", attempts = attempts - 1" : "");
	if (x(db, sql, a, 3, NULL, 0, NULL, NULL, &res, err) != 0)
		return -1;
	return res.affected == 1 ? 1 : 0;
}

int jobq_requeue(struct db *db, const char *owner, const struct jobq_lease *l, struct buf *err)
{
	return back_to_queue(db, owner, l, false, err);
}

int jobq_hand_back(struct db *db, const char *owner, const struct jobq_lease *l, struct buf *err)
{
	return back_to_queue(db, owner, l, true, err);
}

enum jobq_end jobq_process(struct db *db, const struct jobq *q, struct jobq_job *j, const struct jobq_slot *s,
			   struct job_outcome *o, struct buf *err)
{
	const struct job_kind *k = j->lease.kind;
	struct jobq_slot slot = *s;
	bool hand_back = false;
	slot.env = j->env;
	k->execute(&slot, &j->lease, j->job, o);
	bool cancelled = job_cancelled(s->ctl, &hand_back);
	if (cancelled && hand_back) {
		int w = jobq_hand_back(db, q->owner, &j->lease, err);
		return w < 0 ? JOBQ_DB_ERROR : w == 0 ? JOBQ_LEASE_LOST : JOBQ_HANDED_BACK;
	}
	if (cancelled) {
		/* whatever the job came to, the user asked it to stop */
		o->status = JOB_CANCELLED;
		o->retry = false;
		snprintf(o->error_code, sizeof o->error_code, "cancelled");
		buf_reset(&o->message);
		buf_puts(&o->message, "cancelled while running");
	}
	if (o->status == JOB_FAILED && o->retry && j->lease.attempt < j->lease.max_attempts) {
		int w = jobq_requeue(db, q->owner, &j->lease, err);
		return w < 0 ? JOBQ_DB_ERROR : w == 0 ? JOBQ_LEASE_LOST : JOBQ_REQUEUED;
	}
	int w = jobq_finish(db, q->owner, j, o, err);
	return w < 0 ? JOBQ_DB_ERROR : w == 0 ? JOBQ_LEASE_LOST : JOBQ_WRITTEN;
}

int jobq_heartbeat(struct db *db, const struct jobq *q, struct buf *err)
{
	char sql[SQL_MAX];
	for (size_t i = 0; i < q->n; i++) {
		const struct job_kind *k = q->k[i].kind;
		struct db_arg a[] = { DB_ARG_INT(k->lease_s), DB_ARG_TEXT(q->owner) };
		if (x(db, sqlf(sql, "UPDATE %s SET lease_expires_at = NOW(6) + INTERVAL ? SECOND "
				    "WHERE status = 'running' AND lease_owner = ?", k->table),
		      a, 2, NULL, 0, NULL, NULL, NULL, err) != 0)
			return -1;
	}
	return 0;
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

int jobq_cancel_requests(struct db *db, const struct jobq *q, struct buf *out, struct buf *err)
{
	char sql[SQL_MAX];
	int total = 0;
	for (size_t i = 0; i < q->n; i++) {
		char id[64] = "";
		struct db_col c[] = { DB_COL_TEXT(id) };
		struct db_arg a[] = { DB_ARG_TEXT(q->owner) };
		struct db_result res = { 0 };
		if (x(db, sqlf(sql, "SELECT id FROM %s WHERE status = 'running' AND cancel_requested = 1 "
				    "AND lease_owner = ?", q->k[i].kind->table),
		      a, 1, c, 1, collect_id, out, &res, err) != 0)
			return -1;
		total += (int)res.rows;
	}
	return total;
}

struct expired {
	char     id[37];
	unsigned attempts, max;
	bool     cancel;
};

struct expired_list {
	struct expired e[JOBQ_REAP_BATCH];
	size_t         n;
};

/* Row callback: collect one expired row. */
static bool collect_expired(void *ctx, const struct db_col *c, size_t ncols)
{
	(void)ncols;
	struct expired_list *l = ctx;
	if (l->n == JOBQ_REAP_BATCH)
		return false;
	struct expired *e = &l->e[l->n++];
	snprintf(e->id, sizeof e->id, "%.*s", (int)c[0].len, c[0].buf);
	e->attempts = (unsigned)c[1].i;
	e->max = (unsigned)c[2].i;
	e->cancel = c[3].i != 0;
	return true;
}

/* Reap the expired leases of one kind's table. Re-queued count, or -1. */
static int reap_kind(struct db *db, const struct job_kind *k, struct buf *err)
{
	char sql[SQL_MAX], id[64] = "";
	struct db_col c[] = { DB_COL_TEXT(id), DB_COL_INT, DB_COL_INT, DB_COL_INT };
	struct expired_list l = { .n = 0 };
	int requeued = 0;
	if (begin(db, err) != 0)
		return -1;
	if (x(db, sqlf(sql, "SELECT id, attempts, max_attempts, cancel_requested FROM %s "
			    "WHERE status = 'running' AND lease_expires_at < NOW(6) "
			    "ORDER BY lease_expires_at LIMIT %d FOR UPDATE SKIP LOCKED", k->table, JOBQ_REAP_BATCH),
	      NULL, 0, c, 4, collect_expired, &l, NULL, err) != 0)
		goto fail;
	for (size_t i = 0; i < l.n; i++) {
		const struct expired *e = &l.e[i];
		char msg[160];
		struct db_arg a[2] = { DB_ARG_TEXT(e->id) };
		size_t na = 1;
		if (e->cancel) {
			sqlf(sql, "UPDATE %s SET status = 'cancelled', completed_at = NOW(6), error_code = 'cancelled', "
				  "error_message = 'cancelled while its runner was lost', lease_owner = NULL, "
				  "lease_expires_at = NULL WHERE id = ?", k->table);
		} else if (e->attempts >= e->max) {
			snprintf(msg, sizeof msg, "the runner executing this %s was lost %u times (lease expired); "
				 "giving up", k->name, e->attempts);
			a[0] = DB_ARG_TEXT(msg);
			a[1] = DB_ARG_TEXT(e->id);
			na = 2;
			sqlf(sql, "UPDATE %s SET status = 'failed', completed_at = NOW(6), error_code = 'runner_lost', "
				  "error_message = ?, lease_owner = NULL, lease_expires_at = NULL WHERE id = ?", k->table);
		} else {
			sqlf(sql, "UPDATE %s SET status = 'queued', lease_owner = NULL, lease_expires_at = NULL "
				  "WHERE id = ?", k->table);
			requeued++;
		}
		if (x(db, sql, a, na, NULL, 0, NULL, NULL, NULL, err) != 0)
			goto fail;
	}
	if (commit(db, err) != 0)
		goto fail;
	return requeued;
fail:
	db_rollback(db);
	return -1;
}

int jobq_reap(struct db *db, const struct jobq *q, struct buf *err)
{
	int total = 0;
	for (size_t i = 0; i < q->n; i++) {
		int n = reap_kind(db, q->k[i].kind, err);
		if (n < 0)
			return -1;
		total += n;
	}
	return total;
}

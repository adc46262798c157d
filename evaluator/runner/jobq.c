/*
 * jobq: the one job queue of the runner, over the kinds of jobq.h.
 *
 * Theory of operation. Every statement names the kind's table, which is a
 * constant of the kind (never input), so the SQL is formatted per call into
 * a stack buffer and the prepared-statement cache of common/db.h keys on the
 * resulting text: each kind gets its own cached statements. Values travel
 * only as bound parameters. Transactions are short and READ COMMITTED: a
 * claim is one UPDATE ... ORDER BY seq LIMIT 1 (autocommitted: the row lock
 * lasts one statement) that returns the row's seq in LAST_INSERT_ID, then one
 * SELECT of that row, after a lock-free hint of whose turn it is
 * (jobq_fair.c); the finish
 * is one guarded UPDATE plus the kind's own statements, committed together
 * or not at all. Every statement that changes a claimed row carries the
 * guard `id = ? AND status = 'running' AND lease_owner = ? AND attempts = ?`.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "xalloc.h"
#include "evaluator/runner/jobq.h"
#include "evaluator/runner/jobq_fair.h"
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
	va_start(ap, fmt);
	job_error_vset(o->error_code, sizeof o->error_code, &o->message, code, fmt, ap);
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

/*
 * Start a READ COMMITTED transaction: one round trip on a handle whose
 * sessions are READ COMMITTED already (db_set_read_committed, as every
 * runner connection: rdb_connect), two on any other. 0 or -1.
 */
static int begin(struct db *db, struct buf *err)
{
	if (!db_read_committed(db) &&
	    db_run(db, "SET TRANSACTION ISOLATION LEVEL READ COMMITTED", NULL, 0, NULL, 0, NULL, NULL, NULL, err) != 0)
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
 * Claim the first queued row of kind k, of job owner `who` when not NULL
 * (k->owner_col = who), in one statement: an UPDATE of that row to running
 * (ORDER BY seq LIMIT 1) that also returns its seq through
 * LAST_INSERT_ID(seq) in the statement's own answer. The UPDATE locks the
 * row it changes and re-reads a row another claim changed meanwhile (so two
 * claimers never take the same row), and holds the lock only for the
 * statement, not for a transaction of four round trips. On a READ
 * COMMITTED handle (every runner connection) it runs in autocommit; on any
 * other it is wrapped in a READ COMMITTED transaction (begin), so no gap
 * lock holds up the API's INSERTs. 1 claimed (l->kind and l->seq set),
 * 0 none, -1 error.
 */
static int claim_row(struct db *db, const char *owner, const struct job_kind *k, const char *who,
		     struct jobq_lease *l, struct buf *err)
{
	char sql[SQL_MAX];
	struct db_arg a[] = { DB_ARG_TEXT(owner), DB_ARG_INT(k->lease_s), DB_ARG_TEXT(who ? who : "") };
	struct db_result res = { 0 };
	bool txn = !db_read_committed(db);
	sqlf(sql, "UPDATE %s SET status = 'running', lease_owner = ?, lease_expires_at = NOW(6) + INTERVAL ? SECOND, "
		  "attempts = attempts + 1, started_at = NOW(6), seq = LAST_INSERT_ID(seq)%s "
		  "WHERE status = 'queued'%s%s%s ORDER BY seq LIMIT 1", k->table,
	     k->progress ? ", progress_done = NULL, progress_total = NULL" : "",
	     who ? " AND " : "", who ? k->owner_col : "", who ? " = ?" : "");
	if (txn && begin(db, err) != 0)
		return -1;
	if (db_run(db, sql, a, who ? 3 : 2, NULL, 0, NULL, NULL, &res, err) != 0 ||
	    (txn && commit(db, err) != 0))
		goto fail;
	if (res.affected == 0)
		return 0;
	memset(l, 0, sizeof *l);
	l->kind = k;
	l->seq = res.insert_id;
	return 1;
fail:
	if (txn)
		db_rollback(db);
	return -1;
}

/*
 * The lease of the row this runner (owner) just claimed as l->seq: its id,
 * attempts (the write guard) and max_attempts. 1, 0 the row is not running
 * under this owner (it vanished), -1 error.
 */
static int claimed_lease(struct db *db, const char *owner, struct jobq_lease *l, struct buf *err)
{
	char sql[SQL_MAX], id[64] = "";
	struct db_col c[] = { DB_COL_TEXT(id), DB_COL_INT, DB_COL_INT };
	struct db_arg a[] = { DB_ARG_INT((long long)l->seq), DB_ARG_TEXT(owner) };
	bool found = false;
	if (db_run(db, sqlf(sql, "SELECT id, attempts, max_attempts FROM %s WHERE " JOBQ_CLAIMED, l->kind->table),
		   a, 2, c, 3, db_row_once, &found, NULL, err) != 0)
		return -1;
	if (!found)
		return 0;
	snprintf(l->id, sizeof l->id, "%.36s", id);
	l->attempt = (unsigned)c[1].i;
	l->max_attempts = (unsigned)c[2].i;
	return 1;
}

/*
 * Claim a queued row of kind k: fair between owners when the kind names its
 * owner column and more than one owner has a queued row (`several`, from
 * the hint: jobq_fair.c gives the owners in turn, each one's oldest row),
 * then oldest first (no owner column, a single owner waiting, whose oldest
 * row that is, or every owner's row was taken by another runner
 * meanwhile). 1 claimed, 0 none, -1 error.
 */
static int claim_kind(struct db *db, const char *owner, const struct job_kind *k, bool several,
		      struct jobq_lease *l, struct buf *err)
{
	struct jobq_fair f = { .n = 0 };
	if (k->owner_col && several && jobq_fair_owners(db, k, &f, err) != 0)
		return -1;
	for (size_t i = 0; i < f.n; i++) {
		int got = claim_row(db, owner, k, f.owner[i], l, err);
		if (got != 0)
			return got;
	}
	return claim_row(db, owner, k, NULL, l, err);
}

/* What the hint knows of each kind's queue. */
struct queued {
	unsigned n[JOBQ_KINDS_MAX];         /* queued rows: 0, 1, or 2 for more than one */
	bool     several[JOBQ_KINDS_MAX];   /* more than one owner has a queued row (owner_col kinds) */
};

/* Row callback of queued_kinds: (kind index, MIN(seq), MAX(seq), several owners). */
static bool queued_row(void *ctx, const struct db_col *c, size_t ncols)
{
	struct queued *qd = ctx;
	(void)ncols;
	if (c[0].is_null || c[0].i < 0 || c[0].i >= JOBQ_KINDS_MAX)
		return true;
	size_t i = (size_t)c[0].i;
	qd->n[i] = c[1].is_null ? 0 : c[1].i == c[2].i ? 1 : 2;
	qd->several[i] = !c[3].is_null && c[3].i != 0;
	return true;
}

/*
 * How many queued rows each kind has, up to 2 (none, one, more), and for a
 * kind with an owner column whether more than one owner waits, in one
 * lock-free statement: per kind MIN(seq) and MAX(seq) of its queued rows
 * (equal: one row) and MIN(owner) <> MAX(owner), which the server answers
 * from the ends of the (status, seq) and (status, owner, seq) indexes
 * without reading a row; a UNION ALL of one such SELECT per kind, tagged
 * with the kind's index. (Counting with LIMIT 2 in a derived table per kind
 * cost the server about three times as much to plan.) Most claims find
 * nothing (a wake-up another slot served), and this makes such a claim one
 * round trip; "more than one" tells a slot that claimed one whether another
 * slot should look too; "one owner" spares the fair-share query. A hint
 * only: a row seen here may be claimed by another runner first (the claim
 * then finds none), and a row committed just after it is found by the next
 * claim, exactly as after an empty claim. 0 or -1.
 */
static int queued_kinds(struct db *db, const struct jobq *q, struct queued *out, struct buf *err)
{
	char sql[SQL_MAX], owners[JOBQ_OWNER_MAX];
	struct db_col c[] = { DB_COL_INT, DB_COL_INT, DB_COL_INT, DB_COL_INT };
	size_t off = 0;
	memset(out, 0, sizeof *out);
	for (size_t i = 0; i < q->n && off < sizeof sql; i++) {
		const struct job_kind *k = q->k[i].kind;
		if (k->owner_col)
			snprintf(owners, sizeof owners, "MIN(%s) <> MAX(%s)", k->owner_col, k->owner_col);
		else
			snprintf(owners, sizeof owners, "0");
		off += (size_t)snprintf(sql + off, sizeof sql - off, "%sSELECT %zu, MIN(seq), MAX(seq), %s FROM %s "
					"WHERE status = 'queued'", i ? " UNION ALL " : "", i, owners, k->table);
	}
	if (off >= sizeof sql)
		abort();   /* the kinds' table and column names are constants far below SQL_MAX */
	return db_run(db, sql, NULL, 0, c, 4, queued_row, out, NULL, err);
}

/*
 * A claimed row (l->kind, l->seq) that was not running under q->owner when
 * read: a stall past the lease between the UPDATE and the read let another
 * runner reap it. Tell q->claim_lost, with the row's id when it still
 * exists (a read by seq, only on this rare path; its failure leaves the id
 * empty).
 */
static void claim_lost(struct db *db, const struct jobq *q, struct jobq_lease *l)
{
	char sql[SQL_MAX], id[64] = "";
	struct db_col c[] = { DB_COL_TEXT(id) };
	struct db_arg a[] = { DB_ARG_INT((long long)l->seq) };
	struct buf err = BUF_INIT;
	bool found = false;
	if (!q->claim_lost)
		return;
	if (db_run(db, sqlf(sql, "SELECT id FROM %s WHERE seq = ?", l->kind->table), a, 1, c, 1, db_row_once, &found,
		   NULL, &err) == 0 && found)
		snprintf(l->id, sizeof l->id, "%.36s", id);
	buf_free(&err);
	q->claim_lost(l);
}

int jobq_claim(struct db *db, const struct jobq *q, struct jobq_job *j, struct buf *err)
{
	struct queued qd;
	memset(j, 0, sizeof *j);
	if (q->n == 0)
		return 0;
again:
	if (queued_kinds(db, q, &qd, err) != 0)
		return -1;
	for (size_t i = 0; i < q->n; i++) {
		const struct job_kind *k = q->k[i].kind;
		if (qd.n[i] == 0)
			continue;
		int got = claim_kind(db, q->owner, k, qd.several[i], &j->lease, err);
		if (got < 0)
			return -1;
		if (got == 0)
			continue;
		j->job = xcalloc(1, k->job_size);
		j->env = q->k[i].env;
		struct buf why = BUF_INIT;
		int rc = k->load_claimed ? k->load_claimed(db, q->owner, &j->lease, j->job, &why)
					 : claimed_lease(db, q->owner, &j->lease, &why);
		if (rc > 0 && !k->load_claimed)
			rc = k->load(db, &j->lease, j->job, &why);
		if (rc < 0 && !j->lease.id[0]) {
			/* not even the row's id was read (the database failed): the
			 * lease expires and the reaper puts the row back */
			buf_printf(err, "%s", buf_cstr(&why));
			buf_free(&why);
			jobq_job_free(j);
			return -1;
		}
		if (rc == 0) {
			/* not running under our lease any more (or deleted): never executed here */
			buf_free(&why);
			claim_lost(db, q, &j->lease);
			jobq_job_free(j);
			goto again;
		}
		if (rc > 0) {
			buf_free(&why);
			j->more = qd.n[i] > 1;
			for (size_t m = i + 1; m < q->n; m++)
				j->more = j->more || qd.n[m] > 0;
			return 1;
		}
		/* the row cannot be executed by anyone: final, not retried */
		struct job_outcome o;
		job_outcome_init(&o);
		job_outcome_fail(&o, "internal", "the %s cannot be loaded: %s", k->name, buf_cstr(&why));
		buf_free(&why);
		struct jobq_job bare = { .lease = j->lease, .job = NULL, .env = j->env };
		int w = jobq_finish(db, q->owner, &bare, &o, err);
		job_outcome_free(&o);
		jobq_job_free(j);
		if (w < 0)
			return -1;
		/* try the next row of this kind: go round again from the first kind */
		goto again;
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
	if (db_run(db, buf_cstr(&sql), a, n, NULL, 0, NULL, NULL, &res, err) != 0)
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
	if (db_run(db, sql, a, 3, NULL, 0, NULL, NULL, &res, err) != 0)
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

/* Sleep ms milliseconds (a pause between write retries; EINTR resumes). */
static void pause_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/*
 * The finishing write of jobq_process, retried as its contract says: 1
 * written, 0 lease lost, -1 given up (message in err).
 */
static int finish_retrying(struct db *db, const struct jobq *q, struct jobq_job *j, const struct jobq_slot *s,
			   const struct job_outcome *o, struct buf *err)
{
	long wait = JOBQ_WRITE_RETRY_MS;
	bool answered_once = false;
	for (unsigned tries = 1;; tries++) {
		int w = jobq_finish(db, q->owner, j, o, err);
		if (w >= 0)
			return w;
		bool hand_back = false;
		if (job_cancelled(s->ctl, &hand_back) && hand_back)
			return -1;   /* the runner stops: the lease expires, the job is reaped */
		if (db_ping(db) == DB_OK) {
			if (answered_once)
				return -1;   /* the database answers and refuses: not an outage */
			answered_once = true;
		}
		if (s->write_failed)
			s->write_failed(&j->lease, tries, buf_cstr(err));
		buf_reset(err);
		pause_ms(wait);
		wait = wait * 2 > JOBQ_WRITE_RETRY_MAX_MS ? JOBQ_WRITE_RETRY_MAX_MS : wait * 2;
	}
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
	int w = finish_retrying(db, q, j, s, o, err);
	return w < 0 ? JOBQ_DB_ERROR : w == 0 ? JOBQ_LEASE_LOST : JOBQ_WRITTEN;
}

unsigned jobq_kind_bit(const struct jobq *q, const struct job_kind *k)
{
	for (size_t i = 0; i < q->n; i++)
		if (q->k[i].kind == k)
			return 1u << i;
	return 0;
}

/*
 * Append `, col = CASE id WHEN ? THEN ? ... ELSE col END` over the entries
 * of p of kind k to sql, their (id, value) pairs to a (n so far), the
 * value total when `total`, else done.
 */
static void progress_case(struct buf *sql, struct db_arg *a, size_t *n, const struct job_kind *k,
			  const struct jobq_progress *p, size_t np, bool total)
{
	const char *col = total ? "progress_total" : "progress_done";
	buf_printf(sql, ", %s = CASE id", col);
	for (size_t i = 0; i < np; i++) {
		if (p[i].kind != k)
			continue;
		buf_puts(sql, " WHEN ? THEN ?");
		a[(*n)++] = DB_ARG_TEXT(p[i].id);
		a[(*n)++] = DB_ARG_INT((long long)(total ? p[i].total : p[i].done));
	}
	buf_printf(sql, " ELSE %s END", col);
}

int jobq_heartbeat(struct db *db, const struct jobq *q, unsigned kinds, const struct jobq_progress *p, size_t np,
		   struct buf *err)
{
	struct buf sql = BUF_INIT;
	struct db_arg *a = xcalloc(4 * np + 2, sizeof *a);
	int rc = 0;
	for (size_t i = 0; i < q->n && rc == 0; i++) {
		const struct job_kind *k = q->k[i].kind;
		size_t n = 0, mine = 0;
		if (!(kinds & (1u << i)))
			continue;
		for (size_t j = 0; j < np; j++)
			mine += p[j].kind == k;
		buf_reset(&sql);
		buf_printf(&sql, "UPDATE %s SET lease_expires_at = NOW(6) + INTERVAL ? SECOND", k->table);
		a[n++] = DB_ARG_INT(k->lease_s);
		if (k->progress && mine) {
			progress_case(&sql, a, &n, k, p, np, false);
			progress_case(&sql, a, &n, k, p, np, true);
		}
		buf_puts(&sql, " WHERE status = 'running' AND lease_owner = ?");
		a[n++] = DB_ARG_TEXT(q->owner);
		if (db_run(db, buf_cstr(&sql), a, n, NULL, 0, NULL, NULL, NULL, err) != 0)
			rc = -1;
	}
	free(a);
	buf_free(&sql);
	return rc;
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

int jobq_cancel_requests(struct db *db, const struct jobq *q, unsigned kinds, struct buf *out, struct buf *err)
{
	char sql[SQL_MAX], id[64] = "";
	struct db_col c[] = { DB_COL_TEXT(id) };
	struct db_arg a[JOBQ_KINDS_MAX];
	struct db_result res = { 0 };
	size_t off = 0, na = 0;
	/* one statement over the kinds asked for: a UNION ALL of each table's rows */
	for (size_t i = 0; i < q->n && off < sizeof sql; i++) {
		if (!(kinds & (1u << i)))
			continue;
		off += (size_t)snprintf(sql + off, sizeof sql - off, "%sSELECT id FROM %s WHERE status = 'running' AND "
					"cancel_requested = 1 AND lease_owner = ?", na ? " UNION ALL " : "",
					q->k[i].kind->table);
		a[na++] = (struct db_arg)DB_ARG_TEXT(q->owner);
	}
	if (off >= sizeof sql)
		abort();   /* the kinds' table names are constants far below SQL_MAX */
	if (na == 0)
		return 0;
	if (db_run(db, sql, a, na, c, 1, collect_id, out, &res, err) != 0)
		return -1;
	return (int)res.rows;
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
	if (db_run(db, sqlf(sql, "SELECT id, attempts, max_attempts, cancel_requested FROM %s "
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
		if (db_run(db, sql, a, na, NULL, 0, NULL, NULL, NULL, err) != 0)
			goto fail;
	}
	if (commit(db, err) != 0)
		goto fail;
	return requeued;
fail:
	db_rollback(db);
	return -1;
}

/* Row callback of expired_kinds: (kind index, 1 when its oldest lease expired). */
static bool expired_row(void *ctx, const struct db_col *c, size_t ncols)
{
	unsigned *n = ctx;
	(void)ncols;
	if (!c[0].is_null && c[0].i >= 0 && c[0].i < JOBQ_KINDS_MAX)
		n[c[0].i] = !c[1].is_null && c[1].i != 0;
	return true;
}

/*
 * Which kinds have an expired lease, in one lock-free statement: per kind
 * whether the earliest lease_expires_at of its running rows is past, which
 * the server reads from the end of the (status, lease_expires_at) index
 * (a UNION ALL of one such SELECT per kind, as queued_kinds). Nearly every
 * reap finds none, and this makes it one round trip instead of a locking
 * transaction per kind. A hint only: a lease renewed after it is read is
 * skipped by the locking SELECT, and one that expires after it by the next
 * reap. n[i] is 1 or 0. 0 or -1.
 */
static int expired_kinds(struct db *db, const struct jobq *q, unsigned n[JOBQ_KINDS_MAX], struct buf *err)
{
	char sql[SQL_MAX];
	struct db_col c[] = { DB_COL_INT, DB_COL_INT };
	size_t off = 0;
	memset(n, 0, JOBQ_KINDS_MAX * sizeof *n);
	for (size_t i = 0; i < q->n && off < sizeof sql; i++)
		off += (size_t)snprintf(sql + off, sizeof sql - off, "%sSELECT %zu, MIN(lease_expires_at) < NOW(6) FROM %s "
					"WHERE status = 'running'", i ? " UNION ALL " : "", i, q->k[i].kind->table);
	if (off >= sizeof sql)
		abort();   /* the kinds' table names are constants far below SQL_MAX */
	return db_run(db, sql, NULL, 0, c, 2, expired_row, n, NULL, err);
}

int jobq_reap(struct db *db, const struct jobq *q, struct buf *err)
{
	unsigned expired[JOBQ_KINDS_MAX];
	int total = 0;
	if (q->n == 0)
		return 0;
	if (expired_kinds(db, q, expired, err) != 0)
		return -1;
	for (size_t i = 0; i < q->n; i++) {
		if (expired[i] == 0)
			continue;
		int n = reap_kind(db, q->k[i].kind, err);
		if (n < 0)
			return -1;
		total += n;
	}
	return total;
}

/*
 * test_jobq_db.c: the one job queue (evaluator/runner/jobq.h) against a real,
 * private MariaDB with every migration applied, on both job tables (runs and
 * evaluations). The kinds here point at the real tables but do no work
 * (their execute returns a scripted outcome), so what is tested is the queue
 * itself: the claim race (two claimers on separate connections, one winner;
 * N jobs each claimed exactly once), the retry budget (attempts counted up
 * to max_attempts, then the final failure code), lease expiry and reclaim
 * (a second runner reaps and claims, the first one's finishing write is
 * refused and writes nothing; runner_lost on the last attempt), cancel
 * of a queued job and of a running one, and the fair share between owners
 * (issue 11 item 7: one owner's backlog does not starve another's job).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <mysql.h>

#include "common/db.h"
#include "common/job_status.h"
#include "evaluator/runner/jobq.h"
#include "evaluator/runner/runner.h"
#include "tests/unit/lib/tmariadb.h"

#define DBNAME "agenttest_jobq"
#define RACE_JOBS 40
#define RACERS    4    /* claimers of the race, on connections of their own */

static struct tmariadb srv;
static struct db *db;

/* The scripted outcome every test kind's execute returns. */
static struct {
	enum job_status status;
	const char *code;
	bool retry;
} script = { JOB_COMPLETED, NULL, false };

struct tjob {
	int unused;
};

static int t_load(struct db *d, const struct jobq_lease *l, void *job, struct buf *err)
{
	(void)d, (void)l, (void)job, (void)err;
	return 1;
}

static void t_execute(const struct jobq_slot *s, const struct jobq_lease *l, void *job, struct job_outcome *o)
{
	(void)s, (void)l, (void)job;
	if (script.status == JOB_FAILED)
		job_outcome_fail(o, script.code, "scripted failure");
	else
		o->status = script.status;
	o->retry = script.retry;
}

static void t_release(void *job)
{
	(void)job;
}

/*
 * load_claimed of a runner that stalled between its claim and the read:
 * meanwhile another runner reaped the row and claimed it again (done here
 * on the test's own connection), so the read under this lease finds nothing.
 */
static void ok(struct db *d, const char *sql, const struct db_arg *a, size_t na);

static int t_load_stolen(struct db *d, const char *owner, struct jobq_lease *l, void *job, struct buf *err)
{
	char id[64] = "";
	struct db_col c[] = { DB_COL_TEXT(id) };
	struct db_arg s[] = { DB_ARG_INT((long long)l->seq) };
	struct db_arg a[] = { DB_ARG_INT((long long)l->seq), DB_ARG_TEXT(owner) };
	bool found = false;
	(void)job;
	ok(db, "UPDATE runs SET lease_owner = 'test:thief', attempts = attempts + 1 WHERE seq = ?", s, 1);
	if (db_run(d, "SELECT id FROM runs WHERE " JOBQ_CLAIMED, a, 2, c, 1, db_row_once, &found, NULL, err) != 0)
		return -1;
	return found ? 1 : 0;
}

/* What jobq.claim_lost was told. */
static struct {
	int  calls;
	char id[37];
} lost;

static void t_claim_lost(const struct jobq_lease *l)
{
	lost.calls++;
	snprintf(lost.id, sizeof lost.id, "%s", l->id);
}

/* Oldest-first kinds (no owner column) on the real tables. */
static const struct job_kind t_runs = { .name = "run", .table = "runs", .lease_s = 60, .job_size = sizeof(struct tjob),
					.load = t_load, .execute = t_execute, .release = t_release };
static const struct job_kind t_evals = { .name = "evaluation", .table = "evaluations", .lease_s = 60,
					 .job_size = sizeof(struct tjob), .load = t_load, .execute = t_execute,
					 .release = t_release };
static const struct job_kind *const kinds[] = { &t_runs, &t_evals };
/* The same tables with the owner column the real kinds name: fair claims. */
static const struct job_kind t_fair_runs = { .name = "run", .table = "runs", .lease_s = 60,
					     .job_size = sizeof(struct tjob), .load = t_load, .execute = t_execute,
					     .release = t_release, .owner_col = "owner_id" };
static const struct job_kind t_fair_evals = { .name = "evaluation", .table = "evaluations", .lease_s = 60,
					      .job_size = sizeof(struct tjob), .load = t_load, .execute = t_execute,
					      .release = t_release, .owner_col = "owner_id" };
static const struct job_kind *const fair_kinds[] = { &t_fair_runs, &t_fair_evals };

/* One statement that must succeed. */
static void ok(struct db *d, const char *sql, const struct db_arg *a, size_t na)
{
	if (db_exec(d, sql, a, na, NULL, 0, NULL, NULL, NULL, 0) != DB_OK)
		fail_msg("%s: %s", sql, db_error(d));
}

/* One integer of a one-row query. */
static long long ask_int(const char *sql, const char *id)
{
	struct db_col c = DB_COL_INT;
	struct db_arg a = DB_ARG_TEXT(id ? id : "");
	if (db_exec(db, sql, &a, id ? 1 : 0, &c, 1, NULL, NULL, NULL, 0) != DB_OK)
		fail_msg("%s: %s", sql, db_error(db));
	return c.is_null ? -1 : c.i;
}

/* The status and error code of job id in table k->table. */
static void job_state(const struct job_kind *k, const char *id, char status[16], char code[32], long long *attempts)
{
	char sql[160];
	struct db_col c[] = { { .type = DB_T_TEXT, .buf = status, .cap = 16 }, { .type = DB_T_TEXT, .buf = code, .cap = 32 },
			      DB_COL_INT };
	struct db_arg a = DB_ARG_TEXT(id);
	snprintf(sql, sizeof sql, "SELECT status, COALESCE(error_code, ''), attempts FROM %s WHERE id = ?", k->table);
	status[0] = code[0] = '\0';
	if (db_exec(db, sql, &a, 1, c, 3, NULL, NULL, NULL, 0) != DB_OK)
		fail_msg("%s", db_error(db));
	*attempts = c[2].i;
}

/* Queue a job of kind k for user `owner` with id "<prefix>-<n>" (36 chars, padded). */
static void enqueue_for(const struct job_kind *k, int owner, const char *prefix, int n, char id[37])
{
	snprintf(id, 37, "%-8.8s-0000-0000-0000-%012d", prefix, n);
	struct db_arg a[] = { DB_ARG_TEXT(id), DB_ARG_INT(owner) };
	if (strcmp(k->table, "runs") == 0)
		ok(db, "INSERT INTO runs (id, owner_id, strategy_version_id, dataset_id, dataset_version, dataset_hash, "
		       "code_hash, config_hash, params) VALUES (?, ?, 1, 1, 'v1', REPEAT('a', 64), REPEAT('b', 64), "
		       "REPEAT('c', 64), '{}')", a, 2);
	else
		ok(db, "INSERT INTO evaluations (id, owner_id, challenge, dataset_id, dataset_version, dataset_hash, "
		       "code_hash, code, days_back, holdout_days) VALUES (?, ?, 'ETH-1H-BINARY', 1, 'v1', "
		       "REPEAT('a', 64), REPEAT('b', 64), 'x', 1, 1)", a, 2);
}

/* Queue a job of kind k for user 1. */
static void enqueue(const struct job_kind *k, const char *prefix, int n, char id[37])
{
	enqueue_for(k, 1, prefix, n, id);
}

/* A queue of one kind for lease owner `owner`. */
static void queue_of(struct jobq *q, const char *owner, const struct job_kind *k)
{
	jobq_init(q, owner);
	assert_true(jobq_add(q, k, NULL));
}

/* Claim on db d; the claimed id must be want (NULL: nothing claimed). */
static void claim_expect(struct db *d, const struct jobq *q, struct jobq_job *j, const char *want)
{
	struct buf err = BUF_INIT;
	int got = jobq_claim(d, q, j, &err);
	if (got < 0)
		fail_msg("claim: %s", buf_cstr(&err));
	buf_free(&err);
	if (want == NULL) {
		assert_int_equal(got, 0);
		return;
	}
	assert_int_equal(got, 1);
	assert_string_equal(j->lease.id, want);
}

/* Execute claimed j on a fresh slot and return how jobq_process ended. */
static enum jobq_end process(struct db *d, const struct jobq *q, struct jobq_job *j, bool cancel)
{
	struct job_outcome o;
	struct buf err = BUF_INIT;
	struct jobq_slot s = { .box_id = 1, .ctl = job_ctl_new() };
	job_outcome_init(&o);
	if (cancel)
		job_cancel(s.ctl, false);
	enum jobq_end e = jobq_process(d, q, j, &s, &o, &err);
	if (e == JOBQ_DB_ERROR)
		fail_msg("process: %s", buf_cstr(&err));
	job_outcome_free(&o);
	buf_free(&err);
	job_ctl_free(s.ctl);
	jobq_job_free(j);
	return e;
}

static void clear_tables(void)
{
	ok(db, "DELETE FROM runs", NULL, 0);
	ok(db, "DELETE FROM evaluations", NULL, 0);
	script.status = JOB_COMPLETED;
	script.code = NULL;
	script.retry = false;
}

/* Server, migrations and the parents of the job rows (their foreign keys);
 * a failure stops the server (cmocka runs no teardown after it). */
static int setup(void **state)
{
	(void)state;
	if (!tmariadb_start_migrated(&srv, DBNAME, &db, "jobq test"))
		return 1;
	ok(db, "INSERT IGNORE INTO users (id, name) VALUES (1, 'jobq-test'), (2, 'jobq-other')", NULL, 0);
	ok(db, "INSERT IGNORE INTO datasets (id, version, dataset_hash, path, assets, interval_ms, bars, first_ts, last_ts) "
	       "VALUES (1, 'v1', REPEAT('a', 64), '/nonexistent', '[\"X\"]', 60000, 10, 0, 540000)", NULL, 0);
	ok(db, "INSERT IGNORE INTO strategies (id, owner_id, name) VALUES (1, 1, 's')", NULL, 0);
	ok(db, "INSERT IGNORE INTO strategy_versions (id, strategy_id, code_hash, kind, code, params) "
	       "VALUES (1, 1, REPEAT('b', 64), 'simulate', 'x', '{}')", NULL, 0);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	tmariadb_finish(&srv, db);
	return 0;
}

/* A connection to the test database whose sessions are READ COMMITTED, as
 * the runner's (rdb_connect); NULL on failure. */
static struct db *connect_read_committed(void)
{
	struct dburl u = { .host = "localhost", .database = DBNAME, .socket = srv.sock };
	struct db *d = db_new(&u);
	db_set_read_committed(d);
	if (db_connect(d) != DB_OK) {
		db_free(d);
		d = NULL;
	}
	return d;
}

/* A claimer thread: its own connection and lease owner; claims and
 * finishes until the queue is empty, recording what it claimed. */
struct claimer {
	const struct job_kind *k;
	char owner[32];
	pthread_barrier_t *start;
	bool read_committed;
	char ids[RACE_JOBS][37];
	int n;
	bool failed;
};

static void *claimer_main(void *arg)
{
	struct claimer *c = arg;
	struct jobq q;
	struct buf err = BUF_INIT;
	mysql_thread_init();
	/* half the claimers as the runner connects (READ COMMITTED sessions, no
	 * SET TRANSACTION per claim), the others with the server's default */
	struct db *d = c->read_committed ? connect_read_committed() : tmariadb_connect(&srv, DBNAME);
	queue_of(&q, c->owner, c->k);
	pthread_barrier_wait(c->start);
	for (;;) {
		struct jobq_job j;
		int got = d ? jobq_claim(d, &q, &j, &err) : -1;
		if (got <= 0) {
			c->failed = got < 0;
			if (got < 0)
				fprintf(stderr, "%s: %s\n", c->owner, buf_cstr(&err));
			break;
		}
		snprintf(c->ids[c->n++], 37, "%s", j.lease.id);
		if (j.lease.attempt != 1 || j.lease.kind != c->k) {   /* the lease read back is the row claimed */
			c->failed = true;
			jobq_job_free(&j);
			break;
		}
		struct job_outcome o;
		job_outcome_init(&o);
		o.status = JOB_COMPLETED;
		c->failed = jobq_finish(d, q.owner, &j, &o, &err) != 1;
		job_outcome_free(&o);
		jobq_job_free(&j);
		if (c->failed || c->n == RACE_JOBS)
			break;
	}
	buf_free(&err);
	db_free(d);
	mysql_thread_end();
	return NULL;
}

/*
 * RACERS claimers drain N jobs: every job claimed once, by one of them,
 * with the attempt its lease says. Half of them connect as the runner does
 * (READ COMMITTED sessions: the claim is one autocommitted UPDATE), half
 * with the server's default (the claim wraps it in a transaction).
 */
static void race(const struct job_kind *k, int njobs)
{
	pthread_barrier_t start;
	struct claimer *c = calloc(RACERS, sizeof *c);
	pthread_t th[RACERS];
	char id[37];
	int total = 0;
	assert_non_null(c);
	clear_tables();
	for (int i = 0; i < njobs; i++)
		enqueue(k, "race", i, id);
	pthread_barrier_init(&start, NULL, RACERS);
	for (int t = 0; t < RACERS; t++) {
		c[t].k = k;
		c[t].start = &start;
		c[t].read_committed = t % 2 == 1;
		snprintf(c[t].owner, sizeof c[t].owner, "test:claimer-%d", t);
		assert_int_equal(pthread_create(&th[t], NULL, claimer_main, &c[t]), 0);
	}
	for (int t = 0; t < RACERS; t++)
		pthread_join(th[t], NULL);
	pthread_barrier_destroy(&start);
	for (int t = 0; t < RACERS; t++) {
		assert_false(c[t].failed);
		total += c[t].n;
	}
	assert_int_equal(total, njobs);
	for (int a = 0; a < RACERS; a++)
		for (int i = 0; i < c[a].n; i++)
			for (int b = 0; b < RACERS; b++)
				for (int j = 0; j < c[b].n; j++)
					if ((a != b || i != j) && strcmp(c[a].ids[i], c[b].ids[j]) == 0)
						fail_msg("%s claimed twice", c[a].ids[i]);
	char sql[160];
	snprintf(sql, sizeof sql, "SELECT COUNT(*) FROM %s WHERE status = 'completed' AND attempts = 1", k->table);
	assert_int_equal(ask_int(sql, NULL), njobs);
	free(c);
}

static void test_claim_race(void **state)
{
	(void)state;
	for (size_t i = 0; i < 2; i++) {
		race(kinds[i], 1);           /* one job, two claimers: one winner */
		race(kinds[i], RACE_JOBS);   /* N jobs: each claimed exactly once */
		race(fair_kinds[i], RACE_JOBS);   /* the same through the fair-share claim */
	}
}

/* A trusted-side failure is retried while attempts remain, then final. */
static void test_retry_budget(void **state)
{
	(void)state;
	for (size_t i = 0; i < 2; i++) {
		const struct job_kind *k = kinds[i];
		struct jobq q;
		struct jobq_job j;
		char id[37], st[16], code[32];
		long long att;
		clear_tables();
		queue_of(&q, "test:retry", k);
		enqueue(k, "retry", 1, id);
		char sql[160];
		snprintf(sql, sizeof sql, "SELECT max_attempts FROM %s WHERE id = ?", k->table);
		long long max = ask_int(sql, id);
		assert_true(max >= 2);
		script.status = JOB_FAILED;
		script.code = "internal";
		script.retry = true;
		for (long long a = 1; a < max; a++) {
			claim_expect(db, &q, &j, id);
			assert_int_equal(j.lease.attempt, a);
			assert_int_equal(process(db, &q, &j, false), JOBQ_REQUEUED);
			job_state(k, id, st, code, &att);
			assert_string_equal(st, "queued");
			assert_int_equal(att, a);
		}
		claim_expect(db, &q, &j, id);
		assert_int_equal(process(db, &q, &j, false), JOBQ_WRITTEN);
		job_state(k, id, st, code, &att);
		assert_string_equal(st, "failed");
		assert_string_equal(code, "internal");
		assert_int_equal(att, max);
		claim_expect(db, &q, &j, NULL);
		/* a strategy's own failure is final at once */
		enqueue(k, "final", 2, id);
		script.code = "strategy_error";
		script.retry = false;
		claim_expect(db, &q, &j, id);
		assert_int_equal(process(db, &q, &j, false), JOBQ_WRITTEN);
		job_state(k, id, st, code, &att);
		assert_string_equal(st, "failed");
		assert_string_equal(code, "strategy_error");
		assert_int_equal(att, 1);
	}
}

/* Expire every running lease of k (a stalled or dead runner). */
static void expire(const struct job_kind *k)
{
	char sql[160];
	snprintf(sql, sizeof sql, "UPDATE %s SET lease_expires_at = NOW(6) - INTERVAL 1 SECOND WHERE status = 'running'",
		 k->table);
	ok(db, sql, NULL, 0);
}

/* An expired lease is re-queued and claimed by another runner; the first
 * runner's write is refused; the last attempt's expiry is runner_lost. */
static void test_lease_expiry_and_reclaim(void **state)
{
	(void)state;
	for (size_t i = 0; i < 2; i++) {
		const struct job_kind *k = kinds[i];
		struct jobq qa, qb;
		struct jobq_job ja, jb;
		struct buf err = BUF_INIT;
		char id[37], st[16], code[32];
		long long att;
		clear_tables();
		queue_of(&qa, "test:runner-a", k);
		queue_of(&qb, "test:runner-b", k);
		enqueue(k, "lease", 1, id);
		claim_expect(db, &qa, &ja, id);
		assert_int_equal(jobq_reap(db, &qb, &err), 0);   /* not expired yet */
		assert_int_equal(jobq_heartbeat(db, &qa, JOBQ_ALL_KINDS, NULL, 0, &err), 0);
		expire(k);
		assert_int_equal(jobq_reap(db, &qb, &err), 1);
		job_state(k, id, st, code, &att);
		assert_string_equal(st, "queued");
		claim_expect(db, &qb, &jb, id);
		assert_int_equal(jb.lease.attempt, 2);
		/* a's late result: refused, nothing written */
		script.status = JOB_FAILED;
		script.code = "strategy_error";
		assert_int_equal(process(db, &qa, &ja, false), JOBQ_LEASE_LOST);
		job_state(k, id, st, code, &att);
		assert_string_equal(st, "running");
		assert_string_equal(code, "");
		script.status = JOB_COMPLETED;
		assert_int_equal(process(db, &qb, &jb, false), JOBQ_WRITTEN);
		job_state(k, id, st, code, &att);
		assert_string_equal(st, "completed");
		assert_int_equal(att, 2);
		/* the last attempt's lease expires: failed for good */
		enqueue(k, "lost", 2, id);
		char sql[160];
		snprintf(sql, sizeof sql, "UPDATE %s SET max_attempts = 1 WHERE id = ?", k->table);
		struct db_arg a = DB_ARG_TEXT(id);
		ok(db, sql, &a, 1);
		claim_expect(db, &qa, &ja, id);
		jobq_job_free(&ja);
		expire(k);
		assert_int_equal(jobq_reap(db, &qb, &err), 0);   /* none re-queued */
		job_state(k, id, st, code, &att);
		assert_string_equal(st, "failed");
		assert_string_equal(code, "runner_lost");
		buf_free(&err);
	}
}

/* Cancel: a queued job at once; a running one through its runner. */
static void test_cancel(void **state)
{
	(void)state;
	for (size_t i = 0; i < 2; i++) {
		const struct job_kind *k = kinds[i];
		struct jobq q;
		struct jobq_job j;
		struct buf err = BUF_INIT, ids = BUF_INIT;
		char id[37], st[16], code[32];
		long long att;
		uint64_t changed = 0;
		clear_tables();
		queue_of(&q, "test:cancel", k);
		enqueue(k, "cq", 1, id);
		assert_int_equal(job_request_cancel(db, k->table, id, &changed), DB_OK);
		assert_int_equal(changed, 1);
		job_state(k, id, st, code, &att);
		assert_string_equal(st, "cancelled");
		assert_string_equal(code, "cancelled");
		claim_expect(db, &q, &j, NULL);
		assert_int_equal(job_request_cancel(db, k->table, id, &changed), DB_OK);
		assert_int_equal(changed, 0);   /* final: nothing changes */
		/* running: the flag, the runner's poll lists it, the job ends cancelled */
		enqueue(k, "cr", 2, id);
		claim_expect(db, &q, &j, id);
		assert_int_equal(jobq_cancel_requests(db, &q, JOBQ_ALL_KINDS, &ids, &err), 0);
		assert_int_equal(job_request_cancel(db, k->table, id, &changed), DB_OK);
		assert_int_equal(changed, 1);
		job_state(k, id, st, code, &att);
		assert_string_equal(st, "running");
		assert_int_equal(jobq_cancel_requests(db, &q, JOBQ_ALL_KINDS, &ids, &err), 1);
		assert_string_equal(buf_cstr(&ids), id);
		assert_int_equal(process(db, &q, &j, true), JOBQ_WRITTEN);
		job_state(k, id, st, code, &att);
		assert_string_equal(st, "cancelled");
		assert_string_equal(code, "cancelled");
		/* a cancel requested on a job whose runner died: the reaper cancels it */
		enqueue(k, "cd", 3, id);
		claim_expect(db, &q, &j, id);
		jobq_job_free(&j);
		assert_int_equal(job_request_cancel(db, k->table, id, &changed), DB_OK);
		expire(k);
		assert_int_equal(jobq_reap(db, &q, &err), 0);
		job_state(k, id, st, code, &att);
		assert_string_equal(st, "cancelled");
		buf_free(&err);
		buf_free(&ids);
	}
}

/*
 * Fair share between owners: a second owner's one job is claimed next
 * (oldest-first would serve the first owner's whole backlog before it),
 * an owner with fewer running jobs goes first, owners with equal shares
 * take turns, and each owner's jobs stay in their own order.
 */
static void test_fair_share(void **state)
{
	(void)state;
	for (size_t i = 0; i < 2; i++) {
		const struct job_kind *k = fair_kinds[i];
		struct jobq q;
		struct jobq_job j, held;
		char a[8][37], b[3][37];
		clear_tables();
		queue_of(&q, "test:fair", k);
		/* the backlog of owner 1 first, then owner 2's one job */
		for (int n = 0; n < 8; n++)
			enqueue_for(k, 1, "fairA", n, a[n]);
		enqueue_for(k, 2, "fairB", 0, b[0]);
		claim_expect(db, &q, &j, a[0]);   /* nobody served yet: the oldest row */
		assert_int_equal(process(db, &q, &j, false), JOBQ_WRITTEN);
		claim_expect(db, &q, &j, b[0]);   /* owner 2 was never served: its turn */
		assert_int_equal(process(db, &q, &j, false), JOBQ_WRITTEN);
		for (int n = 1; n < 8; n++) {   /* then the backlog, in order */
			claim_expect(db, &q, &j, a[n]);
			assert_int_equal(process(db, &q, &j, false), JOBQ_WRITTEN);
		}
		claim_expect(db, &q, &j, NULL);

		/* fewest running first, then round-robin by who was served last */
		clear_tables();
		for (int n = 0; n < 3; n++)
			enqueue_for(k, 1, "shareA", n, a[n]);
		for (int n = 0; n < 3; n++)
			enqueue_for(k, 2, "shareB", n, b[n]);
		claim_expect(db, &q, &held, a[0]);   /* owner 1 now has one running */
		claim_expect(db, &q, &j, b[0]);
		assert_int_equal(process(db, &q, &j, false), JOBQ_WRITTEN);
		claim_expect(db, &q, &j, b[1]);      /* owner 1 still holds a slot */
		assert_int_equal(process(db, &q, &j, false), JOBQ_WRITTEN);
		assert_int_equal(process(db, &q, &held, false), JOBQ_WRITTEN);
		claim_expect(db, &q, &j, a[1]);      /* equal shares: owner 1 waited longer */
		assert_int_equal(process(db, &q, &j, false), JOBQ_WRITTEN);
		claim_expect(db, &q, &j, b[2]);
		assert_int_equal(process(db, &q, &j, false), JOBQ_WRITTEN);
		claim_expect(db, &q, &j, a[2]);
		assert_int_equal(process(db, &q, &j, false), JOBQ_WRITTEN);
		claim_expect(db, &q, &j, NULL);
	}
}

/*
 * A runner that stalls past its lease between the claiming UPDATE and the
 * read of the row it took: the read (under its lease) finds the row is
 * another runner's now. The job is not executed nor written, the queue is
 * told (claim_lost, which the runner logs as lease_lost) with the row's id,
 * and the other runner's claim stands.
 */
static void test_claim_lost_before_read(void **state)
{
	(void)state;
	static const struct job_kind stolen = { .name = "run", .table = "runs", .lease_s = 60,
						.job_size = sizeof(struct tjob), .load = t_load,
						.load_claimed = t_load_stolen, .execute = t_execute, .release = t_release };
	struct jobq q;
	struct jobq_job j;
	char id[37], st[16], code[32];
	long long att;
	clear_tables();
	memset(&lost, 0, sizeof lost);
	queue_of(&q, "test:stalled", &stolen);
	q.claim_lost = t_claim_lost;
	enqueue(&stolen, "stolen", 1, id);
	claim_expect(db, &q, &j, NULL);      /* claimed, then lost before the read: nothing to run */
	assert_int_equal(lost.calls, 1);
	assert_string_equal(lost.id, id);
	job_state(&stolen, id, st, code, &att);
	assert_string_equal(st, "running");  /* the other runner's claim stands */
	assert_int_equal(att, 2);
	assert_int_equal(ask_int("SELECT COUNT(*) FROM runs WHERE lease_owner = 'test:thief'", NULL), 1);
}

/*
 * Two fair kinds in one queue: the first kind's turn order comes with the
 * statement that counts every kind's queued rows, so check that the
 * priority between kinds, the fair order within the first and the "more"
 * hint all still hold when the first kind has none, one or several rows.
 */
static void test_fair_two_kinds(void **state)
{
	(void)state;
	struct jobq q;
	struct jobq_job j;
	char r[3][37], e[2][37];
	clear_tables();
	jobq_init(&q, "test:fair2");
	assert_true(jobq_add(&q, &t_fair_runs, NULL));
	assert_true(jobq_add(&q, &t_fair_evals, NULL));
	claim_expect(db, &q, &j, NULL);                  /* nothing queued anywhere */
	enqueue_for(&t_fair_evals, 2, "twoE", 0, e[0]);
	claim_expect(db, &q, &j, e[0]);                   /* no run queued: the evaluation */
	assert_false(j.more);
	assert_int_equal(process(db, &q, &j, false), JOBQ_WRITTEN);
	enqueue_for(&t_fair_runs, 1, "twoA", 0, r[0]);
	enqueue_for(&t_fair_runs, 1, "twoA", 1, r[1]);
	enqueue_for(&t_fair_runs, 2, "twoB", 0, r[2]);
	enqueue_for(&t_fair_evals, 2, "twoE", 1, e[1]);
	claim_expect(db, &q, &j, r[0]);                   /* runs before evaluations; oldest owner first */
	assert_true(j.more);
	assert_int_equal(process(db, &q, &j, false), JOBQ_WRITTEN);
	claim_expect(db, &q, &j, r[2]);                   /* owner 2 never served: its turn */
	assert_true(j.more);
	assert_int_equal(process(db, &q, &j, false), JOBQ_WRITTEN);
	claim_expect(db, &q, &j, r[1]);
	assert_true(j.more);                               /* the evaluation is still queued */
	assert_int_equal(process(db, &q, &j, false), JOBQ_WRITTEN);
	claim_expect(db, &q, &j, e[1]);
	assert_false(j.more);
	assert_int_equal(process(db, &q, &j, false), JOBQ_WRITTEN);
	claim_expect(db, &q, &j, NULL);
}

/* An evaluation kind that records progress, as eval_job.c's does. */
static const struct job_kind t_prog_evals = { .name = "evaluation", .table = "evaluations", .lease_s = 60,
					      .job_size = sizeof(struct tjob), .load = t_load, .execute = t_execute,
					      .release = t_release, .progress = true };

/* The heartbeat writes each running job's progress in its lease renewal
 * (only the listed jobs of the kind, others keep theirs); a new claim of
 * the row clears it. */
static void test_heartbeat_progress(void **state)
{
	(void)state;
	struct jobq q;
	struct jobq_job j1, j2;
	struct buf err = BUF_INIT;
	char a[37], b[37];
	clear_tables();
	queue_of(&q, "test:runner-p", &t_prog_evals);
	enqueue(&t_prog_evals, "prog", 1, a);
	enqueue(&t_prog_evals, "prog", 2, b);
	claim_expect(db, &q, &j1, a);
	claim_expect(db, &q, &j2, b);
	assert_int_equal(ask_int("SELECT COUNT(*) FROM evaluations WHERE progress_total IS NOT NULL", NULL), 0);
	struct jobq_progress p[2] = { { .kind = &t_prog_evals, .done = 7, .total = 100 },
				      { .kind = &t_runs, .done = 1, .total = 2 } };   /* not this table's kind: ignored */
	snprintf(p[0].id, sizeof p[0].id, "%s", a);
	snprintf(p[1].id, sizeof p[1].id, "%s", b);
	assert_int_equal(jobq_heartbeat(db, &q, JOBQ_ALL_KINDS, p, 2, &err), 0);
	assert_int_equal(ask_int("SELECT progress_done FROM evaluations WHERE id = ?", a), 7);
	assert_int_equal(ask_int("SELECT progress_total FROM evaluations WHERE id = ?", a), 100);
	assert_int_equal(ask_int("SELECT COALESCE(progress_total, -1) FROM evaluations WHERE id = ?", b), -1);
	p[0].done = 42;
	assert_int_equal(jobq_heartbeat(db, &q, JOBQ_ALL_KINDS, p, 1, &err), 0);
	assert_int_equal(ask_int("SELECT progress_done FROM evaluations WHERE id = ?", a), 42);
	assert_int_equal(jobq_heartbeat(db, &q, JOBQ_ALL_KINDS, NULL, 0, &err), 0);   /* nothing reported: kept */
	assert_int_equal(ask_int("SELECT progress_done FROM evaluations WHERE id = ?", a), 42);
	p[0].done = 50;   /* a kind outside the heartbeat's mask: nothing written */
	assert_int_equal(jobq_heartbeat(db, &q, 0, p, 1, &err), 0);
	assert_int_equal(ask_int("SELECT progress_done FROM evaluations WHERE id = ?", a), 42);
	/* a re-queued row claimed again starts without progress */
	assert_int_equal(jobq_hand_back(db, q.owner, &j1.lease, &err), 1);
	jobq_job_free(&j1);
	claim_expect(db, &q, &j1, a);
	assert_int_equal(ask_int("SELECT COALESCE(progress_done, -1) FROM evaluations WHERE id = ?", a), -1);
	jobq_job_free(&j1);
	jobq_job_free(&j2);
	buf_free(&err);
}

/*
 * A claim says whether it saw more queued work than the row it took. What
 * the runner's main thread asks per tick names only the kinds its
 * slots run: a heartbeat for runs renews no evaluation's lease (the reaper
 * then takes the evaluation back, not the run), and the one-statement
 * cancel poll lists the cancel requests of the kinds asked for. A handle
 * made READ COMMITTED keeps that level in every session, also after it
 * lost its connection.
 */
static void test_kinds_mask_and_session(void **state)
{
	(void)state;
	struct jobq q, other;
	struct jobq_job jr, je;
	struct buf err = BUF_INIT, ids = BUF_INIT;
	char rid[37], eid[37], st[16], code[32];
	long long att;
	uint64_t changed = 0;
	clear_tables();
	jobq_init(&q, "test:mask");
	assert_true(jobq_add(&q, &t_runs, NULL));
	assert_true(jobq_add(&q, &t_evals, NULL));
	queue_of(&other, "test:mask-reaper", &t_runs);
	assert_true(jobq_add(&other, &t_evals, NULL));
	unsigned runs_bit = jobq_kind_bit(&q, &t_runs), evals_bit = jobq_kind_bit(&q, &t_evals);
	assert_int_equal(runs_bit, 1u);
	assert_int_equal(evals_bit, 2u);
	assert_int_equal(jobq_kind_bit(&q, &t_fair_runs), 0u);
	/* the claim's hint of more queued work (another slot should look) */
	char r2[37];
	enqueue(&t_runs, "mr", 1, rid);
	enqueue(&t_runs, "mr", 2, r2);
	claim_expect(db, &q, &jr, rid);
	assert_true(jr.more);    /* a second run */
	assert_int_equal(process(db, &q, &jr, false), JOBQ_WRITTEN);
	claim_expect(db, &q, &jr, r2);
	assert_false(jr.more);   /* the last one */
	assert_int_equal(process(db, &q, &jr, false), JOBQ_WRITTEN);
	enqueue(&t_runs, "mr", 3, rid);
	enqueue(&t_evals, "me", 2, eid);
	claim_expect(db, &q, &jr, rid);
	assert_true(jr.more);    /* an evaluation waits behind it */
	claim_expect(db, &q, &je, eid);
	assert_false(je.more);
	/* cancel requests on both; each mask lists its own kind's, both in one statement */
	assert_int_equal(job_request_cancel(db, "runs", rid, &changed), DB_OK);
	assert_int_equal(job_request_cancel(db, "evaluations", eid, &changed), DB_OK);
	assert_int_equal(jobq_cancel_requests(db, &q, 0, &ids, &err), 0);
	assert_int_equal(jobq_cancel_requests(db, &q, runs_bit, &ids, &err), 1);
	assert_string_equal(buf_cstr(&ids), rid);
	buf_reset(&ids);
	assert_int_equal(jobq_cancel_requests(db, &q, evals_bit, &ids, &err), 1);
	assert_string_equal(buf_cstr(&ids), eid);
	buf_reset(&ids);
	assert_int_equal(jobq_cancel_requests(db, &q, JOBQ_ALL_KINDS, &ids, &err), 2);
	/* both leases run out; the heartbeat renews the runs' only */
	expire(&t_runs);
	expire(&t_evals);
	assert_int_equal(jobq_heartbeat(db, &q, runs_bit, NULL, 0, &err), 0);
	assert_int_equal(jobq_reap(db, &other, &err), 0);   /* the evaluation: cancel requested, so cancelled */
	job_state(&t_runs, rid, st, code, &att);
	assert_string_equal(st, "running");
	job_state(&t_evals, eid, st, code, &att);
	assert_string_equal(st, "cancelled");
	jobq_job_free(&jr);
	jobq_job_free(&je);
	/* the session level of a READ COMMITTED handle, before and after a lost connection */
	struct db *rc = connect_read_committed();
	char level[32];
	struct db_col c = DB_COL_TEXT(level);
	assert_non_null(rc);
	assert_true(db_read_committed(rc));
	assert_false(db_read_committed(db));
	assert_int_equal(db_exec(rc, "SELECT @@tx_isolation", NULL, 0, &c, 1, NULL, NULL, NULL, 0), DB_OK);
	assert_string_equal(level, "READ-COMMITTED");
	assert_int_equal(db_exec(db, "SELECT @@tx_isolation", NULL, 0, &c, 1, NULL, NULL, NULL, 0), DB_OK);
	assert_string_equal(level, "REPEATABLE-READ");
	struct db_col cid = DB_COL_INT;
	assert_int_equal(db_exec(rc, "SELECT CONNECTION_ID()", NULL, 0, &cid, 1, NULL, NULL, NULL, 0), DB_OK);
	struct db_arg k = DB_ARG_INT(cid.i);
	ok(db, "KILL ?", &k, 1);
	(void)db_ping(rc);   /* finds the connection gone and connects again */
	level[0] = '\0';
	assert_int_equal(db_exec(rc, "SELECT @@tx_isolation", NULL, 0, &c, 1, NULL, NULL, NULL, DB_IDEMPOTENT), DB_OK);
	assert_string_equal(level, "READ-COMMITTED");
	db_free(rc);
	buf_free(&err);
	buf_free(&ids);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_claim_race),
		cmocka_unit_test(test_retry_budget),
		cmocka_unit_test(test_lease_expiry_and_reclaim),
		cmocka_unit_test(test_cancel),
		cmocka_unit_test(test_fair_share),
		cmocka_unit_test(test_fair_two_kinds),
		cmocka_unit_test(test_claim_lost_before_read),
		cmocka_unit_test(test_heartbeat_progress),
		cmocka_unit_test(test_kinds_mask_and_session),
	};
	if (mysql_library_init(0, NULL, NULL) != 0)
		return 1;
	int rc = cmocka_run_group_tests(tests, setup, teardown);
	mysql_library_end();
	return rc;
}

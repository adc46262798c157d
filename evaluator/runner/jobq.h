/*
 * jobq.h: the runner's one job queue, table-driven over the job kinds.
 *
 * Every kind of work the runner does (backtest runs, challenge evaluations,
 * and the kinds of later issues: market-data fetches, agent iterations,
 * paper trading) is a row in a table of its own, and the queue mechanics
 * are the same for all of them, written once here (jobq.c):
 *
 *   enqueue    the API tier INSERTs a row with the defaults (status
 *              'queued', attempts 0) and sends the wake-up datagram
 *   claim      pick the owner whose turn it is (fair share, jobq_claim), then
 *              one READ COMMITTED UPDATE of that owner's first queued row
 *              (ORDER BY seq LIMIT 1) to running with lease_owner = this
 *              runner, lease_expires_at = now + lease_s, attempts + 1,
 *              which names the row it took by LAST_INSERT_ID(seq); then one
 *              SELECT of that row (seq, running, lease_owner) reads its id,
 *              attempts and inputs (the kind's load_claimed, else the lease
 *              and then the kind's load)
 *   heartbeat  every second while busy, renew the leases of this runner
 *   cancel     the API sets cancel_requested = 1 on a running row (a queued
 *              row is cancelled at once); the runner polls for them and
 *              kills the job's sandbox (job_cancel)
 *   reap       expired leases (a runner died or stalled): cancelled if a
 *              cancel was requested, failed with runner_lost once attempts
 *              reach max_attempts, else back to queued
 *   retry      a failure of the trusted side (outcome.retry) goes back to
 *              the queue while attempts < max_attempts; then it is final
 *   hand back  SIGTERM drain: back to queued without counting the attempt
 *   finish     THE one lease-guarded write: one transaction whose UPDATE
 *              carries `WHERE id = ? AND status = 'running' AND
 *              lease_owner = ? AND attempts = ?`; zero rows matched means the
 *              lease was lost (re-queued, perhaps claimed again) and nothing
 *              at all is written, so a job's result is written exactly once
 *
 * Lifecycle (enum job_status, common/job_status.h):
 *
 *     queued ──claim──▶ running ──finish──▶ completed | failed | cancelled
 *       ▲  │              │  │
 *       │  └──cancel──▶ cancelled
 *       └──reap (attempts left) / retry / hand back
 *
 * ── Adding a job kind ───────────────────────────────────────────────────
 *
 * 1. A table (its own migration) with at least these columns, the names
 *    and types exactly:
 *
 *      id               CHAR(36) NOT NULL PRIMARY KEY      -- a UUID
 *      seq              BIGINT UNSIGNED NOT NULL AUTO_INCREMENT (UNIQUE)
 *      status           ENUM('queued','running','completed','failed',
 *                            'cancelled') NOT NULL DEFAULT 'queued'
 *      cancel_requested TINYINT(1)   NOT NULL DEFAULT 0
 *      lease_owner      VARCHAR(128) NULL
 *      lease_expires_at DATETIME(6)  NULL
 *      attempts         INT UNSIGNED NOT NULL DEFAULT 0
 *      max_attempts     INT UNSIGNED NOT NULL DEFAULT <budget>
 *      error_code       VARCHAR(32)  NULL
 *      error_message    TEXT         NULL
 *      started_at       DATETIME(6)  NULL
 *      completed_at     DATETIME(6)  NULL
 *      runtime_s        DOUBLE       NULL
 *      KEY (status, seq), KEY (status, lease_expires_at)
 *
 *    plus whatever inputs and results the kind has.
 *
 * 2. A file evaluator/runner/<kind>_job.c defining one
 *    `const struct job_kind <kind>_kind` (declare it in jobs.h):
 *      name, table, lease_s, job_size   see struct job_kind
 *      load      read the claimed row's inputs into the zeroed job struct
 *      execute   do the work (sandbox, fetch, ...), never touching the DB;
 *                fill the common outcome (status, error code, message,
 *                retry) and the kind's own results inside the job struct
 *      columns   the kind's extra result columns of the finishing UPDATE
 *                (jobq_set_col); names are constants of the kind
 *      commit    optional: more statements inside the finishing
 *                transaction, after the guarded UPDATE matched (inserts of
 *                result rows, bumping a generation counter, ...)
 *      release   free what load and execute allocated in the job struct
 *
 *    owner_col optional: the owner column; claims are then fair between
 *                owners (jobq_claim), else oldest first
 *
 * 3. One line in the runner's kind list (main.c: jobq_add(&q, &x_kind,
 *    env)); the order of jobq_add is the claim priority. Heartbeat, cancel,
 *    reap, retry, hand-back and the finishing write then work for it with
 *    no other change, and the API side uses common/job_status.h for the
 *    status names and job_request_cancel() for its cancel endpoint.
 */
#ifndef AGENTTEST_RUNNER_JOBQ_H
#define AGENTTEST_RUNNER_JOBQ_H

#include <stdbool.h>
#include <stddef.h>

#include "buf.h"
#include "db.h"
#include "job_status.h"

#define JOBQ_KINDS_MAX   8
#define JOBQ_SET_MAX     12      /* extra columns of one finishing UPDATE */
#define JOBQ_OWNER_MAX   128
#define JOBQ_CODE_MAX    32      /* error_code VARCHAR(32) */
#define JOBQ_MESSAGE_MAX 3072    /* bytes of an error message kept (the API reads 4 KiB) */
#define JOBQ_REAP_BATCH  32      /* expired leases handled per kind per reap */
#define JOBQ_WRITE_RETRY_MS     250    /* first pause before retrying a failed finishing write */
#define JOBQ_WRITE_RETRY_MAX_MS 2000   /* longest pause between such retries */

struct job_ctl;
struct job_kind;

/* The claim of one row: what every guarded statement about it needs. */
struct jobq_lease {
	const struct job_kind *kind;
	char     id[37];
	unsigned long long seq; /* the row's seq (how the claim names the row it took) */
	unsigned attempt;       /* attempts after this claim: the write guard */
	unsigned max_attempts;
};

/* The row a claim just took (bind the lease's seq, then the lease owner). */
#define JOBQ_CLAIMED "seq = ? AND status = 'running' AND lease_owner = ?"

/* What executing a job came to, in the columns every kind shares. */
struct job_outcome {
	enum job_status status;          /* JOB_COMPLETED, JOB_FAILED or JOB_CANCELLED */
	char            error_code[JOBQ_CODE_MAX]; /* failed/cancelled; "" -> internal/cancelled */
	struct buf      message;         /* failed/cancelled: shown to the user (cut to JOBQ_MESSAGE_MAX) */
	double          runtime_s;
	bool            retry;           /* a trusted-side failure: re-queue while attempts remain */
};

void job_outcome_init(struct job_outcome *o);
void job_outcome_free(struct job_outcome *o);
/* Set status failed with a code and a printf message (retry stays false). */
void job_outcome_fail(struct job_outcome *o, const char *code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* The extra result columns a kind adds to the finishing UPDATE. */
struct jobq_set {
	const char   *col[JOBQ_SET_MAX];   /* column names: constants of the kind, never input */
	struct db_arg arg[JOBQ_SET_MAX];
	size_t        n;
};
/* Append `col = ?` bound to a (aborts past JOBQ_SET_MAX: a programming error). */
void jobq_set_col(struct jobq_set *s, const char *col, struct db_arg a);

/* What a slot hands a job's execute. */
struct jobq_slot {
	unsigned        box_id;   /* sandbox box of this slot */
	unsigned        spare_box_id; /* a second box for the audit's second host, 0: none */
	struct job_ctl *ctl;      /* the slot's cancellation handle (runner.h) */
	void           *env;      /* the kind's environment, as given to jobq_add */
	/* Optional: told of each failed finishing write that jobq_process
	 * retries (tries: 1, 2, ...; why: the database's message). */
	void          (*write_failed)(const struct jobq_lease *l, unsigned tries, const char *why);
};

struct job_kind {
	const char *name;        /* "run", "evaluation": logs and tests */
	const char *table;       /* SQL table with the columns listed above */
	int         lease_s;     /* lease length; the heartbeat renews it every second */
	size_t      job_size;    /* sizeof the kind's job struct (allocated zeroed) */
	/* Read the inputs of claimed row l->id into job. 1 ok, 0 row vanished, -1 error. */
	int  (*load)(struct db *db, const struct jobq_lease *l, void *job, struct buf *err);
	/*
	 * Optional, saves a round trip per claim: read the row this runner
	 * (owner) just claimed as l->seq, under the condition JOBQ_CLAIMED
	 * (seq, status running, lease_owner), in one statement: its id,
	 * attempts and max_attempts into l (id first, so a failure after it
	 * can still be written on the row) and its inputs into job, as load
	 * does. Without it the queue reads the lease first, then calls load.
	 * 1 ok, 0 row not found, -1 error.
	 */
	int  (*load_claimed)(struct db *db, const char *owner, struct jobq_lease *l, void *job, struct buf *err);
	/* Do the work; no DB. Fill o (status, error) and the kind's results in job. */
	void (*execute)(const struct jobq_slot *s, const struct jobq_lease *l, void *job, struct job_outcome *o);
	/* Optional: extra columns of the finishing UPDATE for outcome o. */
	void (*columns)(void *job, const struct job_outcome *o, struct jobq_set *set);
	/* Optional: more statements in the finishing transaction (after the guard matched). 0 or -1. */
	int  (*commit)(struct db *db, const struct jobq_lease *l, void *job, const struct job_outcome *o,
		       struct buf *err);
	/* Free what load and execute put in job (not job itself). */
	void (*release)(void *job);
	/*
	 * Optional: the column naming whose job a row is (a constant, e.g.
	 * "owner_id"). With it the claim is fair between owners (see jobq_claim);
	 * without it, oldest first. The table then needs the indexes
	 * (status, <owner_col>, seq) and (<owner_col>, started_at).
	 */
	const char *owner_col;
	/*
	 * Optional: the table has progress_done and progress_total (BIGINT
	 * UNSIGNED NULL). The claim clears them; the heartbeat writes the
	 * progress its caller hands it (struct jobq_progress) in the same
	 * UPDATE that renews the leases, so progress costs no statement of
	 * its own and is at most a heartbeat (about a second) old.
	 */
	bool progress;
	/*
	 * Optional: finishing a job of this kind never queues other work (its
	 * columns and commit write only its own results). A slot whose claim of
	 * such a job saw no other queued row (jobq_job.more false) then sleeps
	 * after it until a wake-up instead of asking the queue again at once:
	 * whatever was queued meanwhile on this host sent a wake-up, which is
	 * kept for the slot (main.c). Leave it false for a kind whose commit
	 * queues jobs (an agent's next iteration, a prefetch's paper steps):
	 * those come with no wake-up and are found by the next claim.
	 */
	bool queues_nothing;
};

/* The kinds a runner serves, in claim priority, and its lease owner. */
struct jobq {
	struct {
		const struct job_kind *kind;
		void                  *env;
	} k[JOBQ_KINDS_MAX];
	size_t n;
	char   owner[JOBQ_OWNER_MAX];   /* "<host>:<pid>:<random>" */
	/*
	 * Optional: told of a row this runner claimed that was no longer
	 * running under its lease when it read it (l->id, when the row still
	 * exists, and l->seq): the process stalled past the lease between the
	 * claim and the read, and another runner reaped it and may run it now.
	 * The job is not executed here; nothing is written about it.
	 */
	void (*claim_lost)(const struct jobq_lease *l);
};

/* An empty queue for lease owner `owner`. */
void jobq_init(struct jobq *q, const char *owner);
/* Serve kind k (env reaches its execute). false when JOBQ_KINDS_MAX kinds are served. */
bool jobq_add(struct jobq *q, const struct job_kind *k, void *env);

/* A claimed job: its lease, the kind's job struct and its environment. */
struct jobq_job {
	struct jobq_lease lease;
	void             *job;     /* kind->job_size bytes, owned */
	void             *env;
	bool              more;    /* the claim saw other queued rows (a hint: another slot may look) */
};

/*
 * Claim a queued row of the first kind (in jobq_add order) that has one,
 * and load it. Within a kind with an owner_col the claim is fair between
 * owners: the owner with the fewest running jobs of the kind goes first,
 * ties to the owner served least recently (the oldest latest started_at;
 * never served first), then to the oldest queued row; that owner's oldest
 * queued row is claimed. So one owner's backlog is served round-robin with
 * everyone else's and never starves another owner's one job. Kinds without
 * an owner_col are served oldest first. 1 claimed (*j filled; free with jobq_job_free), 0 every
 * queue empty, -1 on a database error (message in err). A claimed row whose
 * load fails is failed with `internal` (it would fail every runner).
 */
int jobq_claim(struct db *db, const struct jobq *q, struct jobq_job *j, struct buf *err);

/* Release a claimed job (kind->release, then the struct). */
void jobq_job_free(struct jobq_job *j);

/* How jobq_process ended. */
enum jobq_end {
	JOBQ_WRITTEN,       /* the outcome is written */
	JOBQ_LEASE_LOST,    /* the finishing write was refused: another claim owns the row */
	JOBQ_REQUEUED,      /* trusted-side failure with attempts left: queued again */
	JOBQ_HANDED_BACK,   /* SIGTERM: queued again, attempt not counted */
	JOBQ_DB_ERROR       /* the write failed (message in err) */
};

/*
 * Execute claimed job j on slot s, then, from the outcome and the slot's
 * cancellation state: hand it back, re-queue it for a retry, or finish it
 * (jobq_finish). The outcome (o, initialised by the caller) is left for
 * logging.
 *
 * A finished job is never executed again for want of a database: when the
 * finishing write fails while the database is unreachable (a MariaDB
 * restart), the outcome is kept and the write retried (backing off from
 * JOBQ_WRITE_RETRY_MS to JOBQ_WRITE_RETRY_MAX_MS) until it is written or
 * refused because the lease was lost; the slot stays busy meanwhile, so the
 * runner's heartbeat renews the lease as soon as the database answers.
 * Only a hand-back (the end of a SIGTERM drain) gives up (JOBQ_DB_ERROR;
 * the job is then reaped as after a crash). A failure while the database
 * answers is retried once, then JOBQ_DB_ERROR.
 */
enum jobq_end jobq_process(struct db *db, const struct jobq *q, struct jobq_job *j, const struct jobq_slot *s,
			   struct job_outcome *o, struct buf *err);

/*
 * The one lease-guarded finishing write of every kind: one transaction with
 * the UPDATE of the common columns plus kind->columns, guarded by (id,
 * status running, lease_owner = owner, attempts = lease attempt), then
 * kind->commit. 1 written, 0 the lease was lost (nothing written), -1 error.
 */
int jobq_finish(struct db *db, const char *owner, struct jobq_job *j, const struct job_outcome *o,
		struct buf *err);

/* Back to queued after a trusted-side failure, counting the attempt (guarded). 1, 0 lease lost, -1. */
int jobq_requeue(struct db *db, const char *owner, const struct jobq_lease *l, struct buf *err);
/* Back to queued without counting the attempt (SIGTERM hand-back; guarded). 1, 0 lease lost, -1. */
int jobq_hand_back(struct db *db, const char *owner, const struct jobq_lease *l, struct buf *err);

/* How far one running job of this runner is (for a kind with .progress). */
struct jobq_progress {
	const struct job_kind *kind;
	char                   id[37];
	unsigned long long     done, total;
};

/* All of q's kinds, as a mask of jobq_kind_bit values. */
#define JOBQ_ALL_KINDS (~0u)

/* The bit of kind k in q (bit i for q's i-th kind); 0 when q does not serve k. */
unsigned jobq_kind_bit(const struct jobq *q, const struct job_kind *k);

/*
 * Renew the leases of every running job of q->owner of the kinds in the
 * mask `kinds` (jobq_kind_bit; a runner passes the kinds its slots run, so
 * an idle kind costs no statement), one UPDATE per kind; in the same
 * UPDATE, write the progress of the np jobs of p whose kind has .progress
 * (others are ignored; p may be NULL when np is 0). -1 on error.
 */
int jobq_heartbeat(struct db *db, const struct jobq *q, unsigned kinds, const struct jobq_progress *p, size_t np,
		   struct buf *err);

/*
 * Ids of running jobs of q->owner of the kinds in the mask `kinds` whose
 * cancellation was requested, appended NUL-separated to out, in one
 * statement (none for an empty mask); returns how many, or -1.
 */
int jobq_cancel_requests(struct db *db, const struct jobq *q, unsigned kinds, struct buf *out, struct buf *err);

/*
 * Expired leases of every kind: cancelled (cancel requested), failed with
 * runner_lost (attempts used up) or re-queued. One lock-free statement asks
 * which kinds have one; only those are locked and changed. Returns how many
 * were re-queued, or -1.
 */
int jobq_reap(struct db *db, const struct jobq *q, struct buf *err);

#endif

/*
 * runner.h: the private header of agenttest-runner, in sections.
 *
 * The runner is one process per host with N slot threads (see main.c for the
 * theory of operation). The queue itself is jobq.h, its kinds jobs.h. This
 * header holds the pieces of the run kind: the run as loaded from the
 * database (run_job.c), the outcome of executing it (job.c),
 * the pure policy helpers (policy.c, unit-tested); the wake-up socket is
 * the shared contract common/notify.h.
 */
#ifndef AGENTTEST_RUNNER_H
#define AGENTTEST_RUNNER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "evaluator/fills.h"
#include "evaluator/metrics.h"
#include "notify.h"
#include "sandbox/sandbox.h"

#include <json-c/json.h>

/* ---- limits and defaults ------------------------------------------------ */

#define RUNNER_MAX_SLOTS        64
/* every slot and every code check gets its own zygote helper (AGENTTEST_CHECK_CONCURRENCY <= 8) */
_Static_assert(RUNNER_MAX_SLOTS + 8 <= SBX_ZYGOTES_MAX, "the zygote pool must hold one helper per slot");
#define RUNNER_LEASE_S          10     /* lease length; renewed every second */
#define RUNNER_TICK_MS          100    /* heartbeat/cancel tick while busy */
#define RUNNER_IDLE_POLL_MS     1000   /* DB poll when idle (other-host fallback) */
#define RUNNER_REAP_MS          1000   /* expired-lease scan period */
#define RUNNER_DRAIN_S          30     /* SIGTERM: finish running work this long */
#define RUNNER_OWNER_MAX        128
#define RUNNER_LOG_TAIL_MAX     4096   /* bytes of the host's stderr kept on a run */
#define RUNNER_UNTRUSTED_FIELD_MAX 1024 /* bytes per text field of a failed evaluation (policy_cap_untrusted) */
#define RUNNER_EQUITY_MAX       (1u << 24) /* values */
#define RUNNER_RUN_CPU_S        60     /* default AGENTTEST_RUN_CPU_SECONDS */
#define RUNNER_RUN_MEMORY_MB    256    /* default AGENTTEST_RUN_MEMORY_MB */

/* ---- a claimed job --------------------------------------------------------- */

struct rjob {
	char     id[37];               /* run UUID */
	unsigned attempt;              /* attempts after this claim (the write guard) */
	unsigned max_attempts;
	uint64_t seq;
	uint64_t strategy_version_id;
	char    *dataset_version;
	char    *dataset_path;
	char     dataset_hash[65];     /* pinned at queue time */
	char     code_hash[65];
	char     config_hash[65];
	char    *params;               /* canonical JSON object */
	char    *asset;                /* NULL: the dataset's first asset */
	bool     audit;
	char    *verify_of;            /* NULL, or the run being verified */
	char    *code;                 /* strategy source */
	char    *kind;                 /* simulate | positions | signal */
	char    *engine;               /* positions: {"fee_bps":..,"max_leverage":..}, else NULL */
};

/* Release the strings of a job; it is zeroed afterwards. */
void rjob_free(struct rjob *j);

/* ---- the outcome of a job ---------------------------------------------------- */

enum rjob_status { RJOB_COMPLETED, RJOB_FAILED, RJOB_CANCELLED };

struct rresult {
	enum rjob_status status;
	struct metrics   m;            /* every metric, runtime_s included */
	struct buf       metrics_json; /* m as one JSON object (metrics_to_json) */
	double          *equity;       /* owned; n values */
	double          *benchmark;    /* owned; n values: buy-and-hold of the asset (buyhold.h), or NULL */
	/* positions runs: the trades (evaluator/fills.h), else NULL/0 */
	struct fill     *fills;        /* owned; n_fills records (<= FILLS_STORE_MAX) */
	size_t           n_fills;
	size_t           fills_total;  /* fills the run made (> n_fills: the store was truncated) */
	double          *positions;    /* owned; n values: exposure after each bar's close */
	size_t           n;
	bool             audit_ran;
	bool             audit_passed;
	struct buf       audit_json;   /* JSON object or empty */
	struct buf       resources_json;
	char             error_code[32];
	struct buf       error_message;
	struct buf       log_tail;
	struct buf       verification_json; /* verify_of runs: the record for the original */
	struct buf       artifacts_error;   /* completed, but equity.csv not written: why (no path) */
	double           runtime_s;
};

void rresult_init(struct rresult *r);
void rresult_free(struct rresult *r);
/* Set status FAILED with a code and a printf message. */
void rresult_fail(struct rresult *r, const char *code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* ---- database (run_job.c) ---------------------------------------------------- */

/* A connection (common/db.h, prepared statements only) for DATABASE_URL, connected, its sessions READ
 * COMMITTED (db_set_read_committed); NULL with a message on error. */
struct db;
struct db *rdb_connect(const char *url, struct buf *err);

/* Fetch the metrics JSON and equity bytes of `run_id` for a verification. 1 found, 0 not, -1 error. */
int rdb_load_reference(struct db *c, const char *run_id, struct buf *metrics_json, struct buf *equity, struct buf *err);

/*
 * Fetch the stored trades of `run_id` (run_trades) for a verification: the
 * fill records and positions bytes as stored, with the counts. 1 found
 * (sizes consistent with the counts), 0 no row, -1 error or inconsistent.
 */
int rdb_load_trades(struct db *c, const char *run_id, struct buf *fills, struct buf *positions,
		    size_t *fills_total, struct buf *err);

/* ---- pure policy (policy.c) ------------------------------------------------ */

/* Keep the last `max` bytes of log text, cut at a UTF-8 boundary. */
void policy_tail(struct buf *out, const char *s, size_t n, size_t max);

/*
 * Bound the text an untrusted process put into an error object (a failed
 * evaluation's result, stream_error_json): "error" and "detail" and the
 * exception's "message" keep their first RUNNER_UNTRUSTED_FIELD_MAX bytes,
 * its "type" 128, its "traceback" the last lines within
 * RUNNER_UNTRUSTED_FIELD_MAX bytes, "log_tail" its last
 * RUNNER_UNTRUSTED_FIELD_MAX bytes; cuts fall on UTF-8 boundaries. So a
 * strategy cannot carry more than a few KiB out (docs/challenges.md).
 * NULL or a non-object is left alone.
 */
void policy_cap_untrusted(json_object *err);

/* True if every present metric is finite. */
bool policy_metrics_finite(const struct metrics *m);

/*
 * Read a metrics object written by metrics_to_json back into m (names from
 * metric_name; null or absent -> not present). Numbers are the shortest
 * round-trip text, so the doubles come back bit for bit. false if json is
 * not an object.
 */
bool policy_metrics_from_json(const char *json, struct metrics *m);

/*
 * Compare two results for a verification: every metric (presence and bit
 * pattern; runtime_s excluded) and the equity curves (bytes). Returns true
 * if identical; otherwise writes a JSON object describing the first
 * difference into diff.
 */
bool policy_compare(const struct metrics *a, const double *ea, size_t na,
		    const struct metrics *b, const double *eb, size_t nb, struct buf *diff);

/*
 * The stored trades of a positions run (run_trades, fills.h) as
 * policy_compare_trades sees them: has false for a run without trades
 * (simulate and signal runs, or a run whose replay stored none).
 */
struct rtrades {
	bool               has;
	const struct fill *fills;       /* n_fills records */
	size_t             n_fills;
	size_t             fills_total;
	const double      *positions;   /* n values */
	size_t             n;
};

/*
 * Compare the trades of a run (a, the reference) and its re-execution (b)
 * for a verification, byte for byte: whether each has trades ("trades"),
 * the number of bars ("positions_length"), each bar's position
 * ("position", with its bar), the fills made ("fills_total") and stored
 * ("fills_length"), then each fill record ("fill", with its index, bar and
 * first differing field). true if identical; else the first difference as
 * a JSON object in diff.
 */
bool policy_compare_trades(const struct rtrades *a, const struct rtrades *b, struct buf *diff);

/* Append a double as JSON: shortest round-trip text; non-finite as null. */
void policy_json_double(struct buf *b, double v);

/* ---- executing a job (job.c) ---------------------------------------------- */

/*
 * Cancellation handle of one slot: another thread may call job_cancel() at
 * any time; the executing thread notices it between steps and the running
 * sandbox, if any, is killed at once.
 */
struct job_ctl;

struct job_ctl *job_ctl_new(void);
void job_ctl_free(struct job_ctl *ctl);
/* Ask the job of ctl to stop (reason "cancelled" or "hand_back"). Thread-safe. */
void job_cancel(struct job_ctl *ctl, bool hand_back);
/* True once job_cancel() was called for the current job, and whether to hand back. */
bool job_cancelled(struct job_ctl *ctl, bool *hand_back);
/* Reset the flags before the next job. */
void job_ctl_reset(struct job_ctl *ctl);
/*
 * The on_host hook of bt_request / stream_request with arg = the slot's
 * job_ctl: registers a running sandbox (live 1) or releases it (live 0) so
 * job_cancel() can kill every host the job holds; kills it at once if the
 * job was already cancelled.
 */
void job_on_host(void *arg, struct sbx_run *run, int live);
/*
 * The on_progress hook of stream_request with arg = the slot's job_ctl:
 * the job has done `done` of `total` units (lock-free; called every step).
 * job_ctl_reset clears it.
 */
void job_progress(void *arg, size_t done, size_t total);
/* The current job's progress; false when it reported none (total 0). Thread-safe. */
bool job_progress_get(struct job_ctl *ctl, unsigned long long *done, unsigned long long *total);

struct job_env {
	const char *artifacts_root;   /* ARTIFACTS_DIR: <root>/<run_id>/equity.csv */
	unsigned    box_id;           /* distinct per slot */
	unsigned    spare_box_id;     /* the slot's second box (bt_request.spare_box_id), 0: none */
	struct sbx_limits limits;     /* of every backtest run (runner_limits) */
};

struct config;
/*
 * The limits of backtest runs from AGENTTEST_RUN_CPU_SECONDS,
 * AGENTTEST_RUN_WALL_SECONDS and AGENTTEST_RUN_MEMORY_MB (limits.c; unset
 * keys take the defaults, 60 s, twice the CPU limit, 256 MiB). false with a
 * message in err if a value is malformed or out of range.
 */
bool runner_limits(const struct config *cfg, struct sbx_limits *l, struct buf *err);

/*
 * Execute j: open and check the pinned dataset, run the strategy in the
 * sandbox through the evaluator's backtest API, compute metrics, the audit
 * and the equity; fill *r (status, metrics or error). Writes equity.csv into
 * the artifacts directory (path into artifacts_dir); when that write fails
 * the run still completes, artifacts_dir is left empty and
 * r->artifacts_error says why (logged as artifacts_failed). Never touches
 * the DB.
 */
void job_execute(const struct job_env *env, struct job_ctl *ctl, const struct rjob *j,
		 struct rresult *r, struct buf *artifacts_dir);

/* ---- verified datasets (dscache.c) ----------------------------------------- */

struct dataset;
/*
 * The dataset in directory dir, verified (every hash) when first opened by
 * this process and re-verified whenever any of its files changed identity
 * (name, device, inode, size, mtime). Held until dscache_release. NULL on
 * failure with the run failed in r (`dataset_mismatch` when the bytes no
 * longer match their manifest, else `dataset_error`). Thread-safe.
 */
struct dataset *dscache_acquire(const char *dir, struct rresult *r);
/* Release a dataset from dscache_acquire. */
void dscache_release(struct dataset *ds);
/* Counters: acquires served from the cache, and opens with verification. */
void dscache_stats(unsigned long *hits, unsigned long *opens);
/* Close every unused entry and forget the rest (tests). */
void dscache_clear(void);

#endif

/*
 * runs_view: helpers shared by the strategies, runs, leaderboard, defaults
 * and datasets handlers (issue 5): the run object as the API shows it,
 * ownership checks, JSON text helpers with Python-compatible floats, run ids,
 * and the wake-up datagram to the runners.
 */
#ifndef AGENTTEST_FCGI_RUNS_VIEW_H
#define AGENTTEST_FCGI_RUNS_VIEW_H

#include <stdbool.h>
#include <stddef.h>

#include "buf.h"
#include "fcgi/handler.h"

#define RV_TS_LEN 32
#define RV_NAME_LEN 810

/* A run row with its metrics, as read by rv_load_run (buffers in the arena). */
struct rv_run {
	char      id[37];
	long long owner_id;
	long long strategy_version_id;
	long long strategy_id;
	char      strategy_name[RV_NAME_LEN];  /* strategies.name (VARCHAR(200) utf8mb4) */
	char      owner[RV_NAME_LEN];          /* users.name */
	char      dataset_version[130];
	char      dataset_hash[65], config_hash[65], code_hash[65];
	char      status[16];
	char     *artifacts_error; /* why equity.csv was not written, NULL if it was or none was due */
	char     *params;
	char     *asset;          /* NULL if none */
	bool      audit_requested;
	char     *audit_result;   /* JSON or NULL */
	int       audit_passed;   /* -1 unknown */
	char     *error_code, *error_message, *error_log_tail;  /* NULL if none */
	char      queued_at[RV_TS_LEN], started_at[RV_TS_LEN], completed_at[RV_TS_LEN];
	char      runtime_s[40];  /* "" if NULL */
	long long attempts;
	char     *resources;      /* JSON or NULL */
	char     *verification;   /* JSON or NULL */
	char     *verify_of;      /* NULL unless a verification re-execution */
	bool      cancel_requested;
	bool      has_trades;     /* run_trades holds its fills (GET /runs/{id}/trades) */
	bool      has_metrics;
	char     *metrics_json;   /* complete metrics object (run_metrics.extra) */
	char      m[9][40];       /* total_return .. runtime_s as text */
};

/* The caller's user id and role; false (after replying) on failure. */
bool rv_caller(struct fcgi_ctx *c, long long *uid, bool *admin);

/*
 * Load run `id` (any string; non-UUIDs are simply not found). Returns 1
 * found, 0 not found, -1 after replying a database error.
 */
int rv_load_run(struct fcgi_ctx *c, const char *id, struct rv_run *r);

/* Append the API object of r to b. */
void rv_write_run(struct buf *b, const struct rv_run *r);

/* Append s as a JSON string (canonical escaping). NULL appends null. */
void rv_str(struct buf *b, const char *s);
/* Append a DB double text as a JSON number in Python repr ("" -> null). */
void rv_num(struct buf *b, const char *text);
/* Append JSON text verbatim, or null if NULL or empty. */
void rv_raw(struct buf *b, const char *json);

/* A new random (version 4) UUID, lower case, into out[37]. */
void rv_uuid(char out[37]);

/* Wake the runners of this host (RUNNER_NOTIFY_DIR), best effort. */
void rv_notify(struct fcgi_ctx *c, const char *msg);

/* Send the run as the response with `status`, reloading it first. */
void rv_reply_run(struct fcgi_ctx *c, int status, const char *id);

/*
 * Register the trusted server file `path` (strategies.c): realpath inside
 * TRUSTED_STRATEGY_DIRS, read, checked, stored as a version owned by uid.
 * On success sets *version_id (and *created if not NULL) and returns true;
 * otherwise replies (400/403/404/...) and returns false.
 */
bool st_register_path(struct fcgi_ctx *c, const char *path, long long uid, long long *version_id, bool *created);

/*
 * The syntax and contract check of submitted code (strategy_check.c): the
 * strategy host parses the code inside the sandbox with a short limit
 * (never importing or running it) and reports its kind ("simulate",
 * "positions" or "signal") into kind[16]. On a syntax error or a missing
 * entry point replies 400 (with line and column for syntax errors) and
 * returns false; other failures reply 500/503 and return false. hash is
 * the code's code_hash: verdicts are cached under it (code_checks), so a
 * known code costs one SELECT instead of a sandbox.
 */
bool st_check_code(struct fcgi_ctx *c, const char *code, size_t len, const char *hash, char kind[16]);

/* SQL expression formatting a DATETIME(6) column as RFC 3339 UTC. */
#define RV_TS(col) "DATE_FORMAT(" col ", '%Y-%m-%dT%H:%i:%s.%fZ')"

#endif

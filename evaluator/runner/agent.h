/*
 * agent.h: the runner's agent iteration kind (agent_job.c, table
 * agent_iterations of sql/014) and the harness process it runs
 * (agent_proc.c). docs/agents.md tells the whole loop.
 */
#ifndef AGENTTEST_RUNNER_AGENT_H
#define AGENTTEST_RUNNER_AGENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "buf.h"
#include "db.h"

#define AGENT_PATH_MAX 1024
#define AGENT_EXPORTS  3

struct config;
struct db;
struct job_ctl;

/* Token, USD and request amounts of a budget (a limit, a total or what is left). */
struct agent_llm_budget {
	int64_t tokens, requests;
	double  usd;
};

/* What the LLM drivers need of the runner's configuration (agent_llm.c). */
struct agent_llm_env {
	const char *secret_file;              /* AGENTTEST_SECRET_FILE: opens the secret store */
	char        upstream[512];            /* AGENTTEST_ANTHROPIC_UPSTREAM ("" : the proxy's default) */
	char        command[2048];            /* AGENTTEST_AGENT_COMMAND (driver command) */
	struct agent_llm_budget agent;        /* AGENTTEST_LLM_AGENT_*: an agent's default lifetime budget */
	struct agent_llm_budget owner_day;    /* AGENTTEST_LLM_OWNER_DAY_*: an owner's budget per UTC day */
};

/* One LLM turn's key and budgets (agent_llm_budgets, agent_llm_key). */
struct agent_llm {
	uint64_t owner_id;
	struct buf key;                       /* the Anthropic key; wiped by agent_llm_free */
	struct agent_llm_budget limit, used, left;   /* the agent's lifetime budget */
	struct agent_llm_budget owner_used, owner_left; /* the owner's UTC day */
	char     exhausted[160];              /* the first budget with nothing left, "" none */
};

/* What the agent kind needs of the runner (agent_env_init). */
struct agent_env {
	char        agents_dir[AGENT_PATH_MAX]; /* one directory per agent: <agents_dir>/<id>/ */
	char        loop_dir[AGENT_PATH_MAX];   /* the directory holding agentloop/ */
	char        host_dir[AGENT_PATH_MAX];   /* sandbox/host (the SDK, the built-in agent) */
	char        bin_dir[AGENT_PATH_MAX];    /* agenttest, agenttest-sandbox */
	const char *python;                     /* /usr/bin/python3 */
	long        pause_timeout_s;            /* MANTIS_PAUSE_TIMEOUT */
	char        exports[AGENT_EXPORTS][96];  /* MANTIS_ITER_WALL_TIMEOUT=..., for the harness */
	size_t      nexport;
	const char *db_url;                     /* DATABASE_URL: the activity lines' own connection (NULL: none) */
	struct agent_llm_env llm;               /* the LLM drivers' settings */
};

/*
 * Fill env from the configuration: AGENTTEST_AGENTS_DIR (default
 * $MANTIS_DATA_DIR/agents, else ./agents; created), the harness and host
 * directories next to the runner binary (AGENTTEST_AGENTLOOP_DIR and
 * AGENTTEST_HOST_DIR override), MANTIS_PAUSE_TIMEOUT and the MANTIS_* keys
 * the harness reads. false with a message in err.
 */
bool agent_env_init(struct agent_env *env, const struct config *cfg, struct buf *err);

/* ---- live activity lines (agent_activity.c) ---- */

#define ACT_LINE_MAX  300   /* bytes of one line, after cleaning */
#define ACT_LINES_MAX 1000  /* lines kept per iteration (one more says the rest is cut) */

/* The activity feed of one running iteration. */
struct agent_activity {
	struct db *db;          /* the job's own connection; NULL: lines are dropped */
	char       agent_id[37];
	long long  iteration;
	struct buf partial;     /* a line not yet ended by '\n' */
	size_t     lines;       /* lines taken (written when db is set), the cut notice included */
	bool       failed;      /* an insert failed: the rest is dropped */
};

/* Start the feed of iteration n of agent agent_id on db (may be NULL). */
void agent_activity_init(struct agent_activity *a, struct db *db, const char *agent_id, long long iteration);
/* Bytes the harness wrote on its activity fd: each complete line becomes an
 * `activity` event of the agent (agent_events). Best effort. */
void agent_activity_feed(struct agent_activity *a, const char *data, size_t n);
/* Emit an unterminated last line and free the feed (not db). */
void agent_activity_finish(struct agent_activity *a);
/* Clean n bytes of untrusted text into out (cap bytes with the NUL): invalid
 * UTF-8 becomes U+FFFD, control characters a space, trailing spaces are
 * dropped, cut on a character boundary. Returns the length. */
size_t agent_activity_clean(const char *in, size_t n, char *out, size_t cap);

/*
 * Run the harness with request (a JSON object) on its stdin; its stdout
 * into out. The slot's cancellation (ctl) stops it (*stopped). What it
 * writes on its fd 3 goes to act (NULL: read and dropped). 0 when it
 * exited 0, -1 otherwise (the reason and the tail of its stderr in err).
 */
int agent_proc_run(const struct agent_env *env, struct job_ctl *ctl, const char *request, struct buf *out,
		   struct buf *err, bool *stopped, struct agent_activity *act);
/*
 * What a user may read of a failed harness's err (agent_proc_run's): the
 * last non-empty line its stderr ended with (a traceback's exception line)
 * and the runner's reason (exit status, signal), each absolute path in
 * them replaced by <path>, cleaned like an activity line into out (cap
 * bytes with the NUL). The rest of the tail shows server paths: it goes to
 * the runner's log only. Returns the length.
 */
size_t agent_err_summary(const char *err, char *out, size_t cap);

/*
 * Auto-resume: paused agents whose pause is older than
 * env->pause_timeout_s get their next iteration queued. Returns how many
 * resumed, -1 on a database error (err).
 */
int agent_auto_resume(struct db *db, const struct agent_env *env, struct buf *err);

/*
 * Deleted agents (POST .../delete) with no running iteration: their
 * workspace directory and their rows are removed. Returns how many, -1 on
 * error (err).
 */
int agent_purge_deleted(struct db *db, const struct agent_env *env, struct buf *err);

/*
 * The agent's best iteration by the original's rule on the sealed score:
 * among its completed, error-free iterations with a holdout score, the
 * highest (lower: the lowest) holdout_score; ties keep the earliest. Sets
 * agents.best_iteration and best_score of an agent judged on the holdout
 * (best_by 'holdout'; untouched when none qualifies or best_by is
 * 'forward'). 0, or -1 on a database error (err).
 */
int agent_set_best(struct db *db, const char *agent_id, bool lower, struct buf *err);

/* ---- agent_llm.c: key, budgets and usage of the LLM drivers ---- */

/* Whether driver is an LLM driver (claude-code, command). */
bool agent_llm_driver(const char *driver);

/* Fill e from the configuration (AGENTTEST_LLM_*, AGENTTEST_ANTHROPIC_UPSTREAM, AGENTTEST_AGENT_COMMAND). */
bool agent_llm_env_init(struct agent_llm_env *e, const struct config *cfg, struct buf *err);

/*
 * The agent's budgets, totals and what is left of them, and the owner's
 * UTC day, into l (owner_id too). l->exhausted names a budget with nothing
 * left. 1, 0 no such agent, -1 database error (err).
 */
int agent_llm_budgets(struct db *db, const struct agent_llm_env *e, const char *agent_id, struct agent_llm *l,
		      struct buf *err);

/*
 * The Anthropic key of l->owner_id from the secret store, else the admin
 * default (owner 0), into l->key. 1 found, 0 none, -1 error (err never
 * holds key bytes).
 */
int agent_llm_key(struct db *db, const struct agent_llm_env *e, struct agent_llm *l, struct buf *err);

/* Add budget (what is left of the agent's; the owner's day's limits), owner_id, upstream and command
 * to the request's agent object. */
void agent_llm_request(const struct agent_llm *l, const struct agent_llm_env *e, json_object *agent);

/*
 * out = request (a JSON object's text) with "anthropic_key" first and
 * "database_url" (when db_url is set: the proxy reserves the owner's day
 * there); the caller wipes out.
 */
void agent_llm_splice(const struct agent_llm *l, const char *db_url, const char *request, struct buf *out);

/*
 * Take the turn ledger of the agent directory root (<root>/llm/turn.json,
 * the egress proxy's metering of the current or last turn): read it into
 * *usage as an llm_usage object {tokens {input, output, cache_write,
 * cache_read, total, requests, refused, cost}, exhausted} and remove the
 * file (agent_llm_ledger.c says why). 1 taken, 0 no file, -1 unreadable
 * (err; a malformed file is removed, one that cannot be removed is kept).
 */
int agent_llm_take_ledger(const char *root, json_object **usage, struct buf *err);

/*
 * Record one turn's metered usage (the harness's tokens object: input,
 * output, cache_write, cache_read, requests, refused, cost): add it to the
 * agent's totals, then one agent_llm_usage row (inside the caller's
 * transaction; the owner's day was charged by the proxy, request by
 * request). 0 or -1 (err).
 */
int agent_llm_charge(struct db *db, const struct agent_llm *l, const char *agent_id, long long iteration,
		     const char *job_id, json_object *tokens, const char *exhausted, struct buf *err);

/* Wipe and free the key. */
void agent_llm_free(struct agent_llm *l);

#endif

/*
 * agent_job: the runner's agent iteration kind (rows of agent_iterations,
 * sql/014; queued by POST /api/agents, resume, and by the finishing write
 * of the previous iteration).
 *
 * Theory of operation. A kind of the one job queue (jobq.h): claimed after
 * runs and evaluations, with the same lease, heartbeat, cancel, reap (a
 * dead runner's iteration is queued again and redone from its start: the
 * harness clears the outputs of an interrupted attempt) and guarded finish.
 *   load     the agent's configuration and its current goal (a goal edited
 *            during the previous iteration takes effect now), the recorded
 *            iterations (dev side only: the harness never gets a holdout
 *            number), and the pending operator messages up to the newest
 *            id; for an LLM driver also what is left of its budgets and the
 *            owner's Anthropic key (agent_llm.c); marks the agent running
 *            and logs iteration_started
 *   execute  python3 -m agentloop.job (agent_proc.c): the agent's turn in
 *            the agent sandbox, then trusted scoring (dev and sealed
 *            holdout). An LLM driver with no key fails (no_api_key: the
 *            agent goes to error), one with a budget used up does not run
 *            (budget_exhausted); the key travels only inside the request
 *            on the harness's stdin, which is wiped after the write. The
 *            proxy's turn ledger is the fallback record of an LLM turn's
 *            spending (agent_llm_ledger.c): when the harness fails (the
 *            iteration is retried or fails), is handed back, or died with
 *            an earlier runner, the runner charges the ledger itself on
 *            its own connection, so a failed attempt is never free
 *   commit   in the finishing transaction: an LLM turn's metered usage
 *            (whatever the turn came to), the entry, the delivery of
 *            exactly the messages it was given (newer ones wait for the
 *            next iteration), the agent's counters, memory files and best
 *            iteration (by the sealed holdout score, the original's rule),
 *            then the next step: stopped, completed (done after
 *            min_iterations), max_iterations_reached, paused (a pause
 *            request, the wall-time budget, or an LLM budget: the same
 *            iteration runs again after POST .../resume raises it), or
 *            iteration n+1 queued.
 */
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <json-c/json.h>
#include <sodium.h>

#include "config.h"
#include "db.h"
#include "log.h"
#include "xalloc.h"
#include "evaluator/runner/agent.h"
#include "evaluator/runner/jobq.h"
#include "evaluator/runner/jobs.h"
#include "evaluator/runner/runner.h"

#define AJ_JSON_MAX (1u << 20)

/* The runner's one agent environment (agent_env_init), for kind->load,
 * which the queue calls without the kind's env. */
static const struct agent_env *aj_env;

/* A claimed iteration. */
struct ajob {
	char        id[37], agent_id[37], challenge[70], driver[20], status[32], model[20];
	long long   n, goal_version, seed, min_it, max_it, days_back, max_msg_id;
	char       *goal, *dataset;
	json_object *entries;    /* array: the recorded iterations, dev side */
	struct buf  inbox;       /* INBOX.md of this turn */
	bool        skip;        /* the agent is no longer running: nothing to do */
	json_object *res;        /* the harness's result object */
	bool        llm;         /* an LLM driver (claude-code, command) */
	struct agent_llm lb;     /* its key and budgets */
	char        pre_code[32];/* set at load: the turn does not run (no_api_key, budget_exhausted, internal) */
	struct buf  pre_msg;
};

/* One statement; -1 with the message in err. */
static int aj_ex(struct db *db, const char *sql, const struct db_arg *a, size_t na, struct db_col *c, size_t nc,
		 db_row_fn fn, void *ctx, struct buf *err)
{
	if (db_exec(db, sql, a, na, c, nc, fn, ctx, NULL, 0) != DB_OK) {
		buf_printf(err, "database: %s", db_error(db));
		return -1;
	}
	return 0;
}

/* Row callback: note the row and stop. */
static bool aj_got(void *ctx, const struct db_col *cols, size_t ncols)
{
	(void)cols;
	(void)ncols;
	*(bool *)ctx = true;
	return false;
}

/* Row callback: one recorded iteration (dev side) appended to the entries array. */
static bool aj_entry(void *ctx, const struct db_col *c, size_t nc)
{
	(void)nc;
	json_object *e = json_object_new_object();
	json_object_object_add(e, "iteration", json_object_new_int64(c[0].i));
	json_object_object_add(e, "metrics", c[1].is_null ? NULL : json_tokener_parse(c[1].buf));
	json_object_object_add(e, "analysis", c[2].is_null ? NULL : json_tokener_parse(c[2].buf));
	json_object_object_add(e, "has_error", json_object_new_boolean(c[3].i != 0));
	json_object_object_add(e, "error", c[4].is_null ? NULL : json_object_new_string(c[4].buf));
	json_object_array_add(ctx, e);
	return true;
}

/* Row callback: one pending message appended to INBOX.md text. */
static bool aj_msg(void *ctx, const struct db_col *c, size_t nc)
{
	struct ajob *a = ctx;
	(void)nc;
	if (a->inbox.len)
		buf_puts(&a->inbox, "\n\n");
	if (strcmp(c[3].buf, "message") == 0)
		buf_printf(&a->inbox, "[%s] Operator: %s", c[2].buf, c[1].buf);
	else
		buf_puts(&a->inbox, c[1].buf);
	a->max_msg_id = c[0].i;
	return true;
}

/* The agent's inputs (configuration, goal, dataset path) into a. 1, 0 vanished, -1. */
static int aj_load_agent(struct db *db, struct ajob *a, struct buf *err)
{
	bool found = false;
	char *goal = xmalloc(40004), path[4097];
	struct db_col c[] = { DB_COL_INT, DB_COL_TEXT(a->agent_id), DB_COL_TEXT(a->challenge),
			      { .type = DB_T_TEXT, .buf = goal, .cap = 40004 }, DB_COL_INT, DB_COL_TEXT(a->driver),
			      DB_COL_INT, DB_COL_INT, DB_COL_INT, DB_COL_INT, DB_COL_TEXT(path), DB_COL_TEXT(a->status),
			      DB_COL_TEXT(a->model) };
	struct db_arg k = DB_ARG_TEXT(a->id);
	int rc = aj_ex(db, "SELECT i.iteration, a.id, a.challenge, a.goal, a.goal_version, a.driver, a.seed, "
		       "a.min_iterations, a.max_iterations, a.days_back, d.path, a.status, a.model FROM agent_iterations i "
		       "JOIN agents a ON a.id = i.agent_id JOIN datasets d ON d.id = a.dataset_id WHERE i.id = ?",
		       &k, 1, c, sizeof c / sizeof c[0], aj_got, &found, err);
	if (rc == 0 && found) {
		a->n = c[0].i;
		a->goal = xstrdup(goal);
		a->goal_version = c[4].i;
		a->seed = c[6].i;
		a->min_it = c[7].i;
		a->max_it = c[8].i;
		a->days_back = c[9].i;
		a->dataset = xstrdup(path);
		rc = 1;
	}
	free(goal);
	return rc;
}

/* An LLM driver's budgets and key into a->lb; a turn that cannot run gets a->pre_code. 0 or -1 (database). */
static int aj_load_llm(struct db *db, const struct agent_env *env, struct ajob *a, struct buf *err)
{
	a->llm = true;
	int rc = agent_llm_budgets(db, &env->llm, a->agent_id, &a->lb, err);
	if (rc < 0)
		return -1;
	if (a->lb.exhausted[0]) {
		snprintf(a->pre_code, sizeof a->pre_code, "budget_exhausted");
		buf_printf(&a->pre_msg, "budget: %s", a->lb.exhausted);
		return 0;
	}
	struct buf why = BUF_INIT;
	rc = agent_llm_key(db, &env->llm, &a->lb, &why);
	if (rc == 0) {
		snprintf(a->pre_code, sizeof a->pre_code, "no_api_key");
		buf_printf(&a->pre_msg, "driver %s needs an Anthropic key: none is set for the agent's owner and no "
			   "default is set (POST /api/anthropic-key)", a->driver);
	} else if (rc < 0) {
		snprintf(a->pre_code, sizeof a->pre_code, "internal");
		buf_printf(&a->pre_msg, "%s", buf_cstr(&why));
	}
	buf_free(&why);
	return 0;
}

/* kind->load. */
static int aj_load(struct db *db, const struct jobq_lease *l, void *job, struct buf *err)
{
	struct ajob *a = job;
	snprintf(a->id, sizeof a->id, "%s", l->id);
	a->inbox = (struct buf)BUF_INIT;
	a->pre_msg = (struct buf)BUF_INIT;
	a->lb.key = (struct buf)BUF_INIT;
	int rc = aj_load_agent(db, a, err);
	if (rc <= 0)
		return rc;
	a->skip = strcmp(a->status, "starting") != 0 && strcmp(a->status, "running") != 0;
	if (a->skip)
		return 1;
	if (agent_llm_driver(a->driver) && aj_load_llm(db, aj_env, a, err) != 0)
		return -1;
	a->entries = json_object_new_array();
	struct db_col e[] = { DB_COL_INT, { .type = DB_T_TEXT, .buf = xmalloc(AJ_JSON_MAX), .cap = AJ_JSON_MAX },
			      { .type = DB_T_TEXT, .buf = xmalloc(AJ_JSON_MAX), .cap = AJ_JSON_MAX }, DB_COL_INT,
			      { .type = DB_T_TEXT, .buf = xmalloc(65536), .cap = 65536 } };
	struct db_arg ea[] = { DB_ARG_TEXT(a->agent_id), DB_ARG_INT(a->n) };
	rc = aj_ex(db, "SELECT iteration, metrics, analysis, has_error, error FROM agent_iterations WHERE agent_id = ? "
		   "AND status = 'completed' AND iteration < ? ORDER BY iteration", ea, 2, e, 5, aj_entry, a->entries, err);
	char *text = xmalloc(AJ_JSON_MAX);
	struct db_col m[] = { DB_COL_INT, { .type = DB_T_TEXT, .buf = text, .cap = AJ_JSON_MAX },
			      { .type = DB_T_TEXT, .buf = (char[8]){ 0 }, .cap = 8 },
			      { .type = DB_T_TEXT, .buf = (char[16]){ 0 }, .cap = 16 } };
	if (rc == 0)
		rc = aj_ex(db, "SELECT id, text, DATE_FORMAT(created_at, '%H:%i'), type FROM agent_messages WHERE "
			   "agent_id = ? AND delivered_iteration IS NULL AND superseded = 0 AND type IN ('message','inbox') "
			   "ORDER BY id", ea, 1, m, 4, aj_msg, a, err);
	free(text);
	for (int i = 1; i <= 2; i++)
		free(e[i].buf);
	free(e[4].buf);
	if (rc != 0)
		return -1;
	char ev[96];
	snprintf(ev, sizeof ev, "{\"iteration\":%lld}", a->n);
	struct db_arg s[] = { DB_ARG_TEXT(a->agent_id) };
	struct db_arg evs[] = { DB_ARG_TEXT(a->agent_id), DB_ARG_TEXT(ev) };
	if (aj_ex(db, "UPDATE agents SET status = 'running', updated_at = NOW(6) WHERE id = ? AND status = 'starting'", s,
		  1, NULL, 0, NULL, NULL, err) != 0 ||
	    aj_ex(db, "INSERT INTO agent_events (agent_id, type, data) VALUES (?, 'iteration_started', ?)", evs, 2, NULL,
		  0, NULL, NULL, err) != 0)
		return -1;
	return 1;
}

/* The harness request of a. */
static char *aj_request(const struct ajob *a, const struct agent_env *env)
{
	json_object *r = json_object_new_object(), *ag = json_object_new_object();
	char root[AGENT_PATH_MAX + 40];
	snprintf(root, sizeof root, "%s/%s", env->agents_dir, a->agent_id);
	json_object_object_add(ag, "id", json_object_new_string(a->agent_id));
	json_object_object_add(ag, "root", json_object_new_string(root));
	json_object_object_add(ag, "challenge", json_object_new_string(a->challenge));
	json_object_object_add(ag, "goal", json_object_new_string(a->goal));
	json_object_object_add(ag, "driver", json_object_new_string(a->driver));
	json_object_object_add(ag, "seed", json_object_new_int64(a->seed));
	json_object_object_add(ag, "min_iterations", json_object_new_int64(a->min_it));
	json_object_object_add(ag, "max_iterations", json_object_new_int64(a->max_it));
	json_object_object_add(ag, "days_back", json_object_new_int64(a->days_back));
	json_object_object_add(ag, "dataset", json_object_new_string(a->dataset));
	json_object_object_add(ag, "model", json_object_new_string(a->model));
	if (a->llm)
		agent_llm_request(&a->lb, &env->llm, ag);
	json_object_object_add(r, "agent", ag);
	json_object_object_add(r, "iteration", json_object_new_int64(a->n));
	json_object_object_add(r, "entries", json_object_get(a->entries));
	json_object_object_add(r, "inbox", json_object_new_string(buf_cstr(&a->inbox)));
	char *s = xstrdup(json_object_to_json_string_ext(r, JSON_C_TO_STRING_PLAIN));
	json_object_put(r);
	return s;
}

static const char *aj_str(json_object *o, const char *k);

/*
 * Take the turn ledger left in the agent directory root (usage the
 * harness never reported: agent_llm_ledger.c) and charge it on db in a
 * transaction of its own, `what` naming whose usage it is for the log. The
 * usage was spent whether or not this attempt keeps its lease, so it is
 * charged unguarded. Without a connection (db NULL) the file is left for
 * the next attempt. Returns whether something was charged; a failure is
 * logged with the numbers.
 */
static bool aj_charge_ledger(struct db *db, struct ajob *a, const char *root, const char *what)
{
	json_object *u = NULL, *t = NULL;
	struct buf err = BUF_INIT;
	bool charged = false;
	if (!db) {
		log_msg(LOG_LVL_WARNING, "agent_llm", "agent %s iteration %lld: no database connection: the turn ledger of "
			"%s is left for the next attempt", a->agent_id, a->n, what);
		return false;
	}
	int got = agent_llm_take_ledger(root, &u, &err);
	if (got > 0 && json_object_object_get_ex(u, "tokens", &t)) {
		if (db_begin(db) == DB_OK &&
		    agent_llm_charge(db, &a->lb, a->agent_id, a->n, a->id, t, aj_str(u, "exhausted"), &err) == 0 &&
		    db_commit(db) == DB_OK) {
			charged = true;
			log_msg(LOG_LVL_INFO, "agent_llm", "agent %s iteration %lld: charged the usage of %s: %s", a->agent_id,
				a->n, what, json_object_to_json_string_ext(t, JSON_C_TO_STRING_PLAIN));
		} else {
			db_rollback(db);
			log_msg(LOG_LVL_WARNING, "agent_llm", "agent %s iteration %lld: the usage of %s is not charged: %s (%s)",
				a->agent_id, a->n, what, json_object_to_json_string_ext(t, JSON_C_TO_STRING_PLAIN),
				err.len ? buf_cstr(&err) : db_error(db));
		}
	} else if (got < 0) {
		log_msg(LOG_LVL_WARNING, "agent_llm", "agent %s iteration %lld: the turn ledger of %s: %s", a->agent_id, a->n,
			what, buf_cstr(&err));
	}
	json_object_put(u);
	buf_free(&err);
	return charged;
}

/*
 * Before an LLM turn: charge a turn ledger an earlier attempt left (its
 * runner died before anyone took it), then re-read the budgets so this
 * turn's limits include it. False when a budget has nothing left now (the
 * outcome is set: budget_exhausted).
 */
static bool aj_llm_before(struct db *db, const struct agent_env *env, struct ajob *a, const char *root,
			  struct job_outcome *o)
{
	struct buf err = BUF_INIT;
	if (!aj_charge_ledger(db, a, root, "an earlier attempt whose harness never reported it"))
		return true;
	if (agent_llm_budgets(db, &env->llm, a->agent_id, &a->lb, &err) < 0)
		log_msg(LOG_LVL_WARNING, "agent_llm", "agent %s: budgets not re-read: %s", a->agent_id, buf_cstr(&err));
	buf_free(&err);
	if (!a->lb.exhausted[0])
		return true;
	o->status = JOB_CANCELLED;
	snprintf(o->error_code, sizeof o->error_code, "budget_exhausted");
	buf_printf(&o->message, "budget: %s", a->lb.exhausted);
	return false;
}

/* kind->execute. */
static void aj_execute(const struct jobq_slot *s, const struct jobq_lease *l, void *job, struct job_outcome *o)
{
	struct ajob *a = job;
	const struct agent_env *env = s->env;
	(void)l;
	if (a->skip) {
		o->status = JOB_CANCELLED;
		snprintf(o->error_code, sizeof o->error_code, "cancelled");
		buf_printf(&o->message, "the agent is %s", a->status);
		return;
	}
	if (a->pre_code[0]) {   /* an LLM turn that cannot run (aj_load_llm) */
		o->status = strcmp(a->pre_code, "budget_exhausted") == 0 ? JOB_CANCELLED : JOB_FAILED;
		snprintf(o->error_code, sizeof o->error_code, "%s", a->pre_code);
		buf_puts(&o->message, buf_cstr(&a->pre_msg));
		return;
	}
	struct buf out = BUF_INIT, err = BUF_INIT, keyed = BUF_INIT;
	bool stopped = false;
	struct agent_activity act;   /* live lines on the job's own connection (best effort) */
	struct db *adb = env->db_url ? rdb_connect(env->db_url, &err) : NULL;
	if (!adb && err.len)
		log_msg(LOG_LVL_WARNING, "agent_activity", "agent %s: no live activity lines: %s", a->agent_id,
			buf_cstr(&err));
	buf_reset(&err);
	agent_activity_init(&act, adb, a->agent_id, a->n);
	char root[AGENT_PATH_MAX + 40];
	snprintf(root, sizeof root, "%s/%s", env->agents_dir, a->agent_id);
	if (a->llm && !aj_llm_before(adb, env, a, root, o)) {
		agent_activity_finish(&act);
		if (adb)
			db_free(adb);
		buf_free(&err);
		return;
	}
	char *req = aj_request(a, env);   /* with the budgets aj_llm_before may have re-read */
	if (a->llm)   /* the key and the database URL only inside the request on the harness's stdin pipe */
		agent_llm_splice(&a->lb, env->db_url, req, &keyed);
	int rc = agent_proc_run(env, s->ctl, a->llm ? buf_cstr(&keyed) : req, &out, &err, &stopped, &act);
	if (keyed.data)
		sodium_memzero(keyed.data, keyed.cap);
	buf_free(&keyed);
	agent_activity_finish(&act);
	free(req);
	json_object *res = rc == 0 ? json_tokener_parse(buf_cstr(&out)) : NULL, *st = NULL, *lu = NULL;
	if (a->llm) {
		/* a result with llm_usage reports the turn ledger, charged at commit:
		 * drop the file. Without one (the harness failed), or when the job
		 * is handed back (no commit), the runner charges the file itself. */
		json_object *gone = NULL;
		struct buf why = BUF_INIT;
		bool hand_back = false;
		bool cancelled = job_cancelled(s->ctl, &hand_back);
		if (cancelled && hand_back)
			aj_charge_ledger(adb, a, root, "a turn handed back by a stopping runner");
		else if (res && json_object_object_get_ex(res, "llm_usage", &lu) && json_object_is_type(lu, json_type_object))
			agent_llm_take_ledger(root, &gone, &why);
		else
			aj_charge_ledger(adb, a, root, "an attempt whose harness failed");
		json_object_put(gone);
		buf_free(&why);
	}
	if (adb)
		db_free(adb);
	const char *status = res && json_object_object_get_ex(res, "status", &st) ? json_object_get_string(st) : NULL;
	if (stopped || (status && strcmp(status, "stopped") == 0)) {
		o->status = JOB_CANCELLED;
		snprintf(o->error_code, sizeof o->error_code, "cancelled");
		buf_puts(&o->message, "stopped while running");
		a->res = res;   /* its metered usage is still charged */
	} else if (status && strcmp(status, "budget_exhausted") == 0) {
		o->status = JOB_CANCELLED;
		snprintf(o->error_code, sizeof o->error_code, "budget_exhausted");
		json_object *u = json_object_object_get(res, "llm_usage");
		const char *why = u ? aj_str(u, "exhausted") : NULL;
		buf_printf(&o->message, "budget: %s", why && *why ? why : "an LLM budget is used up");
		a->res = res;
	} else if (status && strcmp(status, "ok") == 0 && json_object_object_get_ex(res, "entry", &st) &&
		   json_object_is_type(st, json_type_object)) {
		o->status = JOB_COMPLETED;
		a->res = res;
	} else {
		/* the trusted side failed (sandbox, harness): retried while attempts
		 * remain. Its stderr names server paths: the operator's log has it
		 * whole, the user the last line without paths. */
		char line[1024];
		log_msg(LOG_LVL_WARNING, "agent_harness_failed", "agent %s iteration %lld: %.3500s", a->agent_id, a->n,
			buf_cstr(&err));
		agent_err_summary(buf_cstr(&err), line, sizeof line);
		job_outcome_fail(o, "internal", "the iteration harness failed: %s", line);
		o->retry = true;
		json_object_put(res);
	}
	buf_free(&out);
	buf_free(&err);
}

/* Field k of the result's entry as JSON text (NULL when null or absent); owned by the result. */
static const char *aj_json(json_object *entry, const char *k)
{
	json_object *v;
	if (!json_object_object_get_ex(entry, k, &v) || !v)
		return NULL;
	return json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN);
}

/* Field k of o as a string (NULL when not a string). */
static const char *aj_str(json_object *o, const char *k)
{
	json_object *v;
	return json_object_object_get_ex(o, k, &v) && json_object_is_type(v, json_type_string)
		? json_object_get_string(v) : NULL;
}

/* Field k of o as number text into out (false when not a finite number). */
static bool aj_num(json_object *o, const char *k, char out[40])
{
	json_object *v;
	if (!json_object_object_get_ex(o, k, &v) ||
	    !(json_object_is_type(v, json_type_double) || json_object_is_type(v, json_type_int)))
		return false;
	snprintf(out, 40, "%.17g", json_object_get_double(v));
	return true;
}

/* Field k of o as a boolean (false when absent). */
static bool aj_bool(json_object *o, const char *k)
{
	json_object *v;
	return json_object_object_get_ex(o, k, &v) && json_object_get_boolean(v);
}

/* Text arg, or NULL. */
static struct db_arg aj_arg(const char *s)
{
	return s ? DB_ARG_TEXT(s) : DB_ARG_NULL;
}

/* Write the entry of a completed iteration into its row. */
static int aj_write_entry(struct db *db, const struct ajob *a, struct buf *err)
{
	json_object *e = json_object_object_get(a->res, "entry");
	char as[40], ss[40], es[40], sc[40], hs[40];
	bool has_as = aj_num(e, "agent_s", as), has_ss = aj_num(e, "score_s", ss), has_es = aj_num(e, "elapsed_s", es);
	bool has_sc = aj_num(a->res, "score", sc), has_hs = aj_num(a->res, "holdout_score", hs);
	struct db_arg u[] = {
		aj_arg(aj_json(e, "metrics")), aj_arg(aj_json(e, "holdout_metrics")), aj_arg(aj_json(e, "analysis")),
		DB_ARG_INT(aj_bool(e, "has_error")), aj_arg(aj_str(e, "error")), aj_arg(aj_str(e, "holdout_error")),
		has_as ? DB_ARG_TEXT(as) : DB_ARG_NULL, has_ss ? DB_ARG_TEXT(ss) : DB_ARG_NULL,
		has_es ? DB_ARG_TEXT(es) : DB_ARG_NULL, aj_arg(aj_json(e, "tokens")), aj_arg(aj_str(e, "code_hash")),
		aj_arg(aj_str(a->res, "code")), DB_ARG_INT(aj_bool(e, "done_signal")), DB_ARG_INT(aj_bool(e, "timed_out")),
		has_sc ? DB_ARG_TEXT(sc) : DB_ARG_NULL, has_hs ? DB_ARG_TEXT(hs) : DB_ARG_NULL,
		DB_ARG_INT(a->goal_version), DB_ARG_TEXT(a->id),
	};
	return aj_ex(db, "UPDATE agent_iterations SET metrics = ?, holdout_metrics = ?, analysis = ?, has_error = ?, "
		     "error = ?, holdout_error = ?, agent_s = ?, score_s = ?, elapsed_s = ?, tokens = ?, code_hash = ?, "
		     "code = ?, done_signal = ?, timed_out = ?, score = ?, holdout_score = ?, goal_version = ? WHERE id = ?",
		     u, sizeof u / sizeof u[0], NULL, 0, NULL, NULL, err);
}

/* Set the agent's status (and detail) with a status event. */
static int aj_status(struct db *db, const char *agent, const char *status, const char *detail, struct buf *err)
{
	struct db_arg a[] = { DB_ARG_TEXT(status), aj_arg(detail), DB_ARG_TEXT(agent) };
	json_object *o = json_object_new_object();
	json_object_object_add(o, "status", json_object_new_string(status));
	if (detail)
		json_object_object_add(o, "detail", json_object_new_string(detail));
	struct db_arg ev[] = { DB_ARG_TEXT(agent), DB_ARG_TEXT(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN)) };
	int rc = aj_ex(db, "UPDATE agents SET status = ?, status_detail = ?, updated_at = NOW(6) WHERE id = ?", a, 3,
		       NULL, 0, NULL, NULL, err);
	if (rc == 0)
		rc = aj_ex(db, "INSERT INTO agent_events (agent_id, type, data) VALUES (?, 'status', ?)", ev, 2, NULL, 0,
			   NULL, NULL, err);
	json_object_put(o);
	return rc;
}

/* The agent's counters, memory, best iteration and the scored event. */
/* The best iteration by the sealed score (agent.h). */
int agent_set_best(struct db *db, const char *agent_id, bool lower, struct buf *err)
{
	struct db_arg k[] = { DB_ARG_TEXT(agent_id), DB_ARG_TEXT(agent_id) };
	/* the original's rule on the sealed score: among error-free iterations the
	 * highest (lowest) primary holdout metric, ties keep the earliest (agents
	 * judged on forward scores are updated by the forward job, issue 18) */
	return aj_ex(db, lower ?
		     "UPDATE agents a JOIN (SELECT iteration, holdout_score FROM agent_iterations WHERE agent_id = ? AND "
		     "status = 'completed' AND has_error = 0 AND holdout_score IS NOT NULL ORDER BY holdout_score ASC, "
		     "iteration ASC LIMIT 1) b SET a.best_iteration = b.iteration, a.best_score = b.holdout_score WHERE "
		     "a.id = ? AND a.best_by = 'holdout'" :
		     "UPDATE agents a JOIN (SELECT iteration, holdout_score FROM agent_iterations WHERE agent_id = ? AND "
		     "status = 'completed' AND has_error = 0 AND holdout_score IS NOT NULL ORDER BY holdout_score DESC, "
		     "iteration ASC LIMIT 1) b SET a.best_iteration = b.iteration, a.best_score = b.holdout_score WHERE "
		     "a.id = ? AND a.best_by = 'holdout'",
		     k, 2, NULL, 0, NULL, NULL, err);
}

static int aj_update_agent(struct db *db, const struct ajob *a, struct buf *err)
{
	json_object *e = json_object_object_get(a->res, "entry");
	char es[40] = "0";
	aj_num(e, "elapsed_s", es);
	struct db_arg u[] = { DB_ARG_INT(a->n), DB_ARG_TEXT(es), aj_arg(aj_str(a->res, "state_md")),
			      aj_arg(aj_str(a->res, "notes")), aj_arg(aj_str(a->res, "stdout_tail")),
			      DB_ARG_TEXT(a->agent_id) };
	if (aj_ex(db, "UPDATE agents SET iterations_done = ?, wall_s_used = wall_s_used + ?, state_md = ?, notes = ?, "
		  "stdout_tail = ?, updated_at = NOW(6) WHERE id = ?", u, 6, NULL, 0, NULL, NULL, err) != 0)
		return -1;
	const char *dir = aj_str(a->res, "direction");
	if (agent_set_best(db, a->agent_id, dir && strcmp(dir, "lower") == 0, err) != 0)
		return -1;
	json_object *ev = json_object_new_object(), *v;
	json_object_object_add(ev, "iteration", json_object_new_int64(a->n));
	json_object_object_add(ev, "has_error", json_object_new_boolean(aj_bool(e, "has_error")));
	json_object_object_add(ev, "score", json_object_object_get_ex(a->res, "score", &v) ? json_object_get(v) : NULL);
	json_object_object_add(ev, "holdout_score",
			       json_object_object_get_ex(a->res, "holdout_score", &v) ? json_object_get(v) : NULL);
	struct db_arg ea[] = { DB_ARG_TEXT(a->agent_id),
			       DB_ARG_TEXT(json_object_to_json_string_ext(ev, JSON_C_TO_STRING_PLAIN)) };
	int rc = aj_ex(db, "INSERT INTO agent_events (agent_id, type, data) VALUES (?, 'iteration_scored', ?)", ea, 2,
		       NULL, 0, NULL, NULL, err);
	json_object_put(ev);
	return rc;
}

/* After iteration n: stop, finish, pause, or queue n + 1. */
static int aj_next(struct db *db, const struct ajob *a, struct buf *err)
{
	char status[32] = "", left[40] = "";
	bool found = false;
	struct db_col c[] = { DB_COL_TEXT(status), DB_COL_INT, DB_COL_INT, DB_COL_TEXT(left), DB_COL_INT };
	struct db_arg k = DB_ARG_TEXT(a->agent_id);
	if (aj_ex(db, "SELECT status, paused_at IS NOT NULL, max_iterations, CAST(budget_wall_s - wall_s_used AS CHAR), "
		  "goal_version FROM agents WHERE id = ? FOR UPDATE", &k, 1, c, 5, aj_got, &found, err) != 0)
		return -1;
	if (!found || (strcmp(status, "running") != 0 && strcmp(status, "starting") != 0))
		return 0;   /* stopped (or deleted) while the iteration ran */
	json_object *e = json_object_object_get(a->res, "entry");
	if (aj_bool(e, "done_signal"))
		return aj_status(db, a->agent_id, "completed", "the agent signalled done", err);
	if (a->n >= c[2].i)
		return aj_status(db, a->agent_id, "max_iterations_reached", NULL, err);
	if (!c[3].is_null && strtod(left, NULL) <= 0)
		return aj_status(db, a->agent_id, "paused", "budget: the wall-time budget is used up", err);
	if (a->llm && a->lb.exhausted[0]) {   /* re-read after this turn's charge (aj_charge) */
		char d[200];
		snprintf(d, sizeof d, "budget: %s", a->lb.exhausted);
		return aj_status(db, a->agent_id, "paused", d, err);
	}
	if (c[1].i)
		return aj_status(db, a->agent_id, "paused", NULL, err);
	struct db_arg q[] = { DB_ARG_TEXT(a->agent_id), DB_ARG_INT(a->n + 1), DB_ARG_INT(c[4].i) };
	return aj_ex(db, "INSERT INTO agent_iterations (id, agent_id, iteration, goal_version) VALUES (UUID(), ?, ?, ?)",
		     q, 3, NULL, 0, NULL, NULL, err);
}

/*
 * An LLM turn's metered usage into the database (agent_llm_charge), then
 * the budgets re-read into a->lb (exhausted names one with nothing left).
 */
static int aj_charge(struct db *db, struct ajob *a, struct buf *err)
{
	json_object *u = a->res ? json_object_object_get(a->res, "llm_usage") : NULL, *t;
	if (!u || !json_object_object_get_ex(u, "tokens", &t) || !json_object_is_type(t, json_type_object))
		return 0;
	if (agent_llm_charge(db, &a->lb, a->agent_id, a->n, a->id, t, aj_str(u, "exhausted"), err) != 0)
		return -1;
	return !aj_env || agent_llm_budgets(db, &aj_env->llm, a->agent_id, &a->lb, err) >= 0 ? 0 : -1;
}

/* kind->commit: the usage, the entry, the delivered messages, the agent, the next step. */
static int aj_commit(struct db *db, const struct jobq_lease *l, void *job, const struct job_outcome *o,
		     struct buf *err)
{
	struct ajob *a = job;
	(void)l;
	if (a->skip || !a->agent_id[0])
		return 0;
	if (a->llm && aj_charge(db, a, err) != 0)
		return -1;
	if (o->status == JOB_FAILED)
		return aj_status(db, a->agent_id, "error", buf_cstr(&o->message), err);
	if (o->status == JOB_CANCELLED && strcmp(o->error_code, "budget_exhausted") == 0) {
		/* nothing recorded; the workspace stays and resume runs iteration n again */
		char d[200];
		snprintf(d, sizeof d, "%s", a->lb.exhausted[0] ? "budget: " : "");
		snprintf(d + strlen(d), sizeof d - strlen(d), "%s",
			 a->lb.exhausted[0] ? a->lb.exhausted : buf_cstr(&o->message));
		return aj_status(db, a->agent_id, "paused", d, err);
	}
	if (o->status != JOB_COMPLETED || !a->res)
		return 0;
	struct db_arg m[] = { DB_ARG_INT(a->n), DB_ARG_TEXT(a->agent_id), DB_ARG_INT(a->max_msg_id) };
	if (aj_write_entry(db, a, err) != 0 ||
	    (a->max_msg_id > 0 &&
	     aj_ex(db, "UPDATE agent_messages SET delivered_iteration = ? WHERE agent_id = ? AND id <= ? AND "
		   "delivered_iteration IS NULL AND superseded = 0 AND type IN ('message','inbox')", m, 3, NULL, 0,
		   NULL, NULL, err) != 0) ||
	    aj_update_agent(db, a, err) != 0)
		return -1;
	return aj_next(db, a, err);
}

/* kind->release. */
static void aj_release(void *job)
{
	struct ajob *a = job;
	free(a->goal);
	free(a->dataset);
	json_object_put(a->entries);
	json_object_put(a->res);
	buf_free(&a->inbox);
	buf_free(&a->pre_msg);
	agent_llm_free(&a->lb);
	memset(a, 0, sizeof *a);
}

const struct job_kind agent_kind = {
	.name = "agent_iteration", .table = "agent_iterations", .lease_s = RUNNER_LEASE_S,
	.job_size = sizeof(struct ajob), .load = aj_load, .execute = aj_execute, .commit = aj_commit,
	.release = aj_release, .owner_col = "agent_id",   /* fair between agents */
};

/* ---- auto-resume ----------------------------------------------------------- */

/* Row callback: collect agent ids (NUL-separated) to resume. */
static bool aj_resume_row(void *ctx, const struct db_col *c, size_t nc)
{
	(void)nc;
	buf_append(ctx, c[0].buf, strlen(c[0].buf) + 1);
	return true;
}

int agent_auto_resume(struct db *db, const struct agent_env *env, struct buf *err)
{
	struct buf ids = BUF_INIT;
	char id[40];
	struct db_col c = DB_COL_TEXT(id);
	struct db_arg t = DB_ARG_INT(env->pause_timeout_s);
	int n = 0;
	if (aj_ex(db, "SELECT id FROM agents WHERE status = 'paused' AND paused_at IS NOT NULL AND "
		  "paused_at < NOW(6) - INTERVAL ? SECOND LIMIT 32", &t, 1, &c, 1, aj_resume_row, &ids, err) != 0) {
		buf_free(&ids);
		return -1;
	}
	for (const char *p = ids.data; p && p < ids.data + ids.len; p += strlen(p) + 1) {
		struct db_arg k = DB_ARG_TEXT(p);
		struct db_result r = { 0 };
		if (db_begin(db) != DB_OK ||
		    db_exec(db, "UPDATE agents SET status = 'running', paused_at = NULL, status_detail = NULL, "
			    "updated_at = NOW(6) WHERE id = ? AND status = 'paused' AND paused_at IS NOT NULL", &k, 1, NULL,
			    0, NULL, NULL, &r, 0) != DB_OK)
			goto fail;
		if (r.affected == 0) {
			db_rollback(db);
			continue;
		}
		struct db_arg q[] = { DB_ARG_TEXT(p) };
		struct db_arg ev[] = { DB_ARG_TEXT(p) };
		if (db_exec(db, "DELETE i FROM agent_iterations i JOIN agents a ON a.id = i.agent_id WHERE a.id = ? AND "
			    "i.iteration = a.iterations_done + 1 AND i.status IN ('failed','cancelled')", q, 1, NULL, 0, NULL,
			    NULL, NULL, 0) != DB_OK ||
		    db_exec(db, "INSERT INTO agent_iterations (id, agent_id, iteration, goal_version) SELECT UUID(), id, "
			    "iterations_done + 1, goal_version FROM agents WHERE id = ?", q, 1, NULL, 0, NULL, NULL, NULL,
			    0) != DB_OK ||
		    db_exec(db, "INSERT INTO agent_events (agent_id, type, data) VALUES (?, 'status', "
			    "'{\"status\":\"running\",\"detail\":\"resumed after MANTIS_PAUSE_TIMEOUT\"}')", ev, 1, NULL, 0,
			    NULL, NULL, NULL, 0) != DB_OK ||
		    db_commit(db) != DB_OK)
			goto fail;
		n++;
	}
	buf_free(&ids);
	return n;
fail:
	buf_printf(err, "database: %s", db_error(db));
	db_rollback(db);
	buf_free(&ids);
	return -1;
}

/* nftw callback: remove one entry (children first; symlinks are not followed). */
static int aj_rm(const char *path, const struct stat *st, int flag, struct FTW *f)
{
	(void)st;
	(void)f;
	return (flag == FTW_DP ? rmdir(path) : unlink(path)) == 0 || errno == ENOENT ? 0 : -1;
}

int agent_purge_deleted(struct db *db, const struct agent_env *env, struct buf *err)
{
	struct buf ids = BUF_INIT;
	char id[40];
	struct db_col c = DB_COL_TEXT(id);
	int n = 0;
	if (aj_ex(db, "SELECT id FROM agents a WHERE deleted_at IS NOT NULL AND NOT EXISTS (SELECT 1 FROM "
		  "agent_iterations i WHERE i.agent_id = a.id AND i.status = 'running') LIMIT 16", NULL, 0, &c, 1,
		  aj_resume_row, &ids, err) != 0) {
		buf_free(&ids);
		return -1;
	}
	for (const char *p = ids.data; p && p < ids.data + ids.len; p += strlen(p) + 1) {
		char dir[AGENT_PATH_MAX + 40];
		if (strlen(p) != 36 || strchr(p, '/') || strchr(p, '.'))
			continue;   /* never a path outside agents_dir */
		snprintf(dir, sizeof dir, "%s/%s", env->agents_dir, p);
		if (nftw(dir, aj_rm, 16, FTW_DEPTH | FTW_PHYS) != 0 && errno != ENOENT) {
			buf_printf(err, "cannot remove %s: %s", dir, strerror(errno));
			buf_free(&ids);
			return -1;
		}
		struct db_arg k = DB_ARG_TEXT(p);
		if (aj_ex(db, "DELETE FROM agents WHERE id = ? AND deleted_at IS NOT NULL", &k, 1, NULL, 0, NULL, NULL,
			  err) != 0) {
			buf_free(&ids);
			return -1;
		}
		n++;
	}
	buf_free(&ids);
	return n;
}

/* ---- environment ------------------------------------------------------------- */

/* dst = the directory of /proc/self/exe. */
static bool aj_exe_dir(char *dst, size_t n)
{
	char exe[PATH_MAX];
	ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (k <= 0)
		return false;
	exe[k] = '\0';
	char *slash = strrchr(exe, '/');
	if (!slash)
		return false;
	*slash = '\0';
	return (size_t)snprintf(dst, n, "%s", exe) < n;
}

/* dst = the real path of base/rel when it is a directory holding `probe`. */
static bool aj_find_dir(char *dst, size_t n, const char *base, const char *rel, const char *probe)
{
	char cand[PATH_MAX + 64], p[PATH_MAX + 128];
	struct stat st;
	snprintf(cand, sizeof cand, "%s/%s", base, rel);
	snprintf(p, sizeof p, "%s/%s", cand, probe);
	if (stat(p, &st) != 0)
		return false;
	char *real = realpath(cand, NULL);
	bool ok = real && (size_t)snprintf(dst, n, "%s", real) < n;
	free(real);
	return ok;
}

bool agent_env_init(struct agent_env *env, const struct config *cfg, struct buf *err)
{
	const char *v;
	memset(env, 0, sizeof *env);
	env->python = "/usr/bin/python3";
	env->pause_timeout_s = cfg->pause_timeout_s;
	env->db_url = cfg->database_url;
	if (!aj_exe_dir(env->bin_dir, sizeof env->bin_dir)) {
		buf_puts(err, "cannot find the runner's own directory");
		return false;
	}
	if ((v = config_get(cfg, "AGENTTEST_AGENTS_DIR")) && *v)
		snprintf(env->agents_dir, sizeof env->agents_dir, "%s", v);
	else if ((v = config_get(cfg, "MANTIS_DATA_DIR")) && *v)
		snprintf(env->agents_dir, sizeof env->agents_dir, "%s/agents", v);
	else
		snprintf(env->agents_dir, sizeof env->agents_dir, "agents");
	if (mkdir(env->agents_dir, 0700) != 0 && errno != EEXIST) {
		buf_printf(err, "AGENTTEST_AGENTS_DIR %s: %s", env->agents_dir, strerror(errno));
		return false;
	}
	char *real = realpath(env->agents_dir, NULL);
	if (real) {
		snprintf(env->agents_dir, sizeof env->agents_dir, "%s", real);
		free(real);
	}
	v = getenv("AGENTTEST_AGENTLOOP_DIR");
	if (!(v && *v && aj_find_dir(env->loop_dir, sizeof env->loop_dir, v, ".", "agentloop/job.py")) &&
	    !aj_find_dir(env->loop_dir, sizeof env->loop_dir, env->bin_dir, "../evaluator/runner", "agentloop/job.py") &&
	    !aj_find_dir(env->loop_dir, sizeof env->loop_dir, env->bin_dir, "../share/agenttest/runner",
			 "agentloop/job.py")) {
		buf_puts(err, "cannot find the agent harness (agentloop/job.py; set AGENTTEST_AGENTLOOP_DIR)");
		return false;
	}
	v = getenv("AGENTTEST_HOST_DIR");
	if (!(v && *v && aj_find_dir(env->host_dir, sizeof env->host_dir, v, ".", "agenttest_agent")) &&
	    !aj_find_dir(env->host_dir, sizeof env->host_dir, env->bin_dir, "../sandbox/host", "agenttest_agent") &&
	    !aj_find_dir(env->host_dir, sizeof env->host_dir, env->bin_dir, "../share/agenttest/host",
			 "agenttest_agent")) {
		buf_puts(err, "cannot find the strategy host directory (AGENTTEST_HOST_DIR)");
		return false;
	}
	static const char *const keys[AGENT_EXPORTS] = { "MANTIS_ITER_WALL_TIMEOUT", "MANTIS_CLAUDE_TIMEOUT",
							  "MANTIS_CONTAINER_MEM_PCT" };
	for (size_t i = 0; i < AGENT_EXPORTS; i++)
		if ((v = config_get(cfg, keys[i])) && *v)
			snprintf(env->exports[env->nexport++], sizeof env->exports[0], "%s=%.64s", keys[i], v);
	if (!agent_llm_env_init(&env->llm, cfg, err))
		return false;
	aj_env = env;
	return true;
}

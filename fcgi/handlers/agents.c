/*
 * agents: research agents, create, list and detail (issue 15; the other
 * routes are in agents_ctl.c, agents_view.c, agents_io.c, agents_events.c).
 *
 *   POST /api/agents {challenge, goal, model?, min_iterations?,
 *        max_iterations?, days_back?, driver?, budget?: {iterations?,
 *        wall_s?, tokens?, usd?, requests?}} (the last three: the LLM
 *        drivers' lifetime budgets, default AGENTTEST_LLM_AGENT_*)
 *        -> 201 {id, status: "starting"}: the agent row, goal version 1 and
 *        iteration 1 queued in one transaction (the runner's agent kind,
 *        evaluator/runner/agent_job.c, takes it), then a wake-up datagram.
 *        At MANTIS_MAX_AGENTS agents starting or running: 429 with
 *        Retry-After.
 *   GET  /api/agents?full=0|1 -> the caller's agents (admins: all), newest
 *        first, with a strong ETag (SHA-256 of the body, first 16 hex, as
 *        the original) and 304 on a matching If-None-Match.
 *   GET  /api/agents/{id} -> the detail (ag_detail).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "agent_driver.h"
#include "evaluator/challenges/challenges.h"
#include "fcgi/app.h"
#include "fcgi/handlers/agents.h"
#include "fcgi/handlers/forward_view.h"
#include "fcgi/handlers/handlers.h"
#include "fcgi/handlers/runs_view.h"

/* ---- shared helpers ---------------------------------------------------- */

size_t ag_chars(const char *s)
{
	size_t n = 0;
	for (; *s; s++)
		n += ((unsigned char)*s & 0xC0) != 0x80;
	return n;
}

struct db_col ag_text_col(struct fcgi_ctx *c, size_t cap)
{
	struct db_col col = { .type = DB_T_TEXT, .buf = arena_alloc(fcgi_arena(c), cap), .cap = cap };
	return col;
}

json_object *ag_parse(const char *text)
{
	if (!text || !*text)
		return NULL;
	return json_tokener_parse(text);
}

json_object *ag_num(const char *text)
{
	if (!text || !*text)
		return NULL;
	char *end;
	double v = strtod(text, &end);
	if (*end || !isfinite(v))
		return NULL;
	if (v == floor(v) && fabs(v) < 9e15 && !strchr(text, '.') && !strchr(text, 'e'))
		return json_object_new_int64((int64_t)v);
	return json_object_new_double_s(v, text);
}

/* Row callback: note that a row came. */
static bool ag_got(void *ctx, const struct db_col *cols, size_t ncols)
{
	(void)cols;
	(void)ncols;
	*(bool *)ctx = true;
	return false;
}

int ag_find(struct fcgi_ctx *c, const char *id, bool lock, struct ag_row *a)
{
	long long uid;
	bool admin, found = false;
	memset(a, 0, sizeof *a);
	if (!rv_caller(c, &uid, &admin))
		return -1;
	if (!id || strlen(id) != 36) {
		fcgi_reply_error(c, 404, "not_found", "no agent %.64s", id ? id : "");
		return 0;
	}
	struct db_col cols[] = { DB_COL_TEXT(a->id), DB_COL_INT, DB_COL_TEXT(a->status), DB_COL_INT, DB_COL_INT,
				 DB_COL_INT, DB_COL_INT, DB_COL_INT, DB_COL_INT, DB_COL_TEXT(a->challenge) };
	struct db_arg args[] = { DB_ARG_TEXT(id), DB_ARG_INT(uid), DB_ARG_INT(admin ? 1 : 0) };
	enum db_status st = db_exec(fcgi_db(c), lock ?
		"SELECT id, owner_id, status, paused_at IS NOT NULL, iterations_done, min_iterations, max_iterations, "
		"goal_version, (SELECT COUNT(*) FROM agent_iterations i WHERE i.agent_id = agents.id AND i.status IN "
		"('queued','running')), challenge FROM agents WHERE id = ? AND deleted_at IS NULL AND (owner_id = ? OR ? = 1) FOR UPDATE" :
		"SELECT id, owner_id, status, paused_at IS NOT NULL, iterations_done, min_iterations, max_iterations, "
		"goal_version, (SELECT COUNT(*) FROM agent_iterations i WHERE i.agent_id = agents.id AND i.status IN "
		"('queued','running')), challenge FROM agents WHERE id = ? AND deleted_at IS NULL AND (owner_id = ? OR ? = 1)",
		args, 3, cols, sizeof cols / sizeof cols[0], ag_got, &found, NULL, lock ? 0 : DB_IDEMPOTENT);
	if (st != DB_OK) {
		db_rollback(fcgi_db(c));
		fcgi_reply_db_error(c, st);
		return -1;
	}
	if (!found) {
		db_rollback(fcgi_db(c));
		fcgi_reply_error(c, 404, "not_found", "no agent %s", id);
		return 0;
	}
	a->owner_id = cols[1].i;
	a->paused = cols[3].i != 0;
	a->iterations_done = cols[4].i;
	a->min_iterations = cols[5].i;
	a->max_iterations = cols[6].i;
	a->goal_version = cols[7].i;
	a->active = cols[8].i;
	a->next_iteration = a->iterations_done + 1;
	return 1;
}

/* The status shown for a stored status and the number of active iterations. */
static const char *shown_status(const char *status, long long active)
{
	if ((strcmp(status, "running") == 0 || strcmp(status, "starting") == 0) && active == 0)
		return "crashed";
	return status;
}

const char *ag_shown_status(const struct ag_row *a)
{
	return shown_status(a->status, a->active);
}

enum db_status ag_queue_iteration(struct db *db, const char *id, long long n, long long goal_version)
{
	char iid[37];
	rv_uuid(iid);
	struct db_arg args[] = { DB_ARG_TEXT(iid), DB_ARG_TEXT(id), DB_ARG_INT(n), DB_ARG_INT(goal_version) };
	/* an attempt at n that ended failed or cancelled (a crash, a stop) makes room */
	enum db_status st = db_exec(db, "DELETE FROM agent_iterations WHERE id <> ? AND agent_id = ? AND iteration = ? AND "
				    "status IN ('failed','cancelled')", args, 3, NULL, 0, NULL, NULL, NULL, 0);
	if (st != DB_OK)
		return st;
	return db_exec(db, "INSERT INTO agent_iterations (id, agent_id, iteration, goal_version) VALUES (?, ?, ?, ?)",
		       args, 4, NULL, 0, NULL, NULL, NULL, 0);
}

enum db_status ag_event(struct db *db, const char *id, const char *type, const char *json)
{
	struct db_arg args[] = { DB_ARG_TEXT(id), DB_ARG_TEXT(type), DB_ARG_TEXT(json) };
	return db_exec(db, "INSERT INTO agent_events (agent_id, type, data) VALUES (?, ?, ?)", args, 3, NULL, 0, NULL,
		       NULL, NULL, 0);
}

enum db_status ag_set_status(struct db *db, const char *id, const char *status, const char *detail)
{
	struct db_arg args[] = { DB_ARG_TEXT(status), detail ? DB_ARG_TEXT(detail) : DB_ARG_NULL, DB_ARG_TEXT(id) };
	enum db_status st = db_exec(db, "UPDATE agents SET status = ?, status_detail = ?, updated_at = NOW(6) "
				    "WHERE id = ?", args, 3, NULL, 0, NULL, NULL, NULL, 0);
	if (st != DB_OK)
		return st;
	json_object *o = json_object_new_object();
	json_object_object_add(o, "status", json_object_new_string(status));
	if (detail)
		json_object_object_add(o, "detail", json_object_new_string(detail));
	st = ag_event(db, id, "status", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
	json_object_put(o);
	return st;
}

bool ag_llm_budget_fields(struct fcgi_ctx *c, json_object *budget, int64_t *tokens, double *usd, int64_t *requests)
{
	return fcgi_json_int(c, budget, "tokens", FIELD_OPTIONAL | FIELD_NULLABLE, 1, AG_LLM_TOKENS_MAX, tokens) &&
	       fcgi_json_number(c, budget, "usd", FIELD_OPTIONAL | FIELD_NULLABLE, 0.000001, AG_LLM_USD_MAX, usd) &&
	       fcgi_json_int(c, budget, "requests", FIELD_OPTIONAL | FIELD_NULLABLE, 1, AG_LLM_REQUESTS_MAX, requests);
}

/* ---- create ------------------------------------------------------------ */

/* The dataset the agent pins: id and hash of version v, which must carry the
 * extra field challenge `def` needs (unless `imported`). 1, 0 refused
 * (replied: not registered, dataset_lacks_field), -1 replied. */
static int ag_dataset(struct fcgi_ctx *c, const char *v, const struct ch_def *def, bool imported, long long *did,
		      char hash[70])
{
	char path[1030];
	struct db_col cols[] = { DB_COL_INT, { .type = DB_T_TEXT, .buf = hash, .cap = 70 }, DB_COL_TEXT(path) };
	struct db_arg a = DB_ARG_TEXT(v);
	struct db_result r = { 0 };
	enum db_status st = db_exec(fcgi_db(c), "SELECT id, dataset_hash, path FROM datasets WHERE version = ?", &a, 1,
				    cols, 3, NULL, NULL, &r, DB_IDEMPOTENT);
	if (st != DB_OK) {
		fcgi_reply_db_error(c, st);
		return -1;
	}
	if (r.rows == 0) {
		fcgi_reply_error(c, 400, "invalid_field", "dataset_version '%s' is not registered (see GET /datasets)", v);
		return 0;
	}
	/* an imported agent keeps the record it had; a new one must be able to run */
	if (def && !imported && !ch_dataset_fits(c, def, v, path))
		return 0;
	*did = cols[0].i;
	return 1;
}

int ag_create(struct fcgi_ctx *c, const struct ag_new *n, char id[37])
{
	long long uid, did;
	bool admin;
	char hash[70];
	if (!rv_caller(c, &uid, &admin))
		return 0;
	const char *dsv = n->dataset_version;
	if (!dsv) {
		dsv = fcgi_config(c, "DATASET_VERSION");
		if (!dsv || !*dsv)
			dsv = "synth-v1";
	}
	if (ag_dataset(c, dsv, ch_lookup(n->challenge), n->imported, &did, hash) <= 0)
		return 0;
	long max = fcgi_ctx_app(c)->cfg->max_agents;
	struct db *db = fcgi_db(c);
	rv_uuid(id);
	char budget[40], usd[40];
	snprintf(budget, sizeof budget, "%.17g", n->budget_wall_s);
	snprintf(usd, sizeof usd, "%.17g", n->budget_usd);
	struct db_arg ins[] = {
		DB_ARG_TEXT(id), DB_ARG_INT(uid), DB_ARG_TEXT(n->challenge), DB_ARG_TEXT(n->goal), DB_ARG_TEXT(n->model),
		DB_ARG_TEXT(n->driver), DB_ARG_INT(n->min_iterations), DB_ARG_INT(n->max_iterations),
		DB_ARG_INT(n->days_back), DB_ARG_INT(n->seed), n->budget_wall_s >= 0 ? DB_ARG_TEXT(budget) : DB_ARG_NULL,
		DB_ARG_INT(did), DB_ARG_TEXT(dsv), DB_ARG_TEXT(hash),
		n->cloned_from ? DB_ARG_TEXT(n->cloned_from) : DB_ARG_NULL,
		n->fork_iteration > 0 ? DB_ARG_INT(n->fork_iteration) : DB_ARG_NULL,
		DB_ARG_TEXT(n->imported ? "completed" : "starting"), DB_ARG_INT(n->imported ? 1 : 0),
		DB_ARG_INT(n->iterations_done),
		n->budget_tokens > 0 ? DB_ARG_INT(n->budget_tokens) : DB_ARG_NULL,
		n->budget_usd > 0 ? DB_ARG_TEXT(usd) : DB_ARG_NULL,
		n->budget_requests > 0 ? DB_ARG_INT(n->budget_requests) : DB_ARG_NULL,
		DB_ARG_TEXT(n->best_by ? n->best_by : "holdout"),
	};
	struct db_arg g[] = { DB_ARG_TEXT(id), DB_ARG_TEXT(n->goal), DB_ARG_INT(uid) };
	struct db_col lk = DB_COL_INT;
	/* the admission count and the insert under one lock (the first user row),
	 * so two concurrent creates cannot both pass the last free place */
	enum db_status st = db_begin(db);
	if (st == DB_OK)
		st = db_exec(db, "SELECT id FROM users ORDER BY id LIMIT 1 FOR UPDATE", NULL, 0, &lk, 1, NULL, NULL, NULL, 0);
	long long running = st == DB_OK ? ag_count_active(db) : 0;
	if (st == DB_OK && running < 0)
		st = DB_ERROR;
	if (st == DB_OK && running >= max && !n->imported) {
		db_rollback(db);
		fcgi_add_header(c, "Retry-After", "60");
		fcgi_reply_error(c, 429, "rate_limited", "max %ld concurrent agents reached", max);
		return 0;
	}
	if (st == DB_OK)
		st = db_exec(db, "INSERT INTO agents (id, owner_id, challenge, goal, model, driver, min_iterations, "
			     "max_iterations, days_back, seed, budget_wall_s, dataset_id, dataset_version, dataset_hash, "
			     "cloned_from, fork_iteration, status, imported, iterations_done, budget_tokens, budget_usd, "
			     "budget_requests, best_by) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
			     ins, sizeof ins / sizeof ins[0], NULL, 0, NULL, NULL, NULL, 0);
	if (st == DB_OK)
		st = db_exec(db, "INSERT INTO agent_goals (agent_id, version, goal, author_id) VALUES (?, 1, ?, ?)", g, 3,
			     NULL, 0, NULL, NULL, NULL, 0);
	if (st == DB_OK && n->first_message) {
		struct db_arg m[] = { DB_ARG_TEXT(id), DB_ARG_TEXT(n->first_message) };
		st = db_exec(db, "INSERT INTO agent_messages (agent_id, role, type, text) VALUES (?, 'system', 'inbox', ?)",
			     m, 2, NULL, 0, NULL, NULL, NULL, 0);
	}
	if (st == DB_OK && n->extra)
		st = n->extra(db, id, n->extra_ctx);
	if (st == DB_OK && !n->imported)
		st = ag_queue_iteration(db, id, 1, 1);
	if (st == DB_OK)
		st = ag_event(db, id, "status", n->imported ? "{\"status\":\"completed\"}" : "{\"status\":\"starting\"}");
	if (st == DB_OK)
		st = db_commit(db);
	if (st != DB_OK) {
		db_rollback(db);
		fcgi_reply_db_error(c, st);
		return 0;
	}
	rv_notify(c, "q");
	return 1;
}

/* 400 for an unknown challenge, listing the valid names. */
void ag_bad_challenge(struct fcgi_ctx *c, const char *name)
{
	char names[512];
	size_t used = 0;
	names[0] = '\0';
	for (size_t i = 0; i < ch_count(); i++) {
		int k = snprintf(names + used, sizeof names - used, "%s%s", i ? ", " : "", ch_at(i)->name);
		if (k < 0 || (size_t)k >= sizeof names - used)
			break;
		used += (size_t)k;
	}
	fcgi_reply_error(c, 400, "invalid_field", "unknown challenge '%.64s'; valid: %s", name, names);
}

bool ag_best_by_field(struct fcgi_ctx *c, json_object *obj, const char *name, const char **best_by)
{
	json_object *v = NULL;
	const char *key = strrchr(name, '.') ? strrchr(name, '.') + 1 : name;
	if (!obj || !json_object_object_get_ex(obj, key, &v) || !v)
		return true;
	const char *s = json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
	if (!s || (strcmp(s, "holdout") != 0 && strcmp(s, "forward") != 0)) {
		fcgi_reply_error(c, 400, "invalid_field", "%s must be \"holdout\" or \"forward\"", name);
		return false;
	}
	*best_by = s;
	return true;
}

void h_agents_create(struct fcgi_ctx *c)
{
	static const char *const allowed[] = { "challenge", "goal", "model", "min_iterations", "max_iterations",
					       "days_back", "driver", "budget", "seed", "dataset_version", "best_by", NULL };
	static const char *const budget_allowed[] = { "iterations", "wall_s", "tokens", "usd", "requests", NULL };
	json_object *body = fcgi_body(c), *budget = NULL;
	struct ag_new n = { .model = "sonnet", .driver = "builtin", .min_iterations = 5, .max_iterations = 20,
			    .days_back = 60, .seed = 1, .budget_wall_s = -1 };
	int64_t budget_iters = -1;
	if (!fcgi_json_only(c, body, allowed) ||
	    !fcgi_json_string(c, body, "challenge", FIELD_REQUIRED, 1, 64, &n.challenge) ||
	    !fcgi_json_string(c, body, "goal", FIELD_REQUIRED, 1, AG_GOAL_MAX * 4, &n.goal) ||
	    !fcgi_json_string(c, body, "model", FIELD_OPTIONAL | FIELD_NULLABLE, 1, 16, &n.model) ||
	    !fcgi_json_string(c, body, "driver", FIELD_OPTIONAL | FIELD_NULLABLE, 1, 16, &n.driver) ||
	    !fcgi_json_int(c, body, "min_iterations", FIELD_OPTIONAL | FIELD_NULLABLE, 1, 100, &n.min_iterations) ||
	    !fcgi_json_int(c, body, "max_iterations", FIELD_OPTIONAL | FIELD_NULLABLE, 1, 500, &n.max_iterations) ||
	    !fcgi_json_int(c, body, "days_back", FIELD_OPTIONAL | FIELD_NULLABLE, 60, 365, &n.days_back) ||
	    !fcgi_json_int(c, body, "seed", FIELD_OPTIONAL | FIELD_NULLABLE, 0, 4294967295LL, &n.seed) ||
	    !fcgi_json_string(c, body, "dataset_version", FIELD_OPTIONAL | FIELD_NULLABLE, 1, 64, &n.dataset_version) ||
	    !ag_best_by_field(c, body, "best_by", &n.best_by) ||
	    !fcgi_json_object(c, body, "budget", FIELD_OPTIONAL | FIELD_NULLABLE, &budget))
		return;
	if (budget && (!fcgi_json_only(c, budget, budget_allowed) ||
		       !fcgi_json_int(c, budget, "iterations", FIELD_OPTIONAL | FIELD_NULLABLE, 1, 500, &budget_iters) ||
		       !fcgi_json_number(c, budget, "wall_s", FIELD_OPTIONAL | FIELD_NULLABLE, 1, 1e9, &n.budget_wall_s) ||
		       !ag_llm_budget_fields(c, budget, &n.budget_tokens, &n.budget_usd, &n.budget_requests)))
		return;
	if (budget_iters > 0 && budget_iters < n.max_iterations)
		n.max_iterations = budget_iters;   /* an iteration budget is a tighter max_iterations */
	const struct ch_def *def = ch_lookup(n.challenge);
	if (!def) {
		ag_bad_challenge(c, n.challenge);
		return;
	}
	n.challenge = def->name;
	if (ag_chars(n.goal) > AG_GOAL_MAX) {
		fcgi_reply_error(c, 400, "invalid_field", "goal: at most %d characters", AG_GOAL_MAX);
		return;
	}
	if (n.min_iterations > n.max_iterations) {
		fcgi_reply_error(c, 400, "invalid_field", "min_iterations (%lld) exceeds max_iterations (%lld)",
				 (long long)n.min_iterations, (long long)n.max_iterations);
		return;
	}
	if (strcmp(n.model, "sonnet") != 0 && strcmp(n.model, "opus") != 0 && strcmp(n.model, "haiku") != 0) {
		fcgi_reply_error(c, 400, "invalid_field", "model must be sonnet, opus or haiku");
		return;
	}
	const struct agent_driver *drv = agent_driver_lookup(n.driver);
	if (!drv) {
		fcgi_reply_error(c, 400, "invalid_field", "driver must be one of %s", agent_driver_names());
		return;
	}
	if (!drv->available) {
		fcgi_reply_error(c, 400, "invalid_field", "driver: %s", drv->missing);
		return;
	}
	const char *cmd = fcgi_config(c, "AGENTTEST_AGENT_COMMAND");
	if (strcmp(drv->name, "command") == 0 && (!cmd || !*cmd)) {
		fcgi_reply_error(c, 400, "invalid_field",
				 "driver: command needs the operator's AGENTTEST_AGENT_COMMAND, which is not set");
		return;
	}
	char id[37];
	if (!ag_create(c, &n, id))
		return;
	json_object *o = json_object_new_object();
	json_object_object_add(o, "id", json_object_new_string(id));
	json_object_object_add(o, "status", json_object_new_string("starting"));
	fcgi_reply_json(c, 201, o);
}

/* ---- detail ------------------------------------------------------------ */

#define AG_SELECT \
	"SELECT a.id, u.name, a.challenge, a.goal, a.goal_version, a.model, a.driver, a.min_iterations, " \
	"a.max_iterations, a.days_back, a.seed, CAST(a.budget_wall_s AS CHAR), a.dataset_version, a.status, " \
	"a.paused_at IS NOT NULL, a.status_detail, a.iterations_done, CAST(a.wall_s_used AS CHAR), a.tokens_input, " \
	"a.tokens_output, CAST(a.cost_usd AS CHAR), a.best_iteration, CAST(a.best_score AS CHAR), a.cloned_from, " \
	"a.fork_iteration, a.imported, " RV_TS("a.created_at") ", " RV_TS("a.updated_at") ", " \
	"(SELECT COUNT(*) FROM agent_iterations i WHERE i.agent_id = a.id AND i.status IN ('queued','running')), " \
	"a.dataset_hash, a.seq, a.budget_tokens, CAST(a.budget_usd AS CHAR), a.budget_requests, " \
	"a.tokens_cache_write, a.tokens_cache_read, a.llm_requests, a.best_by FROM agents a JOIN users u ON u.id = a.owner_id "
enum { AGC_N = 38 };

/* Column buffers of AG_SELECT (in the arena). */
static void ag_cols(struct fcgi_ctx *c, struct db_col *col)
{
	static const size_t caps[AGC_N] = { 40, 260, 70, AG_GOAL_MAX * 4 + 1, 0, 20, 20, 0, 0, 0, 0, 40, 70, 32,
					    0, 8192, 0, 40, 0, 0, 40, 0, 40, 40, 0, 0, 40, 40, 0, 70, 0,
					    0, 40, 0, 0, 0, 0, 16 };
	for (int i = 0; i < AGC_N; i++)
		col[i] = caps[i] ? ag_text_col(c, caps[i]) : (struct db_col)DB_COL_INT;
}

/* A text column as a JSON string, or null. */
static json_object *ag_str(const struct db_col *col)
{
	return col->is_null ? NULL : json_object_new_string_len(col->buf, (int)col->len);
}

/* The operator's LLM budget defaults (AGENTTEST_LLM_AGENT_*), for agents with none of their own. */
struct ag_llm_def {
	long long tokens, requests;
	double    usd;
};

/* The defaults from the pool's configuration (a malformed value: the built-in default). */
static struct ag_llm_def ag_llm_defaults(struct fcgi_ctx *c)
{
	struct ag_llm_def d = { AGENT_LLM_DEFAULT_TOKENS, AGENT_LLM_DEFAULT_REQUESTS, AGENT_LLM_DEFAULT_USD };
	const char *v;
	char *end;
	if ((v = fcgi_config(c, "AGENTTEST_LLM_AGENT_TOKENS")) && *v) {
		long long x = strtoll(v, &end, 10);
		d.tokens = *end || x < 0 ? d.tokens : x;
	}
	if ((v = fcgi_config(c, "AGENTTEST_LLM_AGENT_REQUESTS")) && *v) {
		long long x = strtoll(v, &end, 10);
		d.requests = *end || x < 0 ? d.requests : x;
	}
	if ((v = fcgi_config(c, "AGENTTEST_LLM_AGENT_USD")) && *v) {
		double x = strtod(v, &end);
		d.usd = *end || !(x >= 0) || !isfinite(x) ? d.usd : x;
	}
	return d;
}

/* budget.<name>, <name>_used, <name>_left of an LLM budget. */
static void ag_budget_int(json_object *b, const char *name, long long limit, long long used)
{
	char k[40];
	json_object_object_add(b, name, json_object_new_int64(limit));
	snprintf(k, sizeof k, "%s_used", name);
	json_object_object_add(b, k, json_object_new_int64(used));
	snprintf(k, sizeof k, "%s_left", name);
	json_object_object_add(b, k, json_object_new_int64(limit > used ? limit - used : 0));
}

/* The LLM part of the budget object: tokens, usd and requests with used and left. */
static void ag_llm_budget(json_object *b, const struct db_col *col, const struct ag_llm_def *d)
{
	long long tokens = col[18].i + col[19].i + col[34].i + col[35].i;
	double usd_used = col[20].is_null ? 0 : strtod(col[20].buf, NULL);
	double usd = col[32].is_null ? d->usd : strtod(col[32].buf, NULL);
	ag_budget_int(b, "tokens", col[31].is_null ? d->tokens : col[31].i, tokens);
	json_object_object_add(b, "usd", json_object_new_double(usd));
	json_object_object_add(b, "usd_used", json_object_new_double(usd_used));
	json_object_object_add(b, "usd_left", json_object_new_double(usd > usd_used ? usd - usd_used : 0));
	ag_budget_int(b, "requests", col[33].is_null ? d->requests : col[33].i, col[36].i);
}

/* The summary object of one AG_SELECT row (what the list shows). */
static json_object *ag_summary(const struct db_col *col, const struct ag_llm_def *llm)
{
	json_object *o = json_object_new_object(), *cfg = json_object_new_object(), *b = json_object_new_object();
	const char *status = shown_status(col[13].buf, col[28].i);
	json_object_object_add(o, "id", ag_str(&col[0]));
	json_object_object_add(o, "owner", ag_str(&col[1]));
	json_object_object_add(o, "status", json_object_new_string(status));
	json_object_object_add(o, "paused", json_object_new_boolean(col[14].i != 0));
	json_object_object_add(o, "status_detail", ag_str(&col[15]));
	json_object_object_add(cfg, "challenge", ag_str(&col[2]));
	json_object_object_add(cfg, "goal", ag_str(&col[3]));
	json_object_object_add(cfg, "model", ag_str(&col[5]));
	json_object_object_add(cfg, "driver", ag_str(&col[6]));
	json_object_object_add(cfg, "min_iterations", json_object_new_int64(col[7].i));
	json_object_object_add(cfg, "max_iterations", json_object_new_int64(col[8].i));
	json_object_object_add(cfg, "days_back", json_object_new_int64(col[9].i));
	json_object_object_add(cfg, "seed", json_object_new_int64(col[10].i));
	json_object_object_add(cfg, "dataset_version", ag_str(&col[12]));
	json_object_object_add(cfg, "dataset_hash", ag_str(&col[29]));
	json_object_object_add(cfg, "best_by", ag_str(&col[37]));
	json_object_object_add(o, "config", cfg);
	json_object_object_add(o, "goal_version", json_object_new_int64(col[4].i));
	json_object_object_add(o, "iteration_count", json_object_new_int64(col[16].i));
	json_object_object_add(o, "best_iteration", col[21].is_null ? NULL : json_object_new_int64(col[21].i));
	json_object_object_add(o, "best_score", ag_num(col[22].is_null ? NULL : col[22].buf));
	json_object_object_add(o, "total_tokens", json_object_new_int64(col[18].i + col[19].i + col[34].i + col[35].i));
	json_object_object_add(o, "total_cost", ag_num(col[20].buf));
	json_object *tk = json_object_new_object();
	json_object_object_add(tk, "input", json_object_new_int64(col[18].i));
	json_object_object_add(tk, "output", json_object_new_int64(col[19].i));
	json_object_object_add(tk, "cache_write", json_object_new_int64(col[34].i));
	json_object_object_add(tk, "cache_read", json_object_new_int64(col[35].i));
	json_object_object_add(tk, "requests", json_object_new_int64(col[36].i));
	json_object_object_add(tk, "cost", ag_num(col[20].buf));
	json_object_object_add(o, "tokens", tk);
	/* budgets: used and left */
	json_object_object_add(b, "iterations", json_object_new_int64(col[8].i));
	json_object_object_add(b, "iterations_used", json_object_new_int64(col[16].i));
	json_object_object_add(b, "iterations_left", json_object_new_int64(col[8].i - col[16].i));
	json_object_object_add(b, "wall_s", ag_num(col[11].is_null ? NULL : col[11].buf));
	json_object_object_add(b, "wall_s_used", ag_num(col[17].buf));
	if (!col[11].is_null) {
		double left = strtod(col[11].buf, NULL) - strtod(col[17].buf, NULL);
		json_object_object_add(b, "wall_s_left", json_object_new_double(left > 0 ? left : 0));
	} else {
		json_object_object_add(b, "wall_s_left", NULL);
	}
	ag_llm_budget(b, col, llm);
	json_object_object_add(o, "budget", b);
	json_object_object_add(o, "cloned_from", ag_str(&col[23]));
	json_object_object_add(o, "fork_iteration", col[24].is_null ? NULL : json_object_new_int64(col[24].i));
	json_object_object_add(o, "imported", json_object_new_boolean(col[25].i != 0));
	json_object_object_add(o, "created_at", ag_str(&col[26]));
	json_object_object_add(o, "updated_at", ag_str(&col[27]));
	return o;
}

/* Iteration columns read for the detail and GET .../iterations. */
#define AG_ITER_SELECT \
	"SELECT iteration, metrics, holdout_metrics, analysis, has_error, error, holdout_error, " \
	"CAST(agent_s AS CHAR), CAST(score_s AS CHAR), CAST(elapsed_s AS CHAR), tokens, code_hash, done_signal, " \
	"timed_out, goal_version, " RV_TS("started_at") ", " RV_TS("completed_at") ", CAST(score AS CHAR), " \
	"CAST(holdout_score AS CHAR) FROM agent_iterations WHERE agent_id = ? AND status = 'completed' "

/* Row callback: one iteration object appended to the array ctx. */
static bool ag_iter_row(void *ctx, const struct db_col *col, size_t ncol)
{
	(void)ncol;
	json_object *o = json_object_new_object();
	json_object_object_add(o, "iteration", json_object_new_int64(col[0].i));
	json_object_object_add(o, "metrics", ag_parse(col[1].is_null ? NULL : col[1].buf));
	json_object_object_add(o, "holdout_metrics", ag_parse(col[2].is_null ? NULL : col[2].buf));
	json_object_object_add(o, "analysis", ag_parse(col[3].is_null ? NULL : col[3].buf));
	json_object_object_add(o, "has_error", json_object_new_boolean(col[4].i != 0));
	json_object_object_add(o, "error", ag_str(&col[5]));
	json_object_object_add(o, "holdout_error", ag_str(&col[6]));
	json_object_object_add(o, "agent_s", ag_num(col[7].is_null ? NULL : col[7].buf));
	json_object_object_add(o, "score_s", ag_num(col[8].is_null ? NULL : col[8].buf));
	json_object_object_add(o, "elapsed_s", ag_num(col[9].is_null ? NULL : col[9].buf));
	json_object_object_add(o, "tokens", ag_parse(col[10].is_null ? NULL : col[10].buf));
	json_object_object_add(o, "code_hash", ag_str(&col[11]));
	json_object_object_add(o, "done_signal", json_object_new_boolean(col[12].i != 0));
	json_object_object_add(o, "timed_out", json_object_new_boolean(col[13].i != 0));
	json_object_object_add(o, "goal_version", col[14].is_null ? NULL : json_object_new_int64(col[14].i));
	json_object_object_add(o, "started_at", ag_str(&col[15]));
	json_object_object_add(o, "completed_at", ag_str(&col[16]));
	json_object_object_add(o, "score", ag_num(col[17].is_null ? NULL : col[17].buf));
	json_object_object_add(o, "holdout_score", ag_num(col[18].is_null ? NULL : col[18].buf));
	json_object_array_add(ctx, o);
	return true;
}

enum db_status ag_iterations(struct fcgi_ctx *c, const char *id, long long only, json_object *arr)
{
	struct db_col col[19];
	static const size_t caps[19] = { 0, AG_JSON_MAX, AG_JSON_MAX, AG_JSON_MAX, 0, 8192, 8192, 40, 40, 40, 1024,
					 70, 0, 0, 0, 40, 40, 40, 40 };
	for (int i = 0; i < 19; i++)
		col[i] = caps[i] ? ag_text_col(c, caps[i]) : (struct db_col)DB_COL_INT;
	struct db_arg args[] = { DB_ARG_TEXT(id), DB_ARG_INT(only) };
	enum db_status st = only > 0 ?
		db_exec(fcgi_db(c), AG_ITER_SELECT "AND iteration = ?", args, 2, col, 19, ag_iter_row, arr, NULL,
			DB_IDEMPOTENT) :
		db_exec(fcgi_db(c), AG_ITER_SELECT "ORDER BY iteration", args, 1, col, 19, ag_iter_row, arr, NULL,
			DB_IDEMPOTENT);
	/* each iteration's forward score (issue 18), or null */
	for (size_t i = 0; st == DB_OK && i < json_object_array_length(arr); i++) {
		json_object *it = json_object_array_get_idx(arr, i), *n, *fwd = NULL;
		if (json_object_object_get_ex(it, "iteration", &n) &&
		    (st = fwd_view_iteration(c, id, json_object_get_int64(n), &fwd)) == DB_OK)
			json_object_object_add(it, "forward", fwd);
	}
	return st;
}

/* One detail row and the defaults it is shown with. */
struct ag_one_ctx {
	json_object      *o;
	struct ag_llm_def def;
};

/* Row callback: the summary of the one agent row into ctx->o. */
static bool ag_one(void *ctx, const struct db_col *col, size_t ncol)
{
	struct ag_one_ctx *x = ctx;
	(void)ncol;
	x->o = ag_summary(col, &x->def);
	return false;
}

/* Live activity of a running agent: the iteration in flight. */
static enum db_status ag_activity(struct fcgi_ctx *c, const char *id, json_object *o)
{
	char status[16], started[RV_TS_LEN];
	struct db_col col[] = { DB_COL_INT, DB_COL_TEXT(status), DB_COL_TEXT(started), DB_COL_INT };
	struct db_arg a = DB_ARG_TEXT(id);
	bool found = false;
	enum db_status st = db_exec(fcgi_db(c), "SELECT iteration, status, " RV_TS("started_at") ", attempts FROM "
				    "agent_iterations WHERE agent_id = ? AND status IN ('queued','running') "
				    "ORDER BY iteration LIMIT 1", &a, 1, col, 4, ag_got, &found, NULL, DB_IDEMPOTENT);
	if (st != DB_OK)
		return st;
	json_object *act = NULL;
	if (found) {
		act = json_object_new_object();
		json_object_object_add(act, "iteration", json_object_new_int64(col[0].i));
		json_object_object_add(act, "state", json_object_new_string(status));
		json_object_object_add(act, "started_at", col[2].is_null ? NULL : json_object_new_string(started));
		json_object_object_add(act, "attempts", json_object_new_int64(col[3].i));
		st = ag_activity_lines(c, id, act);
	}
	json_object_object_add(o, "activity", act);
	return st;
}

json_object *ag_detail(struct fcgi_ctx *c, const char *id, enum db_status *st)
{
	struct db_col col[AGC_N];
	struct ag_one_ctx x = { .o = NULL, .def = ag_llm_defaults(c) };
	ag_cols(c, col);
	struct db_arg a = DB_ARG_TEXT(id);
	*st = db_exec(fcgi_db(c), AG_SELECT "WHERE a.id = ? AND a.deleted_at IS NULL", &a, 1, col, AGC_N, ag_one, &x, NULL, DB_IDEMPOTENT);
	json_object *o = x.o;
	if (*st != DB_OK || !o) {
		json_object_put(o);
		return NULL;
	}
	json_object *its = json_object_new_array();
	json_object_object_add(o, "iterations", its);
	*st = ag_iterations(c, id, 0, its);
	if (*st == DB_OK)
		*st = ag_activity(c, id, o);
	if (*st != DB_OK) {
		json_object_put(o);
		return NULL;
	}
	/* last_metrics and has_error of the last iteration, as the original's summary */
	size_t n = json_object_array_length(its);
	json_object *last = n ? json_object_array_get_idx(its, n - 1) : NULL;
	json_object_object_add(o, "last_metrics", last ? json_object_get(json_object_object_get(last, "metrics")) : NULL);
	json_object_object_add(o, "has_error", last ? json_object_get(json_object_object_get(last, "has_error")) : NULL);
	return o;
}

void h_agents_get(struct fcgi_ctx *c)
{
	struct ag_row a;
	enum db_status st;
	if (ag_find(c, fcgi_param(c, "id"), false, &a) <= 0)
		return;
	json_object *o = ag_detail(c, a.id, &st);
	if (!o) {
		if (st == DB_OK)
			fcgi_reply_error(c, 404, "not_found", "no agent %s", a.id);
		else
			fcgi_reply_db_error(c, st);
		return;
	}
	fcgi_reply_json(c, 200, o);
}

/* ---- list -------------------------------------------------------------- */

struct ag_list {
	json_object *arr;
	bool         full;
	size_t       n;
	struct ag_llm_def def;
};

/* Row callback of the list: a summary, or the id for a full detail later. */
static bool ag_list_row(void *ctx, const struct db_col *col, size_t ncol)
{
	struct ag_list *l = ctx;
	(void)ncol;
	json_object_array_add(l->arr, l->full ? json_object_new_string(col[0].buf) : ag_summary(col, &l->def));
	l->n++;
	return l->n < 1000;
}

/* The summary's last and best iteration figures (one statement for all agents). */
static bool ag_list_figures(void *ctx, const struct db_col *col, size_t ncol)
{
	json_object *byid = ctx, *o;
	(void)ncol;
	if (!json_object_object_get_ex(byid, col[0].buf, &o))
		return true;
	json_object_object_add(o, "last_metrics", ag_parse(col[1].is_null ? NULL : col[1].buf));
	json_object_object_add(o, "has_error", json_object_new_boolean(col[2].i != 0));
	json_object_object_add(o, "last_score", ag_num(col[3].is_null ? NULL : col[3].buf));
	return true;
}

void h_agents_list(struct fcgi_ctx *c)
{
	int64_t full;
	long long uid;
	bool admin;
	if (!rv_caller(c, &uid, &admin) || !fcgi_query_int(c, "full", 0, 1, 0, &full))
		return;
	struct db_col col[AGC_N];
	ag_cols(c, col);
	struct db_arg a[] = { DB_ARG_INT(uid), DB_ARG_INT(admin ? 1 : 0) };
	struct ag_list l = { .arr = json_object_new_array(), .full = full == 1, .def = ag_llm_defaults(c) };
	enum db_status st = db_exec(fcgi_db(c), AG_SELECT "WHERE a.deleted_at IS NULL AND (a.owner_id = ? OR ? = 1) ORDER BY a.seq DESC", a, 2,
				    col, AGC_N, ag_list_row, &l, NULL, DB_IDEMPOTENT);
	json_object *out = json_object_new_array();
	if (st == DB_OK && l.full) {
		for (size_t i = 0; st == DB_OK && i < l.n; i++) {
			json_object *d = ag_detail(c, json_object_get_string(json_object_array_get_idx(l.arr, i)), &st);
			if (d)
				json_object_array_add(out, d);
		}
	} else if (st == DB_OK) {
		json_object *byid = json_object_new_object();
		for (size_t i = 0; i < l.n; i++) {
			json_object *s = json_object_array_get_idx(l.arr, i);
			json_object_object_add(byid, json_object_get_string(json_object_object_get(s, "id")),
					       json_object_get(s));
			json_object_array_add(out, json_object_get(s));
		}
		struct db_col f[] = { ag_text_col(c, 40), ag_text_col(c, AG_JSON_MAX), DB_COL_INT, ag_text_col(c, 40) };
		st = db_exec(fcgi_db(c), "SELECT i.agent_id, i.metrics, i.has_error, CAST(i.score AS CHAR) FROM "
			     "agent_iterations i JOIN agents a ON a.id = i.agent_id WHERE (a.owner_id = ? OR ? = 1) AND "
			     "i.status = 'completed' AND i.iteration = a.iterations_done", a, 2, f, 4, ag_list_figures,
			     byid, NULL, DB_IDEMPOTENT);
		json_object_put(byid);
	}
	json_object_put(l.arr);
	if (st != DB_OK) {
		json_object_put(out);
		fcgi_reply_db_error(c, st);
		return;
	}
	/* strong ETag over the exact body: first 16 hex of its SHA-256 */
	const char *text = json_object_to_json_string_ext(out, JSON_C_TO_STRING_PLAIN);
	unsigned char h[crypto_hash_sha256_BYTES];
	char hex[2 * crypto_hash_sha256_BYTES + 1], etag[24];
	crypto_hash_sha256(h, (const unsigned char *)text, strlen(text));
	sodium_bin2hex(hex, sizeof hex, h, sizeof h);
	snprintf(etag, sizeof etag, "\"%.16s\"", hex);
	fcgi_add_header(c, "ETag", etag);
	const char *inm = fcgi_header(c, "HTTP_IF_NONE_MATCH");
	if (inm && strcmp(inm, etag) == 0) {
		json_object_put(out);
		fcgi_reply_raw(c, 304, "application/json", "", 0);
		return;
	}
	struct buf *b = fcgi_body_buf(c);
	buf_puts(b, text);
	json_object_put(out);
	fcgi_reply_buf(c, 200, "application/json");
}

/*
 * agents_ctl: steering an agent (issue 15, docs/agents.md).
 *
 *   POST .../stop      status stopped; a queued iteration is cancelled, a
 *                      running one gets the queue's cancel (its runner kills
 *                      the sandbox within a tick) -> {status: "stopped"}
 *   POST .../pause     takes effect between iterations: a queued next
 *                      iteration is withdrawn at once, a running one ends
 *                      normally and no next one is queued -> {paused: true};
 *                      the runner resumes it after MANTIS_PAUSE_TIMEOUT
 *   POST .../resume {budget?: {iterations?, wall_s?, tokens?, usd?, requests?}}
 *                      clears the pause; a paused (or crashed) agent gets
 *                      its next iteration queued -> {paused: false}; the
 *                      budget raises max_iterations (an agent that reached
 *                      them continues), gives wall_s more seconds, or sets
 *                      the LLM lifetime budgets (tokens, usd, requests: the
 *                      new totals, not below what is used); an agent paused
 *                      by an LLM budget runs the interrupted iteration again
 *   POST .../delete    hidden at once and stopped; the runner removes the
 *                      rows and the workspace once nothing runs -> {status: "deleted"}
 *   POST .../message {text}   a chat message delivered to the next
 *                      iteration's INBOX.md -> {status: "sent"}
 *   GET|POST .../inbox         the pending INBOX.md text; POST {content}
 *                      replaces what is pending (older pending messages are
 *                      kept, marked superseded) -> {status: "ok"}
 *   GET .../chat       {messages: [{role, text, ts, type, delivered_iteration}], paused}
 *   GET|POST .../goal  {content, version} with ETag "g<version>"; POST {goal}
 *                      with If-Match refuses a stale edit (412), so no goal
 *                      change is lost; the new goal reaches the next iteration.
 *
 * Every state change is one transaction on the locked agent row, with an
 * event for GET .../events.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fcgi/handlers/agents.h"
#include "fcgi/handlers/handlers.h"
#include "fcgi/handlers/runs_view.h"

/* Commit, or roll back and reply the error; true when committed. */
static bool ctl_commit(struct fcgi_ctx *c, enum db_status st)
{
	if (st == DB_OK)
		st = db_commit(fcgi_db(c));
	if (st != DB_OK) {
		db_rollback(fcgi_db(c));
		fcgi_reply_db_error(c, st);
		return false;
	}
	return true;
}

/* Begin a transaction and lock the caller's agent; 1 found, else replied. */
static int ctl_lock(struct fcgi_ctx *c, struct ag_row *a)
{
	enum db_status st = db_begin(fcgi_db(c));
	if (st != DB_OK) {
		fcgi_reply_db_error(c, st);
		return -1;
	}
	return ag_find(c, fcgi_param(c, "id"), true, a);
}

/* Reply {key: value} with a string value. */
static void ctl_reply_str(struct fcgi_ctx *c, const char *key, const char *value)
{
	json_object *o = json_object_new_object();
	json_object_object_add(o, key, json_object_new_string(value));
	fcgi_reply_json(c, 200, o);
}

/* Reply {paused: v}. */
static void ctl_reply_paused(struct fcgi_ctx *c, bool v)
{
	json_object *o = json_object_new_object();
	json_object_object_add(o, "paused", json_object_new_boolean(v));
	fcgi_reply_json(c, 200, o);
}

/* True for the statuses an agent does not leave by itself. */
static bool ctl_final(const char *status)
{
	return strcmp(status, "stopped") == 0 || strcmp(status, "completed") == 0 ||
	       strcmp(status, "max_iterations_reached") == 0 || strcmp(status, "error") == 0;
}

/* Cancel the agent's active iteration: a queued one at once, a running one through its runner. */
static enum db_status ctl_cancel_iteration(struct db *db, const char *id)
{
	struct db_arg a = DB_ARG_TEXT(id);
	enum db_status st = db_exec(db, "UPDATE agent_iterations SET status = 'cancelled', error_code = 'cancelled', "
				    "error_message = 'the agent was stopped', completed_at = NOW(6) WHERE agent_id = ? AND "
				    "status = 'queued'", &a, 1, NULL, 0, NULL, NULL, NULL, 0);
	if (st == DB_OK)
		st = db_exec(db, "UPDATE agent_iterations SET cancel_requested = 1 WHERE agent_id = ? AND status = 'running'",
			     &a, 1, NULL, 0, NULL, NULL, NULL, 0);
	return st;
}

void h_agents_stop(struct fcgi_ctx *c)
{
	struct ag_row a;
	if (ctl_lock(c, &a) <= 0)
		return;
	if (ctl_final(a.status) && strcmp(a.status, "stopped") != 0) {
		db_rollback(fcgi_db(c));
		fcgi_reply_error(c, 409, "conflict", "agent %s is already %s", a.id, a.status);
		return;
	}
	struct db_arg k = DB_ARG_TEXT(a.id);
	enum db_status st = ctl_cancel_iteration(fcgi_db(c), a.id);
	if (st == DB_OK)
		st = db_exec(fcgi_db(c), "UPDATE agents SET paused_at = NULL WHERE id = ?", &k, 1, NULL, 0, NULL, NULL,
			     NULL, 0);
	if (st == DB_OK && strcmp(a.status, "stopped") != 0)
		st = ag_set_status(fcgi_db(c), a.id, "stopped", "stopped by the owner");
	if (!ctl_commit(c, st))
		return;
	rv_notify(c, "c");
	ctl_reply_str(c, "status", "stopped");
}

void h_agents_pause(struct fcgi_ctx *c)
{
	struct ag_row a;
	if (ctl_lock(c, &a) <= 0)
		return;
	if (ctl_final(a.status)) {
		db_rollback(fcgi_db(c));
		fcgi_reply_error(c, 409, "conflict", "agent %s is %s: nothing to pause", a.id, a.status);
		return;
	}
	struct db_arg k = DB_ARG_TEXT(a.id);
	struct db_result r = { 0 };
	enum db_status st = db_exec(fcgi_db(c), "UPDATE agents SET paused_at = COALESCE(paused_at, NOW(6)), "
				    "updated_at = NOW(6) WHERE id = ?", &k, 1, NULL, 0, NULL, NULL, NULL, 0);
	/* a next iteration not yet claimed is withdrawn: the pause is between iterations */
	if (st == DB_OK)
		st = db_exec(fcgi_db(c), "DELETE FROM agent_iterations WHERE agent_id = ? AND status = 'queued'", &k, 1,
			     NULL, 0, NULL, NULL, &r, 0);
	if (st == DB_OK && (r.affected > 0 || a.active == 0) && strcmp(a.status, "paused") != 0)
		st = ag_set_status(fcgi_db(c), a.id, "paused", NULL);
	if (st == DB_OK)
		st = ag_event(fcgi_db(c), a.id, "paused", "{\"paused\":true}");
	if (ctl_commit(c, st))
		ctl_reply_paused(c, true);
}

/* The new LLM budgets of a resume body (0: unchanged). */
struct ctl_llm {
	int64_t tokens, requests;
	double  usd;
};

/*
 * Set the LLM budgets (inside the open transaction), refusing one below
 * what the agent used. 1 set, 0 replied 400, -1 database error (not replied).
 */
static int ctl_llm_budget(struct fcgi_ctx *c, const struct ag_row *a, const struct ctl_llm *l)
{
	if (!l->tokens && !l->requests && l->usd <= 0)
		return 1;
	char used_usd[40] = "0";
	struct db_col u[] = { DB_COL_INT, DB_COL_INT, DB_COL_TEXT(used_usd) };
	struct db_arg k = DB_ARG_TEXT(a->id);
	if (db_exec(fcgi_db(c), "SELECT tokens_input + tokens_output + tokens_cache_write + tokens_cache_read, "
		    "llm_requests, CAST(cost_usd AS CHAR) FROM agents WHERE id = ?", &k, 1, u, 3, NULL, NULL, NULL, 0) != DB_OK)
		return -1;
	double uu = strtod(used_usd, NULL);
	const char *field = NULL;
	if (l->tokens && l->tokens < u[0].i)
		field = "tokens";
	else if (l->requests && l->requests < u[1].i)
		field = "requests";
	else if (l->usd > 0 && l->usd < uu)
		field = "usd";
	if (field) {
		db_rollback(fcgi_db(c));
		fcgi_reply_error(c, 400, "invalid_field", "budget.%s is below what the agent used (%lld tokens, %lld "
				 "requests, %.6f USD)", field, u[0].i, u[1].i, uu);
		return 0;
	}
	char usd[40];
	snprintf(usd, sizeof usd, "%.17g", l->usd);
	struct db_arg s[] = { l->tokens ? DB_ARG_INT(l->tokens) : DB_ARG_NULL, l->usd > 0 ? DB_ARG_TEXT(usd) : DB_ARG_NULL,
			      l->requests ? DB_ARG_INT(l->requests) : DB_ARG_NULL, DB_ARG_TEXT(a->id) };
	return db_exec(fcgi_db(c), "UPDATE agents SET budget_tokens = COALESCE(?, budget_tokens), budget_usd = "
		       "COALESCE(?, budget_usd), budget_requests = COALESCE(?, budget_requests) WHERE id = ?", s, 4, NULL,
		       0, NULL, NULL, NULL, 0) == DB_OK ? 1 : -1;
}

/* Raise (or set) the budgets of a resume body {budget: {iterations?, wall_s?}} inside the open transaction. */
static enum db_status ctl_budget(struct fcgi_ctx *c, struct ag_row *a, int64_t iters, double wall_s)
{
	enum db_status st = DB_OK;
	if (iters > 0) {
		struct db_arg u[] = { DB_ARG_INT(iters), DB_ARG_TEXT(a->id) };
		st = db_exec(fcgi_db(c), "UPDATE agents SET max_iterations = ? WHERE id = ?", u, 2, NULL, 0, NULL, NULL, NULL,
			     0);
		a->max_iterations = iters;
	}
	if (st == DB_OK && wall_s > 0) {
		char w[40];
		snprintf(w, sizeof w, "%.17g", wall_s);
		struct db_arg u[] = { DB_ARG_TEXT(w), DB_ARG_TEXT(a->id) };
		st = db_exec(fcgi_db(c), "UPDATE agents SET budget_wall_s = wall_s_used + ? WHERE id = ?", u, 2, NULL, 0, NULL,
			     NULL, NULL, 0);
	}
	return st;
}

void h_agents_resume(struct fcgi_ctx *c)
{
	static const char *const allowed[] = { "budget", NULL };
	static const char *const budget_allowed[] = { "iterations", "wall_s", "tokens", "usd", "requests", NULL };
	json_object *body = fcgi_body(c), *budget = NULL;
	int64_t iters = 0;
	double wall_s = 0;
	struct ctl_llm llm = { 0, 0, 0 };
	if (body && (!fcgi_json_only(c, body, allowed) ||
		     !fcgi_json_object(c, body, "budget", FIELD_OPTIONAL | FIELD_NULLABLE, &budget)))
		return;
	if (budget && (!fcgi_json_only(c, budget, budget_allowed) ||
		       !fcgi_json_int(c, budget, "iterations", FIELD_OPTIONAL | FIELD_NULLABLE, 1, 500, &iters) ||
		       !fcgi_json_number(c, budget, "wall_s", FIELD_OPTIONAL | FIELD_NULLABLE, 1, 1e9, &wall_s) ||
		       !ag_llm_budget_fields(c, budget, &llm.tokens, &llm.usd, &llm.requests)))
		return;
	struct ag_row a;
	if (ctl_lock(c, &a) <= 0)
		return;
	if (iters > 0 && iters < a.iterations_done) {
		db_rollback(fcgi_db(c));
		fcgi_reply_error(c, 400, "invalid_field", "budget.iterations (%lld) is below the %lld iterations done",
				 (long long)iters, a.iterations_done);
		return;
	}
	if (ctl_final(a.status) && strcmp(a.status, "max_iterations_reached") == 0 && iters > a.iterations_done) {
		/* more iterations for an agent that ran out of them: it continues */
		snprintf(a.status, sizeof a.status, "paused");
	}
	int lr = ctl_llm_budget(c, &a, &llm);
	if (lr == 0)
		return;
	if (lr < 0 || ctl_budget(c, &a, iters, wall_s) != DB_OK) {
		db_rollback(fcgi_db(c));
		fcgi_reply_db_error(c, DB_ERROR);
		return;
	}
	if (ctl_final(a.status)) {
		db_rollback(fcgi_db(c));
		fcgi_reply_error(c, 409, "conflict", "agent %s is %s: nothing to resume", a.id, a.status);
		return;
	}
	struct db_arg k = DB_ARG_TEXT(a.id);
	char left[40] = "";
	struct db_col lc = DB_COL_TEXT(left);
	enum db_status st = db_exec(fcgi_db(c), "SELECT CAST(budget_wall_s - wall_s_used AS CHAR) FROM agents WHERE id = ?",
				    &k, 1, &lc, 1, NULL, NULL, NULL, 0);
	bool needs_next = a.active == 0 && (strcmp(a.status, "paused") == 0 || strcmp(ag_shown_status(&a), "crashed") == 0);
	if (st == DB_OK && needs_next && !lc.is_null && left[0] && strtod(left, NULL) <= 0) {
		db_rollback(fcgi_db(c));
		fcgi_reply_error(c, 409, "conflict", "agent %s has used its wall-time budget", a.id);
		return;
	}
	if (st == DB_OK && needs_next && a.next_iteration > a.max_iterations) {
		db_rollback(fcgi_db(c));
		fcgi_reply_error(c, 409, "conflict", "agent %s has run its %lld iterations", a.id, a.max_iterations);
		return;
	}
	if (st == DB_OK)
		st = db_exec(fcgi_db(c), "UPDATE agents SET paused_at = NULL, updated_at = NOW(6) WHERE id = ?", &k, 1,
			     NULL, 0, NULL, NULL, NULL, 0);
	if (st == DB_OK && needs_next)
		st = ag_queue_iteration(fcgi_db(c), a.id, a.next_iteration, a.goal_version);
	if (st == DB_OK && needs_next)
		st = ag_set_status(fcgi_db(c), a.id, a.iterations_done ? "running" : "starting", NULL);
	if (st == DB_OK)
		st = ag_event(fcgi_db(c), a.id, "paused", "{\"paused\":false}");
	if (!ctl_commit(c, st))
		return;
	if (needs_next)
		rv_notify(c, "q");
	ctl_reply_paused(c, false);
}

void h_agents_delete(struct fcgi_ctx *c)
{
	struct ag_row a;
	if (ctl_lock(c, &a) <= 0)
		return;
	struct db_arg k = DB_ARG_TEXT(a.id);
	enum db_status st = ctl_cancel_iteration(fcgi_db(c), a.id);
	if (st == DB_OK)
		st = db_exec(fcgi_db(c), "UPDATE agents SET deleted_at = NOW(6), paused_at = NULL, status = "
			     "IF(status IN ('starting','running','paused'), 'stopped', status) WHERE id = ?", &k, 1, NULL, 0,
			     NULL, NULL, NULL, 0);
	if (st == DB_OK)
		st = ag_event(fcgi_db(c), a.id, "status", "{\"status\":\"deleted\"}");
	if (!ctl_commit(c, st))
		return;
	rv_notify(c, "c");
	ctl_reply_str(c, "status", "deleted");
}

/* text with ASCII white space stripped at both ends, in the arena. */
static const char *ctl_strip(struct fcgi_ctx *c, const char *s)
{
	while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r')
		s++;
	size_t n = strlen(s);
	while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\n' || s[n - 1] == '\r'))
		n--;
	char *d = arena_alloc(fcgi_arena(c), n + 1);
	memcpy(d, s, n);
	d[n] = '\0';
	return d;
}

/* Insert a message of the given type; false after replying. */
static bool ctl_message(struct fcgi_ctx *c, const char *id, const char *type, const char *text)
{
	struct db_arg m[] = { DB_ARG_TEXT(id), DB_ARG_TEXT(type), DB_ARG_TEXT(text) };
	enum db_status st = db_exec(fcgi_db(c), "INSERT INTO agent_messages (agent_id, role, type, text) VALUES (?, "
				    "'user', ?, ?)", m, 3, NULL, 0, NULL, NULL, NULL, 0);
	if (st == DB_OK) {
		json_object *o = json_object_new_object();
		json_object_object_add(o, "role", json_object_new_string("user"));
		json_object_object_add(o, "type", json_object_new_string(type));
		json_object_object_add(o, "text", json_object_new_string(text));
		st = ag_event(fcgi_db(c), id, "chat", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
		json_object_put(o);
	}
	return ctl_commit(c, st);
}

void h_agents_message(struct fcgi_ctx *c)
{
	static const char *const allowed[] = { "text", NULL };
	const char *text = NULL;
	json_object *body = fcgi_body(c);
	if (!fcgi_json_only(c, body, allowed) ||
	    !fcgi_json_string(c, body, "text", FIELD_REQUIRED, 0, AG_TEXT_MAX * 4, &text))
		return;
	text = ctl_strip(c, text);
	if (!*text || ag_chars(text) > AG_TEXT_MAX) {
		fcgi_reply_error(c, 400, "invalid_field", "text: 1 to %d characters (after stripping)", AG_TEXT_MAX);
		return;
	}
	struct ag_row a;
	if (ctl_lock(c, &a) <= 0)
		return;
	if (ctl_message(c, a.id, "message", text))
		ctl_reply_str(c, "status", "sent");
}

/* Row callback: append one pending message to the INBOX.md text, as the runner writes it. */
static bool ctl_inbox_row(void *ctx, const struct db_col *col, size_t ncol)
{
	struct buf *b = ctx;
	(void)ncol;
	if (b->len)
		buf_puts(b, "\n\n");
	if (strcmp(col[2].buf, "message") == 0)
		buf_printf(b, "[%s] Operator: %s", col[1].buf, col[0].buf);
	else
		buf_puts(b, col[0].buf);
	return true;
}

void h_agents_inbox_get(struct fcgi_ctx *c)
{
	struct ag_row a;
	if (ag_find(c, fcgi_param(c, "id"), false, &a) <= 0)
		return;
	struct buf b = BUF_INIT;
	struct db_col col[] = { ag_text_col(c, AG_INBOX_MAX * 4 + 1), ag_text_col(c, 8), ag_text_col(c, 16) };
	struct db_arg k = DB_ARG_TEXT(a.id);
	enum db_status st = db_exec(fcgi_db(c), "SELECT text, DATE_FORMAT(created_at, '%H:%i'), type FROM agent_messages "
				    "WHERE agent_id = ? AND delivered_iteration IS NULL AND superseded = 0 AND type IN "
				    "('message','inbox') ORDER BY id", &k, 1, col, 3, ctl_inbox_row, &b, NULL, DB_IDEMPOTENT);
	if (st != DB_OK) {
		buf_free(&b);
		fcgi_reply_db_error(c, st);
		return;
	}
	ctl_reply_str(c, "content", buf_cstr(&b));
	buf_free(&b);
}

void h_agents_inbox_post(struct fcgi_ctx *c)
{
	static const char *const allowed[] = { "content", NULL };
	const char *text = NULL;
	json_object *body = fcgi_body(c);
	if (!fcgi_json_only(c, body, allowed) ||
	    !fcgi_json_string(c, body, "content", FIELD_REQUIRED, 0, AG_INBOX_MAX * 4, &text))
		return;
	if (ag_chars(text) > AG_INBOX_MAX) {
		fcgi_reply_error(c, 400, "invalid_field", "content: at most %d characters", AG_INBOX_MAX);
		return;
	}
	struct ag_row a;
	if (ctl_lock(c, &a) <= 0)
		return;
	struct db_arg k = DB_ARG_TEXT(a.id);
	enum db_status st = db_exec(fcgi_db(c), "UPDATE agent_messages SET superseded = 1 WHERE agent_id = ? AND "
				    "delivered_iteration IS NULL AND superseded = 0 AND type IN ('message','inbox')", &k, 1,
				    NULL, 0, NULL, NULL, NULL, 0);
	if (st != DB_OK) {
		db_rollback(fcgi_db(c));
		fcgi_reply_db_error(c, st);
		return;
	}
	if (*text ? ctl_message(c, a.id, "inbox", text) : ctl_commit(c, DB_OK))
		ctl_reply_str(c, "status", "ok");
}

/* Row callback: one chat message. */
static bool ctl_chat_row(void *ctx, const struct db_col *col, size_t ncol)
{
	(void)ncol;
	json_object *o = json_object_new_object();
	json_object_object_add(o, "id", json_object_new_int64(col[0].i));
	json_object_object_add(o, "role", json_object_new_string(col[1].buf));
	json_object_object_add(o, "type", json_object_new_string(col[2].buf));
	json_object_object_add(o, "text", json_object_new_string(col[3].buf));
	json_object_object_add(o, "ts", json_object_new_string(col[4].buf));
	json_object_object_add(o, "delivered_iteration", col[5].is_null ? NULL : json_object_new_int64(col[5].i));
	json_object_object_add(o, "superseded", json_object_new_boolean(col[6].i != 0));
	json_object_array_add(ctx, o);
	return true;
}

void h_agents_chat(struct fcgi_ctx *c)
{
	struct ag_row a;
	if (ag_find(c, fcgi_param(c, "id"), false, &a) <= 0)
		return;
	json_object *arr = json_object_new_array();
	struct db_col col[] = { DB_COL_INT, ag_text_col(c, 16), ag_text_col(c, 16), ag_text_col(c, AG_INBOX_MAX * 4 + 1),
				ag_text_col(c, RV_TS_LEN), DB_COL_INT, DB_COL_INT };
	struct db_arg k = DB_ARG_TEXT(a.id);
	enum db_status st = db_exec(fcgi_db(c), "SELECT id, role, type, text, " RV_TS("created_at") ", delivered_iteration, "
				    "superseded FROM agent_messages WHERE agent_id = ? ORDER BY id", &k, 1, col, 7,
				    ctl_chat_row, arr, NULL, DB_IDEMPOTENT);
	if (st != DB_OK) {
		json_object_put(arr);
		fcgi_reply_db_error(c, st);
		return;
	}
	json_object *o = json_object_new_object();
	json_object_object_add(o, "messages", arr);
	json_object_object_add(o, "paused", json_object_new_boolean(a.paused));
	fcgi_reply_json(c, 200, o);
}

/* The goal's ETag for version v into out. */
static void ctl_goal_etag(long long v, char out[32])
{
	snprintf(out, 32, "\"g%lld\"", v);
}

void h_agents_goal_get(struct fcgi_ctx *c)
{
	struct ag_row a;
	if (ag_find(c, fcgi_param(c, "id"), false, &a) <= 0)
		return;
	struct db_col g = ag_text_col(c, AG_GOAL_MAX * 4 + 1);
	struct db_arg k = DB_ARG_TEXT(a.id);
	enum db_status st = db_exec(fcgi_db(c), "SELECT goal FROM agents WHERE id = ?", &k, 1, &g, 1, NULL, NULL, NULL,
				    DB_IDEMPOTENT);
	if (st != DB_OK) {
		fcgi_reply_db_error(c, st);
		return;
	}
	char etag[32];
	ctl_goal_etag(a.goal_version, etag);
	fcgi_add_header(c, "ETag", etag);
	json_object *o = json_object_new_object();
	json_object_object_add(o, "content", json_object_new_string(g.buf));
	json_object_object_add(o, "version", json_object_new_int64(a.goal_version));
	fcgi_reply_json(c, 200, o);
}

void h_agents_goal_post(struct fcgi_ctx *c)
{
	static const char *const allowed[] = { "goal", NULL };
	const char *goal = NULL;
	json_object *body = fcgi_body(c);
	if (!fcgi_json_only(c, body, allowed) ||
	    !fcgi_json_string(c, body, "goal", FIELD_REQUIRED, 1, AG_GOAL_MAX * 4, &goal))
		return;
	if (ag_chars(goal) > AG_GOAL_MAX) {
		fcgi_reply_error(c, 400, "invalid_field", "goal: at most %d characters", AG_GOAL_MAX);
		return;
	}
	long long uid;
	bool admin;
	struct ag_row a;
	if (!rv_caller(c, &uid, &admin) || ctl_lock(c, &a) <= 0)
		return;
	char etag[32];
	ctl_goal_etag(a.goal_version, etag);
	const char *im = fcgi_header(c, "HTTP_IF_MATCH");
	if (im && strcmp(im, "*") != 0 && strcmp(im, etag) != 0) {
		db_rollback(fcgi_db(c));
		fcgi_add_header(c, "ETag", etag);
		fcgi_reply_error(c, 412, "precondition_failed",
				 "the goal changed since you read it (now version %lld): reload it and edit again",
				 a.goal_version);
		return;
	}
	long long v = a.goal_version + 1;
	struct db_arg u[] = { DB_ARG_TEXT(goal), DB_ARG_INT(v), DB_ARG_TEXT(a.id) };
	struct db_arg g[] = { DB_ARG_TEXT(a.id), DB_ARG_INT(v), DB_ARG_TEXT(goal), DB_ARG_INT(uid) };
	enum db_status st = db_exec(fcgi_db(c), "UPDATE agents SET goal = ?, goal_version = ?, updated_at = NOW(6) WHERE "
				    "id = ?", u, 3, NULL, 0, NULL, NULL, NULL, 0);
	if (st == DB_OK)
		st = db_exec(fcgi_db(c), "INSERT INTO agent_goals (agent_id, version, goal, author_id) VALUES (?, ?, ?, ?)",
			     g, 4, NULL, 0, NULL, NULL, NULL, 0);
	char ev[64];
	snprintf(ev, sizeof ev, "{\"version\":%lld}", v);
	if (st == DB_OK)
		st = ag_event(fcgi_db(c), a.id, "goal", ev);
	if (!ctl_commit(c, st))
		return;
	ctl_goal_etag(v, etag);
	fcgi_add_header(c, "ETag", etag);
	json_object *o = json_object_new_object();
	json_object_object_add(o, "status", json_object_new_string("updated"));
	json_object_object_add(o, "version", json_object_new_int64(v));
	fcgi_reply_json(c, 200, o);
}

/*
 * agents_io: clone, export and import of agents (issue 15).
 *
 *   POST .../clone {goal?, iteration?, max_iterations?, best_by?} -> 201
 *        {id, cloned_from, fork_iteration}: a new agent with the same
 *        configuration (best_by included, unless the body sets it); with
 *        iteration, that iteration's code is the first INBOX.md of the
 *        clone (as the original). 404/400/429 as create.
 *   GET  .../export -> attachment agent_<id>.json {format:
 *        "mantis-agent-export-v1", exported_at, agent: {id, status, config,
 *        iterations}, code: {"<n>": source}, notes, state_md}
 *   POST /api/agents/import <bundle> -> 201 {id, imported: true, iterations}
 *        (the bundle's notes and state_md, strings of at most 2 MiB or
 *        absent/null, become the agent's notes.txt and STATE.md)
 *
 * Import writes no file at all: the bundle becomes rows (a new agent,
 * status completed, and its iterations), so no name in it can reach a path.
 * Every name is still validated and refused with 400 naming it: code keys
 * and iteration numbers are decimal 1..500 without sign or leading zero,
 * each code at most 1 MiB, the configuration passes the create rules, and
 * the whole bundle is within the pool's body limit (AGENTTEST_BODY_LIMIT).
 * The bundle's config.best_by (how the best iteration is judged, issue 18)
 * is kept: absent or null is holdout, anything but "holdout" or "forward"
 * is refused with 400 invalid_field naming agent.config.best_by.
 * A bundle's holdout numbers are not this server's sealed scores: they are
 * dropped, and an imported agent has no best iteration until it is cloned
 * and scored here.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <sodium.h>

#include "agent_driver.h"
#include "parse.h"
#include "evaluator/challenges/challenges.h"
#include "fcgi/handlers/agents.h"
#include "fcgi/handlers/handlers.h"

#define IO_FORMAT   "mantis-agent-export-v1"
#define IO_MAX_ITER 500

/* Reply 201 {id, ...}. */
static void io_created(struct fcgi_ctx *c, json_object *o)
{
	fcgi_reply_json(c, 201, o);
}

/* Row callback: the config of the source agent. */
struct io_src {
	char challenge[70], model[20], driver[20], dsv[70], best_by[16];
	long long min_it, max_it, days_back, seed;
	char *goal;
	bool found;
};

static bool io_src_row(void *ctx, const struct db_col *col, size_t ncol)
{
	struct io_src *s = ctx;
	(void)ncol;
	s->found = true;
	snprintf(s->challenge, sizeof s->challenge, "%s", col[0].buf);
	s->goal = col[1].buf;
	snprintf(s->model, sizeof s->model, "%s", col[2].buf);
	snprintf(s->driver, sizeof s->driver, "%s", col[3].buf);
	s->min_it = col[4].i;
	s->max_it = col[5].i;
	s->days_back = col[6].i;
	s->seed = col[7].i;
	snprintf(s->dsv, sizeof s->dsv, "%s", col[8].buf);
	snprintf(s->best_by, sizeof s->best_by, "%s", col[9].buf);
	return false;
}

void h_agents_clone(struct fcgi_ctx *c)
{
	static const char *const allowed[] = { "goal", "iteration", "max_iterations", "best_by", NULL };
	json_object *body = fcgi_body(c);
	const char *goal = NULL, *best_by = NULL;
	int64_t fork = 0, max_it = 0;
	if (body && (!fcgi_json_only(c, body, allowed) ||
		     !fcgi_json_string(c, body, "goal", FIELD_OPTIONAL | FIELD_NULLABLE, 1, AG_GOAL_MAX * 4, &goal) ||
		     !fcgi_json_int(c, body, "iteration", FIELD_OPTIONAL | FIELD_NULLABLE, 1, IO_MAX_ITER, &fork) ||
		     !fcgi_json_int(c, body, "max_iterations", FIELD_OPTIONAL | FIELD_NULLABLE, 1, 500, &max_it) ||
		     !ag_best_by_field(c, body, "best_by", &best_by)))
		return;
	if (goal && ag_chars(goal) > AG_GOAL_MAX) {
		fcgi_reply_error(c, 400, "invalid_field", "goal: at most %d characters", AG_GOAL_MAX);
		return;
	}
	struct ag_row a;
	if (ag_find(c, fcgi_param(c, "id"), false, &a) <= 0)
		return;
	struct io_src s = { 0 };
	struct db_col col[] = { ag_text_col(c, 70), ag_text_col(c, AG_GOAL_MAX * 4 + 1), ag_text_col(c, 20),
				ag_text_col(c, 20), DB_COL_INT, DB_COL_INT, DB_COL_INT, DB_COL_INT, ag_text_col(c, 70),
				ag_text_col(c, 16) };
	struct db_arg k = DB_ARG_TEXT(a.id);
	enum db_status st = db_exec(fcgi_db(c), "SELECT challenge, goal, model, driver, min_iterations, max_iterations, "
				    "days_back, seed, dataset_version, best_by FROM agents WHERE id = ?", &k, 1, col, 10, io_src_row,
				    &s, NULL, DB_IDEMPOTENT);
	struct db_col code = ag_text_col(c, AG_CODE_MAX * 4 + 1);
	struct db_result r = { 0 };
	if (st == DB_OK && fork > 0) {
		struct db_arg f[] = { DB_ARG_TEXT(a.id), DB_ARG_INT(fork) };
		st = db_exec(fcgi_db(c), "SELECT code FROM agent_iterations WHERE agent_id = ? AND iteration = ? AND "
			     "status = 'completed' AND code IS NOT NULL", f, 2, &code, 1, NULL, NULL, &r, DB_IDEMPOTENT);
	}
	if (st != DB_OK || !s.found) {
		fcgi_reply_db_error(c, st == DB_OK ? DB_ERROR : st);
		return;
	}
	if (fork > 0 && r.rows == 0) {
		fcgi_reply_error(c, 404, "not_found", "agent %s has no code for iteration %lld", a.id, (long long)fork);
		return;
	}
	struct ag_new n = { .challenge = s.challenge, .goal = goal ? goal : s.goal, .model = s.model,
			    .driver = s.driver, .min_iterations = s.min_it, .max_iterations = max_it ? max_it : s.max_it,
			    .days_back = s.days_back, .seed = s.seed, .budget_wall_s = -1, .cloned_from = a.id,
			    .fork_iteration = fork, .dataset_version = s.dsv, .best_by = best_by ? best_by : s.best_by };
	if (n.min_iterations > n.max_iterations)
		n.min_iterations = n.max_iterations;
	const struct agent_driver *drv = agent_driver_lookup(n.driver);
	if (!drv || !drv->available) {
		fcgi_reply_error(c, 400, "invalid_field", "driver: %s", drv ? drv->missing : "unknown");
		return;
	}
	if (fork > 0) {
		struct buf *m = fcgi_body_buf(c);
		buf_printf(m, "Forked from agent %s, iteration %lld. Start from this code:\n\n```python\n%s\n```\n", a.id,
			   (long long)fork, code.buf);
		n.first_message = arena_strndup(fcgi_arena(c), buf_cstr(m), m->len);
		buf_reset(m);
	}
	char id[37];
	if (!ag_create(c, &n, id))
		return;
	json_object *o = json_object_new_object();
	json_object_object_add(o, "id", json_object_new_string(id));
	json_object_object_add(o, "status", json_object_new_string("starting"));
	json_object_object_add(o, "cloned_from", json_object_new_string(a.id));
	json_object_object_add(o, "fork_iteration", fork > 0 ? json_object_new_int64(fork) : NULL);
	io_created(c, o);
}

/* Row callback: code of one iteration into the code object. */
static bool io_code_row(void *ctx, const struct db_col *col, size_t ncol)
{
	char k[24];
	(void)ncol;
	snprintf(k, sizeof k, "%lld", col[0].i);
	json_object_object_add(ctx, k, json_object_new_string_len(col[1].buf, (int)col[1].len));
	return true;
}

/* Add member key: the text column sql selects for agent id ("" when NULL); false after replying. */
static bool io_add_text(struct fcgi_ctx *c, json_object *o, const char *id, const char *key, const char *sql)
{
	struct db_col t = ag_text_col(c, AG_STDOUT_MAX + 1);
	struct db_arg k = DB_ARG_TEXT(id);
	enum db_status st = db_exec(fcgi_db(c), sql, &k, 1, &t, 1, NULL, NULL, NULL, DB_IDEMPOTENT);
	if (st != DB_OK) {
		fcgi_reply_db_error(c, st);
		return false;
	}
	json_object_object_add(o, key, json_object_new_string_len(t.is_null ? "" : t.buf, t.is_null ? 0 : (int)t.len));
	return true;
}

void h_agents_export(struct fcgi_ctx *c)
{
	struct ag_row a;
	enum db_status st;
	if (ag_find(c, fcgi_param(c, "id"), false, &a) <= 0)
		return;
	json_object *agent = ag_detail(c, a.id, &st);
	if (!agent) {
		fcgi_reply_db_error(c, st == DB_OK ? DB_ERROR : st);
		return;
	}
	json_object *code = json_object_new_object();
	struct db_col col[] = { DB_COL_INT, ag_text_col(c, AG_CODE_MAX * 4 + 1) };
	struct db_arg k = DB_ARG_TEXT(a.id);
	st = db_exec(fcgi_db(c), "SELECT iteration, code FROM agent_iterations WHERE agent_id = ? AND status = "
		     "'completed' AND code IS NOT NULL ORDER BY iteration", &k, 1, col, 2, io_code_row, code, NULL,
		     DB_IDEMPOTENT);
	if (st != DB_OK) {
		json_object_put(agent);
		json_object_put(code);
		fcgi_reply_db_error(c, st);
		return;
	}
	char ts[32], disp[96];
	time_t now = time(NULL);
	struct tm tm;
	gmtime_r(&now, &tm);
	strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%SZ", &tm);
	json_object *o = json_object_new_object();
	json_object_object_add(o, "format", json_object_new_string(IO_FORMAT));
	json_object_object_add(o, "exported_at", json_object_new_string(ts));
	json_object_object_add(o, "agent", agent);
	json_object_object_add(o, "code", code);
	if (!io_add_text(c, o, a.id, "notes", "SELECT notes FROM agents WHERE id = ?") ||
	    !io_add_text(c, o, a.id, "state_md", "SELECT state_md FROM agents WHERE id = ?")) {
		json_object_put(o);
		return;
	}
	snprintf(disp, sizeof disp, "attachment; filename=\"agent_%s.json\"", a.id);
	fcgi_add_header(c, "Content-Disposition", disp);
	fcgi_reply_json(c, 200, o);
}

/* A bundle name that is a decimal iteration number 1..IO_MAX_ITER (no sign, no leading zero). */
static bool io_iter_name(const char *s, long long *n)
{
	int64_t v;
	if (!s[0] || s[0] == '0' || strlen(s) > 3 || !parse_int(s, strlen(s), 1, IO_MAX_ITER, &v))
		return false;
	for (const char *p = s; *p; p++)
		if (*p < '0' || *p > '9')
			return false;
	*n = v;
	return true;
}

/* What the import inserts. */
struct io_import {
	json_object *iters;   /* validated iteration objects, by number (may lack entries) */
	json_object *code;    /* validated: name -> source */
	long long    count;
	const char  *notes;   /* validated notes.txt, or NULL */
	const char  *state_md; /* validated STATE.md, or NULL */
};

/* Text of a JSON value or NULL. */
static const char *io_text(json_object *o)
{
	return o ? json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN) : NULL;
}

/* ag_new.extra of an import: one completed row per iteration. */
static enum db_status io_rows(struct db *db, const char *id, void *ctx)
{
	struct io_import *im = ctx;
	enum db_status st = DB_OK;
	for (long long n = 1; st == DB_OK && n <= IO_MAX_ITER; n++) {
		char k[24];
		snprintf(k, sizeof k, "%lld", n);
		json_object *it = NULL, *src = NULL, *v;
		json_object_object_get_ex(im->iters, k, &it);
		json_object_object_get_ex(im->code, k, &src);
		if (!it && !src)
			continue;
		const char *code = src ? json_object_get_string(src) : NULL;
		char hex[65] = "";
		if (code) {
			unsigned char h[32];
			crypto_hash_sha256(h, (const unsigned char *)code, strlen(code));
			sodium_bin2hex(hex, sizeof hex, h, sizeof h);
		}
		json_object *m = it && json_object_object_get_ex(it, "metrics", &v) && json_object_is_type(v, json_type_object) ? v : NULL;
		json_object *an = it && json_object_object_get_ex(it, "analysis", &v) && json_object_is_type(v, json_type_object) ? v : NULL;
		json_object *err = it && json_object_object_get_ex(it, "error", &v) && json_object_is_type(v, json_type_string) ? v : NULL;
		bool has_error = it && json_object_object_get_ex(it, "has_error", &v) && json_object_get_boolean(v);
		const char *mt = io_text(m), *at = io_text(an);
		struct db_arg a[] = { DB_ARG_TEXT(id), DB_ARG_INT(n), mt ? DB_ARG_TEXT(mt) : DB_ARG_NULL,
				      at ? DB_ARG_TEXT(at) : DB_ARG_NULL, DB_ARG_INT(has_error ? 1 : 0),
				      err ? DB_ARG_TEXT(json_object_get_string(err)) : DB_ARG_NULL,
				      code ? DB_ARG_TEXT(code) : DB_ARG_NULL, code ? DB_ARG_TEXT(hex) : DB_ARG_NULL };
		st = db_exec(db, "INSERT INTO agent_iterations (id, agent_id, iteration, status, metrics, analysis, has_error, "
			     "error, code, code_hash, completed_at) VALUES (UUID(), ?, ?, 'completed', ?, ?, ?, ?, ?, ?, NOW(6))",
			     a, 8, NULL, 0, NULL, NULL, NULL, 0);
	}
	if (st == DB_OK && (im->notes || im->state_md)) {
		struct db_arg a[] = { im->notes ? DB_ARG_TEXT(im->notes) : DB_ARG_NULL,
				      im->state_md ? DB_ARG_TEXT(im->state_md) : DB_ARG_NULL, DB_ARG_TEXT(id) };
		st = db_exec(db, "UPDATE agents SET notes = ?, state_md = ? WHERE id = ?", a, 3, NULL, 0, NULL, NULL,
			     NULL, 0);
	}
	return st;
}

/* Validate the bundle's code object into im; false after replying. */
static bool io_check_code(struct fcgi_ctx *c, json_object *code, struct io_import *im)
{
	if (!code)
		return true;
	if (!json_object_is_type(code, json_type_object)) {
		fcgi_reply_error(c, 400, "invalid_field", "code must be an object of iteration number -> source");
		return false;
	}
	json_object_object_foreach(code, key, val) {
		long long n;
		if (!io_iter_name(key, &n)) {
			fcgi_reply_error(c, 400, "invalid_field", "code: '%.64s' is not an iteration number (1 to %d)", key,
					 IO_MAX_ITER);
			return false;
		}
		if (!json_object_is_type(val, json_type_string) || json_object_get_string_len(val) > (int)AG_CODE_MAX ||
		    memchr(json_object_get_string(val), '\0', (size_t)json_object_get_string_len(val))) {
			fcgi_reply_error(c, 400, "invalid_field", "code.%s must be source text of at most %u bytes", key,
					 AG_CODE_MAX);
			return false;
		}
		json_object_object_add(im->code, key, json_object_get(val));
		if (n > im->count)
			im->count = n;
	}
	return true;
}

/* Validate the bundle's iterations array into im; false after replying. */
static bool io_check_iters(struct fcgi_ctx *c, json_object *arr, struct io_import *im)
{
	if (!arr)
		return true;
	if (!json_object_is_type(arr, json_type_array) || json_object_array_length(arr) > IO_MAX_ITER) {
		fcgi_reply_error(c, 400, "invalid_field", "agent.iterations must be an array of at most %d", IO_MAX_ITER);
		return false;
	}
	for (size_t i = 0; i < json_object_array_length(arr); i++) {
		json_object *it = json_object_array_get_idx(arr, i), *v;
		int64_t n = 0;
		if (!json_object_is_type(it, json_type_object) || !json_object_object_get_ex(it, "iteration", &v) ||
		    !json_object_is_type(v, json_type_int) || (n = json_object_get_int64(v)) < 1 || n > IO_MAX_ITER) {
			fcgi_reply_error(c, 400, "invalid_field", "agent.iterations[%zu].iteration must be 1 to %d", i,
					 IO_MAX_ITER);
			return false;
		}
		char k[24];
		snprintf(k, sizeof k, "%lld", (long long)n);
		if (json_object_object_get_ex(im->iters, k, NULL)) {
			fcgi_reply_error(c, 400, "invalid_field", "agent.iterations: iteration %lld appears twice", (long long)n);
			return false;
		}
		json_object_object_add(im->iters, k, json_object_get(it));
		if (n > im->count)
			im->count = n;
	}
	return true;
}

void h_agents_import(struct fcgi_ctx *c)
{
	json_object *body = fcgi_body(c), *v, *agent = NULL, *cfg = NULL, *iters = NULL, *code = NULL;
	if (!json_object_object_get_ex(body, "format", &v) || !json_object_is_type(v, json_type_string) ||
	    strcmp(json_object_get_string(v), IO_FORMAT) != 0) {
		fcgi_reply_error(c, 400, "invalid_field", "format must be \"%s\"", IO_FORMAT);
		return;
	}
	if (!fcgi_json_object(c, body, "agent", FIELD_REQUIRED, &agent) ||
	    !fcgi_json_object(c, agent, "config", FIELD_REQUIRED, &cfg))
		return;
	json_object_object_get_ex(agent, "iterations", &iters);
	json_object_object_get_ex(body, "code", &code);
	const char *notes = NULL, *state_md = NULL;
	if (!fcgi_json_string(c, body, "notes", FIELD_OPTIONAL | FIELD_NULLABLE, 0, AG_STDOUT_MAX, &notes) ||
	    !fcgi_json_string(c, body, "state_md", FIELD_OPTIONAL | FIELD_NULLABLE, 0, AG_STDOUT_MAX, &state_md))
		return;
	struct ag_new n = { .model = "sonnet", .driver = "builtin", .min_iterations = 5, .max_iterations = 20,
			    .days_back = 60, .seed = 1, .budget_wall_s = -1, .imported = true };
	if (!fcgi_json_string(c, cfg, "challenge", FIELD_REQUIRED, 1, 64, &n.challenge) ||
	    !fcgi_json_string(c, cfg, "goal", FIELD_REQUIRED, 1, AG_GOAL_MAX * 4, &n.goal) ||
	    !fcgi_json_string(c, cfg, "model", FIELD_OPTIONAL | FIELD_NULLABLE, 1, 16, &n.model) ||
	    !fcgi_json_int(c, cfg, "min_iterations", FIELD_OPTIONAL | FIELD_NULLABLE, 1, 100, &n.min_iterations) ||
	    !fcgi_json_int(c, cfg, "max_iterations", FIELD_OPTIONAL | FIELD_NULLABLE, 1, 500, &n.max_iterations) ||
	    !fcgi_json_int(c, cfg, "days_back", FIELD_OPTIONAL | FIELD_NULLABLE, 60, 365, &n.days_back) ||
	    !fcgi_json_int(c, cfg, "seed", FIELD_OPTIONAL | FIELD_NULLABLE, 0, 4294967295LL, &n.seed) ||
	    !ag_best_by_field(c, cfg, "agent.config.best_by", &n.best_by))
		return;
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
	if (strcmp(n.model, "sonnet") != 0 && strcmp(n.model, "opus") != 0 && strcmp(n.model, "haiku") != 0)
		n.model = "sonnet";
	struct io_import im = { .iters = json_object_new_object(), .code = json_object_new_object(), .notes = notes,
				.state_md = state_md };
	bool ok = io_check_iters(c, iters, &im) && io_check_code(c, code, &im);
	if (ok && im.count > n.max_iterations)
		n.max_iterations = im.count;
	if (ok && n.min_iterations > n.max_iterations)
		n.min_iterations = n.max_iterations;
	n.iterations_done = im.count;
	n.extra = io_rows;
	n.extra_ctx = &im;
	char id[37];
	if (ok)
		ok = ag_create(c, &n, id);
	json_object_put(im.iters);
	json_object_put(im.code);
	if (!ok)
		return;
	json_object *o = json_object_new_object();
	json_object_object_add(o, "id", json_object_new_string(id));
	json_object_object_add(o, "imported", json_object_new_boolean(true));
	json_object_object_add(o, "iterations", json_object_new_int64(im.count));
	io_created(c, o);
}

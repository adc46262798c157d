/*
 * agents_view: what an agent wrote and what it scored (issue 15). Every
 * value comes from the database, where the runner's finishing write put it
 * (agent_job.c): the pool reads no agent workspace.
 *
 *   GET .../notes, .../state        {content}: notes.txt, STATE.md after the last iteration
 *   GET .../stdout?tail=N           {content, lines, showing}: the last N lines (1..5000, 200)
 *   GET .../iterations              {iterations, count}
 *   GET .../iterations/{n}/features {iteration, feature_report}
 *   GET .../iterations/{n}/metrics  {iteration, metrics, holdout_metrics, analysis}
 *   GET .../code/{n}                the scored iteration_N.py, text/plain
 */
#include <stdio.h>
#include <string.h>

#include "parse.h"
#include "fcgi/handlers/agents.h"
#include "fcgi/handlers/handlers.h"

/* One text column of the caller's agent into {content}; "" when NULL. */
static void view_text(struct fcgi_ctx *c, const char *sql)
{
	struct ag_row a;
	if (ag_find(c, fcgi_param(c, "id"), false, &a) <= 0)
		return;
	struct db_col t = ag_text_col(c, AG_STDOUT_MAX + 1);
	struct db_arg k = DB_ARG_TEXT(a.id);
	enum db_status st = db_exec(fcgi_db(c), sql, &k, 1, &t, 1, NULL, NULL, NULL, DB_IDEMPOTENT);
	if (st != DB_OK) {
		fcgi_reply_db_error(c, st);
		return;
	}
	json_object *o = json_object_new_object();
	json_object_object_add(o, "content", json_object_new_string(t.is_null ? "" : t.buf));
	fcgi_reply_json(c, 200, o);
}

void h_agents_notes(struct fcgi_ctx *c)
{
	view_text(c, "SELECT notes FROM agents WHERE id = ?");
}

void h_agents_state(struct fcgi_ctx *c)
{
	view_text(c, "SELECT state_md FROM agents WHERE id = ?");
}

void h_agents_stdout(struct fcgi_ctx *c)
{
	int64_t tail;
	struct ag_row a;
	if (!fcgi_query_int(c, "tail", 1, 5000, 200, &tail) || ag_find(c, fcgi_param(c, "id"), false, &a) <= 0)
		return;
	struct db_col t = ag_text_col(c, AG_STDOUT_MAX + 1);
	struct db_arg k = DB_ARG_TEXT(a.id);
	enum db_status st = db_exec(fcgi_db(c), "SELECT stdout_tail FROM agents WHERE id = ?", &k, 1, &t, 1, NULL, NULL,
				    NULL, DB_IDEMPOTENT);
	if (st != DB_OK) {
		fcgi_reply_db_error(c, st);
		return;
	}
	const char *s = t.is_null ? "" : t.buf;
	size_t n = t.is_null ? 0 : t.len, lines = 0;
	for (size_t i = 0; i < n; i++)
		lines += s[i] == '\n';
	if (n && s[n - 1] != '\n')
		lines++;
	/* the last `tail` lines */
	size_t start = n, seen = 0;
	if (start && s[start - 1] == '\n')
		start--;
	while (start > 0 && seen < (size_t)tail) {
		start--;
		if (s[start] == '\n' && ++seen == (size_t)tail) {
			start++;
			break;
		}
	}
	json_object *o = json_object_new_object();
	json_object_object_add(o, "content", json_object_new_string_len(s + start, (int)(n - start)));
	json_object_object_add(o, "lines", json_object_new_int64((int64_t)lines));
	json_object_object_add(o, "showing", json_object_new_int64((int64_t)(lines < (size_t)tail ? lines : (size_t)tail)));
	fcgi_reply_json(c, 200, o);
}

void h_agents_iterations(struct fcgi_ctx *c)
{
	struct ag_row a;
	if (ag_find(c, fcgi_param(c, "id"), false, &a) <= 0)
		return;
	json_object *arr = json_object_new_array();
	enum db_status st = ag_iterations(c, a.id, 0, arr);
	if (st != DB_OK) {
		json_object_put(arr);
		fcgi_reply_db_error(c, st);
		return;
	}
	json_object *o = json_object_new_object();
	json_object_object_add(o, "count", json_object_new_int64((int64_t)json_object_array_length(arr)));
	json_object_object_add(o, "iterations", arr);
	fcgi_reply_json(c, 200, o);
}

/* The caller's agent and its recorded iteration {n}; NULL after replying. */
static json_object *view_iteration(struct fcgi_ctx *c, long long *n)
{
	struct ag_row a;
	const char *ns = fcgi_param(c, "n");
	int64_t v;
	if (ag_find(c, fcgi_param(c, "id"), false, &a) <= 0)
		return NULL;
	if (!ns || !parse_int(ns, strlen(ns), 1, 100000, &v)) {
		fcgi_reply_error(c, 404, "not_found", "no iteration %.16s", ns ? ns : "");
		return NULL;
	}
	json_object *arr = json_object_new_array();
	enum db_status st = ag_iterations(c, a.id, v, arr);
	if (st != DB_OK || json_object_array_length(arr) == 0) {
		json_object_put(arr);
		if (st != DB_OK)
			fcgi_reply_db_error(c, st);
		else
			fcgi_reply_error(c, 404, "not_found", "agent %s has no recorded iteration %lld", a.id, (long long)v);
		return NULL;
	}
	json_object *it = json_object_get(json_object_array_get_idx(arr, 0));
	json_object_put(arr);
	*n = v;
	return it;
}

void h_agents_features(struct fcgi_ctx *c)
{
	long long n;
	json_object *it = view_iteration(c, &n), *an, *fr = NULL;
	if (!it)
		return;
	if (json_object_object_get_ex(it, "analysis", &an) && an)
		json_object_object_get_ex(an, "feature_report", &fr);
	if (!fr) {
		json_object_put(it);
		fcgi_reply_error(c, 404, "not_found", "iteration %lld has no feature_report", n);
		return;
	}
	json_object *o = json_object_new_object();
	json_object_object_add(o, "iteration", json_object_new_int64(n));
	json_object_object_add(o, "feature_report", json_object_get(fr));
	json_object_put(it);
	fcgi_reply_json(c, 200, o);
}

void h_agents_iter_metrics(struct fcgi_ctx *c)
{
	long long n;
	json_object *it = view_iteration(c, &n), *v;
	if (!it)
		return;
	json_object *o = json_object_new_object();
	json_object_object_add(o, "iteration", json_object_new_int64(n));
	static const char *const keys[] = { "metrics", "holdout_metrics", "analysis", "has_error", "error" };
	for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
		json_object_object_add(o, keys[i], json_object_object_get_ex(it, keys[i], &v) ? json_object_get(v) : NULL);
	json_object_put(it);
	fcgi_reply_json(c, 200, o);
}

void h_agents_code(struct fcgi_ctx *c)
{
	struct ag_row a;
	const char *ns = fcgi_param(c, "n");
	int64_t v;
	if (ag_find(c, fcgi_param(c, "id"), false, &a) <= 0)
		return;
	if (!ns || !parse_int(ns, strlen(ns), 1, 100000, &v)) {
		fcgi_reply_error(c, 404, "not_found", "no iteration %.16s", ns ? ns : "");
		return;
	}
	struct db_col t = ag_text_col(c, AG_CODE_MAX * 4 + 1);
	struct db_arg k[] = { DB_ARG_TEXT(a.id), DB_ARG_INT(v) };
	struct db_result r = { 0 };
	enum db_status st = db_exec(fcgi_db(c), "SELECT code FROM agent_iterations WHERE agent_id = ? AND iteration = ? "
				    "AND status = 'completed' AND code IS NOT NULL", k, 2, &t, 1, NULL, NULL, &r, DB_IDEMPOTENT);
	if (st != DB_OK) {
		fcgi_reply_db_error(c, st);
		return;
	}
	if (r.rows == 0) {
		fcgi_reply_error(c, 404, "not_found", "agent %s has no code for iteration %lld", a.id, (long long)v);
		return;
	}
	fcgi_reply_raw(c, 200, "text/plain; charset=utf-8", t.buf, t.len);
}

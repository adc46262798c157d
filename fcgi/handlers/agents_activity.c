/*
 * agents_activity: the live activity lines of an agent's iteration in
 * flight, for GET /api/agents/{id} (activity.lines). The runner appends
 * them to agent_events as type `activity` while the iteration runs
 * (evaluator/runner/agent_activity.c); the lines of the current attempt are
 * those after the agent's latest iteration_started event (a re-claimed
 * iteration starts its list again). The events stream carries the same
 * lines as `activity` events.
 */
#include <string.h>

#include "fcgi/handlers/agents.h"
#include "fcgi/handlers/runs_view.h"

#define AG_ACTIVITY_LINES 50

/* Row callback: one line {at, line} appended (rows come newest first). */
static bool ag_act_row(void *ctx, const struct db_col *col, size_t ncol)
{
	json_object *arr = ctx, *data = ag_parse(col[1].buf), *line = NULL;
	(void)ncol;
	if (data && json_object_object_get_ex(data, "line", &line) && json_object_is_type(line, json_type_string)) {
		json_object *o = json_object_new_object();
		json_object_object_add(o, "at", json_object_new_string(col[0].buf));
		json_object_object_add(o, "line", json_object_get(line));
		json_object_array_add(arr, o);
	}
	json_object_put(data);
	return true;
}

enum db_status ag_activity_lines(struct fcgi_ctx *c, const char *id, json_object *act)
{
	json_object *arr = json_object_new_array();
	struct db_col col[] = { ag_text_col(c, RV_TS_LEN), ag_text_col(c, 4096) };
	struct db_arg a[] = { DB_ARG_TEXT(id), DB_ARG_TEXT(id), DB_ARG_INT(AG_ACTIVITY_LINES) };
	enum db_status st = db_exec(fcgi_db(c), "SELECT " RV_TS("created_at") ", data FROM agent_events WHERE agent_id = ? "
				    "AND type = 'activity' AND seq > (SELECT COALESCE(MAX(seq), 0) FROM agent_events "
				    "WHERE agent_id = ? AND type = 'iteration_started') ORDER BY seq DESC LIMIT ?",
				    a, 3, col, 2, ag_act_row, arr, NULL, DB_IDEMPOTENT);
	if (st != DB_OK) {
		json_object_put(arr);
		return st;
	}
	json_object *lines = json_object_new_array();   /* oldest first */
	for (size_t i = json_object_array_length(arr); i > 0; i--)
		json_object_array_add(lines, json_object_get(json_object_array_get_idx(arr, i - 1)));
	json_object_put(arr);
	json_object_object_add(act, "lines", lines);
	return DB_OK;
}

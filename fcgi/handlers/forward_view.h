/*
 * forward_view: the "forward" object of an evaluation or an agent iteration
 * in the API (issue 18, docs/api.md "Forward scores"): the row of
 * forward_scores (sql/022) the runner's forward job wrote, or JSON null.
 */
#ifndef AGENTTEST_FCGI_FORWARD_VIEW_H
#define AGENTTEST_FCGI_FORWARD_VIEW_H

#include <stdbool.h>

#include <json-c/json.h>

#include "db.h"

struct fcgi_ctx;

/*
 * The forward object of evaluation `id` into *out (NULL: none yet).
 * with_result adds the forward evaluation's result dictionary.
 */
enum db_status fwd_view_evaluation(struct fcgi_ctx *c, const char *id, bool with_result, json_object **out);

/* The forward object of iteration n of agent `agent_id` into *out (NULL: none yet). */
enum db_status fwd_view_iteration(struct fcgi_ctx *c, const char *agent_id, long long n, json_object **out);

/*
 * Reply with the board of challenge `challenge` (mode, dataset version or
 * window label dsv) ranked by forward score in the metric's direction
 * (lower: ascending), entries limit/offset; ?forward_state= filters
 * (provisional|final; 400 invalid_field otherwise). Ties: the longer
 * forward period first, then the earlier evaluation.
 */
void fwd_board(struct fcgi_ctx *c, const char *challenge, const char *metric, bool lower, const char *mode,
	       const char *dsv, long long limit, long long offset);

#endif

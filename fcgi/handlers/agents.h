/*
 * agents.h: the private header of the /api/agents handlers (issue 15,
 * docs/agents.md): agents.c (create, list, detail), agents_ctl.c (stop,
 * pause, resume, delete, messages, inbox, goal), agents_view.c (notes,
 * state, stdout, iterations, code), agents_io.c (clone, export, import),
 * agents_events.c (server-sent events).
 *
 * Ownership: an agent is visible to its owner and to admins only; anybody
 * else gets 404 for every route (the id is not confirmed to exist).
 */
#ifndef AGENTTEST_FCGI_AGENTS_H
#define AGENTTEST_FCGI_AGENTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "fcgi/handler.h"

#define AG_GOAL_MAX     10000     /* characters, as the original */
#define AG_TEXT_MAX     10000     /* a message */
#define AG_INBOX_MAX    50000     /* POST .../inbox */
#define AG_JSON_MAX     (1u << 20) /* a stored JSON column read back */
#define AG_CODE_MAX     (1u << 20)
#define AG_STDOUT_MAX   (2u << 20)

/* What the control routes need of an agent. */
struct ag_row {
	char      id[37];
	long long owner_id;
	char      status[32];     /* as stored */
	bool      paused;         /* a pause is requested or in effect */
	long long iterations_done, min_iterations, max_iterations, goal_version;
	long long active;         /* queued or running iterations (0 or 1) */
	long long next_iteration; /* iterations_done + 1 */
	char      challenge[65];
};

/*
 * Find agent `id` for the caller (owner or admin), optionally locking the
 * row (FOR UPDATE, inside the caller's transaction). 1 found; 0 after
 * replying 404; -1 after replying a database error.
 */
int ag_find(struct fcgi_ctx *c, const char *id, bool lock, struct ag_row *a);

/* The status shown: a starting/running agent with no iteration queued or running is "crashed". */
const char *ag_shown_status(const struct ag_row *a);

/* The API object of agent id (detail with iterations; full adds chat and activity). NULL on a DB error (*st). */
json_object *ag_detail(struct fcgi_ctx *c, const char *id, enum db_status *st);

/* Queue iteration n of agent id (inside the caller's transaction). */
enum db_status ag_queue_iteration(struct db *db, const char *id, long long n, long long goal_version);

/* Append an event (type, JSON object text) to the agent's change feed. */
enum db_status ag_event(struct db *db, const char *id, const char *type, const char *json);

/* Set the agent's status and log a "status" event (inside the caller's transaction). */
enum db_status ag_set_status(struct db *db, const char *id, const char *status, const char *detail);

/* A JSON value parsed from trusted stored text (NULL text or bad JSON -> null). */
json_object *ag_parse(const char *text);

/* A number from DB text (CAST(x AS CHAR)), keeping its digits; NULL/empty -> null. */
json_object *ag_num(const char *text);

/* The recorded (completed) iterations of agent id into arr; only > 0: that one alone. */
enum db_status ag_iterations(struct fcgi_ctx *c, const char *id, long long only, json_object *arr);

/* Reply 400 for an unknown challenge, listing the valid names. */
void ag_bad_challenge(struct fcgi_ctx *c, const char *name);

/* The optional best_by of obj (name: the field as the reply names it, e.g.
 * "config.best_by"; its last part is the key): absent or null leaves
 * *best_by untouched; "holdout" or "forward" sets it; anything else replies
 * 400 invalid_field naming the field and the two values, and returns false. */
bool ag_best_by_field(struct fcgi_ctx *c, json_object *obj, const char *name, const char **best_by);

/* Characters (code points) of valid UTF-8 text. */
size_t ag_chars(const char *s);

/* A text column of cap bytes in the request arena. */
struct db_col ag_text_col(struct fcgi_ctx *c, size_t cap);

/* The live activity lines of the current attempt of agent id's iteration in
 * flight (at most 50, oldest first) into act as "lines": [{at, line}]. */
enum db_status ag_activity_lines(struct fcgi_ctx *c, const char *id, json_object *act);

/* Agents starting or running now (all owners). -1 on error. */
long long ag_count_active(struct db *db);

#define AG_LLM_TOKENS_MAX   1000000000000000LL /* budget.tokens */
#define AG_LLM_USD_MAX      1e9                /* budget.usd */
#define AG_LLM_REQUESTS_MAX 1000000000000LL    /* budget.requests */

/* The LLM budget fields of a budget object (tokens, usd, requests; unset ones untouched); replies 400. */
bool ag_llm_budget_fields(struct fcgi_ctx *c, json_object *budget, int64_t *tokens, double *usd, int64_t *requests);

/* Validate and create an agent from cfg fields (create and clone share it); replies. */
struct ag_new {
	const char *challenge, *goal, *model, *driver;
	int64_t     min_iterations, max_iterations, days_back, seed;
	double      budget_wall_s;   /* < 0: none */
	int64_t     budget_tokens;   /* LLM budgets; 0: the operator's default (AGENTTEST_LLM_AGENT_*) */
	double      budget_usd;
	int64_t     budget_requests;
	const char *cloned_from;
	int64_t     fork_iteration;  /* 0: none */
	const char *first_message;   /* delivered to the first iteration, or NULL */
	const char *dataset_version; /* NULL: the default */
	const char *best_by;         /* "holdout" (NULL: the default) or "forward" (issue 18) */
	bool        imported;        /* import: status completed, nothing queued, no admission count */
	long long   iterations_done; /* import: the iterations brought along */
	/* import: more rows inside the creating transaction, after the agent row */
	enum db_status (*extra)(struct db *db, const char *id, void *ctx);
	void       *extra_ctx;
};
/* Insert the agent, its first goal version and iteration 1 (or nothing); 1 ok (id filled), 0 replied. */
int ag_create(struct fcgi_ctx *c, const struct ag_new *n, char id[37]);

#endif

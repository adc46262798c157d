/*
 * agents_ask: POST /api/agents/{id}/ask {text} (or {question}): the model
 * answers a question about the agent, and question and answer land in the
 * agent's chat (types 'ask' and 'answer'; never delivered to the agent).
 *
 * Theory of operation. The ask runs in the prefork worker that serves the
 * request, not as a runner job: it is one short HTTP call (bounded at 45 s,
 * agents_ask_http.c) that needs no sandbox and no file of the agent (the
 * context is all in MariaDB, agents_ask_ctx.c), and a runner job would
 * wait behind the iterations and evaluations that hold the runner's slots
 * for minutes. What a job would have given is done here in order:
 *
 *   1. the key: the agent owner's Anthropic key from the secret store, else
 *      the admin default (owner 0); neither: 409 no_api_key, nothing sent;
 *   2. the agent's budget (its own, else AGENTTEST_LLM_AGENT_*), from the
 *      same columns the agent's turns are charged to
 *      (sql/015_llm_budgets.sql); nothing left: 402 budget_exhausted
 *      naming it, nothing sent;
 *   3. a slot: at most ASK_SLOTS asks of one owner at once over every
 *      worker and host, as MariaDB named locks "agenttest.ask.<owner>.<k>"
 *      taken with GET_LOCK(name, 0) on this worker's connection (a worker
 *      that dies loses its connection and so its lock); none free: 429
 *      rate_limited with Retry-After;
 *   4. the owner's day (AGENTTEST_LLM_OWNER_DAY_*): the ask's estimate
 *      (ASK_MAX_TOKENS output tokens, the body's bytes / 4 input tokens, at
 *      the model's price) reserved in MariaDB as the egress proxy reserves
 *      each request of a turn (common/llm_reserve.c, sql/028), so asks and
 *      turns on every host together never pass the day's budget; refused:
 *      402 budget_exhausted naming it, nothing sent;
 *   5. the call (plain JSON, max_tokens ASK_MAX_TOKENS) to
 *      AGENTTEST_ANTHROPIC_UPSTREAM with the key, the slot released after;
 *   6. one transaction: the agent's totals, an agent_llm_usage row of kind
 *      'ask' (every request that was sent counts, whatever came back;
 *      tokens and USD, priced by common/llm_prices.c, from the answer's
 *      usage), the reservation settled to that usage on the owner's day,
 *      and on success the two chat messages and their "chat" events. A
 *      lock conflict is retried inside this step: the pipeline's own retry
 *      (app.c, which runs a handler again) must never run after step 5, or
 *      one ask would be sent, and paid for, twice. A worker that dies
 *      before this step leaves its reservation to expire (ASK_RESERVE_TTL_S).
 *
 * Upstream 429 is answered 429 rate_limited and 529 (overloaded) 503
 * unavailable, both with the upstream's Retry-After; other upstream
 * failures 502 upstream_error. Nothing is retried. Two asks of one agent
 * that pass the agent's budget check together can overshoot that budget by
 * what they spend (at most ASK_SLOTS answers of ASK_MAX_TOKENS); the
 * owner's day cannot be overshot but by the difference between the
 * estimates and the real usage (docs/agents.md, "How budgets are counted").
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sodium.h>

#include "agent_driver.h"
#include "llm_prices.h"
#include "llm_reserve.h"
#include "llm_upstream.h"
#include "secret_store.h"
#include "fcgi/handlers/agents.h"
#include "fcgi/handlers/agents_ask.h"
#include "fcgi/handlers/handlers.h"

#define ASK_RETRY_S "5"   /* Retry-After when every slot is taken */
#define ASK_RECORD_TRIES 5 /* attempts of the recording transaction on a lock conflict */
#define ASK_RESERVE_TTL_S 120 /* the call is bounded at 45 s (agents_ask_http.c) */

/* One budget: limit and used. */
struct ask_budget {
	long long tokens, requests;
	double    usd;
};

/* What the model reported for one answer. */
struct ask_usage {
	long long input, output, cache_write, cache_read;
	double    usd;
};

/* A config integer >= 0, def when unset or malformed. */
static long long ask_cfg_int(struct fcgi_ctx *c, const char *key, long long def)
{
	const char *v = fcgi_config(c, key);
	char *end;
	if (!v || !*v)
		return def;
	long long x = strtoll(v, &end, 10);
	return *end || x < 0 ? def : x;
}

/* A config USD amount >= 0, def when unset or malformed. */
static double ask_cfg_usd(struct fcgi_ctx *c, const char *key, double def)
{
	const char *v = fcgi_config(c, key);
	char *end;
	if (!v || !*v)
		return def;
	double x = strtod(v, &end);
	return *end || !(x >= 0) || !isfinite(x) ? def : x;
}

/* First budget of `who` with nothing left into why (unchanged when all have room). */
static void ask_left(const struct ask_budget *lim, const struct ask_budget *used, const char *who, char *why,
		     size_t n)
{
	if (why[0])
		return;
	if (used->requests >= lim->requests)
		snprintf(why, n, "%s requests: %lld of %lld used", who, used->requests, lim->requests);
	else if (used->tokens >= lim->tokens)
		snprintf(why, n, "%s tokens: %lld of %lld used", who, used->tokens, lim->tokens);
	else if (used->usd >= lim->usd)
		snprintf(why, n, "%s usd: %.6f of %.6f used", who, used->usd, lim->usd);
}

/* The budget of agent id; why[0] != 0 names one used up. false on a DB error. */
static bool ask_budgets(struct fcgi_ctx *c, const char *id, char *why, size_t n, enum db_status *st)
{
	char bu[40], cu[40];
	struct db_col col[] = { DB_COL_INT, DB_COL_TEXT(bu), DB_COL_INT, DB_COL_INT, DB_COL_TEXT(cu), DB_COL_INT };
	struct db_arg k = DB_ARG_TEXT(id);
	bool got = false;
	*st = db_exec(fcgi_db(c), "SELECT budget_tokens, CAST(budget_usd AS CHAR), budget_requests, "
		      "tokens_input + tokens_output + tokens_cache_write + tokens_cache_read, "
		      "CAST(cost_usd AS CHAR), llm_requests FROM agents WHERE id = ?",
		      &k, 1, col, sizeof col / sizeof col[0], db_row_once, &got, NULL, DB_IDEMPOTENT);
	if (*st != DB_OK)
		return false;
	why[0] = '\0';
	if (!got)
		return true;
	struct ask_budget lim = {
		.tokens = col[0].is_null ? ask_cfg_int(c, "AGENTTEST_LLM_AGENT_TOKENS", AGENT_LLM_DEFAULT_TOKENS) : col[0].i,
		.usd = col[1].is_null ? ask_cfg_usd(c, "AGENTTEST_LLM_AGENT_USD", AGENT_LLM_DEFAULT_USD) : strtod(bu, NULL),
		.requests = col[2].is_null ? ask_cfg_int(c, "AGENTTEST_LLM_AGENT_REQUESTS", AGENT_LLM_DEFAULT_REQUESTS)
					   : col[2].i,
	};
	struct ask_budget used = { .tokens = col[3].i, .usd = strtod(cu, NULL), .requests = col[5].i };
	ask_left(&lim, &used, "agent", why, n);
	return true;
}

/*
 * Reserve the ask's estimate against the owner's day (common/llm_reserve.c):
 * 1 reserved (*res), 0 refused (why names the budget), -1 database error.
 */
static int ask_reserve(struct fcgi_ctx *c, const struct ag_row *a, const struct llm_price *pr, const char *body,
		       uint64_t *res, struct buf *why)
{
	struct llm_reserve_limits lim = {
		.tokens = ask_cfg_int(c, "AGENTTEST_LLM_OWNER_DAY_TOKENS", AGENT_LLM_DEFAULT_OWNER_DAY_TOKENS),
		.usd = ask_cfg_usd(c, "AGENTTEST_LLM_OWNER_DAY_USD", AGENT_LLM_DEFAULT_OWNER_DAY_USD),
		.requests = ask_cfg_int(c, "AGENTTEST_LLM_OWNER_DAY_REQUESTS", AGENT_LLM_DEFAULT_OWNER_DAY_REQUESTS),
	};
	struct llm_reserve_usage est = { .input = (int64_t)(strlen(body) / 4), .output = ASK_MAX_TOKENS };
	est.usd = llm_price_cost(pr, est.input, est.output, 0, 0);
	struct llm_reserve_who w = { .owner_id = (uint64_t)a->owner_id, .agent_id = a->id, .kind = "ask" };
	return llm_reserve(fcgi_db(c), &w, &lim, &est, ASK_RESERVE_TTL_S, res, why);
}

/* The owner's key, else the admin default, into key: 1, 0 none, -1 error (err). */
static int ask_key(struct fcgi_ctx *c, long long owner, struct buf *key, struct buf *err)
{
	int got = secret_store_get(fcgi_db(c), fcgi_server_key(c), (uint64_t)owner, "anthropic", key, err);
	if (got == 0 && owner != 0)
		got = secret_store_get(fcgi_db(c), fcgi_server_key(c), 0, "anthropic", key, err);
	return got;
}

/* The lock name of slot k of owner. */
static void ask_slot_name(char *name, size_t n, long long owner, int k)
{
	snprintf(name, n, "agenttest.ask.%lld.%d", owner, k);
}

/* Take a free slot of owner: its index, -1 when all are taken, -2 on a DB error (*st). */
static int ask_slot_take(struct fcgi_ctx *c, long long owner, enum db_status *st)
{
	for (int k = 0; k < ASK_SLOTS; k++) {
		char name[64];
		ask_slot_name(name, sizeof name, owner, k);
		struct db_col col[] = { DB_COL_INT };
		struct db_arg a = DB_ARG_TEXT(name);
		bool got = false;
		*st = db_exec(fcgi_db(c), "SELECT COALESCE(GET_LOCK(?, 0), 0)", &a, 1, col, 1, db_row_once, &got, NULL, 0);
		if (*st != DB_OK)
			return -2;
		if (got && col[0].i == 1)
			return k;
	}
	return -1;
}

/* Release slot k of owner (best effort: a lost connection released it already). */
static void ask_slot_release(struct fcgi_ctx *c, long long owner, int k)
{
	char name[64];
	ask_slot_name(name, sizeof name, owner, k);
	struct db_arg a = DB_ARG_TEXT(name);
	(void)db_exec(fcgi_db(c), "DO RELEASE_LOCK(?)", &a, 1, NULL, 0, NULL, NULL, NULL, 0);
}

/* The API model id of an agent's model alias (sonnet, opus, haiku). */
static const char *ask_model_id(const char *alias)
{
	if (strcmp(alias, "opus") == 0)
		return "claude-opus-4-5";
	if (strcmp(alias, "haiku") == 0)
		return "claude-haiku-4-5";
	return "claude-sonnet-4-5";
}

/* The agent's model alias into alias; false on a DB error. */
static bool ask_model(struct fcgi_ctx *c, const char *id, char alias[17], enum db_status *st)
{
	struct db_col col[] = { { .type = DB_T_TEXT, .buf = alias, .cap = 17 } };
	struct db_arg k = DB_ARG_TEXT(id);
	bool got = false;
	snprintf(alias, 17, "%s", "sonnet");
	*st = db_exec(fcgi_db(c), "SELECT model FROM agents WHERE id = ?", &k, 1, col, 1, db_row_once, &got, NULL,
		      DB_IDEMPOTENT);
	return *st == DB_OK;
}

/* The Messages request body: system context, the question, the model. */
static char *ask_body(const char *model, const char *system, const char *question)
{
	json_object *o = json_object_new_object(), *msgs = json_object_new_array(), *m = json_object_new_object();
	json_object_object_add(o, "model", json_object_new_string(model));
	json_object_object_add(o, "max_tokens", json_object_new_int(ASK_MAX_TOKENS));
	json_object_object_add(o, "system", json_object_new_string(system));
	json_object_object_add(m, "role", json_object_new_string("user"));
	json_object_object_add(m, "content", json_object_new_string(question));
	json_object_array_add(msgs, m);
	json_object_object_add(o, "messages", msgs);
	char *s = strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
	json_object_put(o);
	if (!s)
		abort();
	return s;
}

/* A usage field as a count >= 0 (0 when absent or not an integer). */
static long long ask_count(json_object *u, const char *k)
{
	json_object *v;
	if (!u || !json_object_object_get_ex(u, k, &v) || !json_object_is_type(v, json_type_int))
		return 0;
	long long x = json_object_get_int64(v);
	return x > 0 ? x : 0;
}

/* The parsed answer body (NULL when it is not a JSON object); depth-limited. */
static json_object *ask_parse(const struct buf *b)
{
	json_tokener *t = json_tokener_new_ex(32);
	if (!t)
		return NULL;
	json_object *o = b->len ? json_tokener_parse_ex(t, b->data, (int)b->len) : NULL;
	if (o && (json_tokener_get_error(t) != json_tokener_success || !json_object_is_type(o, json_type_object))) {
		json_object_put(o);
		o = NULL;
	}
	json_tokener_free(t);
	return o;
}

/* The answer's usage, priced; the text blocks joined into text. */
static void ask_answer(json_object *o, const struct llm_prices *p, const char *model, struct ask_usage *u,
		       struct buf *text)
{
	json_object *usage = NULL, *content = NULL;
	json_object_object_get_ex(o, "usage", &usage);
	u->input = ask_count(usage, "input_tokens");
	u->output = ask_count(usage, "output_tokens");
	u->cache_write = ask_count(usage, "cache_creation_input_tokens");
	u->cache_read = ask_count(usage, "cache_read_input_tokens");
	json_object *m;
	const char *answered = json_object_object_get_ex(o, "model", &m) && json_object_is_type(m, json_type_string) ?
		json_object_get_string(m) : model;
	const struct llm_price *pr = llm_price_for(p, answered);
	if (!pr)
		pr = llm_price_for(p, model);
	u->usd = pr ? llm_price_cost(pr, u->input, u->output, u->cache_write, u->cache_read) : 0.0;
	if (!json_object_object_get_ex(o, "content", &content) || !json_object_is_type(content, json_type_array))
		return;
	for (size_t i = 0; i < json_object_array_length(content); i++) {
		json_object *b = json_object_array_get_idx(content, i), *ty, *tx;
		if (json_object_object_get_ex(b, "type", &ty) && strcmp(json_object_get_string(ty), "text") == 0 &&
		    json_object_object_get_ex(b, "text", &tx) && json_object_is_type(tx, json_type_string)) {
			if (text->len)
				buf_puts(text, "\n\n");
			buf_puts(text, json_object_get_string(tx));
		}
	}
}

/*
 * Charge one request and its usage to the agent, agent_llm_usage and, by
 * settling reservation res, its owner's day (in a transaction).
 */
static enum db_status ask_charge(struct fcgi_ctx *c, const char *id, long long owner, uint64_t res,
				 const struct ask_usage *u)
{
	char us[40];
	snprintf(us, sizeof us, "%.12g", u->usd);
	struct db_arg row[] = { DB_ARG_TEXT(id), DB_ARG_INT(owner), DB_ARG_INT(u->input), DB_ARG_INT(u->output),
				DB_ARG_INT(u->cache_write), DB_ARG_INT(u->cache_read), DB_ARG_TEXT(us) };
	struct db_arg ag[] = { DB_ARG_INT(u->input), DB_ARG_INT(u->output), DB_ARG_INT(u->cache_write),
			       DB_ARG_INT(u->cache_read), DB_ARG_TEXT(us), DB_ARG_TEXT(id) };
	struct llm_reserve_usage settled = { .input = u->input, .output = u->output, .cache_write = u->cache_write,
					     .cache_read = u->cache_read, .usd = u->usd };
	/* The agent row first: its exclusive lock orders concurrent asks of one
	 * agent. Inserting a child row first would take a shared lock on it
	 * (the foreign key check) that two asks would both try to upgrade: a
	 * deadlock. The owner's day last, as every reserver takes it: nothing
	 * that holds it waits for an agent row. */
	enum db_status st = db_exec(fcgi_db(c), "UPDATE agents SET tokens_input = tokens_input + ?, tokens_output = "
				    "tokens_output + ?, tokens_cache_write = tokens_cache_write + ?, tokens_cache_read = "
				    "tokens_cache_read + ?, llm_requests = llm_requests + 1, cost_usd = cost_usd + ? WHERE id = ?",
				    ag, 6, NULL, 0, NULL, NULL, NULL, 0);
	if (st == DB_OK)
		st = db_exec(fcgi_db(c), "INSERT INTO agent_llm_usage (agent_id, owner_id, kind, day, input, "
			     "output, cache_write, cache_read, requests, usd) VALUES (?, ?, 'ask', UTC_DATE(), ?, "
			     "?, ?, ?, 1, ?)", row, 7, NULL, 0, NULL, NULL, NULL, 0);
	if (st == DB_OK)
		st = llm_reserve_settle_tx(fcgi_db(c), (uint64_t)owner, res, &settled);
	return st;
}

/* One chat message and its "chat" event (in a transaction); its id into *mid. */
static enum db_status ask_message(struct fcgi_ctx *c, const char *id, const char *role, const char *type,
				  const char *text, long long *mid)
{
	struct db_arg m[] = { DB_ARG_TEXT(id), DB_ARG_TEXT(role), DB_ARG_TEXT(type), DB_ARG_TEXT(text) };
	struct db_result r = { 0 };
	enum db_status st = db_exec(fcgi_db(c), "INSERT INTO agent_messages (agent_id, role, type, text) VALUES (?, ?, "
				    "?, ?)", m, 4, NULL, 0, NULL, NULL, &r, 0);
	if (st != DB_OK)
		return st;
	*mid = (long long)r.insert_id;
	json_object *o = json_object_new_object();
	json_object_object_add(o, "role", json_object_new_string(role));
	json_object_object_add(o, "type", json_object_new_string(type));
	json_object_object_add(o, "text", json_object_new_string(text));
	st = ag_event(fcgi_db(c), id, "chat", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
	json_object_put(o);
	return st;
}

/* The question of the body ({text} or {question}, exactly one, not blank); NULL after replying. */
static const char *ask_question(struct fcgi_ctx *c)
{
	static const char *const allowed[] = { "text", "question", NULL };
	json_object *body = fcgi_body(c);
	const char *text = NULL, *q = NULL;
	if (!fcgi_json_only(c, body, allowed) ||
	    !fcgi_json_string(c, body, "text", FIELD_OPTIONAL, 0, AG_TEXT_MAX * 4, &text) ||
	    !fcgi_json_string(c, body, "question", FIELD_OPTIONAL, 0, AG_TEXT_MAX * 4, &q))
		return NULL;
	if ((text != NULL) == (q != NULL)) {
		fcgi_reply_error(c, 400, text ? "invalid_field" : "missing_field",
				 "give the question as exactly one of text or question");
		return NULL;
	}
	const char *s = text ? text : q;
	if (strspn(s, " \t\r\n") == strlen(s) || ag_chars(s) > AG_TEXT_MAX) {
		fcgi_reply_error(c, 400, "invalid_field", "%s must be 1 to %d characters, not only white space",
				 text ? "text" : "question", AG_TEXT_MAX);
		return NULL;
	}
	return s;
}

/* At most n - 1 bytes of s into out, cut on a UTF-8 character boundary. */
static void ask_cut(const char *s, char *out, size_t n)
{
	size_t len = strlen(s);
	if (len >= n) {
		len = n - 1;
		while (len > 0 && ((unsigned char)s[len] & 0xC0) == 0x80)
			len--;
	}
	memcpy(out, s, len);
	out[len] = '\0';
}

/* Reply what an upstream answer other than 200 means. */
static void ask_reply_upstream(struct fcgi_ctx *c, const struct ask_http *h)
{
	json_object *o = ask_parse(&h->body), *e, *m;
	char msg[301];
	ask_cut(o && json_object_object_get_ex(o, "error", &e) && json_object_object_get_ex(e, "message", &m) &&
		json_object_is_type(m, json_type_string) ? json_object_get_string(m) : "no message", msg, sizeof msg);
	if (h->retry_after[0] && (h->status == 429 || h->status == 529))
		fcgi_add_header(c, "Retry-After", h->retry_after);
	if (h->status == 429)
		fcgi_reply_error(c, 429, "rate_limited", "the model API is rate limiting this key: %s", msg);
	else if (h->status == 529)
		fcgi_reply_error(c, 503, "unavailable", "the model API is overloaded: %s", msg);
	else
		fcgi_reply_error(c, 502, "upstream_error", "the model API answered %d: %s", h->status, msg);
	json_object_put(o);
}

/*
 * The recording transaction of a sent request: the charge and, with an
 * answer, the two chat messages. A lock conflict is retried here (up to
 * ASK_RECORD_TRIES times; nothing was kept), never by running the handler
 * again, which would send the request a second time.
 */
static enum db_status ask_record(struct fcgi_ctx *c, const struct ag_row *a, uint64_t res, const char *question,
				 const struct ask_usage *u, const char *answer, long long *qid, long long *aid)
{
	enum db_status st = DB_CONFLICT;
	for (int attempt = 1; attempt <= ASK_RECORD_TRIES && st == DB_CONFLICT; attempt++) {
		if (attempt > 1) {
			struct timespec pause = { 0, (long)(5 + randombytes_uniform(20)) * 1000000L * attempt };
			nanosleep(&pause, NULL);
		}
		st = db_begin(fcgi_db(c));
		if (st == DB_OK)
			st = ask_charge(c, a->id, a->owner_id, res, u);
		if (st == DB_OK && answer) {
			st = ask_message(c, a->id, "user", "ask", question, qid);
			if (st == DB_OK)
				st = ask_message(c, a->id, "assistant", "answer", answer, aid);
		}
		if (st == DB_OK)
			st = db_commit(fcgi_db(c));
		if (st != DB_OK)
			db_rollback(fcgi_db(c));
	}
	return st;
}

/* Record the outcome of a sent request (charge, and on success the chat), then reply. */
static void ask_finish(struct fcgi_ctx *c, const struct ag_row *a, uint64_t res, const char *question,
		       const char *model, const struct llm_prices *p, const struct ask_http *h, bool answered)
{
	struct ask_usage u = { 0 };
	struct buf text = BUF_INIT;
	json_object *o = answered && h->status == 200 ? ask_parse(&h->body) : NULL;
	if (o)
		ask_answer(o, p, model, &u, &text);
	long long qid = 0, aid = 0;
	enum db_status st = ask_record(c, a, res, question, &u, o && text.len ? buf_cstr(&text) : NULL, &qid, &aid);
	if (st != DB_OK) {
		/* Not fcgi_reply_db_error: its conflict reply would make the
		 * pipeline run the handler again, and so send a second request. */
		fcgi_reply_error(c, 503, "unavailable", "the answer came but could not be recorded: %s", db_strerror(st));
	} else if (!answered) {
		fcgi_reply_error(c, 502, "upstream_error", "%s", buf_cstr(&h->error));
	} else if (h->status != 200) {
		ask_reply_upstream(c, h);
	} else if (!o || !text.len) {
		fcgi_reply_error(c, 502, "upstream_error", "the model API's answer has no text");
	} else {
		json_object *r = json_object_new_object(), *us = json_object_new_object();
		json_object_object_add(r, "question_id", json_object_new_int64(qid));
		json_object_object_add(r, "answer_id", json_object_new_int64(aid));
		json_object_object_add(r, "answer", json_object_new_string(buf_cstr(&text)));
		json_object_object_add(r, "model", json_object_new_string(model));
		json_object_object_add(us, "input", json_object_new_int64(u.input));
		json_object_object_add(us, "output", json_object_new_int64(u.output));
		json_object_object_add(us, "cache_write", json_object_new_int64(u.cache_write));
		json_object_object_add(us, "cache_read", json_object_new_int64(u.cache_read));
		json_object_object_add(us, "requests", json_object_new_int(1));
		json_object_object_add(us, "cost", json_object_new_double(u.usd));
		json_object_object_add(r, "usage", us);
		fcgi_reply_json(c, 200, r);
	}
	json_object_put(o);
	buf_free(&text);
}

/*
 * The price table (AGENTTEST_LLM_PRICES, else the built-in one), which must
 * price model; false after replying 503 (nothing is sent: an answer that
 * cannot be priced cannot be budgeted, as the proxy refuses such a model).
 */
static bool ask_prices(struct fcgi_ctx *c, const char *model, struct llm_prices *p)
{
	const char *path = fcgi_config(c, "AGENTTEST_LLM_PRICES");
	struct buf err = BUF_INIT;
	llm_prices_default(p);
	if (path && *path && !llm_prices_load(p, path, &err)) {
		fcgi_reply_error(c, 503, "unavailable", "AGENTTEST_LLM_PRICES: %s", buf_cstr(&err));
	} else if (!llm_price_for(p, model)) {
		fcgi_reply_error(c, 503, "unavailable", "the price table has no entry for %s", model);
	} else {
		buf_free(&err);
		return true;
	}
	buf_free(&err);
	llm_prices_free(p);
	return false;
}

/* Steps 3-6 with the key and the context ready: the slot, the reservation, the call, the record. */
static void ask_send(struct fcgi_ctx *c, const struct ag_row *a, const char *question, const struct buf *key,
		     const char *system)
{
	enum db_status st;
	char alias[17];
	const char *upstream = fcgi_config(c, "AGENTTEST_ANTHROPIC_UPSTREAM");
	if (!upstream || !*upstream)
		upstream = LLM_UPSTREAM_DEFAULT;
	if (!llm_upstream_ok(upstream)) {
		fcgi_reply_error(c, 503, "unavailable", "AGENTTEST_ANTHROPIC_UPSTREAM must be https:// or loopback http://");
		return;
	}
	if (!ask_model(c, a->id, alias, &st)) {
		fcgi_reply_db_error(c, st);
		return;
	}
	const char *model = ask_model_id(alias);
	struct llm_prices prices;
	if (!ask_prices(c, model, &prices))
		return;
	int slot = ask_slot_take(c, a->owner_id, &st);
	if (slot == -2) {
		fcgi_reply_db_error(c, st);
	} else if (slot < 0) {
		fcgi_add_header(c, "Retry-After", ASK_RETRY_S);
		fcgi_reply_error(c, 429, "rate_limited", "%d asks of this owner are running; try again shortly", ASK_SLOTS);
	}
	if (slot < 0) {
		llm_prices_free(&prices);
		return;
	}
	char *body = ask_body(model, system, question);
	struct buf why = BUF_INIT;
	uint64_t res = 0;
	int rsv = ask_reserve(c, a, llm_price_for(&prices, model), body, &res, &why);
	if (rsv == 1) {
		struct ask_http h = { 0 };
		bool answered = ask_http_post(upstream, key, body, &h);
		ask_slot_release(c, a->owner_id, slot);
		ask_finish(c, a, res, question, model, &prices, &h, answered);
		ask_http_free(&h);
	} else {
		ask_slot_release(c, a->owner_id, slot);
		if (rsv == 0)
			fcgi_reply_error(c, 402, "budget_exhausted", "budget: %s", buf_cstr(&why));
		else   /* why holds the server's message: not for the client */
			fcgi_reply_error(c, 503, "unavailable", "the owner's daily budget could not be reserved: "
					 "the database is unavailable");
	}
	buf_free(&why);
	free(body);
	llm_prices_free(&prices);
}

void h_agents_ask(struct fcgi_ctx *c)
{
	struct ag_row a;
	const char *question = ask_question(c);
	if (!question || ag_find(c, fcgi_param(c, "id"), false, &a) <= 0)
		return;
	struct buf key = BUF_INIT, err = BUF_INIT, system = BUF_INIT;
	enum db_status st;
	char why[160];
	int got = ask_key(c, a.owner_id, &key, &err);
	if (got < 0)
		fcgi_reply_error(c, 503, "unavailable", "cannot read the Anthropic key: %s", buf_cstr(&err));
	else if (got == 0)
		fcgi_reply_error(c, 409, "no_api_key", "no Anthropic key for this agent's owner and no admin default: "
				 "set one with POST /api/anthropic-key");
	else if (!ask_budgets(c, a.id, why, sizeof why, &st) || !ask_context(c, a.id, &system, &st))
		fcgi_reply_db_error(c, st);
	else if (why[0])
		fcgi_reply_error(c, 402, "budget_exhausted", "budget: %s", why);
	else
		ask_send(c, &a, question, &key, buf_cstr(&system));
	if (key.data)
		sodium_memzero(key.data, key.cap);
	buf_free(&key);
	buf_free(&err);
	buf_free(&system);
}

/*
 * agent_llm: what the agent iteration kind (agent_job.c) adds for the LLM
 * drivers (claude-code, command): the owner's Anthropic key, the budgets
 * that are left, and the metered usage of a turn (sql/015_llm_budgets.sql).
 *
 * Theory of operation. The database is the authority on spending. At load
 * time (agent_llm_load) the kind reads the agent's budgets (its own, else
 * the operator's AGENTTEST_LLM_AGENT_* defaults) and totals, and the
 * owner's totals of the UTC day (llm_owner_day) against
 * AGENTTEST_LLM_OWNER_DAY_*. What is left of the agent's becomes the
 * egress proxy's agent limits for this one turn (its ledger files are a
 * per-turn cache, llm.py): an agent runs one turn at a time. The owner's
 * day is shared by the owner's turns on every host and the API's asks, so
 * the proxy gets the day's full limits and the database URL, and reserves
 * each request's estimate in llm_reservations before sending it
 * (common/llm_reserve.c), settling it into llm_owner_day when it ends. A
 * budget with nothing left stops the iteration before the turn. The key is
 * opened from the secret store (the owner's row, else the admin default of
 * owner 0) into a buffer that is wiped on release; it and the database URL
 * travel to the harness only inside the request on its stdin pipe
 * (agent_llm_splice) and from there to the proxy on another pipe. When the
 * turn ends (agent_llm_charge, in the iteration's finishing transaction)
 * its usage is added to the agent's totals and is one agent_llm_usage row;
 * the owner's day already has it, request by request.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>
#include <sodium.h>

#include "agent_driver.h"
#include "config.h"
#include "parse.h"
#include "secret.h"
#include "secret_store.h"
#include "evaluator/runner/agent.h"

/* One statement; -1 with the message in err. */
static int al_ex(struct db *db, const char *sql, const struct db_arg *a, size_t na, struct db_col *c, size_t nc,
		 struct db_result *r, struct buf *err)
{
	if (db_exec(db, sql, a, na, c, nc, NULL, NULL, r, 0) != DB_OK) {
		buf_printf(err, "database: %s", db_error(db));
		return -1;
	}
	return 0;
}

bool agent_llm_driver(const char *driver)
{
	return strcmp(driver, "claude-code") == 0 || strcmp(driver, "command") == 0;
}

/* An integer key in [0, 1e15], def when unset. */
static bool al_cfg_i64(const struct config *cfg, const char *key, int64_t def, int64_t *out, struct buf *err)
{
	const char *v = config_get(cfg, key);
	*out = def;
	if (!v || !*v)
		return true;
	if (!parse_int(v, strlen(v), 0, 1000000000000000LL, out)) {
		buf_printf(err, "%s must be an integer in [0, 1e15], got '%.40s'", key, v);
		return false;
	}
	return true;
}

/* A USD key in [0, 1e9], def when unset. */
static bool al_cfg_usd(const struct config *cfg, const char *key, double def, double *out, struct buf *err)
{
	const char *v = config_get(cfg, key);
	char *end;
	*out = def;
	if (!v || !*v)
		return true;
	errno = 0;
	double x = strtod(v, &end);
	if (errno || *end || !(x >= 0 && x <= 1e9)) {
		buf_printf(err, "%s must be a number in [0, 1e9], got '%.40s'", key, v);
		return false;
	}
	*out = x;
	return true;
}

bool agent_llm_env_init(struct agent_llm_env *e, const struct config *cfg, struct buf *err)
{
	const char *v;
	memset(e, 0, sizeof *e);
	e->secret_file = cfg->secret_file;
	if ((v = config_get(cfg, "AGENTTEST_ANTHROPIC_UPSTREAM")) && *v)
		snprintf(e->upstream, sizeof e->upstream, "%s", v);
	if ((v = config_get(cfg, "AGENTTEST_AGENT_COMMAND")) && *v) {
		if (strlen(v) >= sizeof e->command) {
			buf_printf(err, "AGENTTEST_AGENT_COMMAND is longer than %zu bytes", sizeof e->command - 1);
			return false;
		}
		snprintf(e->command, sizeof e->command, "%s", v);
	}
	return al_cfg_i64(cfg, "AGENTTEST_LLM_AGENT_TOKENS", AGENT_LLM_DEFAULT_TOKENS, &e->agent.tokens, err) &&
	       al_cfg_usd(cfg, "AGENTTEST_LLM_AGENT_USD", AGENT_LLM_DEFAULT_USD, &e->agent.usd, err) &&
	       al_cfg_i64(cfg, "AGENTTEST_LLM_AGENT_REQUESTS", AGENT_LLM_DEFAULT_REQUESTS, &e->agent.requests, err) &&
	       al_cfg_i64(cfg, "AGENTTEST_LLM_OWNER_DAY_TOKENS", AGENT_LLM_DEFAULT_OWNER_DAY_TOKENS,
			  &e->owner_day.tokens, err) &&
	       al_cfg_usd(cfg, "AGENTTEST_LLM_OWNER_DAY_USD", AGENT_LLM_DEFAULT_OWNER_DAY_USD, &e->owner_day.usd, err) &&
	       al_cfg_i64(cfg, "AGENTTEST_LLM_OWNER_DAY_REQUESTS", AGENT_LLM_DEFAULT_OWNER_DAY_REQUESTS,
			  &e->owner_day.requests, err);
}

/* A DOUBLE column read as text (CAST AS CHAR); 0 when NULL or empty. */
static double al_dbl(const struct db_col *c)
{
	return c->is_null || !c->buf[0] ? 0.0 : strtod(c->buf, NULL);
}

/*
 * What is left of limit after used (never below 0), and a description of
 * the first budget with nothing left into why ("" when every one has room).
 */
static void al_left(const struct agent_llm_budget *lim, const struct agent_llm_budget *used, const char *who,
		    struct agent_llm_budget *left, char *why, size_t whylen)
{
	left->tokens = lim->tokens > used->tokens ? lim->tokens - used->tokens : 0;
	left->requests = lim->requests > used->requests ? lim->requests - used->requests : 0;
	left->usd = lim->usd > used->usd ? lim->usd - used->usd : 0;
	if (why[0])
		return;
	if (left->requests <= 0)
		snprintf(why, whylen, "%s requests: %lld of %lld used", who, (long long)used->requests,
			 (long long)lim->requests);
	else if (left->tokens <= 0)
		snprintf(why, whylen, "%s tokens: %lld of %lld used", who, (long long)used->tokens,
			 (long long)lim->tokens);
	else if (left->usd <= 0)
		snprintf(why, whylen, "%s usd: %.6f of %.6f used", who, used->usd, lim->usd);
}

int agent_llm_budgets(struct db *db, const struct agent_llm_env *e, const char *agent_id, struct agent_llm *l,
		      struct buf *err)
{
	char bu[40], cu[40], od[40];
	struct db_col c[] = { DB_COL_INT, DB_COL_INT, DB_COL_TEXT(bu), DB_COL_INT, DB_COL_INT, DB_COL_TEXT(cu),
			      DB_COL_INT, DB_COL_INT, DB_COL_INT, DB_COL_TEXT(od) };
	struct db_arg k = DB_ARG_TEXT(agent_id);
	struct db_result r = { 0 };
	if (al_ex(db, "SELECT a.owner_id, a.budget_tokens, CAST(a.budget_usd AS CHAR), a.budget_requests, "
		  "a.tokens_input + a.tokens_output + a.tokens_cache_write + a.tokens_cache_read, CAST(a.cost_usd AS CHAR), "
		  "a.llm_requests, COALESCE(d.input + d.output + d.cache_write + d.cache_read, 0), COALESCE(d.requests, 0), "
		  "CAST(COALESCE(d.usd, 0) AS CHAR) FROM agents a LEFT JOIN llm_owner_day d ON d.owner_id = a.owner_id "
		  "AND d.day = UTC_DATE() WHERE a.id = ?", &k, 1, c, sizeof c / sizeof c[0], &r, err) != 0)
		return -1;
	if (r.rows == 0)
		return 0;
	l->owner_id = (uint64_t)c[0].i;
	l->limit.tokens = c[1].is_null ? e->agent.tokens : c[1].i;
	l->limit.usd = c[2].is_null ? e->agent.usd : al_dbl(&c[2]);
	l->limit.requests = c[3].is_null ? e->agent.requests : c[3].i;
	l->used = (struct agent_llm_budget){ .tokens = c[4].i, .usd = al_dbl(&c[5]), .requests = c[6].i };
	l->owner_used = (struct agent_llm_budget){ .tokens = c[7].i, .usd = al_dbl(&c[9]), .requests = c[8].i };
	l->exhausted[0] = '\0';
	al_left(&l->limit, &l->used, "agent", &l->left, l->exhausted, sizeof l->exhausted);
	al_left(&e->owner_day, &l->owner_used, "owner daily", &l->owner_left, l->exhausted, sizeof l->exhausted);
	return 1;
}

/* Whether a key can travel inside a JSON string unescaped (the store's keys are [A-Za-z0-9_-]). */
static bool al_key_ok(const struct buf *k)
{
	if (k->len < 8)
		return false;
	for (size_t i = 0; i < k->len; i++) {
		char ch = k->data[i];
		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '-' ||
		      ch == '_'))
			return false;
	}
	return true;
}

int agent_llm_key(struct db *db, const struct agent_llm_env *e, struct agent_llm *l, struct buf *err)
{
	unsigned char sk[SECRET_BYTES];
	struct buf why = BUF_INIT;
	int got = -1;
	buf_reset(&l->key);
	if (!e->secret_file || !secret_load(e->secret_file, false, sk, &why)) {
		buf_printf(err, "cannot open the secret store: %s", why.len ? buf_cstr(&why) : "no AGENTTEST_SECRET_FILE");
		goto out;
	}
	got = secret_store_get(db, sk, l->owner_id, "anthropic", &l->key, &why);
	if (got == 0 && l->owner_id != 0)
		got = secret_store_get(db, sk, 0, "anthropic", &l->key, &why);
	if (got < 0)
		buf_printf(err, "cannot read the Anthropic key: %s", buf_cstr(&why));
	else if (got == 1 && !al_key_ok(&l->key)) {
		buf_puts(err, "the stored Anthropic key is malformed (set it again with POST /api/anthropic-key)");
		got = -1;
	}
out:
	sodium_memzero(sk, sizeof sk);
	buf_free(&why);
	if (got != 1 && l->key.data)
		sodium_memzero(l->key.data, l->key.len);
	return got;
}

void agent_llm_request(const struct agent_llm *l, const struct agent_llm_env *e, json_object *agent)
{
	json_object *b = json_object_new_object();
	json_object_object_add(b, "tokens", json_object_new_int64(l->left.tokens));
	json_object_object_add(b, "usd", json_object_new_double(l->left.usd));
	json_object_object_add(b, "requests", json_object_new_int64(l->left.requests));
	/* the day's full limits: the proxy reserves against the day's use in MariaDB */
	json_object_object_add(b, "owner_day_tokens", json_object_new_int64(e->owner_day.tokens));
	json_object_object_add(b, "owner_day_usd", json_object_new_double(e->owner_day.usd));
	json_object_object_add(b, "owner_day_requests", json_object_new_int64(e->owner_day.requests));
	json_object_object_add(agent, "budget", b);
	json_object_object_add(agent, "owner_id", json_object_new_int64((int64_t)l->owner_id));
	if (e->upstream[0])
		json_object_object_add(agent, "upstream", json_object_new_string(e->upstream));
	if (e->command[0])
		json_object_object_add(agent, "command", json_object_new_string(e->command));
}

void agent_llm_splice(const struct agent_llm *l, const char *db_url, const char *request, struct buf *out)
{
	buf_reset(out);
	buf_puts(out, "{\"anthropic_key\":\"");
	buf_append(out, l->key.data, l->key.len);
	buf_puts(out, "\",");
	if (db_url && *db_url) {
		json_object *u = json_object_new_string(db_url);
		buf_puts(out, "\"database_url\":");
		buf_puts(out, json_object_to_json_string_ext(u, JSON_C_TO_STRING_PLAIN));
		buf_puts(out, ",");
		json_object_put(u);
	}
	buf_puts(out, request + 1);   /* request is a JSON object: "{...}" */
}

/* Field k of o as an int64 >= 0 (0 when absent or not a number). */
static int64_t al_i64(json_object *o, const char *k)
{
	json_object *v;
	if (!json_object_object_get_ex(o, k, &v) || !json_object_is_type(v, json_type_int))
		return 0;
	int64_t x = json_object_get_int64(v);
	return x > 0 ? x : 0;
}

int agent_llm_charge(struct db *db, const struct agent_llm *l, const char *agent_id, long long iteration,
		     const char *job_id, json_object *tokens, const char *exhausted, struct buf *err)
{
	json_object *v;
	double usd = json_object_object_get_ex(tokens, "cost", &v) ? json_object_get_double(v) : 0.0;
	if (!isfinite(usd) || usd < 0)
		usd = 0;
	char us[40];
	snprintf(us, sizeof us, "%.12g", usd);
	int64_t in = al_i64(tokens, "input"), out = al_i64(tokens, "output"), cw = al_i64(tokens, "cache_write"),
		cr = al_i64(tokens, "cache_read"), rq = al_i64(tokens, "requests"), rf = al_i64(tokens, "refused");
	struct db_arg row[] = { DB_ARG_TEXT(agent_id), DB_ARG_INT((long long)l->owner_id), DB_ARG_INT(iteration),
				DB_ARG_TEXT(job_id), DB_ARG_INT(in), DB_ARG_INT(out), DB_ARG_INT(cw), DB_ARG_INT(cr),
				DB_ARG_INT(rq), DB_ARG_INT(rf), DB_ARG_TEXT(us),
				exhausted && *exhausted ? DB_ARG_TEXTN(exhausted, strnlen(exhausted, 128)) : DB_ARG_NULL };
	struct db_arg ag[] = { DB_ARG_INT(in), DB_ARG_INT(out), DB_ARG_INT(cw), DB_ARG_INT(cr), DB_ARG_INT(rq),
			       DB_ARG_TEXT(us), DB_ARG_TEXT(agent_id) };
	/* The agent row first, then its child row: inserting agent_llm_usage first
	 * takes a shared lock on the agent row (the foreign key check) that the
	 * UPDATE must then upgrade, and a pool transaction waiting for the same
	 * row in between (an ask's charge, a PATCH) makes that a deadlock. */
	if (al_ex(db, "UPDATE agents SET tokens_input = tokens_input + ?, tokens_output = tokens_output + ?, "
		  "tokens_cache_write = tokens_cache_write + ?, tokens_cache_read = tokens_cache_read + ?, "
		  "llm_requests = llm_requests + ?, cost_usd = cost_usd + ? WHERE id = ?", ag, 7, NULL, 0, NULL,
		  err) != 0 ||
	    al_ex(db, "INSERT INTO agent_llm_usage (agent_id, owner_id, kind, iteration, job_id, day, input, output, "
		  "cache_write, cache_read, requests, refused, usd, exhausted) VALUES (?, ?, 'turn', ?, ?, UTC_DATE(), ?, "
		  "?, ?, ?, ?, ?, ?, ?)", row, sizeof row / sizeof row[0], NULL, 0, NULL, err) != 0)
		return -1;
	return 0;
}

void agent_llm_free(struct agent_llm *l)
{
	if (l->key.data)
		sodium_memzero(l->key.data, l->key.cap ? l->key.cap : l->key.len);
	buf_free(&l->key);
}

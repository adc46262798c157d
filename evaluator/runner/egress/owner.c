/*
 * owner.c: the owner's LLM budget of the UTC day for the egress proxy: each
 * request's estimate reserved in MariaDB before it is sent, settled to its
 * metered usage after (common/llm_reserve.c, sql/028_llm_reservations.sql).
 *
 * Each proxy child serves one connection, so the child opens its own
 * database connection (a connection is never shared across fork) and holds
 * at most one reservation at a time. The connection is closed while the
 * request is upstream and opened again to settle: a streamed answer can
 * take up to an hour, and eight children of every running agent holding
 * idle connections would use up the server's max_connections. A child
 * that dies between the two leaves its reservation to expire after
 * EGRESS_RESERVE_TTL_S, longer than any transfer forward.c allows.
 */
#include <json-c/json.h>

#include "evaluator/runner/egress/egress.h"
#include "log.h"

int egress_owner_reserve(struct egress_owner *o, const struct llm_reserve_usage *est, struct buf *why)
{
	o->res = 0;
	if (!o->url)
		return 1;
	if (!o->db)
		o->db = db_new(o->url);
	struct llm_reserve_who w = { .owner_id = o->owner_id, .agent_id = o->agent_id, .kind = "turn" };
	int rc = llm_reserve(o->db, &w, &o->lim, est, EGRESS_RESERVE_TTL_S, &o->res, why);
	if (rc == 1)
		egress_owner_free(o);   /* not held while the request is upstream */
	return rc;
}

void egress_owner_settle(struct egress_owner *o, const struct egress_usage *u, double usd)
{
	if (!o->url || !o->res)
		return;
	struct llm_reserve_usage x = { .input = u->input, .output = u->output, .cache_write = u->cache_write,
				       .cache_read = u->cache_read, .usd = usd };
	struct buf err = BUF_INIT;
	if (!o->db)
		o->db = db_new(o->url);
	if (llm_reserve_settle(o->db, o->owner_id, o->res, &x, &err) != 0)
		log_msg(LOG_LVL_ERROR, "egress_owner_day", "agent %s: a request's usage is not on the owner's day "
			"(its reservation expires): %s", o->agent_id, buf_cstr(&err));
	buf_free(&err);
	o->res = 0;
}

void egress_owner_cancel(struct egress_owner *o)
{
	if (o->url && o->res && !o->db)
		o->db = db_new(o->url);
	if (o->url && o->res && llm_reserve_cancel(o->db, o->res) != DB_OK)
		log_msg(LOG_LVL_WARNING, "egress_owner_day", "agent %s: a reservation was not dropped (it expires): %s",
			o->agent_id, db_error(o->db));
	o->res = 0;
}

/* The body's max_tokens (an integer >= 0), else 0. */
static int64_t max_tokens_of(const struct egress_request *r)
{
	struct json_tokener *tok = json_tokener_new_ex(64);
	struct json_object *o = r->body ? json_tokener_parse_ex(tok, r->body, (int)r->body_len) : NULL, *m;
	json_tokener_free(tok);
	int64_t n = 0;
	if (o && json_object_is_type(o, json_type_object) && json_object_object_get_ex(o, "max_tokens", &m) &&
	    json_object_is_type(m, json_type_int) && json_object_get_int64(m) > 0)
		n = json_object_get_int64(m);
	json_object_put(o);
	return n > 10000000 ? 10000000 : n;
}

void egress_estimate(const struct egress_request *r, const struct llm_price *pr, bool metered,
		     struct llm_reserve_usage *est)
{
	*est = (struct llm_reserve_usage){ 0 };
	if (!metered)
		return;
	est->input = (int64_t)(r->body_len / 4);
	est->output = max_tokens_of(r);
	est->usd = llm_price_cost(pr, est->input, est->output, 0, 0);
}

void egress_owner_free(struct egress_owner *o)
{
	if (o->db)
		db_free(o->db);
	o->db = NULL;
}

/*
 * llm_reserve.h: the owner's LLM budget of the UTC day, counted atomically
 * across hosts by reservations in MariaDB (llm_reserve.c,
 * sql/028_llm_reservations.sql). Used by the egress proxy of LLM agents
 * (evaluator/runner/egress/forward.c) before each request it forwards and
 * by POST /api/agents/{id}/ask (fcgi/handlers/agents_ask.c).
 *
 * A request is sent only after llm_reserve() admitted its estimate; once
 * its usage is known (or it failed) llm_reserve_settle() turns the
 * reservation into the real usage. A reservation never settled (its
 * process died) stops counting when its TTL ends.
 */
#ifndef AGENTTEST_LLM_RESERVE_H
#define AGENTTEST_LLM_RESERVE_H

#include <stdbool.h>
#include <stdint.h>

#include "buf.h"
#include "db.h"

#define LLM_RESERVE_TRIES 5   /* attempts of a transaction that hit a lock conflict */

/* A budget of the owner's day: < 0 means no limit on that quantity. */
struct llm_reserve_limits {
	int64_t tokens, requests;
	double  usd;
};

/* What one request is expected to cost (reserve) or cost (settle). */
struct llm_reserve_usage {
	int64_t input, output, cache_write, cache_read;
	double  usd;
};

/* What a reservation is for (the row's agent and kind). */
struct llm_reserve_who {
	uint64_t    owner_id;
	const char *agent_id;  /* may be NULL */
	const char *kind;      /* "turn" (the proxy) or "ask" */
};

/*
 * Reserve est (its tokens: all four kinds) for one request of w->owner_id
 * against lim, valid for ttl_s seconds (1 .. 86400). In one transaction
 * that holds the owner's llm_owner_day row of today (UTC) locked: the
 * owner's expired reservations of the day are deleted, and the request is
 * refused when the day's use plus the live reservations plus this one would
 * pass a limit (requests count 1 each). Returns 1 reserved (*id set), 0
 * refused (why names the budget: "owner daily tokens: ..."), -1 database
 * error (why has the message; nothing reserved). Lock conflicts are retried
 * up to LLM_RESERVE_TRIES times. Must not be called inside a transaction.
 */
int llm_reserve(struct db *db, const struct llm_reserve_who *w, const struct llm_reserve_limits *lim,
		const struct llm_reserve_usage *est, int ttl_s, uint64_t *id, struct buf *why);

/*
 * Settle reservation id of owner_id: add u and one request to the owner's
 * day the reservation counted against (today when the row is gone: it
 * expired and was swept, the spending is still real) and delete the row.
 * Runs inside the caller's open transaction (so a caller can settle with
 * its own writes, atomically); the owner's day row is locked before the
 * reservation, the order llm_reserve takes. DB_OK or the failing status.
 */
enum db_status llm_reserve_settle_tx(struct db *db, uint64_t owner_id, uint64_t id, const struct llm_reserve_usage *u);

/*
 * llm_reserve_settle_tx in its own transaction, retried on lock conflicts
 * (up to LLM_RESERVE_TRIES). 0, or -1 with the message in err.
 */
int llm_reserve_settle(struct db *db, uint64_t owner_id, uint64_t id, const struct llm_reserve_usage *u,
		       struct buf *err);

/* Drop reservation id without charging it (the request was never sent). DB status. */
enum db_status llm_reserve_cancel(struct db *db, uint64_t id);

/* Delete every expired reservation (any owner, any day). The number deleted, -1 on error (err). */
long long llm_reserve_sweep(struct db *db, struct buf *err);

#endif

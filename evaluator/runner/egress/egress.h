/*
 * egress.h: the egress proxy of LLM agents (bin/agenttest-egress), one
 * internal header for its few files.
 *
 * Theory of operation. The trusted side of an agent turn starts one proxy
 * per turn, outside the agent's sandbox, and hands it the owner's API key
 * on a pipe (never argv or the environment). The proxy listens on a unix
 * socket in a directory that is bound read-only into the box; inside, the
 * relay (egress/relay/main.c) listens on 127.0.0.1 of the box's own, empty
 * network namespace and copies bytes to that socket. So the agent's only
 * way out is: its CLI -> relay -> this socket -> this proxy -> upstream.
 *
 * Per connection the proxy forks a child (http_in.c reads one request,
 * forward.c sends it upstream with libcurl and streams the answer back),
 * so one stuck request never blocks another. The agent's state lives in
 * the ledger files (ledger.c), updated under flock: the agent's totals and
 * this turn's usage. The owner's budget of the UTC day is shared by all of
 * the owner's agents on every host, so it lives in MariaDB (owner.c,
 * common/llm_reserve.c): under the agent's locks, each request reserves
 * its estimate there, and the reservation is settled to the real usage
 * when the response has ended. A request is admitted only while every
 * budget has room (counted before it is sent: the request itself and, for
 * the owner's day, its estimate; after it ends: its tokens and their price
 * from common/llm_prices.c, metered by meter.c from the response's usage
 * fields, SSE message_start / message_delta included).
 */
#ifndef AGENTTEST_EGRESS_H
#define AGENTTEST_EGRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "db.h"
#include "dburl.h"
#include "llm_prices.h"
#include "llm_reserve.h"
#include "llm_upstream.h"

struct egress_owner;
struct egress_request;

/* Token counts of one response (or a sum of them). */
struct egress_usage {
	int64_t input, output, cache_write, cache_read;
};

/* ---- meter.c: usage from a response body fed in pieces ---- */

struct egress_meter {
	bool   sse;            /* text/event-stream, else one JSON document */
	bool   saw_usage;      /* a usage object was found */
	bool   overflow;       /* a JSON body or SSE line exceeded its cap */
	struct buf pending;    /* SSE: the current incomplete line; JSON: the body */
	struct egress_usage u;
};

/* Start metering a response; sse selects the event-stream parser. */
void egress_meter_init(struct egress_meter *m, bool sse);
/* Feed n bytes of the response body (any split). */
void egress_meter_feed(struct egress_meter *m, const char *p, size_t n);
/* End of the body: parse what is left (the JSON document). */
void egress_meter_finish(struct egress_meter *m);
/* Release the meter's buffers. */
void egress_meter_free(struct egress_meter *m);

/* ---- prices: common/llm_prices.h (shared with the API's ask) ---- */

/* ---- ledger.c: budgets and usage in flocked JSON files ---- */

/* Totals of a ledger file. */
struct egress_totals {
	struct egress_usage u;
	int64_t requests;
	double  usd;
	int64_t refused;       /* requests refused for a budget */
	char    exhausted[160]; /* which budget refused the last one ("" none) */
};

/* A budget: < 0 means no limit on that quantity. */
struct egress_limits {
	int64_t tokens, requests;
	double  usd;
};

struct egress_ledger {
	const char *agent_path;   /* the agent's lifetime totals */
	const char *turn_path;    /* this turn's usage (read by the trusted side) */
	struct egress_limits agent;
};

/* ---- owner.c: the owner's budget of the UTC day, reserved in MariaDB ---- */

#define EGRESS_RESERVE_TTL_S (3600 + 300)   /* forward.c's transfer timeout and a margin */

/* The owner's day of one proxy child (one request at a time). */
struct egress_owner {
	const struct dburl *url;  /* NULL: no owner-day budget (a proxy started without a database) */
	uint64_t    owner_id;
	const char *agent_id;
	struct llm_reserve_limits lim;
	struct db  *db;           /* the child's own connection, opened on first use */
	uint64_t    res;          /* the current request's reservation, 0 none */
};

/*
 * Reserve est against the owner's day (common/llm_reserve.c): 1 reserved
 * (o->res set; also when o has no database: nothing to reserve), 0 refused
 * (why), -1 database error (why).
 */
int egress_owner_reserve(struct egress_owner *o, const struct llm_reserve_usage *est, struct buf *why);
/* Settle the current reservation to the real usage and cost (logged on failure; it expires then). */
void egress_owner_settle(struct egress_owner *o, const struct egress_usage *u, double usd);
/*
 * The estimate of a request before it is sent: its max_tokens (when the
 * body names one) as output tokens and its body's bytes / 4 as input
 * tokens, priced by pr; zero tokens for count_tokens (unmetered).
 */
void egress_estimate(const struct egress_request *r, const struct llm_price *pr, bool metered,
		     struct llm_reserve_usage *est);
/* Drop the current reservation uncharged (the request was not sent). */
void egress_owner_cancel(struct egress_owner *o);
/* Close the child's connection. */
void egress_owner_free(struct egress_owner *o);

/* Tokens of a usage as budgets count them: all four kinds. */
int64_t egress_tokens(const struct egress_usage *u);
/*
 * Admit one request: under the locks, check the agent's budget, then
 * reserve est against the owner's day (egress_owner_reserve, skipped when
 * o has no database), and count the request in both files. Returns 1
 * admitted, 0 refused (why names the budget, e.g. "agent usd: 2.000000 of
 * 2.000000 used" or "owner daily tokens: ..."; the refusal is recorded),
 * -1 on an I/O or database error (why says what failed; nothing admitted).
 */
int egress_ledger_admit(const struct egress_ledger *l, struct egress_owner *o, const struct llm_reserve_usage *est,
			struct buf *why);
/* Add a finished request's usage and cost to both files. */
bool egress_ledger_charge(const struct egress_ledger *l, const struct egress_usage *u, double usd);
/* Read a ledger file; a missing file reads as zeros. False on a bad file. */
bool egress_totals_read(const char *path, struct egress_totals *t);
/* Take the exclusive flock of ledger file path (on path.lock, created if
 * need be), the one every read-modify-write of the file holds; the lock's
 * fd (close it to release) or -1. */
int egress_ledger_lock(const char *path);

/* ---- http_in.c: the client's request ---- */

#define EGRESS_HEAD_MAX  (64u * 1024u)
#define EGRESS_BODY_MAX  (32u * 1024u * 1024u)
#define EGRESS_HDRS_MAX  64

struct egress_header {
	char *name;  /* lower-cased */
	char *value;
};

struct egress_request {
	char  method[16];
	char  target[512];            /* path and query as sent */
	struct egress_header h[EGRESS_HDRS_MAX];
	size_t nh;
	char  *body;
	size_t body_len;
};

/*
 * Read one HTTP/1.1 request from fd (head at most EGRESS_HEAD_MAX bytes,
 * a Content-Length body of at most EGRESS_BODY_MAX). Returns 0, or the HTTP
 * status to refuse it with (400, 411, 413, 431) and a reason in err.
 */
int egress_read_request(int fd, struct egress_request *r, struct buf *err);
/* The value of header `name` (lower case), or NULL. */
const char *egress_header_get(const struct egress_request *r, const char *name);
/* Free what egress_read_request allocated. */
void egress_request_free(struct egress_request *r);
/*
 * Whether a request may go upstream: POST of /v1/messages or
 * /v1/messages/count_tokens with no query or "?beta=true". Sets *metered
 * for /v1/messages (count_tokens is free upstream).
 */
bool egress_route_allowed(const char *method, const char *target, bool *metered);
/* Whether the client header `name` (lower case) is passed upstream. */
bool egress_header_forwarded(const char *name);

/* ---- forward.c: one request upstream, the answer streamed back ---- */

struct egress_ctx {
	const char *upstream;   /* base URL, no trailing slash */
	const char *key;        /* the real key (never logged) */
	const char *agent_id;
	const struct llm_prices *prices;
	const struct egress_ledger *ledger;
	const struct egress_owner *owner;   /* copied per connection */
};

/* Serve one client connection from start to end (the child's whole job). */
void egress_serve(const struct egress_ctx *cx, int fd);
/* Write an Anthropic-shaped error response and end the connection. */
void egress_reply_error(int fd, int status, const char *type, const char *msg, const char *extra_headers);

#endif

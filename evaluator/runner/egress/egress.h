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
 * so one stuck request never blocks another and all shared state lives in
 * the ledger files (ledger.c), updated under flock: the agent's totals,
 * the owner's totals of the UTC day, and this turn's usage. A request is
 * admitted only while every budget has room (counted before it is sent:
 * the request itself; after it ends: its tokens and their price from
 * common/llm_prices.c, metered by meter.c from the response's usage fields, SSE
 * message_start / message_delta included).
 */
#ifndef AGENTTEST_EGRESS_H
#define AGENTTEST_EGRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "llm_prices.h"
#include "llm_upstream.h"

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
	char    exhausted[64]; /* which budget refused the last one ("" none) */
};

/* A budget: < 0 means no limit on that quantity. */
struct egress_limits {
	int64_t tokens, requests;
	double  usd;
};

struct egress_ledger {
	const char *agent_path;   /* the agent's lifetime totals */
	const char *owner_dir;    /* owner-<id>-<YYYY-MM-DD>.json, UTC day */
	uint64_t    owner_id;
	const char *turn_path;    /* this turn's usage (read by the trusted side) */
	struct egress_limits agent, owner_day;
};

/* Tokens of a usage as budgets count them: all four kinds. */
int64_t egress_tokens(const struct egress_usage *u);
/*
 * Admit one request: under the locks, check every budget and count the
 * request in all three files. Returns 1 admitted, 0 refused (why names the
 * budget, e.g. "agent usd: 2.000000 of 2.000000 used"; the refusal is
 * recorded), -1 on an I/O error (why says what failed; nothing admitted).
 */
int egress_ledger_admit(const struct egress_ledger *l, struct buf *why);
/* Add a finished request's usage and cost to the three files. */
bool egress_ledger_charge(const struct egress_ledger *l, const struct egress_usage *u, double usd);
/* Read a ledger file; a missing file reads as zeros. False on a bad file. */
bool egress_totals_read(const char *path, struct egress_totals *t);

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
};

/* Serve one client connection from start to end (the child's whole job). */
void egress_serve(const struct egress_ctx *cx, int fd);
/* Write an Anthropic-shaped error response and end the connection. */
void egress_reply_error(int fd, int status, const char *type, const char *msg, const char *extra_headers);

#endif

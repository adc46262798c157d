/*
 * agents_ask.h: the private interface of POST /api/agents/{id}/ask
 * (agents_ask.c: the handler, budgets, slots and metering;
 * agents_ask_ctx.c: what the model is told about the agent;
 * agents_ask_http.c: the call to the model API).
 */
#ifndef AGENTTEST_FCGI_AGENTS_ASK_H
#define AGENTTEST_FCGI_AGENTS_ASK_H

#include <stdbool.h>

#include "buf.h"
#include "fcgi/handler.h"

#define ASK_SLOTS      3      /* asks at once per owner */
#define ASK_MAX_TOKENS 1024   /* max_tokens of the answer */

/* The answer of the model API. */
struct ask_http {
	int        status;          /* HTTP status; 0 when no answer came */
	char       retry_after[8];  /* the answer's Retry-After (digits), or "" */
	struct buf body;            /* the answer body (at most 1 MiB) */
	struct buf error;           /* why no answer came (status 0) */
};

/*
 * POST body (a JSON text) to <upstream>/v1/messages with the key in
 * x-api-key. True when an HTTP answer came (any status: h->status,
 * h->body); false with h->error when none did (connect, timeout, TLS).
 * The caller zeroes h first and calls ask_http_free.
 */
bool ask_http_post(const char *upstream, const struct buf *key, const char *body, struct ask_http *h);
void ask_http_free(struct ask_http *h);

/*
 * The system prompt about agent id: its configuration and status, the
 * tails of its goal, STATE.md, notes.txt and history, the last 3
 * iterations' dev metrics and analysis (never a sealed holdout number).
 * Appends to out; false with the database status in *st.
 */
bool ask_context(struct fcgi_ctx *c, const char *id, struct buf *out, enum db_status *st);

#endif

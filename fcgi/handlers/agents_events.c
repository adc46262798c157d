/*
 * agents_events: GET /api/agents/{id}/events, the agent's changes as
 * server-sent events (text/event-stream): iteration_started,
 * activity (a live line of the iteration in flight: {iteration, line}),
 * iteration_scored, status, paused, goal, chat. Each event's `id` is its
 * agent_events.seq, so an EventSource that reconnects with Last-Event-ID
 * (or ?after=N) gets exactly the events it has not seen.
 *
 * Theory of operation. The pool's workers answer one request at a time and
 * send a response whole, so a stream is served as a bounded wait: the
 * handler polls the feed every 250 ms for up to ?wait= seconds (1 to 30,
 * default 20), answers as soon as there are events (at most 200) or the
 * wait is over (a comment line only), with `retry: 1000`; the browser's
 * EventSource reconnects by itself and continues after the last id. A
 * worker is busy for at most the wait; nginx passes the location through
 * unbuffered (nginx/agenttest-site.conf.in).
 */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "parse.h"
#include "fcgi/handlers/agents.h"
#include "fcgi/handlers/handlers.h"

#define EV_BATCH   200
#define EV_POLL_MS 250

struct ev_out {
	struct buf *b;
	long long   last;
	size_t      n;
};

/* Row callback: one event in SSE framing (data is one-line JSON). */
static bool ev_row(void *ctx, const struct db_col *col, size_t ncol)
{
	struct ev_out *o = ctx;
	(void)ncol;
	buf_printf(o->b, "id: %lld\nevent: %s\ndata: %s\n\n", col[0].i, col[1].buf, col[2].buf);
	o->last = col[0].i;
	o->n++;
	return true;
}

/* Monotonic milliseconds. */
static long long ev_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void h_agents_events(struct fcgi_ctx *c)
{
	int64_t wait_s, after = 0;
	struct ag_row a;
	if (!fcgi_query_int(c, "wait", 1, 30, 20, &wait_s) || !fcgi_query_int(c, "after", 0, INT64_MAX - 1, 0, &after))
		return;
	const char *last = fcgi_header(c, "HTTP_LAST_EVENT_ID");
	if (last && *last && !parse_int(last, strlen(last), 0, INT64_MAX - 1, &after)) {
		fcgi_reply_error(c, 400, "invalid_field", "Last-Event-ID must be an event id (a non-negative integer)");
		return;
	}
	if (ag_find(c, fcgi_param(c, "id"), false, &a) <= 0)
		return;
	struct buf *b = fcgi_body_buf(c);
	struct ev_out o = { .b = b, .last = after };
	struct db_col col[] = { DB_COL_INT, ag_text_col(c, 40), ag_text_col(c, 65536) };
	long long until = ev_ms() + wait_s * 1000;
	buf_puts(b, "retry: 1000\n\n");
	for (;;) {
		struct db_arg k[] = { DB_ARG_TEXT(a.id), DB_ARG_INT(o.last), DB_ARG_INT(EV_BATCH) };
		enum db_status st = db_exec(fcgi_db(c), "SELECT seq, type, data FROM agent_events WHERE agent_id = ? AND "
					    "seq > ? ORDER BY seq LIMIT ?", k, 3, col, 3, ev_row, &o, NULL, DB_IDEMPOTENT);
		if (st != DB_OK) {
			buf_reset(b);
			fcgi_reply_db_error(c, st);
			return;
		}
		if (o.n > 0 || ev_ms() >= until)
			break;
		usleep(EV_POLL_MS * 1000);
	}
	if (o.n == 0)
		buf_puts(b, ": no new events\n\n");
	fcgi_add_header(c, "X-Accel-Buffering", "no");
	fcgi_reply_buf(c, 200, "text/event-stream; charset=utf-8");
}

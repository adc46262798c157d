/*
 * agents_events: GET /api/agents/{id}/events, the agent's changes as
 * server-sent events (text/event-stream): iteration_started,
 * activity (a live line of the iteration in flight: {iteration, line}),
 * iteration_scored, status, paused, goal, chat. Each event's `id` is an
 * opaque cursor (common/cursor.h, list CURSOR_AGENT_EVENTS, scope the
 * agent id) sealing its agent_events.seq, so an EventSource that
 * reconnects with Last-Event-ID (or ?after=<id>) gets exactly the events it
 * has not seen. The seq itself is global (every agent's events share it):
 * shown raw it told a user how many events everyone else made, and when.
 *
 * Theory of operation. The pool's workers answer one request at a time and
 * send a response whole, so a stream is served as a bounded wait: the
 * handler polls the feed every 250 ms for up to ?wait= seconds (1 to 30,
 * default 20), answers as soon as there are events (at most 200) or the
 * wait is over (a comment line only), with `retry: 1000`; the browser's
 * EventSource reconnects by itself and continues after the last id. A
 * waiting stream holds a worker, so it is a wait like POST /runs's: it is
 * registered under the same caps (RUNS_MAX_WAITS, RUNS_MAX_WAITS_PER_USER:
 * run_wait.h) once the first read found nothing, and over a cap (or
 * without the registry) it is answered at once, so open dashboards cannot
 * take every worker (issue 11 item 6); the client then polls each second.
 * nginx passes the location through unbuffered
 * (nginx/agenttest-site.conf.in).
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "log.h"
#include "fcgi/handlers/agents.h"
#include "fcgi/handlers/handlers.h"
#include "fcgi/handlers/run_wait.h"

#define EV_BATCH   200
#define EV_POLL_MS 250

struct ev_out {
	struct fcgi_ctx *c;
	const char      *agent;   /* the cursors' scope */
	struct buf      *b;
	long long        last;
	size_t           n;
	bool             failed;  /* an id could not be sealed */
};

/* Row callback: one event in SSE framing (data is one-line JSON), its id the sealed seq. */
static bool ev_row(void *ctx, const struct db_col *col, size_t ncol)
{
	struct ev_out *o = ctx;
	char id[CURSOR_TEXT_LEN + 1];
	(void)ncol;
	if (!cursor_encode(fcgi_server_key(o->c), CURSOR_AGENT_EVENTS, o->agent, col[0].i, id)) {
		o->failed = true;   /* only for a bad scope or seq: a bug, answered 500 */
		return false;
	}
	buf_printf(o->b, "id: %s\nevent: %s\ndata: %s\n\n", id, col[1].buf, col[2].buf);
	o->last = col[0].i;
	o->n++;
	return true;
}

/*
 * The position to continue after: Last-Event-ID, else ?after=, each an
 * event id this stream gave (0 when neither: from the first event). False
 * when one is not (400 bad_cursor replied).
 */
static bool ev_after(struct fcgi_ctx *c, const char *agent, int64_t *after)
{
	const char *last = fcgi_header(c, "HTTP_LAST_EVENT_ID"), *q = fcgi_query(c, "after");
	const char *v = last && *last ? last : q && *q ? q : NULL;
	*after = 0;
	if (v == NULL)
		return true;
	enum cursor_err e = cursor_decode(fcgi_server_key(c), CURSOR_AGENT_EVENTS, agent, v, after);
	if (e != CURSOR_OK) {
		fcgi_reply_error(c, 400, "bad_cursor", "%s %s", v == last ? "Last-Event-ID:" : "after:",
				 cursor_strerror(e));
		return false;
	}
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
	int64_t wait_s, after;
	struct ag_row a;
	if (!fcgi_query_int(c, "wait", 1, 30, 20, &wait_s))
		return;
	if (ag_find(c, fcgi_param(c, "id"), false, &a) <= 0 || !ev_after(c, a.id, &after))
		return;
	struct buf *b = fcgi_body_buf(c);
	struct ev_out o = { .c = c, .agent = a.id, .b = b, .last = after };
	struct db_col col[] = { DB_COL_INT, ag_text_col(c, 40), ag_text_col(c, 65536) };
	struct run_wait w = { .jw = { .fd = -1 } };
	bool registered = false, refused = false;
	long long until = ev_ms() + wait_s * 1000;
	buf_puts(b, "retry: 1000\n\n");
	for (;;) {
		struct db_arg k[] = { DB_ARG_TEXT(a.id), DB_ARG_INT(o.last), DB_ARG_INT(EV_BATCH) };
		enum db_status st = db_exec(fcgi_db(c), "SELECT seq, type, data FROM agent_events WHERE agent_id = ? AND "
					    "seq > ? ORDER BY seq LIMIT ?", k, 3, col, 3, ev_row, &o, NULL, DB_IDEMPOTENT);
		if (st != DB_OK) {
			run_wait_end(&w);
			buf_reset(b);
			fcgi_reply_db_error(c, st);
			return;
		}
		if (o.failed) {
			run_wait_end(&w);
			buf_reset(b);
			log_msg(LOG_LVL_ERROR, "cursor_encode_failed", "agent %s event %lld", a.id, o.last);
			fcgi_reply_error(c, 500, "internal", "an event id could not be made");
			return;
		}
		if (o.n > 0 || ev_ms() >= until)
			break;
		if (!registered) {   /* nothing yet: wait, if the caps leave room for one more waiter */
			registered = true;
			refused = !run_wait_admit(c, (double)wait_s, &w);
			if (w.seconds <= 0)
				break;
		}
		(void)jobwait_sleep(&w.jw, EV_POLL_MS);
	}
	run_wait_end(&w);
	if (refused)
		buf_puts(b, ": the pool's waits are all taken: answered at once\n\n");
	if (o.n == 0)
		buf_puts(b, ": no new events\n\n");
	fcgi_add_header(c, "X-Accel-Buffering", "no");
	fcgi_reply_buf(c, 200, "text/event-stream; charset=utf-8");
}

/*
 * run_trades: GET /runs/{id}/trades, the fills and per-bar positions a
 * completed positions run stored (run_trades, sql/025_run_trades.sql;
 * computed by the runner, evaluator/fills.h). Visible to the run's owner
 * and to admins, like the other run routes (others get 404).
 *
 * Pages: the stored fills are immutable and in bar order, so the cursor
 * seals the index of the next fill (opaque and bound to the run, as the
 * runs list's are to the user: common/cursor.h);
 * a page reads only its own records (SUBSTRING of the blob), never the
 * whole store. The per-bar positions come with the first page (no cursor).
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "evaluator/fills.h"
#include "evaluator/pyrepr.h"
#include "fcgi/handlers/handlers.h"
#include "fcgi/handlers/runs_view.h"

#define TRADES_PAGE_DEFAULT 200
#define TRADES_PAGE_MAX     1000

/* Append x as a JSON number (shortest round trip), null if not finite. */
static void num(struct buf *b, double x)
{
	char t[PYREPR_MAX];
	if (!isfinite(x)) {
		buf_puts(b, "null");
		return;
	}
	pyrepr_double(x, t);
	buf_puts(b, t);
}

/* Append ms since the epoch as a JSON string, ISO 8601 UTC to the second. */
static void iso_time(struct buf *b, int64_t ms)
{
	time_t s = (time_t)(ms >= 0 ? ms / 1000 : (ms - 999) / 1000);
	struct tm tm;
	char t[32];
	if (!gmtime_r(&s, &tm) || strftime(t, sizeof t, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0) {
		buf_puts(b, "null");
		return;
	}
	buf_printf(b, "\"%s\"", t);
}

/* Append one fill's API object. */
static void fill_json(struct buf *b, const struct fill *f)
{
	buf_printf(b, "{\"bar\":%" PRId64 ",\"time\":", f->bar);
	iso_time(b, f->ts_ms);
	buf_printf(b, ",\"side\":\"%s\",\"quantity\":", signbit(f->quantity) ? "sell" : "buy");
	num(b, fabs(f->quantity));
	buf_puts(b, ",\"price\":");
	num(b, f->price);
	buf_puts(b, ",\"fee\":");
	num(b, f->fee);
	buf_puts(b, ",\"position\":");
	num(b, f->position);
	buf_puts(b, ",\"units\":");
	num(b, f->units);
	buf_puts(b, ",\"cash\":");
	num(b, f->equity - f->units * (isfinite(f->price) ? f->price : 0));
	buf_puts(b, ",\"equity\":");
	num(b, f->equity);
	buf_putc(b, '}');
}

/* The stored counts of run `id` visible to the caller; false after replying. */
static bool trades_meta(struct fcgi_ctx *c, const char *id, long long *bars, long long *stored, long long *total)
{
	long long uid;
	bool admin;
	char status[16];
	if (!rv_caller(c, &uid, &admin))
		return false;
	struct db_col cols[] = { DB_COL_INT, DB_COL_TEXT(status), DB_COL_INT, DB_COL_INT, DB_COL_INT };
	struct db_arg arg = DB_ARG_TEXT(id);
	struct db_result res = { 0 };
	enum db_status st = db_exec(fcgi_db(c),
		"SELECT r.owner_id, r.status, COALESCE(t.n_bars, -1), COALESCE(t.n_fills, 0), COALESCE(t.fills_total, 0) "
		"FROM runs r LEFT JOIN run_trades t ON t.run_id = r.id WHERE r.id = ?", &arg, 1, cols, 5, NULL, NULL, &res,
		DB_IDEMPOTENT);
	if (st != DB_OK) {
		fcgi_reply_db_error(c, st);
		return false;
	}
	if (res.rows == 0 || (!admin && cols[0].i != uid)) {
		fcgi_reply_error(c, 404, "not_found", "run_id not found");
		return false;
	}
	if (cols[2].i < 0) {
		if (strcmp(status, "completed") != 0)
			fcgi_reply_error(c, 409, "conflict", "run %s has no trades: it is %s (trades are stored when a "
					 "positions run completes)", id, status);
		else
			fcgi_reply_error(c, 409, "conflict", "run %s has no trades: only positions strategies trade "
					 "(a simulate strategy returns its equity alone)", id);
		return false;
	}
	*bars = cols[2].i;
	*stored = cols[3].i;
	*total = cols[4].i;
	return true;
}

/* Append the per-bar positions of run id as ,"positions":[...]; false after replying. */
static bool positions_json(struct fcgi_ctx *c, const char *id, size_t n, struct buf *b)
{
	size_t bytes = n * sizeof(double);
	struct db_col col = { .type = DB_T_BLOB, .buf = arena_alloc(fcgi_arena(c), bytes + 1), .cap = bytes + 1 };
	struct db_arg arg = DB_ARG_TEXT(id);
	enum db_status st = db_exec(fcgi_db(c), "SELECT positions FROM run_trades WHERE run_id = ?", &arg, 1, &col, 1,
				    NULL, NULL, NULL, DB_IDEMPOTENT);
	if (st != DB_OK) {
		fcgi_reply_db_error(c, st);
		return false;
	}
	if (col.len != bytes) {
		fcgi_reply_error(c, 500, "internal", "stored positions of run %s are damaged", id);
		return false;
	}
	buf_puts(b, ",\"positions\":[");
	for (size_t i = 0; i < n; i++) {
		double x;
		memcpy(&x, (const char *)col.buf + i * sizeof x, sizeof x);
		if (i)
			buf_putc(b, ',');
		num(b, x);
	}
	buf_putc(b, ']');
	return true;
}

/* GET /runs/{id}/trades?limit=&cursor= */
void h_runs_trades(struct fcgi_ctx *c)
{
	const char *id = fcgi_param(c, "id");
	int64_t limit, cursor;
	long long bars, stored, total;
	bool paged;
	/* the run's visibility first: a cursor cannot tell whether another user's run exists */
	if (!fcgi_query_int(c, "limit", 1, TRADES_PAGE_MAX, TRADES_PAGE_DEFAULT, &limit) ||
	    !trades_meta(c, id, &bars, &stored, &total) ||
	    !fcgi_query_cursor(c, CURSOR_TRADES, id, 0, &cursor, &paged))
		return;
	bool first = !paged;
	if (cursor > stored)
		cursor = stored;   /* sealed by us, so never; keeps the offset arithmetic bounded */
	long long k = cursor < stored ? (long long)limit : 0;
	if (k > stored - cursor)
		k = stored - cursor;
	size_t bytes = (size_t)(k > 0 ? k : 0) * sizeof(struct fill);
	struct db_col col = { .type = DB_T_BLOB, .buf = arena_alloc(fcgi_arena(c), bytes + 1), .cap = bytes + 1 };
	struct db_arg args[] = { DB_ARG_INT(cursor * (long long)sizeof(struct fill) + 1), DB_ARG_INT((long long)bytes),
				 DB_ARG_TEXT(id) };
	enum db_status st = db_exec(fcgi_db(c), "SELECT SUBSTRING(fills, ?, ?) FROM run_trades WHERE run_id = ?", args, 3,
				    &col, 1, NULL, NULL, NULL, DB_IDEMPOTENT);
	if (st != DB_OK) {
		fcgi_reply_db_error(c, st);
		return;
	}
	if (col.len != bytes) {
		fcgi_reply_error(c, 500, "internal", "stored fills of run %s are damaged", id);
		return;
	}
	struct buf *b = fcgi_body_buf(c);
	buf_puts(b, "{\"run_id\":");
	rv_str(b, id);
	buf_printf(b, ",\"bars\":%lld,\"fills_total\":%lld,\"fills_stored\":%lld,\"truncated\":%s,\"fills\":[", bars,
		   total, stored, total > stored ? "true" : "false");
	for (long long i = 0; i < k; i++) {
		struct fill f;
		memcpy(&f, (const char *)col.buf + (size_t)i * sizeof f, sizeof f);
		if (i)
			buf_putc(b, ',');
		fill_json(b, &f);
	}
	buf_putc(b, ']');
	buf_puts(b, ",\"next_cursor\":");
	if (cursor + k < stored)
		fcgi_put_cursor(c, b, CURSOR_TRADES, id, cursor + k);
	else
		buf_puts(b, "null");
	if (first && !positions_json(c, id, (size_t)bars, b))
		return;
	buf_putc(b, '}');
	fcgi_reply_buf(c, 200, "application/json");
}

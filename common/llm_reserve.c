/*
 * llm_reserve.c: reservations against the owner's LLM budget of the UTC
 * day (llm_reserve.h, sql/028_llm_reservations.sql).
 *
 * Theory of operation. The owner's llm_owner_day row of the day is the
 * lock: every reservation of that owner and day first locks it exclusively
 * (INSERT ... ON DUPLICATE KEY UPDATE, which creates it when absent and
 * takes an X lock either way; INSERT IGNORE would take a shared lock that
 * two reservers then both try to upgrade: a deadlock). Holding it, the
 * reserver reads the day's use and the sum of the live reservations, and
 * adds its own row only when everything fits. So two proxies on two hosts,
 * or a proxy and an ask, are serialised on that one row for the few
 * milliseconds of the check, and the day's use plus what is reserved never
 * passes a budget. Settling locks the same row first (adding the real
 * usage) and deletes the reservation after: the same order, no deadlock.
 * The day is read once per transaction (UTC_DATE() could change between
 * two statements at midnight).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "llm_reserve.h"

/* A DOUBLE column read as text (CAST AS CHAR); 0 when NULL or empty. */
static double lr_dbl(const struct db_col *c)
{
	return c->is_null || !c->buf[0] ? 0.0 : strtod(c->buf, NULL);
}

/* Tokens of a usage as budgets count them: all four kinds. */
static int64_t lr_tokens(const struct llm_reserve_usage *u)
{
	return u->input + u->output + u->cache_write + u->cache_read;
}

/* A short pause before retrying a transaction (attempt >= 2). */
static void lr_pause(int attempt)
{
	struct timespec ts = { 0, (long)(3 + (attempt * 7) % 11) * 1000000L * attempt };
	nanosleep(&ts, NULL);
}

/* Today's UTC date as text into day; DB status. */
static enum db_status lr_today(struct db *db, char day[16])
{
	struct db_col c = { .type = DB_T_TEXT, .buf = day, .cap = 16 };
	bool got = false;
	day[0] = '\0';
	enum db_status st = db_exec(db, "SELECT CAST(UTC_DATE() AS CHAR)", NULL, 0, &c, 1, db_row_once, &got, NULL, 0);
	return st == DB_OK && !got ? DB_ERROR : st;
}

/* What the owner's day holds: its use and its live reservations. */
struct lr_day {
	int64_t used_tokens, used_requests, res_tokens, res_count;
	double  used_usd, res_usd;
};

/* Whether one more request costing est fits lim; names the first budget that does not. */
static bool lr_fits(const struct lr_day *d, const struct llm_reserve_limits *lim, const struct llm_reserve_usage *est,
		    struct buf *why)
{
	int64_t tok = lr_tokens(est);
	if (lim->requests >= 0 && d->used_requests + d->res_count + 1 > lim->requests) {
		buf_printf(why, "owner daily requests: %lld used + %lld in flight of %lld", (long long)d->used_requests,
			   (long long)d->res_count, (long long)lim->requests);
		return false;
	}
	if (lim->tokens >= 0 && d->used_tokens + d->res_tokens + tok > lim->tokens) {
		buf_printf(why, "owner daily tokens: %lld used + %lld reserved + %lld asked of %lld",
			   (long long)d->used_tokens, (long long)d->res_tokens, (long long)tok, (long long)lim->tokens);
		return false;
	}
	if (lim->usd >= 0 && d->used_usd + d->res_usd + est->usd > lim->usd + 1e-12) {
		buf_printf(why, "owner daily usd: %.6f used + %.6f reserved + %.6f asked of %.6f",
			   d->used_usd, d->res_usd, est->usd, lim->usd);
		return false;
	}
	return true;
}

/* One attempt of llm_reserve's transaction: 1, 0 refused, -1 with *st the failure. */
static int lr_reserve_once(struct db *db, const struct llm_reserve_who *w, const struct llm_reserve_limits *lim,
			   const struct llm_reserve_usage *est, int ttl_s, uint64_t *id, struct buf *why,
			   enum db_status *st)
{
	char day[16], uu[40], ru[40], es[40];
	struct lr_day d = { 0 };
	struct db_result r = { 0 };
	bool got = false;
	if ((*st = db_begin(db)) != DB_OK || (*st = lr_today(db, day)) != DB_OK)
		return -1;
	struct db_arg od[] = { DB_ARG_INT((long long)w->owner_id), DB_ARG_TEXT(day) };
	struct db_col uc[] = { DB_COL_INT, DB_COL_INT, DB_COL_TEXT(uu) };
	struct db_col rc[] = { DB_COL_INT, DB_COL_INT, DB_COL_TEXT(ru) };
	if ((*st = db_exec(db, "INSERT INTO llm_owner_day (owner_id, day) VALUES (?, ?) ON DUPLICATE KEY UPDATE "
			   "owner_id = owner_id", od, 2, NULL, 0, NULL, NULL, NULL, 0)) != DB_OK ||
	    (*st = db_exec(db, "SELECT input + output + cache_write + cache_read, requests, CAST(usd AS CHAR) FROM "
			   "llm_owner_day WHERE owner_id = ? AND day = ? FOR UPDATE", od, 2, uc, 3, db_row_once, &got,
			   NULL, 0)) != DB_OK ||
	    (*st = db_exec(db, "DELETE FROM llm_reservations WHERE owner_id = ? AND day = ? AND expires_at <= "
			   "UTC_TIMESTAMP(6)", od, 2, NULL, 0, NULL, NULL, NULL, 0)) != DB_OK ||
	    (*st = db_exec(db, "SELECT COUNT(*), COALESCE(SUM(tokens), 0), CAST(COALESCE(SUM(usd), 0) AS CHAR) FROM "
			   "llm_reservations WHERE owner_id = ? AND day = ? AND expires_at > UTC_TIMESTAMP(6)", od, 2,
			   rc, 3, db_row_once, &got, NULL, 0)) != DB_OK)
		return -1;
	d.used_tokens = uc[0].i;
	d.used_requests = uc[1].i;
	d.used_usd = lr_dbl(&uc[2]);
	d.res_count = rc[0].i;
	d.res_tokens = rc[1].i;
	d.res_usd = lr_dbl(&rc[2]);
	if (!lr_fits(&d, lim, est, why)) {
		*st = db_commit(db);   /* keeps the sweep */
		return *st == DB_OK ? 0 : -1;
	}
	snprintf(es, sizeof es, "%.12g", est->usd);
	struct db_arg row[] = { DB_ARG_INT((long long)w->owner_id), DB_ARG_TEXT(day),
				w->agent_id ? DB_ARG_TEXT(w->agent_id) : DB_ARG_NULL,
				DB_ARG_TEXT(w->kind ? w->kind : "turn"), DB_ARG_INT(lr_tokens(est)), DB_ARG_TEXT(es),
				DB_ARG_INT(ttl_s) };
	if ((*st = db_exec(db, "INSERT INTO llm_reservations (owner_id, day, agent_id, kind, tokens, usd, expires_at) "
			   "VALUES (?, ?, ?, ?, ?, ?, UTC_TIMESTAMP(6) + INTERVAL ? SECOND)", row, 7, NULL, 0, NULL,
			   NULL, &r, 0)) != DB_OK ||
	    (*st = db_commit(db)) != DB_OK)
		return -1;
	*id = r.insert_id;
	return 1;
}

int llm_reserve(struct db *db, const struct llm_reserve_who *w, const struct llm_reserve_limits *lim,
		const struct llm_reserve_usage *est, int ttl_s, uint64_t *id, struct buf *why)
{
	enum db_status st = DB_OK;
	*id = 0;
	if (ttl_s < 1 || ttl_s > 86400 || lr_tokens(est) < 0 || !isfinite(est->usd) || est->usd < 0) {
		buf_puts(why, "llm_reserve: bad ttl or estimate");
		return -1;
	}
	for (int attempt = 1; attempt <= LLM_RESERVE_TRIES; attempt++) {
		if (attempt > 1)
			lr_pause(attempt);
		size_t mark = why->len;
		int rc = lr_reserve_once(db, w, lim, est, ttl_s, id, why, &st);
		if (rc >= 0)
			return rc;
		db_rollback(db);
		why->len = mark;
		if (why->data)
			why->data[mark] = '\0';
		if (st != DB_CONFLICT)
			break;
	}
	buf_printf(why, "database: %s", db_error(db));
	return -1;
}

enum db_status llm_reserve_settle_tx(struct db *db, uint64_t owner_id, uint64_t id, const struct llm_reserve_usage *u)
{
	char day[16] = "", us[40];
	struct db_col c = { .type = DB_T_TEXT, .buf = day, .cap = sizeof day };
	struct db_arg k = DB_ARG_INT((long long)id);
	bool got = false;
	enum db_status st = db_exec(db, "SELECT CAST(day AS CHAR) FROM llm_reservations WHERE id = ?", &k, 1, &c, 1,
				    db_row_once, &got, NULL, 0);
	if (st == DB_OK && !got)
		st = lr_today(db, day);
	if (st != DB_OK)
		return st;
	snprintf(us, sizeof us, "%.12g", isfinite(u->usd) && u->usd > 0 ? u->usd : 0.0);
	struct db_arg od[] = { DB_ARG_INT((long long)owner_id), DB_ARG_TEXT(day), DB_ARG_INT(u->input),
			       DB_ARG_INT(u->output), DB_ARG_INT(u->cache_write), DB_ARG_INT(u->cache_read),
			       DB_ARG_TEXT(us) };
	st = db_exec(db, "INSERT INTO llm_owner_day (owner_id, day, input, output, cache_write, cache_read, requests, "
		     "usd) VALUES (?, ?, ?, ?, ?, ?, 1, ?) ON DUPLICATE KEY UPDATE input = input + VALUES(input), "
		     "output = output + VALUES(output), cache_write = cache_write + VALUES(cache_write), "
		     "cache_read = cache_read + VALUES(cache_read), requests = requests + 1, usd = usd + VALUES(usd)",
		     od, 7, NULL, 0, NULL, NULL, NULL, 0);
	if (st == DB_OK)
		st = db_exec(db, "DELETE FROM llm_reservations WHERE id = ?", &k, 1, NULL, 0, NULL, NULL, NULL, 0);
	return st;
}

int llm_reserve_settle(struct db *db, uint64_t owner_id, uint64_t id, const struct llm_reserve_usage *u,
		       struct buf *err)
{
	enum db_status st = DB_CONFLICT;
	for (int attempt = 1; attempt <= LLM_RESERVE_TRIES && st == DB_CONFLICT; attempt++) {
		if (attempt > 1)
			lr_pause(attempt);
		st = db_begin(db);
		if (st == DB_OK)
			st = llm_reserve_settle_tx(db, owner_id, id, u);
		if (st == DB_OK)
			st = db_commit(db);
		if (st != DB_OK)
			db_rollback(db);
	}
	if (st == DB_OK)
		return 0;
	buf_printf(err, "database: %s", db_error(db));
	return -1;
}

enum db_status llm_reserve_cancel(struct db *db, uint64_t id)
{
	struct db_arg k = DB_ARG_INT((long long)id);
	return db_exec(db, "DELETE FROM llm_reservations WHERE id = ?", &k, 1, NULL, 0, NULL, NULL, NULL, 0);
}

long long llm_reserve_sweep(struct db *db, struct buf *err)
{
	struct db_result r = { 0 };
	if (db_exec(db, "DELETE FROM llm_reservations WHERE expires_at <= UTC_TIMESTAMP(6)", NULL, 0, NULL, 0, NULL,
		    NULL, &r, 0) != DB_OK) {
		buf_printf(err, "database: %s", db_error(db));
		return -1;
	}
	return (long long)r.affected;
}

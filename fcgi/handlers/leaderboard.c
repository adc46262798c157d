/*
 * leaderboard: GET /leaderboard?dataset_version=&all=&limit=&offset=
 *
 * Only eligible runs ever reach the tables read here: the runner writes a
 * run_metrics row with eligible = 1 only for a completed, non-verification
 * run whose metrics are all finite and whose audit passed, and keeps
 * leaderboard_best (the best such run per strategy version and dataset
 * version) in the same transaction. So the default board is one ordered
 * range of leaderboard_best and can never be broken by a bad run. Order:
 * score descending, earlier completion first, then run id.
 *
 * Cache. Each worker keeps the last rendered bodies (BOARD_CACHE entries,
 * keyed by dataset version, all, limit and offset) together with the
 * dataset version's change counter (leaderboard_gen, bumped by the runner in
 * the transaction that adds an eligible run). A request reads the counter
 * (one primary-key lookup) and answers from the cache when it has not
 * moved, so a leaderboard is never stale and the ordered join runs once per
 * change per worker. Strategy renames do not exist, and users are never
 * renamed, so nothing else can change a rendered row.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fcgi/handlers/handlers.h"
#include "fcgi/handlers/json_list.h"
#include "fcgi/handlers/runs_view.h"

/* Row callback: one leaderboard row. */
static bool board_row(void *ctx, const struct db_col *col, size_t ncol)
{
	struct json_list *bd = ctx;
	struct buf *b = bd->b;
	(void)ncol;
	jl_next(bd);
	buf_puts(b, "{\"run_id\":");
	rv_str(b, col[0].buf);
	buf_printf(b, ",\"strategy_version_id\":%lld,\"dataset_version\":", col[1].i);
	rv_str(b, col[2].buf);
	static const char *const names[] = { "score", "total_return", "cagr", "max_drawdown", "volatility", "sharpe" };
	for (int i = 0; i < 6; i++) {
		buf_printf(b, ",\"%s\":", names[i]);
		rv_num(b, col[3 + i].buf);
	}
	buf_printf(b, ",\"strategy_id\":%lld,\"strategy_name\":", col[9].i);
	rv_str(b, col[10].buf);
	buf_puts(b, ",\"owner\":");
	rv_str(b, col[11].buf);
	buf_puts(b, ",\"completed_at\":");
	rv_str(b, col[12].buf);
	buf_putc(b, '}');
	return true;
}

#define BOARD_COLS                                                                                   \
	"m.run_id, m.strategy_version_id, m.dataset_version, CAST(m.score AS CHAR), "                  \
	"CAST(m.total_return AS CHAR), CAST(m.cagr AS CHAR), CAST(m.max_drawdown AS CHAR), "           \
	"CAST(m.volatility AS CHAR), CAST(m.sharpe AS CHAR), s.id, s.name, u.name, " RV_TS("m.completed_at")

#define BOARD_CACHE 16

/* One rendered leaderboard of this worker. */
struct board_entry {
	char       key[128];   /* "<dsv>|<all>|<limit>|<offset>" */
	long long  gen;        /* leaderboard_gen.gen when rendered (-1: none yet) */
	struct buf body;
	unsigned   used;       /* clock for eviction */
};

static struct board_entry board_cache[BOARD_CACHE];
static unsigned board_clock;

/* The change counter of dsv (0 when nothing was ever added); false after replying. */
static bool board_gen(struct fcgi_ctx *c, const char *dsv, long long *gen)
{
	struct db_col col = DB_COL_INT;
	struct db_arg arg = DB_ARG_TEXT(dsv);
	struct db_result res = { 0 };
	enum db_status st = db_exec(fcgi_db(c), "SELECT gen FROM leaderboard_gen WHERE dataset_version = ?", &arg, 1,
				    &col, 1, NULL, NULL, &res, DB_IDEMPOTENT);
	if (st != DB_OK) {
		fcgi_reply_db_error(c, st);
		return false;
	}
	*gen = res.rows ? col.i : 0;
	return true;
}

/* The cache entry for key: the matching one, else the least recently used. */
static struct board_entry *board_slot(const char *key, bool *hit)
{
	struct board_entry *victim = &board_cache[0];
	for (size_t i = 0; i < BOARD_CACHE; i++) {
		if (board_cache[i].body.data && strcmp(board_cache[i].key, key) == 0) {
			*hit = true;
			return &board_cache[i];
		}
		if (board_cache[i].used < victim->used)
			victim = &board_cache[i];
	}
	*hit = false;
	return victim;
}

void h_leaderboard(struct fcgi_ctx *c)
{
	static const char best_sql[] =
		"SELECT " BOARD_COLS " FROM leaderboard_best b JOIN run_metrics m ON m.run_id = b.run_id "
		"JOIN strategy_versions v ON v.id = b.strategy_version_id JOIN strategies s ON s.id = v.strategy_id "
		"JOIN users u ON u.id = s.owner_id WHERE b.dataset_version = ? "
		"ORDER BY b.score DESC, b.completed_at, b.run_id LIMIT ? OFFSET ?";
	static const char all_sql[] =
		"SELECT " BOARD_COLS " FROM run_metrics m "
		"JOIN strategy_versions v ON v.id = m.strategy_version_id JOIN strategies s ON s.id = v.strategy_id "
		"JOIN users u ON u.id = s.owner_id WHERE m.dataset_version = ? AND m.eligible = 1 "
		"ORDER BY m.score DESC, m.completed_at, m.run_id LIMIT ? OFFSET ?";
	int64_t all, limit, offset;
	const char *dsv = fcgi_query(c, "dataset_version");
	if (!fcgi_query_int(c, "all", 0, 1, 0, &all) || !fcgi_query_int(c, "limit", 1, 1000, 100, &limit) ||
	    !fcgi_query_int(c, "offset", 0, 1000000000, 0, &offset))
		return;
	if (!dsv || !*dsv)
		dsv = fcgi_config(c, "DATASET_VERSION");
	if (!dsv || !*dsv)
		dsv = "v1";
	if (strlen(dsv) > 64) {
		fcgi_reply_error(c, 400, "invalid_field", "dataset_version is too long");
		return;
	}
	char key[128];
	long long gen;
	bool hit;
	if (snprintf(key, sizeof key, "%s|%lld|%lld|%lld", dsv, (long long)all, (long long)limit,
		     (long long)offset) >= (int)sizeof key || !board_gen(c, dsv, &gen))
		return;
	struct board_entry *e = board_slot(key, &hit);
	e->used = ++board_clock;
	if (hit && e->gen == gen) {
		buf_append(fcgi_body_buf(c), e->body.data, e->body.len);
		fcgi_reply_buf(c, 200, "application/json");
		return;
	}
	char rid[40], dv[130], num[6][40], name[810], owner[130], at[RV_TS_LEN];
	struct db_col cols[] = {
		DB_COL_TEXT(rid), DB_COL_INT, DB_COL_TEXT(dv), DB_COL_TEXT(num[0]), DB_COL_TEXT(num[1]),
		DB_COL_TEXT(num[2]), DB_COL_TEXT(num[3]), DB_COL_TEXT(num[4]), DB_COL_TEXT(num[5]), DB_COL_INT,
		DB_COL_TEXT(name), DB_COL_TEXT(owner), DB_COL_TEXT(at),
	};
	struct db_arg args[] = { DB_ARG_TEXT(dsv), DB_ARG_INT(limit), DB_ARG_INT(offset) };
	struct buf *b = fcgi_body_buf(c);
	struct json_list acc = JSON_LIST(b, 0);
	buf_putc(b, '[');
	enum db_status st = db_exec(fcgi_db(c), all ? all_sql : best_sql, args, 3, cols, sizeof cols / sizeof cols[0],
				    board_row, &acc, NULL, DB_IDEMPOTENT);
	if (st != DB_OK) {
		buf_reset(b);
		fcgi_reply_db_error(c, st);
		return;
	}
	buf_putc(b, ']');
	/* keep it for the next request while the counter does not move; a run
	 * completing during the query bumps the counter after this read, so the
	 * entry is stale at worst until that counter value is seen */
	snprintf(e->key, sizeof e->key, "%s", key);
	e->gen = gen;
	buf_reset(&e->body);
	buf_append(&e->body, b->data, b->len);
	fcgi_reply_buf(c, 200, "application/json");
}

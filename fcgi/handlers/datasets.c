/*
 * datasets: GET /datasets, GET /datasets/{version}: the registered dataset
 * versions (registered by operators with `agenttest dataset register`).
 */
#include <stdio.h>
#include <string.h>

#include "fcgi/handlers/handlers.h"
#include "fcgi/handlers/json_list.h"
#include "fcgi/handlers/runs_view.h"

/* Row callback: one dataset object. */
static bool ds_row(void *ctx, const struct db_col *col, size_t ncol)
{
	struct json_list *d = ctx;
	(void)ncol;
	jl_next(d);
	buf_puts(d->b, "{\"version\":");
	rv_str(d->b, col[0].buf);
	buf_puts(d->b, ",\"dataset_hash\":");
	rv_str(d->b, col[1].buf);
	buf_puts(d->b, ",\"assets\":");
	rv_raw(d->b, col[2].buf);
	buf_printf(d->b, ",\"interval_ms\":%lld,\"bars\":%lld,\"first_ts\":%lld,\"last_ts\":%lld,\"created_at\":",
		   col[3].i, col[4].i, col[5].i, col[6].i);
	rv_str(d->b, col[7].buf);
	buf_putc(d->b, '}');
	return true;
}

#define DS_SELECT "SELECT version, dataset_hash, assets, interval_ms, bars, first_ts, last_ts, " \
		  RV_TS("created_at") " FROM datasets "

/* Run the dataset query into the body; false after replying an error. */
static bool ds_query(struct fcgi_ctx *c, const char *sql, const struct db_arg *args, size_t nargs, struct json_list *d)
{
	char version[130], hash[65], at[RV_TS_LEN];
	char *assets = arena_alloc(fcgi_arena(c), 65536);
	struct db_col cols[] = { DB_COL_TEXT(version), DB_COL_TEXT(hash), { .type = DB_T_TEXT, .buf = assets, .cap = 65536 },
				 DB_COL_INT, DB_COL_INT, DB_COL_INT, DB_COL_INT, DB_COL_TEXT(at) };
	enum db_status st = db_exec(fcgi_db(c), sql, args, nargs, cols, 8, ds_row, d, NULL, DB_IDEMPOTENT);
	if (st != DB_OK) {
		buf_reset(d->b);
		fcgi_reply_db_error(c, st);
		return false;
	}
	return true;
}

/* GET /datasets */
void h_datasets_list(struct fcgi_ctx *c)
{
	struct buf *b = fcgi_body_buf(c);
	struct json_list d = JSON_LIST(b, 0);
	buf_puts(b, "{\"datasets\":[");
	if (!ds_query(c, DS_SELECT "ORDER BY version", NULL, 0, &d))
		return;
	buf_puts(b, "],\"default_version\":");
	rv_str(b, fcgi_config(c, "DATASET_VERSION"));
	buf_putc(b, '}');
	fcgi_reply_buf(c, 200, "application/json");
}

/* GET /datasets/{version} */
void h_datasets_get(struct fcgi_ctx *c)
{
	struct buf *b = fcgi_body_buf(c);
	struct json_list d = JSON_LIST(b, 0);
	struct db_arg arg = DB_ARG_TEXT(fcgi_param(c, "version"));
	if (!ds_query(c, DS_SELECT "WHERE version = ?", &arg, 1, &d))
		return;
	if (d.n == 0) {
		buf_reset(b);
		fcgi_reply_error(c, 404, "not_found", "dataset version not found");
		return;
	}
	fcgi_reply_buf(c, 200, "application/json");
}

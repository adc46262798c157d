/*
 * challenges: the MANTIS challenge catalogue and the per-challenge boards.
 *
 *   GET /api/challenges[?dataset_version=V]
 *       name -> {type, short, desc, asset, metric, metric_info {primary, all,
 *       direction, label, baseline}, embedding_dim, horizon, assets}, the
 *       original's shape (evaluator/challenges, ch_catalog). Challenges that
 *       need an extra field (FUNDING-XSEC: funding_1h) are listed only when
 *       the dataset (V, else DATASET_VERSION) carries it; POST
 *       /api/evaluations and /api/agents refuse them on any other dataset
 *       (ch_dataset_fits: 400 dataset_lacks_field).
 *   GET /api/challenges/{name}/leaderboard[?mode=strict|mantis][&dataset_version=V][&limit=N]
 *       completed evaluations ranked by the primary metric in its direction
 *       (log loss ascending, the others descending), earlier completion first.
 *       &rank_by=forward[&forward_state=provisional|final]: ranked by forward
 *       score instead (forward_view.c, issue 18); dataset_version may then be
 *       a window label (every version of the window) or a version.
 */
#include <stdio.h>
#include <string.h>

#include "evaluator/challenges/challenges.h"
#include "evaluator/dataset.h"
#include "fcgi/handlers/forward_view.h"
#include "fcgi/handlers/handlers.h"
#include "fcgi/handlers/json_list.h"
#include "fcgi/handlers/runs_view.h"

/* The dataset version a request means: ?dataset_version=, else the configured one. */
static const char *req_version(struct fcgi_ctx *c)
{
	const char *v = fcgi_query(c, "dataset_version");
	if (!v || !*v)
		v = fcgi_config(c, "DATASET_VERSION");
	return v && *v ? v : "v1";
}

/* has_field callback: the field list of the request's dataset (a JSON array of names). */
static int dataset_has_field(const char *field, void *ctx)
{
	const struct dataset *ds = ctx;
	return ds && ds_field_index(ds, field) >= 0;
}

bool ch_dataset_fits(struct fcgi_ctx *c, const struct ch_def *def, const char *version, const char *path)
{
	if (def->field == NULL)
		return true;
	enum ds_err de;
	char msg[256];
	/* only the manifest is read (no hashing): the extra fields it lists */
	struct dataset *ds = ds_open(path, 0, &de, msg, sizeof msg);
	bool has = ds != NULL && ds_field_index(ds, def->field) >= 0;
	if (ds)
		ds_close(ds);
	if (!has)
		fcgi_reply_error(c, 400, "dataset_lacks_field",
				 "%s needs the %s field and dataset_version '%s' does not carry it (GET "
				 "/api/challenges?dataset_version=%s lists what it offers); fetch data with a "
				 "CoinGlass key (docs/market-data.md)", def->name, def->field, version, version);
	return has;
}

void h_challenges_list(struct fcgi_ctx *c)
{
	const char *dsv = req_version(c);
	char path[1030];
	struct db_col col = DB_COL_TEXT(path);
	struct db_arg arg = DB_ARG_TEXT(dsv);
	struct db_result res = { 0 };
	struct dataset *ds = NULL;
	if (strlen(dsv) > 64) {
		fcgi_reply_error(c, 400, "invalid_field", "dataset_version is too long");
		return;
	}
	enum db_status st = db_exec(fcgi_db(c), "SELECT path FROM datasets WHERE version = ?", &arg, 1, &col, 1,
				    NULL, NULL, &res, DB_IDEMPOTENT);
	if (st != DB_OK) {
		fcgi_reply_db_error(c, st);
		return;
	}
	if (res.rows > 0) {
		/* only the manifest is read (no hashing): the extra fields it lists */
		enum ds_err de;
		char msg[256];
		ds = ds_open(path, 0, &de, msg, sizeof msg);
	}
	json_object *cat = ch_catalog(dataset_has_field, ds);
	if (ds)
		ds_close(ds);
	fcgi_reply_json(c, 200, cat);
}

/* Row callback: one board entry. */
static bool board_row(void *ctx, const struct db_col *col, size_t ncol)
{
	struct json_list *bd = ctx;
	struct buf *b = bd->b;
	(void)ncol;
	buf_printf(b, "{\"rank\":%lld,\"evaluation_id\":", jl_next(bd));
	rv_str(b, col[0].buf);
	buf_puts(b, ",\"score\":");
	rv_num(b, col[1].buf);
	buf_puts(b, ",\"owner\":");
	rv_str(b, col[2].buf);
	buf_puts(b, ",\"code_hash\":");
	rv_str(b, col[3].buf);
	buf_puts(b, ",\"dev_only\":");
	buf_puts(b, col[4].i ? "true" : "false");
	buf_puts(b, ",\"completed_at\":");
	rv_str(b, col[5].buf);
	buf_puts(b, ",\"name\":");
	rv_str(b, col[6].is_null ? NULL : col[6].buf);
	buf_putc(b, '}');
	return true;
}

void h_challenges_leaderboard(struct fcgi_ctx *c)
{
#define BOARD_SQL(dir)                                                                                      \
	"SELECT e.id, CAST(e.score AS CHAR), u.name, e.code_hash, e.dev_only, " RV_TS("e.completed_at")        \
	", e.name FROM evaluations e JOIN users u ON u.id = e.owner_id WHERE e.challenge = ? AND e.mode = ? "          \
	"AND e.dataset_version = ? AND e.status = 'completed' AND e.score IS NOT NULL "                        \
	"ORDER BY e.score " dir ", e.completed_at, e.id LIMIT ? OFFSET ?"
	static const char asc_sql[] = BOARD_SQL("ASC"), desc_sql[] = BOARD_SQL("DESC");
#undef BOARD_SQL
	const char *name = fcgi_param(c, "name"), *mode = fcgi_query(c, "mode"), *dsv = req_version(c);
	const struct ch_def *def = ch_lookup(name ? name : "");
	int64_t limit, offset;
	if (!def) {
		fcgi_reply_error(c, 404, "not_found", "no challenge '%s'", name ? name : "");
		return;
	}
	if (!mode || !*mode)
		mode = "strict";
	if (ch_mode_parse(mode) < 0) {
		fcgi_reply_error(c, 400, "invalid_field", "mode must be strict or mantis");
		return;
	}
	if (strlen(dsv) > 64) {
		fcgi_reply_error(c, 400, "invalid_field", "dataset_version is too long");
		return;
	}
	if (!fcgi_query_int(c, "limit", 1, 1000, 100, &limit) || !fcgi_query_int(c, "offset", 0, 1000000000, 0, &offset))
		return;
	const char *rank_by = fcgi_query(c, "rank_by");
	if (rank_by && *rank_by && strcmp(rank_by, "holdout") != 0 && strcmp(rank_by, "forward") != 0) {
		fcgi_reply_error(c, 400, "invalid_field", "rank_by must be holdout or forward");
		return;
	}
	bool lower = def->type == CH_HITFIRST;
	const char *metric = def->type == CH_BINARY || def->type == CH_BREAKOUT ? "mean_auc" :
			     def->type == CH_HITFIRST ? "direct_log_loss" :
			     def->type == CH_LBFGS ? "mean_balanced_accuracy" : "mean_spearman";
	if (rank_by && strcmp(rank_by, "forward") == 0) {
		fwd_board(c, def->name, metric, lower, mode, dsv, limit, offset);
		return;
	}
	char id[40], score[40], owner[130], hash[70], at[RV_TS_LEN], ename[129];   /* evaluations.name: 128 bytes */
	struct db_col cols[] = { DB_COL_TEXT(id), DB_COL_TEXT(score), DB_COL_TEXT(owner), DB_COL_TEXT(hash),
				 DB_COL_INT, DB_COL_TEXT(at), DB_COL_TEXT(ename) };
	struct db_arg args[] = { DB_ARG_TEXT(def->name), DB_ARG_TEXT(mode), DB_ARG_TEXT(dsv), DB_ARG_INT(limit),
				 DB_ARG_INT(offset) };
	struct buf *b = fcgi_body_buf(c);
	struct json_list bd = JSON_LIST(b, offset);
	buf_puts(b, "{\"challenge\":");
	rv_str(b, def->name);
	buf_puts(b, ",\"metric\":");
	rv_str(b, metric);
	buf_printf(b, ",\"direction\":\"%s\",\"mode\":", lower ? "lower" : "higher");
	rv_str(b, mode);
	buf_puts(b, ",\"dataset_version\":");
	rv_str(b, dsv);
	buf_puts(b, ",\"entries\":[");
	enum db_status st = db_exec(fcgi_db(c), lower ? asc_sql : desc_sql, args, 5, cols, 7, board_row, &bd, NULL,
				    DB_IDEMPOTENT);
	jl_reply(c, st, "]}");
}

/*
 * forward_view: reads one forward_scores row into the API's "forward"
 * object (forward_view.h). Numbers keep MariaDB's text of the DOUBLE, as
 * the evaluation's own "score" does, so the two compare as equal text.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "fcgi/handler.h"
#include "fcgi/handlers/forward_view.h"
#include "fcgi/handlers/json_list.h"
#include "fcgi/handlers/runs_view.h"

#define FWD_RESULT_MAX (1u << 20)

/* A number from its SQL text (NULL or non-finite: JSON null). */
static json_object *fv_num(const struct db_col *col)
{
	if (col->is_null || !col->buf[0])
		return NULL;
	char *end;
	double v = strtod(col->buf, &end);
	if (*end || !isfinite(v))
		return NULL;
	return json_object_new_double_s(v, col->buf);
}

/* A string column (NULL: JSON null). */
static json_object *fv_str(const struct db_col *col)
{
	return col->is_null ? NULL : json_object_new_string(col->buf);
}

struct fv_ctx {
	json_object *o;
	bool         with_result;
};

/* Row callback: the forward object. */
static bool fv_row(void *ctx, const struct db_col *c, size_t nc)
{
	struct fv_ctx *x = ctx;
	json_object *o = json_object_new_object(), *err = NULL;
	(void)nc;
	json_object_object_add(o, "state", fv_str(&c[0]));
	json_object_object_add(o, "metric", fv_str(&c[1]));
	json_object_object_add(o, "score", fv_num(&c[2]));
	json_object_object_add(o, "bars", json_object_new_int64(c[3].i));
	json_object_object_add(o, "forward_days", fv_num(&c[4]));
	json_object_object_add(o, "final_days", fv_num(&c[5]));
	json_object_object_add(o, "cutoff_ts", json_object_new_int64(c[6].i));
	json_object_object_add(o, "first_ts", json_object_new_int64(c[7].i));
	json_object_object_add(o, "last_ts", json_object_new_int64(c[8].i));
	json_object_object_add(o, "window", fv_str(&c[9]));
	json_object_object_add(o, "dataset_version", fv_str(&c[10]));
	if (!c[11].is_null) {
		err = json_object_new_object();
		json_object_object_add(err, "code", fv_str(&c[11]));
		json_object_object_add(err, "message", c[12].is_null ? json_object_new_string("") : fv_str(&c[12]));
	}
	json_object_object_add(o, "error", err);
	json_object_object_add(o, "updated_at", fv_str(&c[13]));
	if (x->with_result)
		json_object_object_add(o, "result", c[14].is_null ? NULL : json_tokener_parse(c[14].buf));
	x->o = o;
	return false;
}

#define FV_COLS "f.state, f.metric, CAST(f.score AS CHAR), f.bars, CAST(f.forward_days AS CHAR), " \
	"CAST(f.final_days AS CHAR), f.cutoff_ts, f.first_ts, f.last_ts, f.window_label, f.dataset_version, " \
	"f.error_code, f.error_message, " RV_TS("f.updated_at") ", "

/* Run sql (FV_COLS then the result or NULL) with args; *out the object or NULL. */
static enum db_status fv_read(struct fcgi_ctx *c, const char *sql, const struct db_arg *args, size_t nargs,
			      bool with_result, json_object **out)
{
	char st[16], metric[40], score[40], fd[40], fin[40], win[70], ver[70], code[40], at[RV_TS_LEN], none[8];
	char *msg = arena_alloc(fcgi_arena(c), 4096), *res = with_result ? arena_alloc(fcgi_arena(c), FWD_RESULT_MAX) : NULL;
	struct db_col cols[] = {
		DB_COL_TEXT(st), DB_COL_TEXT(metric), DB_COL_TEXT(score), DB_COL_INT, DB_COL_TEXT(fd), DB_COL_TEXT(fin),
		DB_COL_INT, DB_COL_INT, DB_COL_INT, DB_COL_TEXT(win), DB_COL_TEXT(ver), DB_COL_TEXT(code),
		{ .type = DB_T_TEXT, .buf = msg, .cap = 4096 }, DB_COL_TEXT(at),
		{ .type = DB_T_TEXT, .buf = res ? res : none, .cap = res ? FWD_RESULT_MAX : sizeof none },
	};
	struct fv_ctx x = { NULL, with_result };
	enum db_status s = db_exec(fcgi_db(c), sql, args, nargs, cols, sizeof cols / sizeof cols[0], fv_row, &x, NULL,
				   DB_IDEMPOTENT);
	if (s != DB_OK) {
		json_object_put(x.o);
		x.o = NULL;
	}
	*out = x.o;
	return s;
}

enum db_status fwd_view_evaluation(struct fcgi_ctx *c, const char *id, bool with_result, json_object **out)
{
	struct db_arg a[] = { DB_ARG_TEXT(id) };
	return fv_read(c, with_result ?
		       "SELECT " FV_COLS "f.result FROM forward_scores f WHERE f.subject = 'evaluation' AND f.subject_id = ?" :
		       "SELECT " FV_COLS "NULL FROM forward_scores f WHERE f.subject = 'evaluation' AND f.subject_id = ?",
		       a, 1, with_result, out);
}

enum db_status fwd_view_iteration(struct fcgi_ctx *c, const char *agent_id, long long n, json_object **out)
{
	struct db_arg a[] = { DB_ARG_TEXT(agent_id), DB_ARG_INT(n) };
	return fv_read(c, "SELECT " FV_COLS "NULL FROM forward_scores f JOIN agent_iterations i ON f.subject = "
		       "'iteration' AND f.subject_id = i.id WHERE i.agent_id = ? AND i.iteration = ?", a, 2, false, out);
}

/* Row callback: one forward board entry. */
static bool fv_board_row(void *ctx, const struct db_col *col, size_t ncol)
{
	struct json_list *bd = ctx;
	struct buf *b = bd->b;
	(void)ncol;
	buf_printf(b, "{\"rank\":%lld,\"evaluation_id\":", jl_next(bd));
	rv_str(b, col[0].buf);
	buf_puts(b, ",\"score\":");
	rv_num(b, col[1].buf);
	buf_puts(b, ",\"forward_state\":");
	rv_str(b, col[2].buf);
	buf_printf(b, ",\"forward_bars\":%lld,\"forward_days\":", col[3].i);
	rv_num(b, col[4].buf);
	buf_puts(b, ",\"dataset_version\":");
	rv_str(b, col[5].buf);
	buf_puts(b, ",\"holdout_score\":");
	rv_num(b, col[6].is_null ? NULL : col[6].buf);
	buf_puts(b, ",\"owner\":");
	rv_str(b, col[7].buf);
	buf_puts(b, ",\"code_hash\":");
	rv_str(b, col[8].buf);
	buf_printf(b, ",\"dev_only\":%s,\"completed_at\":", col[9].i ? "true" : "false");
	rv_str(b, col[10].buf);
	buf_putc(b, '}');
	return true;
}

void fwd_board(struct fcgi_ctx *c, const char *challenge, const char *metric, bool lower, const char *mode,
	       const char *dsv, long long limit, long long offset)
{
#define FWD_BOARD_SQL(dir)                                                                                   \
	"SELECT e.id, CAST(f.score AS CHAR), f.state, f.bars, CAST(f.forward_days AS CHAR), f.dataset_version, " \
	"CAST(e.score AS CHAR), u.name, e.code_hash, e.dev_only, " RV_TS("e.completed_at") " FROM forward_scores f " \
	"JOIN evaluations e ON f.subject = 'evaluation' AND e.id = f.subject_id JOIN users u ON u.id = e.owner_id " \
	"WHERE f.challenge = ? AND f.mode = ? AND (f.window_label = ? OR e.dataset_version = ?) AND "          \
	"f.score IS NOT NULL AND (? = '' OR f.state = ?) ORDER BY f.score " dir ", f.bars DESC, e.seq LIMIT ? OFFSET ?"
	static const char asc_sql[] = FWD_BOARD_SQL("ASC"), desc_sql[] = FWD_BOARD_SQL("DESC");
#undef FWD_BOARD_SQL
	const char *state = fcgi_query(c, "forward_state");
	if (!state)
		state = "";
	if (*state && strcmp(state, "provisional") != 0 && strcmp(state, "final") != 0) {
		fcgi_reply_error(c, 400, "invalid_field", "forward_state must be provisional or final");
		return;
	}
	char id[40], score[40], st[16], fd[40], ver[70], hold[40], owner[130], hash[70], at[RV_TS_LEN];
	struct db_col cols[] = { DB_COL_TEXT(id), DB_COL_TEXT(score), DB_COL_TEXT(st), DB_COL_INT, DB_COL_TEXT(fd),
				 DB_COL_TEXT(ver), DB_COL_TEXT(hold), DB_COL_TEXT(owner), DB_COL_TEXT(hash), DB_COL_INT,
				 DB_COL_TEXT(at) };
	struct db_arg args[] = { DB_ARG_TEXT(challenge), DB_ARG_TEXT(mode), DB_ARG_TEXT(dsv), DB_ARG_TEXT(dsv),
				 DB_ARG_TEXT(state), DB_ARG_TEXT(state), DB_ARG_INT(limit), DB_ARG_INT(offset) };
	struct buf *b = fcgi_body_buf(c);
	struct json_list bd = JSON_LIST(b, offset);
	buf_puts(b, "{\"challenge\":");
	rv_str(b, challenge);
	buf_puts(b, ",\"metric\":");
	rv_str(b, metric);
	buf_printf(b, ",\"direction\":\"%s\",\"rank_by\":\"forward\",\"forward_state\":", lower ? "lower" : "higher");
	rv_str(b, *state ? state : NULL);
	buf_puts(b, ",\"mode\":");
	rv_str(b, mode);
	buf_puts(b, ",\"dataset_version\":");
	rv_str(b, dsv);
	buf_puts(b, ",\"entries\":[");
	enum db_status s = db_exec(fcgi_db(c), lower ? asc_sql : desc_sql, args, 8, cols, 11, fv_board_row, &bd, NULL,
				   DB_IDEMPOTENT);
	jl_reply(c, s, "]}");
}

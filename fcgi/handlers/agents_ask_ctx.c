/*
 * agents_ask_ctx: what the model is told about an agent when its owner
 * asks about it (the original's ask context, spec/mantis.md §5.3): the
 * configuration and status, the tails of the current goal, STATE.md and
 * notes.txt as the last iteration left them, a one-line history of the
 * last 10 iterations, and the dev metrics and analysis of the last 3.
 * Everything comes from the database (the runner's finishing write put
 * it there); tails are cut in SQL (RIGHT/LEFT, in characters) so no
 * column is read whole. Sealed holdout numbers are never included: the
 * answer is a chat message, and the chat is no place for them.
 */
#include <stdio.h>
#include <string.h>

#include "fcgi/handlers/agents.h"
#include "fcgi/handlers/agents_ask.h"
#include "fcgi/handlers/handlers.h"

#define CTX_TAIL  4000   /* characters of STATE.md and notes.txt */
#define CTX_JSON  4000   /* characters of one iteration's metrics or analysis */
#define CTX_LINES 10     /* iterations in the history lines */
#define CTX_FULL  3      /* iterations with metrics and analysis */
#define CTX_S2(x) #x
#define CTX_S(x)  CTX_S2(x) /* a limit as SQL text */

/* Append a titled section; an empty or NULL body is written as "(empty)". */
static void ctx_section(struct buf *out, const char *title, const struct db_col *col)
{
	buf_printf(out, "\n## %s\n", title);
	buf_puts(out, col->is_null || !col->buf[0] ? "(empty)" : col->buf);
	buf_puts(out, "\n");
}

/* Row callback: one history line. */
static bool ctx_line(void *ctx, const struct db_col *col, size_t ncol)
{
	(void)ncol;
	struct buf *out = ctx;
	buf_printf(out, "- iteration %lld: %s, dev score %s%s%s\n", col[0].i, col[1].buf,
		   col[2].is_null ? "none" : col[2].buf, col[3].i ? ", error: " : "",
		   col[3].i && !col[4].is_null ? col[4].buf : "");
	return true;
}

/* Row callback: one iteration with its metrics and analysis. */
static bool ctx_full(void *ctx, const struct db_col *col, size_t ncol)
{
	(void)ncol;
	struct buf *out = ctx;
	buf_printf(out, "\n### iteration %lld\nmetrics (dev): %s\nanalysis: %s\n", col[0].i,
		   col[1].is_null ? "none" : col[1].buf, col[2].is_null ? "none" : col[2].buf);
	return true;
}

/* The agent's row: configuration, status, goal, STATE.md and notes tails. */
static bool ctx_agent(struct fcgi_ctx *c, const char *id, struct buf *out, enum db_status *st)
{
	char ch[65], model[17], driver[16], status[32];
	struct db_col col[] = { DB_COL_TEXT(ch), DB_COL_TEXT(model), DB_COL_TEXT(driver), DB_COL_TEXT(status),
				DB_COL_INT, DB_COL_INT, DB_COL_INT, DB_COL_INT, ag_text_col(c, AG_GOAL_MAX * 4 + 1),
				ag_text_col(c, 1024), ag_text_col(c, CTX_TAIL * 4 + 1), ag_text_col(c, CTX_TAIL * 4 + 1),
				DB_COL_INT };
	struct db_arg k = DB_ARG_TEXT(id);
	bool got = false;
	*st = db_exec(fcgi_db(c), "SELECT challenge, model, driver, status, iterations_done, min_iterations, "
		      "max_iterations, days_back, goal, LEFT(COALESCE(status_detail, ''), 255), "
		      "RIGHT(COALESCE(state_md, ''), " CTX_S(CTX_TAIL) "), RIGHT(COALESCE(notes, ''), " CTX_S(CTX_TAIL) "), "
		      "COALESCE(best_iteration, 0) FROM agents WHERE id = ?", &k, 1, col, sizeof col / sizeof col[0],
		      db_row_once, &got, NULL, DB_IDEMPOTENT);
	if (*st != DB_OK || !got)
		return *st == DB_OK;
	bool why = col[9].buf[0] != '\0';
	buf_printf(out, "\n## Configuration and status\nchallenge: %s\nmodel: %s\ndriver: %s\nstatus: %s%s%s%s\n"
		   "iterations done: %lld (min %lld, max %lld)\ndays of history: %lld\n", ch, model, driver, status,
		   why ? " (" : "", why ? col[9].buf : "", why ? ")" : "", col[4].i, col[5].i, col[6].i, col[7].i);
	if (col[12].i > 0)
		buf_printf(out, "best iteration: %lld\n", col[12].i);
	ctx_section(out, "GOAL.md", &col[8]);
	ctx_section(out, "STATE.md (tail)", &col[10]);
	ctx_section(out, "notes.txt (tail)", &col[11]);
	return true;
}

bool ask_context(struct fcgi_ctx *c, const char *id, struct buf *out, enum db_status *st)
{
	buf_puts(out, "You are helping the owner of an autonomous research agent on agenttest, a platform that "
		 "scores trading-signal code on market-data challenges. Answer the owner's question about this "
		 "agent from the context below, briefly and concretely.\n");
	if (!ctx_agent(c, id, out, st))
		return false;
	char status[16], score[40];
	struct db_col line[] = { DB_COL_INT, DB_COL_TEXT(status), DB_COL_TEXT(score), DB_COL_INT,
				 ag_text_col(c, 1024) };
	struct db_arg k = DB_ARG_TEXT(id);
	buf_puts(out, "\n## HISTORY (last iterations, newest first)\n");
	size_t before = out->len;
	*st = db_exec(fcgi_db(c), "SELECT iteration, status, CAST(score AS CHAR), has_error, LEFT(error, 200) "
		      "FROM agent_iterations WHERE agent_id = ? ORDER BY iteration DESC LIMIT " CTX_S(CTX_LINES), &k, 1, line, sizeof line / sizeof line[0],
		      ctx_line, out, NULL, DB_IDEMPOTENT);
	if (*st != DB_OK)
		return false;
	if (out->len == before)
		buf_puts(out, "(no iteration yet)\n");
	struct db_col full[] = { DB_COL_INT, ag_text_col(c, CTX_JSON * 4 + 1), ag_text_col(c, CTX_JSON * 4 + 1) };
	buf_puts(out, "\n## The last 3 recorded iterations\n");
	*st = db_exec(fcgi_db(c), "SELECT iteration, LEFT(metrics, " CTX_S(CTX_JSON) "), LEFT(analysis, " CTX_S(CTX_JSON) ") FROM "
		      "agent_iterations WHERE agent_id = ? AND status = 'completed' ORDER BY iteration DESC LIMIT " CTX_S(CTX_FULL),
		      &k, 1, full, sizeof full / sizeof full[0], ctx_full, out, NULL, DB_IDEMPOTENT);
	return *st == DB_OK;
}

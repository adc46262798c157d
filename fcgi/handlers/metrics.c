/*
 * GET /metrics: Prometheus text exposition of the pool's shared counters
 * (requests by route and status, latency histogram, database reconnects,
 * worker restarts). Admin callers, or loopback clients (a local scraper)
 * even when authentication is required. Then, read from MariaDB, the paper
 * accounts of the promoted defaults (docs/paper-trading.md): best effort, a
 * database failure leaves them out rather than failing the scrape; the
 * default-strategy updater's decision counters; and the forward scores by
 * state (docs/forward-scores.md).
 */
#include <string.h>

#include "fcgi/app.h"
#include "fcgi/handlers/handlers.h"

/* Append s as a Prometheus label value (backslash, quote and newline escaped). */
static void prom_label(struct buf *b, const char *s)
{
	for (; *s; s++) {
		if (*s == '\\' || *s == '"')
			buf_putc(b, '\\');
		if (*s == '\n')
			buf_puts(b, "\\n");
		else
			buf_putc(b, *s);
	}
}

/* Row callback: the gauges of one label's newest paper account. */
static bool paper_gauge_row(void *ctx, const struct db_col *col, size_t ncol)
{
	struct buf *b = ctx;
	static const char *const name[] = { "agenttest_paper_equity", "agenttest_paper_bars",
					    "agenttest_paper_causality_violations" };
	(void)ncol;
	for (size_t i = 0; i < 3; i++) {
		buf_puts(b, name[i]);
		buf_puts(b, "{dataset_version=\"");
		prom_label(b, col[0].buf);
		buf_puts(b, "\",state=\"");
		prom_label(b, col[1].buf);
		buf_printf(b, "\"} %s\n", col[2 + i].buf);
	}
	return true;
}

/* The paper-trading gauges (one series per label: its newest account). */
static void paper_gauges(struct fcgi_ctx *c, struct buf *b)
{
	char label[80], state[16], eq[40], bars[24], viol[24];
	struct db_col col[] = { DB_COL_TEXT(label), DB_COL_TEXT(state), DB_COL_TEXT(eq), DB_COL_TEXT(bars),
				DB_COL_TEXT(viol) };
	struct buf rows = BUF_INIT;
	if (!fcgi_db(c))
		return;   /* a pool without a database (unit tests, fuzzing) */
	if (db_exec(fcgi_db(c), "SELECT label, state, CAST(equity AS CHAR), CAST(n_bars AS CHAR), "
		    "CAST(violations AS CHAR) FROM paper_accounts WHERE id IN (SELECT MAX(id) FROM paper_accounts "
		    "WHERE role = 'default' GROUP BY label) ORDER BY label", NULL, 0, col, 5, paper_gauge_row, &rows, NULL,
		    DB_IDEMPOTENT) == DB_OK) {
		buf_puts(b, "# HELP agenttest_paper_equity Equity of the paper account of a label's default (1 at its start).\n"
			    "# TYPE agenttest_paper_equity gauge\n"
			    "# HELP agenttest_paper_bars Forward bars the paper account advanced.\n"
			    "# TYPE agenttest_paper_bars gauge\n"
			    "# HELP agenttest_paper_causality_violations Published points a simulate re-run changed.\n"
			    "# TYPE agenttest_paper_causality_violations gauge\n");
		buf_append(b, rows.data ? rows.data : "", rows.len);
	}
	buf_free(&rows);
}

/* Row callback: the updater's decision counters of one label. */
static bool updater_row(void *ctx, const struct db_col *col, size_t ncol)
{
	struct buf *b = ctx;
	static const char *const decision[] = { "refused", "proposed", "approved", "rejected", "promoted", "superseded" };
	(void)ncol;
	for (size_t i = 0; i < 6; i++) {
		buf_puts(b, "agenttest_updater_decisions_total{dataset_version=\"");
		prom_label(b, col[0].buf);
		buf_printf(b, "\",decision=\"%s\"} %s\n", decision[i], col[1 + i].buf);
	}
	return true;
}

/*
 * The default-strategy updater's decisions (sql/024 updater_proposals,
 * never deleted), per label: refused and proposed (every proposal ever
 * made, whatever became of it), then how proposals ended: approved and
 * rejected by an admin, promoted automatically, superseded by another
 * promotion. Each only grows: a counter. Best effort, like the gauges.
 */
static void updater_counters(struct fcgi_ctx *c, struct buf *b)
{
	char label[80], n[6][24];
	struct db_col col[] = { DB_COL_TEXT(label), DB_COL_TEXT(n[0]), DB_COL_TEXT(n[1]), DB_COL_TEXT(n[2]),
				DB_COL_TEXT(n[3]), DB_COL_TEXT(n[4]), DB_COL_TEXT(n[5]) };
	struct buf rows = BUF_INIT;
	if (!fcgi_db(c))
		return;
	if (db_exec(fcgi_db(c), "SELECT label, CAST(SUM(status = 'refused') AS CHAR), CAST(SUM(status <> 'refused') AS CHAR), "
		    "CAST(SUM(status = 'approved') AS CHAR), CAST(SUM(status = 'rejected') AS CHAR), "
		    "CAST(SUM(status = 'promoted') AS CHAR), CAST(SUM(status = 'superseded') AS CHAR) "
		    "FROM updater_proposals GROUP BY label ORDER BY label", NULL, 0, col, 7, updater_row, &rows, NULL,
		    DB_IDEMPOTENT) == DB_OK) {
		buf_puts(b, "# HELP agenttest_updater_decisions_total Decisions of the default-strategy updater by kind.\n"
			    "# TYPE agenttest_updater_decisions_total counter\n");
		buf_append(b, rows.data ? rows.data : "", rows.len);
	}
	buf_free(&rows);
}

/* Row callback: the forward-score counts of one window label, by state. */
static bool forward_row(void *ctx, const struct db_col *col, size_t ncol)
{
	struct buf *b = ctx;
	static const char *const state[] = { "provisional", "final" };
	(void)ncol;
	for (size_t i = 0; i < 2; i++) {
		buf_puts(b, "agenttest_forward_scores{dataset_version=\"");
		prom_label(b, col[0].buf);
		buf_printf(b, "\",state=\"%s\"} %s\n", state[i], col[1 + i].buf);
	}
	return true;
}

/*
 * The forward scores (sql/022 forward_scores, one row per scored evaluation
 * or agent iteration) per window label, counted by state. A gauge: a
 * provisional score becomes final, so the provisional count can fall.
 * Best effort, like the gauges above.
 */
static void forward_gauges(struct fcgi_ctx *c, struct buf *b)
{
	char label[80], n[2][24];
	struct db_col col[] = { DB_COL_TEXT(label), DB_COL_TEXT(n[0]), DB_COL_TEXT(n[1]) };
	struct buf rows = BUF_INIT;
	if (!fcgi_db(c))
		return;
	if (db_exec(fcgi_db(c), "SELECT window_label, CAST(SUM(state = 'provisional') AS CHAR), "
		    "CAST(SUM(state = 'final') AS CHAR) FROM forward_scores GROUP BY window_label ORDER BY window_label",
		    NULL, 0, col, 3, forward_row, &rows, NULL, DB_IDEMPOTENT) == DB_OK) {
		buf_puts(b, "# HELP agenttest_forward_scores Forward scores of evaluations and agent iterations by state.\n"
			    "# TYPE agenttest_forward_scores gauge\n");
		buf_append(b, rows.data ? rows.data : "", rows.len);
	}
	buf_free(&rows);
}

void h_metrics(struct fcgi_ctx *c)
{
	struct fcgi_app *app = fcgi_ctx_app(c);
	struct buf *b = fcgi_body_buf(c);
	if (app->metrics == NULL) {
		fcgi_reply_error(c, 503, "unavailable", "metrics are not enabled in this process");
		return;
	}
	prom_render(app->metrics, app->routes, app->nroutes, b);
	paper_gauges(c, b);
	updater_counters(c, b);
	forward_gauges(c, b);
	fcgi_reply_buf(c, 200, "text/plain; version=0.0.4; charset=utf-8");
}

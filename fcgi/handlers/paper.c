/*
 * paper: the paper account of a label's promoted default.
 *
 *   GET /defaults/paper?dataset_version=<window label>[&limit=N]
 *       200 {dataset_version, account:{...state...}, metrics:{...},
 *            equity:[{ts, equity, backtest, drift, held, decided, price}],
 *            fills:[{ts, from, to, price, fee}]}
 *       The newest account of the label (active, paused or retired). The
 *       metrics are the evaluator's (metrics_compute) over the whole forward
 *       period, with the start bar's equity 1 first; `equity` and `fills`
 *       are the last `limit` (1..100000, default 5000) entries. `backtest`
 *       is the whole-series backtest over the same bars as the runner last
 *       computed it (null where it does not reach), `drift` = equity −
 *       backtest. 400 missing_field without dataset_version, 404 not_found
 *       for a label without an account.
 *
 * The account is opened by a promotion on the label (paper_open_account,
 * called from defaults.c) and advanced by the runner's paper job
 * (evaluator/runner/paper_job.c); this file only reads.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "paper_queue.h"
#include "evaluator/engine.h"
#include "evaluator/metrics.h"
#include "fcgi/handlers/handlers.h"
#include "fcgi/handlers/paper.h"
#include "fcgi/handlers/runs_view.h"

#define PAPER_LIMIT_MAX 100000
#define PAPER_MS_PER_YEAR (365.0 * 86400000.0)   /* the evaluator's annualisation (dataset_priv.h) */

/* INSERT the account of run_id on label (role 'default' with promotion_id, or 'shadow' with 0). */
static enum db_status paper_insert(struct db *db, long long promotion_id, const char *label, const char *run_id,
				   struct db_result *res)
{
	char fee[32], lev[32];
	snprintf(fee, sizeof fee, "%.17g", ENGINE_DEFAULT_FEE_BPS);
	snprintf(lev, sizeof lev, "%.17g", ENGINE_DEFAULT_MAX_LEVERAGE);
	struct db_arg a[] = { promotion_id ? DB_ARG_INT(promotion_id) : DB_ARG_NULL,
			      DB_ARG_TEXT(promotion_id ? "default" : "shadow"), DB_ARG_TEXT(fee), DB_ARG_TEXT(lev),
			      DB_ARG_TEXT(run_id), DB_ARG_TEXT(label) };
	return db_exec(db, "INSERT INTO paper_accounts (promotion_id, role, label, strategy_version_id, run_id, kind, "
		       "asset, fee_bps, max_leverage, start_ts, last_ts) SELECT ?, ?, l.label, r.strategy_version_id, "
		       "r.id, v.kind, COALESCE(r.asset, JSON_VALUE(d.assets, '$[0]')), "
		       "COALESCE(JSON_VALUE(r.engine, '$.fee_bps'), ?), COALESCE(JSON_VALUE(r.engine, '$.max_leverage'), ?), "
		       "d.last_ts, d.last_ts FROM runs r JOIN strategy_versions v ON v.id = r.strategy_version_id "
		       "JOIN dataset_labels l JOIN datasets d ON d.id = l.dataset_id "
		       "WHERE r.id = ? AND l.label = ? AND v.kind IN ('simulate', 'positions')",
		       a, 6, NULL, 0, NULL, NULL, res, 0);
}

enum db_status paper_open_account(struct fcgi_ctx *c, long long promotion_id, const char *label, const char *run_id)
{
	struct db *db = fcgi_db(c);
	struct db_arg r[] = { DB_ARG_TEXT(label) };
	struct db_result res = { 0 };
	enum db_status st = db_exec(db, "UPDATE paper_accounts SET state = 'retired', dataset_id = NULL "
				    "WHERE label = ? AND role = 'default' AND state <> 'retired'", r, 1, NULL, 0, NULL, NULL, NULL, 0);
	if (st != DB_OK)
		return st;
	st = paper_insert(db, promotion_id, label, run_id, &res);
	if (st != DB_OK || res.affected == 0)
		return st;
	return paper_queue_step(db, label) < 0 ? DB_ERROR : DB_OK;
}

enum db_status paper_open_shadow(struct fcgi_ctx *c, const char *label, const char *run_id, long long *account_id)
{
	struct db *db = fcgi_db(c);
	struct db_result res = { 0 };
	*account_id = 0;
	enum db_status st = paper_insert(db, 0, label, run_id, &res);
	if (st != DB_OK || res.affected == 0)
		return st;
	*account_id = (long long)res.insert_id;
	return paper_queue_step(db, label) < 0 ? DB_ERROR : DB_OK;
}

/* The forward points read so far (arena arrays grown by doubling). */
struct ppoints {
	struct fcgi_ctx *c;
	size_t  n, cap;
	long long *ts;
	double *eq, *held, *dec, *price;
	unsigned char *has_held;
};

/* Grow arena array *p of n elements of size sz to cap (copying). */
static void *pgrow(struct fcgi_ctx *c, void *p, size_t n, size_t cap, size_t sz)
{
	void *q = arena_alloc(fcgi_arena(c), cap * sz);
	if (n)
		memcpy(q, p, n * sz);
	return q;
}

/* Row callback: one point. */
static bool ppoint_row(void *ctx, const struct db_col *col, size_t ncol)
{
	struct ppoints *p = ctx;
	(void)ncol;
	if (p->n == p->cap) {
		size_t cap = p->cap ? 2 * p->cap : 256;
		p->ts = pgrow(p->c, p->ts, p->n, cap, sizeof *p->ts);
		p->eq = pgrow(p->c, p->eq, p->n, cap, sizeof *p->eq);
		p->held = pgrow(p->c, p->held, p->n, cap, sizeof *p->held);
		p->dec = pgrow(p->c, p->dec, p->n, cap, sizeof *p->dec);
		p->price = pgrow(p->c, p->price, p->n, cap, sizeof *p->price);
		p->has_held = pgrow(p->c, p->has_held, p->n, cap, 1);
		p->cap = cap;
	}
	p->ts[p->n] = col[0].i;
	p->eq[p->n] = strtod(col[1].buf, NULL);
	p->has_held[p->n] = !col[2].is_null;
	p->held[p->n] = col[2].is_null ? 0 : strtod(col[2].buf, NULL);
	p->dec[p->n] = col[3].is_null ? 0 : strtod(col[3].buf, NULL);
	p->price[p->n] = strtod(col[4].buf, NULL);
	p->n++;
	return true;
}

/* Append a double as JSON (Python repr; null when not finite). */
static void pnum(struct buf *b, double x)
{
	char t[40];
	if (!isfinite(x)) {
		buf_puts(b, "null");
		return;
	}
	snprintf(t, sizeof t, "%.17g", x);
	rv_num(b, t);
}

/* Fills into the JSON list (row callback). */
static bool pfill_row(void *ctx, const struct db_col *col, size_t ncol)
{
	struct buf *b = ctx;
	(void)ncol;
	if (b->data[b->len - 1] != '[')
		buf_putc(b, ',');
	buf_printf(b, "{\"ts\":%lld,\"from\":", col[0].i);
	rv_num(b, col[1].buf);
	buf_puts(b, ",\"to\":");
	rv_num(b, col[2].buf);
	buf_puts(b, ",\"price\":");
	rv_num(b, col[3].buf);
	buf_puts(b, ",\"fee\":");
	rv_num(b, col[4].buf);
	buf_putc(b, '}');
	return true;
}

/* The account columns read by GET /defaults/paper. */
enum { A_ID, A_PROMO, A_SV, A_NAME, A_RUN, A_KIND, A_ASSET, A_FEE, A_LEV, A_STATE, A_REASON, A_START, A_LAST,
       A_NB, A_EQ, A_HELD, A_PEND, A_FEES, A_TURN, A_EXPO, A_WIPED, A_VIOL, A_FVTS, A_BTS, A_BDS, A_IVAL, A_PIN, A_BT, A__N };

/* Append the account object from its columns, left open (plast_step_json closes it). */
static void paccount_json(struct buf *b, const struct db_col *a, const char *label)
{
	buf_printf(b, "{\"id\":%lld,\"promotion_id\":%lld,\"strategy_version_id\":%lld,\"strategy_name\":", a[A_ID].i,
		   a[A_PROMO].i, a[A_SV].i);
	rv_str(b, a[A_NAME].buf);
	buf_puts(b, ",\"run_id\":");
	rv_str(b, a[A_RUN].buf);
	buf_puts(b, ",\"dataset_version\":");
	rv_str(b, label);
	buf_puts(b, ",\"kind\":");
	rv_str(b, a[A_KIND].buf);
	buf_puts(b, ",\"asset\":");
	rv_str(b, a[A_ASSET].buf);
	buf_puts(b, ",\"fee_bps\":");
	rv_num(b, a[A_FEE].buf);
	buf_puts(b, ",\"max_leverage\":");
	rv_num(b, a[A_LEV].buf);
	buf_puts(b, ",\"state\":");
	rv_str(b, a[A_STATE].buf);
	buf_puts(b, ",\"pause_reason\":");
	rv_str(b, a[A_REASON].is_null ? NULL : a[A_REASON].buf);
	buf_printf(b, ",\"start_ts\":%lld,\"last_ts\":%lld,\"bars\":%lld,\"equity\":", a[A_START].i, a[A_LAST].i,
		   a[A_NB].i);
	rv_num(b, a[A_EQ].buf);
	buf_puts(b, ",\"position\":");
	rv_num(b, a[A_HELD].buf);
	buf_puts(b, ",\"next_position\":");
	rv_num(b, a[A_PEND].buf);
	buf_puts(b, ",\"fees_paid\":");
	rv_num(b, a[A_FEES].buf);
	buf_puts(b, ",\"turnover\":");
	rv_num(b, a[A_TURN].buf);
	buf_printf(b, ",\"liquidated\":%s,\"causality_violations\":%lld,\"first_violation_ts\":",
		   a[A_WIPED].i ? "true" : "false", a[A_VIOL].i);
	if (a[A_FVTS].is_null)
		buf_puts(b, "null");
	else
		buf_printf(b, "%lld", a[A_FVTS].i);
	buf_puts(b, ",\"backtest_dataset_version\":");
	rv_str(b, a[A_BDS].is_null ? NULL : a[A_BDS].buf);
	buf_puts(b, ",\"pinned_version\":");
	rv_str(b, a[A_PIN].is_null ? NULL : a[A_PIN].buf);
}

/*
 * Append ,"last_step":{...} (the account's newest finished step: status,
 * error_code, error_message, dataset_version, bars_advanced; null before
 * the first) and close the account object. DB_OK or the error.
 */
static enum db_status plast_step_json(struct fcgi_ctx *c, struct buf *b, long long id)
{
	char status[16], code[40], ver[80], msg[4100];   /* 1000 characters of up to 4 bytes */
	struct db_col sc[] = { DB_COL_TEXT(status), DB_COL_TEXT(code), DB_COL_TEXT(msg), DB_COL_TEXT(ver), DB_COL_INT };
	struct db_arg a = DB_ARG_INT(id);
	struct db_result res = { 0 };
	enum db_status st = db_exec(fcgi_db(c), "SELECT status, error_code, LEFT(error_message, 1000), dataset_version, "
				    "bars_advanced FROM paper_steps WHERE account_id = ? AND status IN ('completed', "
				    "'failed', 'cancelled') ORDER BY seq DESC LIMIT 1", &a, 1, sc, 5, db_row_once,
				    &(bool){ false }, &res, DB_IDEMPOTENT);
	if (st != DB_OK)
		return st;
	buf_puts(b, ",\"last_step\":");
	if (res.rows == 0) {
		buf_puts(b, "null}");
		return DB_OK;
	}
	buf_puts(b, "{\"status\":");
	rv_str(b, status);
	buf_puts(b, ",\"error_code\":");
	rv_str(b, sc[1].is_null ? NULL : code);
	buf_puts(b, ",\"error_message\":");
	rv_str(b, sc[2].is_null ? NULL : msg);
	buf_puts(b, ",\"dataset_version\":");
	rv_str(b, sc[3].is_null ? NULL : ver);
	buf_puts(b, ",\"bars_advanced\":");
	if (sc[4].is_null)
		buf_puts(b, "null");
	else
		buf_printf(b, "%lld", sc[4].i);
	buf_puts(b, "}}");
	return DB_OK;
}

/* The backtest value at ts (bt: n values from bt_start every ival ms), or NAN. */
static double pbacktest_at(const double *bt, size_t n, long long bt_start, long long ival, long long ts)
{
	if (!bt || ival <= 0 || ts < bt_start || (ts - bt_start) % ival)
		return NAN;
	unsigned long long k = (unsigned long long)((ts - bt_start) / ival);
	return k < n ? bt[k] : NAN;
}

/* Append metrics (the evaluator's) of the forward curve [1, points...]. */
static void pmetrics_json(struct fcgi_ctx *c, struct buf *b, const struct ppoints *p, const struct db_col *a)
{
	double *E = arena_alloc(fcgi_arena(c), (p->n + 1) * sizeof(double));
	E[0] = 1.0;
	if (p->n)
		memcpy(E + 1, p->eq, p->n * sizeof(double));
	struct metrics m;
	double ival = a[A_IVAL].is_null ? 60000.0 : (double)a[A_IVAL].i;
	metrics_compute(E, p->n + 1, PAPER_MS_PER_YEAR / ival, &m);
	if (strcmp(a[A_KIND].buf, "positions") == 0) {
		struct metrics_positions mp = {
			.turnover = strtod(a[A_TURN].buf, NULL), .fees_paid = strtod(a[A_FEES].buf, NULL),
			.average_exposure = p->n ? strtod(a[A_EXPO].buf, NULL) / (double)p->n : 0,
			.liquidation_events = a[A_WIPED].i ? 1 : 0,
		};
		metrics_add_positions(&m, &mp);
	}
	metrics_to_json(&m, b);
}

/* GET /defaults/paper?dataset_version=&limit= */
void h_defaults_paper(struct fcgi_ctx *c)
{
	const char *label = fcgi_query(c, "dataset_version");
	int64_t limit;
	if (!label || !*label) {
		fcgi_reply_error(c, 400, "missing_field", "dataset_version (a window label) is required");
		return;
	}
	if (strlen(label) > 64) {
		fcgi_reply_error(c, 400, "invalid_field", "dataset_version is longer than 64 bytes");
		return;
	}
	if (!fcgi_query_int(c, "limit", 1, PAPER_LIMIT_MAX, 5000, &limit))
		return;
	char name[810], run[40], kind[16], asset[80], fee[40], lev[40], state[16], reason[700], eq[40], held[40],
		pend[40], fees[40], turn[40], expo[40], bds[80], pin[80];
	struct db_col a[A__N] = {
		[A_ID] = DB_COL_INT, [A_PROMO] = DB_COL_INT, [A_SV] = DB_COL_INT, [A_NAME] = DB_COL_TEXT(name),
		[A_RUN] = DB_COL_TEXT(run), [A_KIND] = DB_COL_TEXT(kind), [A_ASSET] = DB_COL_TEXT(asset),
		[A_FEE] = DB_COL_TEXT(fee), [A_LEV] = DB_COL_TEXT(lev), [A_STATE] = DB_COL_TEXT(state),
		[A_REASON] = DB_COL_TEXT(reason), [A_START] = DB_COL_INT, [A_LAST] = DB_COL_INT, [A_NB] = DB_COL_INT,
		[A_EQ] = DB_COL_TEXT(eq), [A_HELD] = DB_COL_TEXT(held), [A_PEND] = DB_COL_TEXT(pend),
		[A_FEES] = DB_COL_TEXT(fees), [A_TURN] = DB_COL_TEXT(turn), [A_EXPO] = DB_COL_TEXT(expo),
		[A_WIPED] = DB_COL_INT, [A_VIOL] = DB_COL_INT, [A_FVTS] = DB_COL_INT, [A_BTS] = DB_COL_INT,
		[A_BDS] = DB_COL_TEXT(bds), [A_IVAL] = DB_COL_INT, [A_PIN] = DB_COL_TEXT(pin),
	};
	/* the backtest blob: bounded by the points (one value per forward bar, plus the start) */
	size_t btcap = 8u * 300000u;   /* 208 days of minutes; a longer curve is not read (null backtest) */
	a[A_BT] = (struct db_col){ .type = DB_T_BLOB, .buf = arena_alloc(fcgi_arena(c), btcap), .cap = btcap };
	struct db_arg arg = DB_ARG_TEXT(label);
	struct db_result res = { 0 };
	enum db_status st = db_exec(fcgi_db(c),
		"SELECT a.id, a.promotion_id, a.strategy_version_id, s.name, a.run_id, a.kind, a.asset, "
		"CAST(a.fee_bps AS CHAR), CAST(a.max_leverage AS CHAR), a.state, a.pause_reason, a.start_ts, a.last_ts, "
		"a.n_bars, CAST(a.equity AS CHAR), CAST(a.held AS CHAR), CAST(a.pending AS CHAR), CAST(a.fees AS CHAR), "
		"CAST(a.turnover AS CHAR), CAST(a.exposure AS CHAR), a.wiped, a.violations, a.first_violation_ts, "
		"a.backtest_start_ts, a.backtest_dataset, (SELECT d.interval_ms FROM dataset_labels l JOIN datasets d "
		"ON d.id = l.dataset_id WHERE l.label = a.label), (SELECT d.version FROM datasets d WHERE d.id = a.dataset_id), "
		"a.backtest "
		"FROM paper_accounts a JOIN strategy_versions v ON v.id = a.strategy_version_id "
		"JOIN strategies s ON s.id = v.strategy_id WHERE a.label = ? AND a.role = 'default' "
		"ORDER BY a.id DESC LIMIT 1",
		&arg, 1, a, A__N, db_row_once, &(bool){ false }, &res, DB_IDEMPOTENT);
	if (st != DB_OK)
		goto dberr;
	if (res.rows == 0) {
		fcgi_reply_error(c, 404, "not_found", "no paper account for %s (promote a default on the window label)",
				 label);
		return;
	}
	long long id = a[A_ID].i;
	struct ppoints p = { .c = c };
	struct db_col pc[] = { DB_COL_INT, { .type = DB_T_TEXT, .buf = (char[40]){ 0 }, .cap = 40 },
			       { .type = DB_T_TEXT, .buf = (char[40]){ 0 }, .cap = 40 },
			       { .type = DB_T_TEXT, .buf = (char[40]){ 0 }, .cap = 40 },
			       { .type = DB_T_TEXT, .buf = (char[40]){ 0 }, .cap = 40 } };
	struct db_arg ida = DB_ARG_INT(id);
	st = db_exec(fcgi_db(c), "SELECT ts, CAST(equity AS CHAR), CAST(held AS CHAR), CAST(decided AS CHAR), "
		     "CAST(price AS CHAR) FROM paper_points WHERE account_id = ? ORDER BY ts", &ida, 1, pc, 5,
		     ppoint_row, &p, NULL, DB_IDEMPOTENT);
	if (st != DB_OK)
		goto dberr;
	struct buf *b = fcgi_body_buf(c);
	buf_puts(b, "{\"dataset_version\":");
	rv_str(b, label);
	buf_puts(b, ",\"account\":");
	paccount_json(b, a, label);
	if ((st = plast_step_json(c, b, id)) != DB_OK) {
		buf_reset(b);
		goto dberr;
	}
	buf_puts(b, ",\"metrics\":");
	pmetrics_json(c, b, &p, a);
	buf_puts(b, ",\"equity\":[");
	const double *bt = a[A_BT].is_null ? NULL : (const double *)(const void *)a[A_BT].buf;
	size_t btn = a[A_BT].is_null ? 0 : a[A_BT].len / sizeof(double);
	long long ival = a[A_IVAL].is_null ? 0 : a[A_IVAL].i;
	size_t from = p.n > (size_t)limit ? p.n - (size_t)limit : 0;
	for (size_t i = from; i < p.n; i++) {
		double bv = pbacktest_at(bt, btn, a[A_BTS].is_null ? 0 : a[A_BTS].i, ival, p.ts[i]);
		buf_printf(b, "%s{\"ts\":%lld,\"equity\":", i > from ? "," : "", p.ts[i]);
		pnum(b, p.eq[i]);
		buf_puts(b, ",\"backtest\":");
		pnum(b, bv);
		buf_puts(b, ",\"drift\":");
		pnum(b, p.eq[i] - bv);
		buf_puts(b, ",\"held\":");
		pnum(b, p.has_held[i] ? p.held[i] : NAN);
		buf_puts(b, ",\"decided\":");
		pnum(b, p.has_held[i] ? p.dec[i] : NAN);
		buf_puts(b, ",\"price\":");
		pnum(b, p.price[i]);
		buf_putc(b, '}');
	}
	buf_puts(b, "],\"fills\":[");
	char f1[40], f2[40], f3[40], f4[40];
	struct db_col fc[] = { DB_COL_INT, DB_COL_TEXT(f1), DB_COL_TEXT(f2), DB_COL_TEXT(f3), DB_COL_TEXT(f4) };
	struct db_arg fa[] = { DB_ARG_INT(id), DB_ARG_INT(limit) };
	st = db_exec(fcgi_db(c), "SELECT ts, from_pos, to_pos, price, fee FROM (SELECT ts, CAST(from_pos AS CHAR) AS "
		     "from_pos, CAST(to_pos AS CHAR) AS to_pos, CAST(price AS CHAR) AS price, CAST(fee AS CHAR) AS fee "
		     "FROM paper_fills WHERE account_id = ? ORDER BY ts DESC LIMIT ?) f ORDER BY ts",
		     fa, 2, fc, 5, pfill_row, b, NULL, DB_IDEMPOTENT);
	if (st != DB_OK) {
		buf_reset(b);
		goto dberr;
	}
	buf_puts(b, "]}");
	fcgi_reply_buf(c, 200, "application/json");
	return;
dberr:
	fcgi_reply_db_error(c, st);
}

/*
 * paper_job: paper trading of the promoted default of a window label, a
 * kind of the runner's one queue (jobq.h; table paper_steps, sql/019;
 * docs/paper-trading.md).
 *
 * Theory of operation. A step is queued whenever a prefetch moves a label
 * that has an active paper account (and by the promotion that creates the
 * account). load() reads the account's durable state (the engine_state of
 * evaluator/engine.h plus the decision pending for the next bar), the
 * strategy and the version the label points at now. execute() (no DB)
 * opens that version and advances the account over every bar newer than
 * its last one, in order, one bar at a time:
 *
 *   positions  the decision w taken at the close of the previous bar is
 *              executed over this bar (engine_step: the backtest's own
 *              arithmetic, fees and clamp), then the strategy is run in a
 *              fresh sandbox on the prices up to and including this bar
 *              only, and its last output is the decision for the next bar
 *              (the causality of a backtest: bar t+1 does not exist for the
 *              call that decides at t)
 *   simulate   the strategy is re-run on the grown series (up to this bar);
 *              only the new point is published, as the account's equity
 *              times the curve's growth over this bar; if the re-run's growth
 *              over the previous (published) bar differs from the published
 *              one, that is a causality violation, counted with its bar
 *
 * A bar without a price (a gap in the data) pauses the account with the
 * reason and never fills across it; so does a strategy failure and a
 * window that no longer holds the account's last bar. After the bars, one
 * whole-series backtest over the same forward bars (one call on all the
 * prices, no stepping) gives the curve shown next to the paper curve: for
 * a causal strategy the two are equal bit for bit, and drift shows where
 * a strategy's decisions depend on the future.
 *
 * Dataset versions (sql/030). load() moves the account's pin
 * (paper_accounts.dataset_id) to the version the label points at, in the
 * same statement that reads the label, so retention and the data-cache
 * delete (common/dsretire.h) keep that version for as long as the account
 * reads it; a paused or retired account drops its pin. A step that still
 * finds its version unusable (retired before it could be pinned, missing
 * on disk, or changed) fails with dataset_retired / dataset_missing /
 * dataset_mismatch and its reason, and its commit queues the account's
 * next step at once when the label has moved to another version since
 * (else the next version's prefetch queues it): that step starts again
 * from the last written bar, as any step does.
 *
 * commit() writes the points, fills and new state in the finishing
 * transaction, guarded by the state it started from (n_bars, last_ts): a
 * step that finds the account advanced by another writes nothing and
 * queues a new one, so a bar is never lost or written twice, whatever
 * restarts, re-claims or duplicate steps happen. A step advances one
 * account: the label's default or a candidate's shadow (sql/024); a step
 * that wrote bars then runs the label's updater rule in the same
 * transaction (common/updater.h). At most PAPER_STEP_BARS
 * bars per step; a longer backlog queues the next step.
 */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "db.h"
#include "paper_queue.h"
#include "updater.h"
#include "xalloc.h"
#include "evaluator/dataset.h"
#include "evaluator/engine.h"
#include "evaluator/runner/drive/backtest.h"
#include "evaluator/runner/jobq.h"
#include "evaluator/runner/jobs.h"
#include "evaluator/runner/runner.h"

#define PAPER_STEP_BARS  120      /* bars advanced by one step at most */
#define PAPER_TEXT_MAX   65536u   /* a TEXT column */
#define PAPER_SIM_TOL    1e-12    /* relative change of a published growth that counts as a violation */
#define ER_NO_REFERENCED_ROW_2 1452   /* a foreign key's parent row is gone */

/* One forward bar as written to paper_points (and a fill, if any). */
struct paper_point {
	int64_t ts;
	double  equity, held, decided, price;
	double  fill_from, fill_fee;
	int     filled;
};

struct paper_job {
	/* inputs (load) */
	char     label[65];
	long long account_id;        /* 0: no active account, nothing to do */
	int      simulate;
	char     asset[65];
	struct engine_cfg cfg;
	int64_t  start_ts, last_ts;
	int64_t  loaded_last_ts;      /* last_ts as loaded: the guard of the write */
	long long n_bars;
	int      decided;
	double   pending, sim_last, sim_growth;
	int      has_sim_growth;
	long long violations;
	int64_t  first_violation_ts;  /* 0: none */
	struct engine_state st;
	char    *code, *params, *ds_path;
	long long ds_id;              /* the version pinned and read (datasets.id) */
	char     ds_version[65], ds_hash[65];
	int      ds_retired;          /* the label's version went before it could be pinned */
	/* results (execute) */
	struct paper_point *pt;
	size_t   npt, cap;
	int      paused;
	char     pause_reason[600];
	int      more;                /* bars left beyond PAPER_STEP_BARS */
	double  *bt;                  /* the whole-series backtest over the forward bars */
	size_t   bt_n;
	int64_t  bt_start_ts;
};

/* Wall seconds, monotonic. */
static double paper_now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* A heap-backed text result column of cap bytes. */
static struct db_col paper_text_col(size_t cap)
{
	return (struct db_col){ .type = DB_T_TEXT, .buf = xmalloc(cap), .cap = cap };
}

/* A double from a decimal text column (NULL -> NAN). */
static double paper_dbl(const struct db_col *c)
{
	return c->is_null ? NAN : strtod(c->buf, NULL);
}

/* Copy a short text column into dst (cap bytes). */
static void paper_copy(char *dst, size_t cap, const struct db_col *c)
{
	snprintf(dst, cap, "%.*s", c->is_null ? 0 : (int)c->len, c->is_null ? "" : c->buf);
}

/*
 * Pin the version the label points at for the account (one statement: the
 * label is read and the pin written together, the foreign key holding the
 * row against a concurrent retirement), then read the pinned version (id,
 * path, version, hash). 1 pinned, 0 no label (or the account left
 * 'active'), 2 the version was retired before the pin (p->ds_retired, its
 * name in ds_version), -1 error.
 */
static int paper_pin_version(struct db *db, struct paper_job *p, struct buf *err)
{
	struct db_col c[4] = { DB_COL_INT, paper_text_col(4097), paper_text_col(80), paper_text_col(80) };
	struct db_arg a[] = { DB_ARG_INT(p->account_id) };
	struct db_arg la[] = { DB_ARG_TEXT(p->label) };
	bool found = false;
	int rc = -1;
	if (db_run(db, "UPDATE paper_accounts a JOIN dataset_labels l ON l.label = a.label SET a.dataset_id = l.dataset_id "
		       "WHERE a.id = ? AND a.state = 'active'", a, 1, NULL, 0, NULL, NULL, NULL, err) != 0) {
		if (db_errno(db) != ER_NO_REFERENCED_ROW_2)
			goto out;
		buf_reset(err);
		p->ds_retired = 1;
		rc = 2;
		if (db_run(db, "SELECT l.dataset_id, '', d.version, d.dataset_hash FROM dataset_labels l LEFT JOIN datasets d "
			       "ON d.id = l.dataset_id WHERE l.label = ?", la, 1, c, 4, db_row_once, &found, NULL, err) != 0)
			rc = -1;
		else if (found) {
			p->ds_id = c[0].i;
			paper_copy(p->ds_version, sizeof p->ds_version, &c[2]);
		}
		goto out;
	}
	if (db_run(db, "SELECT d.id, d.path, d.version, d.dataset_hash FROM paper_accounts a JOIN dataset_labels l "
		       "ON l.label = a.label JOIN datasets d ON d.id = a.dataset_id WHERE a.id = ? AND a.state = 'active'",
		   a, 1, c, 4, db_row_once, &found, NULL, err) != 0)
		goto out;
	rc = found ? 1 : 0;
	if (found) {
		p->ds_id = c[0].i;
		p->ds_path = xstrndup(c[1].buf, c[1].len);
		paper_copy(p->ds_version, sizeof p->ds_version, &c[2]);
		paper_copy(p->ds_hash, sizeof p->ds_hash, &c[3]);
	}
out:
	for (int i = 1; i < 4; i++)
		free(c[i].buf);
	return rc;
}

/* kind->load: the step's label, its active account and the label's version. */
static int paper_load(struct db *db, const struct jobq_lease *l, void *job, struct buf *err)
{
	struct paper_job *p = job;
	enum { C_LABEL, C_ID, C_KIND, C_ASSET, C_FEE, C_LEV, C_START, C_LAST, C_NB, C_DEC, C_EQ, C_HELD, C_PEND,
	       C_PRICE, C_TURN, C_FEES, C_EXPO, C_WIPED, C_SIML, C_SIMG, C_VIOL, C_FVTS, C_CODE, C_PARAMS, C__N };
	struct db_col c[C__N];
	memset(c, 0, sizeof c);
	for (int i = 0; i < C__N; i++)
		c[i] = paper_text_col(i == C_CODE ? BT_MAX_CODE + 1 : i == C_PARAMS ? PAPER_TEXT_MAX + 1 : 96);
	c[C_ID].type = c[C_START].type = c[C_LAST].type = c[C_NB].type = c[C_DEC].type = c[C_WIPED].type =
		c[C_VIOL].type = c[C_FVTS].type = DB_T_INT;
	struct db_arg a[] = { DB_ARG_TEXT(l->id) };
	bool found = false;
	int rc = -1;
	/* doubles travel as %.17g-exact text (CAST AS CHAR of a DOUBLE round-trips in MariaDB) */
	if (db_run(db, "SELECT s.label, a.id, a.kind, a.asset, CAST(a.fee_bps AS CHAR), CAST(a.max_leverage AS CHAR), "
		       "a.start_ts, a.last_ts, a.n_bars, a.decided, CAST(a.equity AS CHAR), CAST(a.held AS CHAR), "
		       "CAST(a.pending AS CHAR), CAST(a.last_price AS CHAR), CAST(a.turnover AS CHAR), "
		       "CAST(a.fees AS CHAR), CAST(a.exposure AS CHAR), a.wiped, CAST(a.sim_last AS CHAR), "
		       "CAST(a.sim_growth AS CHAR), a.violations, a.first_violation_ts, v.code, r.params "
		       "FROM paper_steps s LEFT JOIN paper_accounts a ON a.state = 'active' AND a.id = "
		       "COALESCE(s.account_id, (SELECT MAX(x.id) FROM paper_accounts x WHERE x.label = s.label "
		       "AND x.role = 'default' AND x.state = 'active')) "
		       "LEFT JOIN strategy_versions v ON v.id = a.strategy_version_id LEFT JOIN runs r ON r.id = a.run_id "
		       "WHERE s.id = ?", a, 1, c, C__N, db_row_once, &found, NULL, err) != 0)
		goto out;
	rc = 0;
	if (!found)
		goto out;
	rc = 1;
	paper_copy(p->label, sizeof p->label, &c[C_LABEL]);
	if (c[C_ID].is_null)
		goto out;   /* no active account (retired or paused since): nothing to do */
	p->account_id = c[C_ID].i;
	p->simulate = !c[C_KIND].is_null && strncmp(c[C_KIND].buf, "simulate", c[C_KIND].len) == 0;
	paper_copy(p->asset, sizeof p->asset, &c[C_ASSET]);
	p->cfg.fee_bps = paper_dbl(&c[C_FEE]);
	p->cfg.max_leverage = paper_dbl(&c[C_LEV]);
	p->start_ts = c[C_START].i;
	p->last_ts = p->loaded_last_ts = c[C_LAST].i;
	p->n_bars = c[C_NB].i;
	p->decided = c[C_DEC].i != 0;
	p->pending = paper_dbl(&c[C_PEND]);
	p->st.equity = paper_dbl(&c[C_EQ]);
	p->st.held = paper_dbl(&c[C_HELD]);
	p->st.last = paper_dbl(&c[C_PRICE]);
	p->st.turnover = paper_dbl(&c[C_TURN]);
	p->st.fees = paper_dbl(&c[C_FEES]);
	p->st.exposure = paper_dbl(&c[C_EXPO]);
	p->st.wiped = (int)c[C_WIPED].i;
	p->st.steps = p->n_bars;
	p->sim_last = paper_dbl(&c[C_SIML]);
	p->sim_growth = paper_dbl(&c[C_SIMG]);
	p->has_sim_growth = !c[C_SIMG].is_null;
	p->violations = c[C_VIOL].i;
	p->first_violation_ts = c[C_FVTS].is_null ? 0 : c[C_FVTS].i;
	if (c[C_CODE].is_null || c[C_PARAMS].is_null) {
		buf_printf(err, "paper account %lld lacks its strategy or run", p->account_id);
		rc = -1;
		goto out;
	}
	p->code = xstrndup(c[C_CODE].buf, c[C_CODE].len);
	p->params = xstrndup(c[C_PARAMS].buf, c[C_PARAMS].len);
	int v = paper_pin_version(db, p, err);
	if (v < 0)
		rc = -1;
	else if (v == 0)
		p->account_id = 0;   /* the label was deleted (or the account stopped): nothing to advance */
out:
	for (int i = 0; i < C__N; i++)
		free(c[i].buf);
	return rc;
}

/* Pause the account with a reason (printf). */
static void paper_pause(struct paper_job *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void paper_pause(struct paper_job *p, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(p->pause_reason, sizeof p->pause_reason, fmt, ap);
	va_end(ap);
	p->paused = 1;
}

/* Run the strategy on prices[0..n) (no audit) into res. EV_OK or the error. */
static enum ev_err paper_call(const struct paper_job *p, const struct jobq_slot *s, const double *prices, size_t n,
			      double bpy, struct bt_result *res)
{
	const struct job_env *env = s->env;
	struct bt_request rq = {
		.code = p->code, .code_len = strlen(p->code),
		.kind = p->simulate ? BT_KIND_SIMULATE : BT_KIND_POSITIONS, .prices = prices, .n = n,
		.params_json = p->params, .bars_per_year = bpy, .engine = p->cfg, .audit = 0,
		.sbx = { .mode = SBX_CONFINED, .box_id = s->box_id, .limits = env->limits },
		.on_host = job_on_host, .on_host_arg = s->ctl,
	};
	memset(res, 0, sizeof *res);
	return bt_run(&rq, res);
}

/* Append a point to p. */
static struct paper_point *paper_add(struct paper_job *p)
{
	if (p->npt == p->cap) {
		p->cap = p->cap ? 2 * p->cap : 16;
		p->pt = xrealloc(p->pt, xmul(p->cap, sizeof *p->pt));
	}
	struct paper_point *q = &p->pt[p->npt++];
	memset(q, 0, sizeof *q);
	return q;
}

/*
 * Decide at bar i (positions: the target for bar i+1; simulate: the curve
 * up to i). 1 ok, 0 the account paused (strategy failure), -1 a trusted-side
 * failure (o filled).
 */
static int paper_decide(struct paper_job *p, const struct jobq_slot *s, const double *close, const int64_t *ts,
			size_t i, double bpy, struct bt_result *res, struct job_outcome *o)
{
	enum ev_err e = paper_call(p, s, close, i + 1, bpy, res);
	if (e == EV_OK)
		return 1;
	if (e == EV_INTERNAL) {
		job_outcome_fail(o, "internal", "paper step at bar %" PRId64 ": %s", ts[i],
				 res->detail[0] ? res->detail : ev_strerror(e));
		o->retry = true;
		return -1;
	}
	paper_pause(p, "the strategy failed deciding at bar %" PRId64 " (%s): %s", ts[i], ev_errcode(e),
		    res->detail[0] ? res->detail : ev_strerror(e));
	return 0;
}

/* Advance over bar i (the decision at i-1 pending). 1 ok, 0 paused, -1 failed (o). */
static int paper_bar(struct paper_job *p, const struct jobq_slot *s, const double *close, const int64_t *ts,
		     size_t i, double bpy, struct job_outcome *o)
{
	struct bt_result res;
	double price = close[i];
	if (isnan(price)) {
		paper_pause(p, "gap in the data: %s has no candle at %" PRId64 " (after %" PRId64 "); the account is "
			    "never filled across a gap", p->asset, ts[i], p->last_ts);
		return 0;
	}
	int rc = paper_decide(p, s, close, ts, i, bpy, &res, o);
	if (rc <= 0) {
		bt_result_free(&res);
		return rc;
	}
	struct paper_point *q = paper_add(p);
	q->ts = ts[i];
	q->price = price;
	if (p->simulate) {
		const double *S = res.equity;
		double growth = i >= 1 ? S[i] / S[i - 1] : 1.0;
		if (p->has_sim_growth && i >= 2 && p->n_bars + (long long)p->npt > 1) {
			double was = p->sim_growth, now = S[i - 1] / S[i - 2];
			if (!(fabs(now - was) <= PAPER_SIM_TOL * fabs(was))) {
				p->violations++;
				if (!p->first_violation_ts)
					p->first_violation_ts = ts[i - 1];
			}
		}
		p->st.equity *= growth;
		p->st.steps++;
		p->sim_growth = growth;
		p->has_sim_growth = 1;
		p->sim_last = S[i];
		q->equity = p->st.equity;
		q->held = q->decided = NAN;
	} else {
		double before = p->st.equity, from = p->st.held, trade;
		q->equity = engine_step(&p->cfg, &p->st, p->pending, price, &trade);
		q->held = p->pending;
		if (trade > 0) {
			q->filled = 1;
			q->fill_from = from;
			q->fill_fee = before * (p->cfg.fee_bps / 10000.0) * trade;
		}
		p->pending = res.positions[i];
		q->decided = p->pending;
	}
	p->last_ts = ts[i];
	bt_result_free(&res);
	return 1;
}

/*
 * The whole-series backtest over the forward bars [k0, last]: one call on
 * prices[0..last], then the engine (positions) or the curve's growth
 * (simulate) from k0 with equity 1 and a flat account, as the paper account
 * started. Best effort: on failure no backtest curve is written.
 */
static void paper_backtest(struct paper_job *p, const struct jobq_slot *s, const double *close, const int64_t *ts,
			   size_t k0, size_t last, double bpy)
{
	struct bt_result res;
	if (paper_call(p, s, close, last + 1, bpy, &res) == EV_OK) {
		size_t m = last - k0 + 1;
		p->bt = xcalloc(m, sizeof(double));
		p->bt_n = m;
		p->bt_start_ts = ts[k0];
		if (p->simulate) {
			p->bt[0] = 1.0;
			for (size_t j = 1; j < m; j++)
				p->bt[j] = p->bt[j - 1] * (res.equity[k0 + j] / res.equity[k0 + j - 1]);
		} else {
			struct engine_report rep;
			if (engine_run(&p->cfg, close + k0, res.positions + k0, m, p->bt, &rep) != EV_OK) {
				free(p->bt);
				p->bt = NULL;
				p->bt_n = 0;
			}
		}
	}
	bt_result_free(&res);
}

/* Index of timestamp t on ds's grid, or -1. */
static long paper_index(const int64_t *ts, size_t n, int64_t ival, int64_t t)
{
	if (n == 0 || t < ts[0] || ival <= 0)
		return -1;
	int64_t k = (t - ts[0]) / ival;
	if ((uint64_t)k >= n || ts[k] != t)
		return -1;
	return (long)k;
}

/* The bars of the open version: decide at the start if needed, then advance. */
static void paper_run(struct paper_job *p, const struct jobq_slot *s, struct dataset *ds, struct job_outcome *o)
{
	long a = ds_asset_index(ds, p->asset);
	const double *close = a >= 0 ? ds_column(ds, (size_t)a, DS_CLOSE) : NULL;
	const int64_t *ts = ds_timestamps(ds);
	size_t n = ds_bars(ds);
	int64_t ival = ds_interval_ms(ds);
	double bpy = ds_bars_per_year(ds);
	if (!close) {
		paper_pause(p, "asset %s is not in dataset version %s", p->asset, p->ds_version);
		return;
	}
	if (p->last_ts > ts[n - 1])
		return;   /* nothing newer than what the account has */
	long k = paper_index(ts, n, ival, p->last_ts);
	if (k < 0) {
		paper_pause(p, "dataset version %s (bars %" PRId64 "..%" PRId64 ") no longer holds the account's last bar "
			    "%" PRId64 ": the bars in between are lost to it", p->ds_version, ts[0], ts[n - 1], p->last_ts);
		return;
	}
	if (!p->decided) {
		struct bt_result res;
		if (isnan(close[k])) {
			paper_pause(p, "gap in the data: %s has no candle at the start bar %" PRId64, p->asset, ts[k]);
			return;
		}
		int rc = paper_decide(p, s, close, ts, (size_t)k, bpy, &res, o);
		if (rc > 0) {
			engine_state_init(&p->st, close[k]);
			if (p->simulate)
				p->sim_last = res.equity[k];
			else
				p->pending = res.positions[k];
			p->decided = 1;
		}
		bt_result_free(&res);
		if (rc <= 0)
			return;
	}
	size_t i = (size_t)k + 1;
	for (; i < n && p->npt < PAPER_STEP_BARS && !p->paused; i++) {
		if (job_cancelled(s->ctl, NULL)) {
			o->status = JOB_CANCELLED;
			return;
		}
		if (paper_bar(p, s, close, ts, i, bpy, o) < 0)
			return;
	}
	p->more = !p->paused && i < n;
	long k0 = paper_index(ts, n, ival, p->start_ts);
	long last = paper_index(ts, n, ival, p->last_ts);
	if (last >= 0 && p->npt > 0)
		paper_backtest(p, s, close, ts, k0 >= 0 ? (size_t)k0 : 0, (size_t)last, bpy);
}

/* kind->execute: advance the account over the new bars of the label's version. */
static void paper_execute(const struct jobq_slot *s, const struct jobq_lease *l, void *job, struct job_outcome *o)
{
	struct paper_job *p = job;
	double t0 = paper_now();
	(void)l;
	o->status = JOB_COMPLETED;
	if (!p->account_id)
		goto out;
	if (p->ds_retired) {
		job_outcome_fail(o, "dataset_retired", "dataset version %s of %s was retired before this step could pin "
				 "it; the account is advanced on the label's newest version from its last bar %" PRId64,
				 p->ds_version[0] ? p->ds_version : "(none)", p->label, p->last_ts);
		goto out;
	}
	char msg[512];
	enum ds_err de;
	struct dataset *ds = ds_open(p->ds_path, 0, &de, msg, sizeof msg);
	if (!ds) {
		/* the reason without the message: it names server paths */
		job_outcome_fail(o, "dataset_missing", "dataset version %s of %s cannot be opened (%s: missing on disk or "
				 "unreadable); the account is advanced on the label's newest version from its last bar "
				 "%" PRId64, p->ds_version, p->label, ds_errcode(de), p->last_ts);
		goto out;
	}
	if (strcmp(ds_hash(ds), p->ds_hash) != 0)
		job_outcome_fail(o, "dataset_mismatch", "dataset version %s changed since it was registered; the account "
				 "is advanced on the label's newest version from its last bar %" PRId64, p->ds_version,
				 p->last_ts);
	else
		paper_run(p, s, ds, o);
	ds_close(ds);
	bool hand_back;
	if (o->status == JOB_COMPLETED && job_cancelled(s->ctl, &hand_back)) {
		o->status = JOB_CANCELLED;
		snprintf(o->error_code, sizeof o->error_code, "cancelled");
	}
out:
	o->runtime_s = paper_now() - t0;
}

/* kind->columns: the account and how many bars this step advanced. */
static void paper_columns(void *job, const struct job_outcome *o, struct jobq_set *set)
{
	struct paper_job *p = job;
	(void)o;
	jobq_set_col(set, "account_id", p->account_id ? DB_ARG_INT(p->account_id) : DB_ARG_NULL);
	jobq_set_col(set, "bars_advanced", DB_ARG_INT((long long)p->npt));
	jobq_set_col(set, "dataset_version", p->ds_version[0] ? DB_ARG_TEXT(p->ds_version) : DB_ARG_NULL);
}

/* A double argument as exact text (%.17g), NULL when not finite. */
static struct db_arg paper_num(double x, char t[32])
{
	if (!isfinite(x))
		return DB_ARG_NULL;
	snprintf(t, 32, "%.17g", x);
	return DB_ARG_TEXT(t);
}

/* The guarded state UPDATE (a pause drops the pin). 1 written, 0 the account moved on (or left 'active'), -1 error. */
static int paper_write_state(struct db *db, const struct paper_job *p, long long n0, int64_t ts0, struct buf *err)
{
	char t[10][32];
	struct db_result res = { 0 };
	struct db_arg a[] = {
		DB_ARG_TEXT(p->paused ? "paused" : "active"),
		p->paused ? DB_ARG_TEXT(p->pause_reason) : DB_ARG_NULL,
		DB_ARG_INT(p->last_ts), DB_ARG_INT(n0 + (long long)p->npt), DB_ARG_INT(p->decided),
		paper_num(p->st.equity, t[0]), paper_num(p->st.held, t[1]), paper_num(p->pending, t[2]),
		paper_num(p->st.last, t[3]), paper_num(p->st.turnover, t[4]), paper_num(p->st.fees, t[5]),
		paper_num(p->st.exposure, t[6]), DB_ARG_INT(p->st.wiped),
		paper_num(p->sim_last, t[7]), p->has_sim_growth ? paper_num(p->sim_growth, t[8]) : DB_ARG_NULL,
		DB_ARG_INT(p->violations), p->first_violation_ts ? DB_ARG_INT(p->first_violation_ts) : DB_ARG_NULL,
		DB_ARG_INT(p->paused),
		p->bt ? DB_ARG_BLOB(p->bt, xmul(p->bt_n, sizeof(double))) : DB_ARG_NULL,
		p->bt ? DB_ARG_INT(p->bt_start_ts) : DB_ARG_NULL,
		p->bt ? DB_ARG_TEXT(p->ds_version) : DB_ARG_NULL,
		DB_ARG_INT(p->account_id), DB_ARG_INT(n0), DB_ARG_INT(ts0),
	};
	if (db_run(db, "UPDATE paper_accounts SET state = ?, pause_reason = ?, last_ts = ?, n_bars = ?, decided = ?, "
		       "equity = COALESCE(?, 0), held = COALESCE(?, 0), pending = COALESCE(?, 0), last_price = ?, "
		       "turnover = COALESCE(?, 0), fees = COALESCE(?, 0), exposure = COALESCE(?, 0), wiped = ?, "
		       "sim_last = ?, sim_growth = ?, violations = ?, first_violation_ts = ?, "
		       "dataset_id = IF(?, NULL, dataset_id), "   /* a paused account reads no more: no pin */
		       "backtest = COALESCE(?, backtest), backtest_start_ts = COALESCE(?, backtest_start_ts), "
		       "backtest_dataset = COALESCE(?, backtest_dataset) "
		       "WHERE id = ? AND n_bars = ? AND last_ts = ? AND state = 'active'",
		   a, sizeof a / sizeof a[0], NULL, 0, NULL, NULL, &res, err) != 0)
		return -1;
	return res.affected > 0 ? 1 : 0;
}

/* INSERT the new points and fills. 0 or -1. */
static int paper_write_points(struct db *db, const struct paper_job *p, struct buf *err)
{
	for (size_t i = 0; i < p->npt; i++) {
		const struct paper_point *q = &p->pt[i];
		char t[6][32];
		struct db_arg a[] = { DB_ARG_INT(p->account_id), DB_ARG_INT(q->ts), paper_num(q->equity, t[0]),
				      paper_num(q->held, t[1]), paper_num(q->decided, t[2]), paper_num(q->price, t[3]) };
		if (db_run(db, "INSERT INTO paper_points (account_id, ts, equity, held, decided, price) "
			       "VALUES (?, ?, COALESCE(?, 0), ?, ?, ?)", a, 6, NULL, 0, NULL, NULL, NULL, err) != 0)
			return -1;
		if (!q->filled)
			continue;
		struct db_arg f[] = { DB_ARG_INT(p->account_id), DB_ARG_INT(q->ts), paper_num(q->fill_from, t[4]),
				      paper_num(q->held, t[1]), paper_num(q->price, t[3]), paper_num(q->fill_fee, t[5]) };
		if (db_run(db, "INSERT INTO paper_fills (account_id, ts, from_pos, to_pos, price, fee) "
			       "VALUES (?, ?, ?, ?, ?, ?)", f, 6, NULL, 0, NULL, NULL, NULL, err) != 0)
			return -1;
	}
	return 0;
}

/* Did the step fail on its dataset version (retired, missing on disk, changed)? */
static bool paper_dataset_failure(const struct job_outcome *o)
{
	return strcmp(o->error_code, "dataset_retired") == 0 || strcmp(o->error_code, "dataset_missing") == 0 ||
	       strcmp(o->error_code, "dataset_mismatch") == 0;
}

/*
 * The retry of a step that failed on its version: the account's next step,
 * queued now when the label points at another version than the one that
 * failed (it reads that one, from the account's last written bar); when the
 * label still points at the failed version, none is queued (it would fail
 * the same way) and the prefetch that moves the label queues it. 0 or -1.
 */
static int paper_retry_newest(struct db *db, const struct paper_job *p, struct buf *err)
{
	struct db_arg a[] = { DB_ARG_INT(p->ds_id), DB_ARG_INT(p->account_id) };
	return db_run(db, "INSERT INTO paper_steps (id, label, account_id) SELECT UUID(), a.label, a.id "
		      "FROM paper_accounts a JOIN dataset_labels l ON l.label = a.label AND l.dataset_id <> ? "
		      "WHERE a.id = ? AND a.state = 'active' AND NOT EXISTS (SELECT 1 FROM paper_steps s "
		      "WHERE s.status = 'queued' AND s.account_id = a.id)", a, 2, NULL, 0, NULL, NULL, NULL, err);
}

/* kind->commit: state (guarded), points and fills; a next step for a backlog or a lost race. */
static int paper_commit(struct db *db, const struct jobq_lease *l, void *job, const struct job_outcome *o,
			struct buf *err)
{
	struct paper_job *p = job;
	if (o->status == JOB_FAILED && p->account_id && paper_dataset_failure(o))
		return paper_retry_newest(db, p, err);
	if (o->status != JOB_COMPLETED || !p->account_id)
		return 0;
	/* the label's updater lock first: steps of the label's accounts commit one after the other */
	if (updater_lock(db, p->label, err) != 0)
		return -1;
	/* guarded by the state this step started from */
	int w = paper_write_state(db, p, p->n_bars, p->loaded_last_ts, err);
	if (w < 0)
		return -1;
	if (w == 0) {
		struct db_arg a[] = { DB_ARG_TEXT(l->id) };
		if (db_run(db, "UPDATE paper_steps SET bars_advanced = 0 WHERE id = ?", a, 1, NULL, 0, NULL, NULL, NULL,
			   err) != 0)
			return -1;
		return paper_queue_step(db, p->label) < 0 ? (buf_printf(err, "database: %s", db_error(db)), -1) : 0;
	}
	if (paper_write_points(db, p, err) != 0)
		return -1;
	/* the label's updater rule: new candidates (sql/026), then the decisions (sql/024) */
	if (p->npt > 0 && (updater_discover(db, p->label, ENGINE_DEFAULT_FEE_BPS, ENGINE_DEFAULT_MAX_LEVERAGE, err) < 0 ||
			   updater_consider(db, p->label, err) < 0))
		return -1;
	if (p->more && paper_queue_step(db, p->label) < 0) {
		buf_printf(err, "database: %s", db_error(db));
		return -1;
	}
	return 0;
}

/* kind->release. */
static void paper_release(void *job)
{
	struct paper_job *p = job;
	free(p->code);
	free(p->params);
	free(p->ds_path);
	free(p->pt);
	free(p->bt);
	memset(p, 0, sizeof *p);
}

const struct job_kind paper_kind = {
	.name = "paper", .table = "paper_steps", .lease_s = RUNNER_LEASE_S, .job_size = sizeof(struct paper_job),
	.load = paper_load, .execute = paper_execute, .columns = paper_columns, .commit = paper_commit,
	.release = paper_release,
};

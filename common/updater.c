/*
 * updater: the default-strategy updater (see updater.h).
 *
 * Theory of operation. updater_consider() runs in the finishing
 * transaction of every paper step that wrote bars. It locks the label's
 * rule row (so two steps of one label, the default's and a shadow's,
 * decide one after the other), reads the current default promotion and
 * its account, and the shadows not yet decided against that promotion.
 * For each, the common forward period is (max(start_ts), min(last_ts)]
 * of the two accounts; both were advanced over the same bars of the same
 * label, so their returns over it are compared on identical bars:
 * r = E(to) / E(from) - 1, with E(start_ts) = 1 and E(t) the account's
 * paper point at t. A shadow waits (no decision) while its strategy
 * version is younger than min_age_days or the common period is shorter
 * than min_bars; otherwise it is decided exactly once per default
 * promotion: proposed when its qualifying run passed the audit and
 * r_candidate > r_default + margin, refused otherwise. The proposal row
 * keeps the reason and the numbers (a JSON object). With auto_promote the
 * best proposal is promoted at once (updater_promote), which changes the
 * default: the remaining shadows are then decided against the new one in
 * the same call (a recursion at most as deep as there are shadows, since
 * each promotion turns one into the default).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "paper_queue.h"
#include "updater.h"
#include "xalloc.h"

#define UPD_MAX_CANDIDATES 64   /* shadows decided per call; more wait for the next step */

struct upd_rule {
	double    min_age_days, margin;
	long long min_bars, updated_by;
	int       auto_promote;
};

struct upd_cand {
	long long account_id, version_id;
	char      run_id[40];
	long long start_ts, last_ts;
	double    age_days;
	int       audited;
	/* computed */
	long long from, to, bars;
	double    r;
	int       ready;
};

struct upd_list {
	struct upd_cand c[UPD_MAX_CANDIDATES];
	size_t n;
};

/* A double from a text column (NULL -> NAN). */
static double upd_dbl(const struct db_col *c)
{
	return c->is_null ? NAN : strtod(c->buf, NULL);
}

/* Row callback: one shadow. */
static bool upd_cand_row(void *ctx, const struct db_col *col, size_t ncol)
{
	struct upd_list *l = ctx;
	(void)ncol;
	if (l->n == UPD_MAX_CANDIDATES)
		return false;
	struct upd_cand *c = &l->c[l->n++];
	memset(c, 0, sizeof *c);
	c->account_id = col[0].i;
	c->version_id = col[1].i;
	snprintf(c->run_id, sizeof c->run_id, "%.*s", (int)col[2].len, col[2].buf);
	c->start_ts = col[3].i;
	c->last_ts = col[4].i;
	c->age_days = upd_dbl(&col[5]);
	c->audited = col[6].i != 0;
	return true;
}

/* Equity of account at bar ts (1 at its start bar). 0, or -1 (err) / 1 no such point. */
static int upd_equity(struct db *db, long long account, long long start_ts, long long ts, double *eq,
		      struct buf *err)
{
	if (ts == start_ts) {
		*eq = 1.0;
		return 0;
	}
	char t[40] = "";
	struct db_col c = DB_COL_TEXT(t);
	struct db_arg a[] = { DB_ARG_INT(account), DB_ARG_INT(ts) };
	bool found = false;
	if (db_run(db, "SELECT CAST(equity AS CHAR) FROM paper_points WHERE account_id = ? AND ts = ?", a, 2, &c, 1,
		   db_row_once, &found, NULL, err) != 0)
		return -1;
	if (!found)
		return 1;
	*eq = strtod(t, NULL);
	return 0;
}

/* Return over (from, to] of an account: E(to)/E(from) - 1 (-1 once wiped). 0, 1 missing point, -1 error. */
static int upd_return(struct db *db, long long account, long long start_ts, long long from, long long to, double *r,
		      struct buf *err)
{
	double e0, e1;
	int rc = upd_equity(db, account, start_ts, from, &e0, err);
	if (rc == 0)
		rc = upd_equity(db, account, start_ts, to, &e1, err);
	if (rc == 0)
		*r = e0 > 0 ? e1 / e0 - 1.0 : -1.0;
	return rc;
}

/* Order by forward return, best first. */
static int upd_cmp(const void *a, const void *b)
{
	const struct upd_cand *x = a, *y = b;
	return (x->r < y->r) - (x->r > y->r);
}

/* The rule of label, locked. 1 found, 0 none or disabled, -1 error. */
static int upd_load_rule(struct db *db, const char *label, struct upd_rule *r, struct buf *err)
{
	char age[40] = "", margin[40] = "";
	struct db_col c[] = { DB_COL_TEXT(age), DB_COL_TEXT(margin), DB_COL_INT, DB_COL_INT, DB_COL_INT };
	struct db_arg a[] = { DB_ARG_TEXT(label) };
	bool found = false;
	if (db_run(db, "SELECT CAST(min_age_days AS CHAR), CAST(margin AS CHAR), min_bars, auto_promote, updated_by "
		       "FROM updater_rules WHERE label = ? AND enabled = 1 FOR UPDATE", a, 1, c, 5, db_row_once, &found,
		   NULL, err) != 0)
		return -1;
	if (!found)
		return 0;
	r->min_age_days = strtod(age, NULL);
	r->margin = strtod(margin, NULL);
	r->min_bars = c[2].i;
	r->auto_promote = c[3].i != 0;
	r->updated_by = c[4].i;
	return 1;
}

/* Write one decision; *id its row (0: decided by a concurrent step). 0 or -1. */
static int upd_write(struct db *db, const char *label, const struct upd_rule *rule, const struct upd_cand *c,
		     long long promo, long long dacc, double rd, long long *id, struct buf *err)
{
	int beats = c->audited && c->r > rd + rule->margin;
	char reason[600], numbers[900];
	if (!c->audited)
		snprintf(reason, sizeof reason, "refused: the candidate's qualifying run %s did not pass the audit",
			 c->run_id);
	else
		snprintf(reason, sizeof reason, "%s: forward return %.6g vs the default's %.6g over the same %lld bars "
			 "(%lld, %lld]: %s the margin %.6g", beats ? "proposed" : "refused", c->r, rd, c->bars, c->from,
			 c->to, beats ? "beats it by more than" : "does not beat it by more than", rule->margin);
	snprintf(numbers, sizeof numbers, "{\"candidate_return\":%.17g,\"default_return\":%.17g,\"margin\":%.17g,"
		 "\"from_ts\":%lld,\"to_ts\":%lld,\"bars\":%lld,\"min_bars\":%lld,\"age_days\":%.17g,"
		 "\"min_age_days\":%.17g,\"audit_passed\":%s,\"candidate_account_id\":%lld,\"default_account_id\":%lld}",
		 c->r, rd, rule->margin, c->from, c->to, c->bars, rule->min_bars, c->age_days, rule->min_age_days,
		 c->audited ? "true" : "false", c->account_id, dacc);
	struct db_arg a[] = { DB_ARG_TEXT(label), DB_ARG_INT(c->account_id), DB_ARG_INT(promo), DB_ARG_INT(dacc),
			      DB_ARG_INT(c->version_id), DB_ARG_TEXT(c->run_id),
			      DB_ARG_TEXT(beats ? "proposed" : "refused"), DB_ARG_TEXT(reason), DB_ARG_TEXT(numbers) };
	struct db_result res = { 0 };
	if (db_run(db, "INSERT IGNORE INTO updater_proposals (label, shadow_account_id, default_promotion_id, "
		       "default_account_id, strategy_version_id, run_id, status, reason, numbers) "
		       "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", a, 9, NULL, 0, NULL, NULL, &res, err) != 0)
		return -1;
	*id = res.affected > 0 && beats ? (long long)res.insert_id : 0;
	return 0;
}

/* Fill the common period, bars and return of c against the default account. 1 ready, 0 waits, -1 error. */
static int upd_measure(struct db *db, const struct upd_rule *rule, struct upd_cand *c, long long dstart,
		       long long dlast, struct buf *err)
{
	if (!(c->age_days >= rule->min_age_days))
		return 0;
	c->from = c->start_ts > dstart ? c->start_ts : dstart;
	c->to = c->last_ts < dlast ? c->last_ts : dlast;
	if (c->to <= c->from)
		return 0;
	char n[24] = "0";
	struct db_col col = DB_COL_TEXT(n);
	struct db_arg a[] = { DB_ARG_INT(c->account_id), DB_ARG_INT(c->from), DB_ARG_INT(c->to) };
	bool found = false;
	if (db_run(db, "SELECT CAST(COUNT(*) AS CHAR) FROM paper_points WHERE account_id = ? AND ts > ? AND ts <= ?",
		   a, 3, &col, 1, db_row_once, &found, NULL, err) != 0)
		return -1;
	c->bars = strtoll(n, NULL, 10);
	if (c->bars < rule->min_bars)
		return 0;
	int rc = upd_return(db, c->account_id, c->start_ts, c->from, c->to, &c->r, err);
	return rc < 0 ? -1 : rc == 0;
}

int updater_lock(struct db *db, const char *label, struct buf *err)
{
	struct db_col c = DB_COL_INT;
	struct db_arg a[] = { DB_ARG_TEXT(label) };
	return db_run(db, "SELECT 1 FROM updater_rules WHERE label = ? FOR UPDATE", a, 1, &c, 1, NULL, NULL, NULL, err);
}

int updater_consider(struct db *db, const char *label, struct buf *err)
{
	struct upd_rule rule;
	int rc = upd_load_rule(db, label, &rule, err);
	if (rc <= 0)
		return rc;
	struct db_col d[] = { DB_COL_INT, DB_COL_INT, DB_COL_INT, DB_COL_INT };
	struct db_arg la[] = { DB_ARG_TEXT(label) };
	bool found = false;
	if (db_run(db, "SELECT p.id, a.id, a.start_ts, a.last_ts FROM default_promotions p JOIN paper_accounts a "
		       "ON a.promotion_id = p.id AND a.role = 'default' AND a.state = 'active' WHERE p.id = "
		       "(SELECT MAX(id) FROM default_promotions WHERE dataset_version = ?)", la, 1, d, 4, db_row_once,
		   &found, NULL, err) != 0)
		return -1;
	if (!found)
		return 0;   /* no default trading on paper: nothing to compare with */
	long long promo = d[0].i, dacc = d[1].i, dstart = d[2].i, dlast = d[3].i;
	struct upd_list *l = xcalloc(1, sizeof *l);
	char run[40] = "", age[40] = "";
	struct db_col c[] = { DB_COL_INT, DB_COL_INT, DB_COL_TEXT(run), DB_COL_INT, DB_COL_INT, DB_COL_TEXT(age),
			      DB_COL_INT };
	struct db_arg ca[] = { DB_ARG_TEXT(label), DB_ARG_INT(promo) };
	int decided = -1;
	if (db_run(db, "SELECT s.id, s.strategy_version_id, s.run_id, s.start_ts, s.last_ts, "
		       "CAST(TIMESTAMPDIFF(MICROSECOND, v.created_at, NOW(6)) / 86400e6 AS CHAR), "
		       "COALESCE((SELECT MAX(m.eligible) FROM run_metrics m WHERE m.run_id = s.run_id), 0) "
		       "FROM paper_accounts s JOIN strategy_versions v ON v.id = s.strategy_version_id "
		       "WHERE s.label = ? AND s.role = 'shadow' AND s.state = 'active' AND NOT EXISTS "
		       "(SELECT 1 FROM updater_proposals q WHERE q.shadow_account_id = s.id AND q.default_promotion_id = ?) "
		       "ORDER BY s.id", ca, 2, c, 7, upd_cand_row, l, NULL, err) != 0)
		goto out;
	double rd = 0;
	size_t m = 0;
	for (size_t i = 0; i < l->n; i++) {
		int r = upd_measure(db, &rule, &l->c[i], dstart, dlast, err);
		if (r < 0)
			goto out;
		if (r > 0)
			l->c[m++] = l->c[i];
	}
	qsort(l->c, m, sizeof l->c[0], upd_cmp);
	decided = 0;
	for (size_t i = 0; i < m; i++) {
		long long id = 0, pid = 0;
		int r = upd_return(db, dacc, dstart, l->c[i].from, l->c[i].to, &rd, err);
		if (r < 0 || (r == 0 && upd_write(db, label, &rule, &l->c[i], promo, dacc, rd, &id, err) != 0)) {
			decided = -1;
			goto out;
		}
		if (r > 0)
			continue;   /* the default lacks a point of the period: decided later */
		decided++;
		if (id && rule.auto_promote) {
			struct buf why = BUF_INIT;
			r = updater_promote(db, id, "promoted", rule.updated_by, &pid, &why);
			if (r < 0)
				buf_puts(err, buf_cstr(&why));
			buf_free(&why);
			if (r < 0) {
				decided = -1;
				goto out;
			}
			if (r > 0) {
				/* a new default: the rest are decided against it (each call promotes a shadow away) */
				int more = updater_consider(db, label, err);
				decided = more < 0 ? -1 : decided + more;
				goto out;
			}
		}
	}
out:
	free(l);
	return decided;
}

/* Set proposal id's status (and who and the promotion). 0 or -1. */
static int upd_set_status(struct db *db, long long id, const char *status, long long user_id, long long promotion,
			  struct buf *err)
{
	struct db_arg a[] = { DB_ARG_TEXT(status), promotion ? DB_ARG_INT(promotion) : DB_ARG_NULL,
			      user_id ? DB_ARG_INT(user_id) : DB_ARG_NULL, DB_ARG_INT(id) };
	return db_run(db, "UPDATE updater_proposals SET status = ?, promotion_id = ?, decided_by = ?, "
		      "decided_at = NOW(6) WHERE id = ?", a, 4, NULL, 0, NULL, NULL, NULL, err);
}

int updater_promote(struct db *db, long long id, const char *new_status, long long user_id,
		    long long *promotion_id, struct buf *err)
{
	char label[80] = "", run[40] = "", status[16] = "", state[16] = "";
	struct db_col c[] = { DB_COL_TEXT(label), DB_COL_INT, DB_COL_INT, DB_COL_INT, DB_COL_TEXT(run),
			      DB_COL_TEXT(status) };
	struct db_arg ia[] = { DB_ARG_INT(id) };
	bool found = false;
	if (db_run(db, "SELECT label, shadow_account_id, default_promotion_id, strategy_version_id, run_id, status "
		       "FROM updater_proposals WHERE id = ? FOR UPDATE", ia, 1, c, 6, db_row_once, &found, NULL, err) != 0)
		return -1;
	if (!found || strcmp(status, "proposed") != 0) {
		buf_printf(err, "proposal %lld is %s, not proposed", id, found ? status : "missing");
		return 0;
	}
	long long shadow = c[1].i, was = c[2].i, version = c[3].i;
	struct db_col cur = DB_COL_INT;
	struct db_arg la[] = { DB_ARG_TEXT(label) };
	found = false;
	if (db_run(db, "SELECT MAX(id) FROM default_promotions WHERE dataset_version = ? FOR UPDATE", la, 1, &cur, 1,
		   db_row_once, &found, NULL, err) != 0)
		return -1;
	if (cur.is_null || cur.i != was) {
		buf_printf(err, "the default of %s changed since proposal %lld was made: it is superseded", label, id);
		return upd_set_status(db, id, "superseded", user_id, 0, err) != 0 ? -1 : 0;
	}
	struct db_col sc = DB_COL_TEXT(state);
	struct db_arg sa[] = { DB_ARG_INT(shadow) };
	found = false;
	if (db_run(db, "SELECT state FROM paper_accounts WHERE id = ? AND role = 'shadow' FOR UPDATE", sa, 1, &sc, 1,
		   db_row_once, &found, NULL, err) != 0)
		return -1;
	if (!found || strcmp(state, "active") != 0) {
		buf_printf(err, "the candidate's shadow account %lld is %s", shadow, found ? state : "gone");
		return 0;
	}
	struct db_result res = { 0 };
	struct db_arg pa[] = { DB_ARG_TEXT(label), DB_ARG_INT(version), DB_ARG_TEXT(run), DB_ARG_INT(user_id),
			       DB_ARG_INT(id) };
	if (db_run(db, "INSERT INTO default_promotions (dataset_version, strategy_version_id, run_id, promoted_by, "
		       "proposal_id, reason, numbers) SELECT ?, ?, ?, ?, q.id, q.reason, q.numbers FROM updater_proposals q "
		       "WHERE q.id = ?", pa, 5, NULL, 0, NULL, NULL, &res, err) != 0)
		return -1;
	long long promo = (long long)res.insert_id;
	struct db_arg ra[] = { DB_ARG_TEXT(label) };
	struct db_arg ma[] = { DB_ARG_INT(promo), DB_ARG_INT(shadow) };
	int by_admin = strcmp(new_status, "promoted") != 0;
	struct db_arg oa[] = { by_admin ? DB_ARG_INT(user_id) : DB_ARG_NULL, DB_ARG_TEXT(label), DB_ARG_INT(id) };
	if (db_run(db, "UPDATE paper_accounts SET state = 'retired', dataset_id = NULL WHERE label = ? "
		       "AND role = 'default' AND state <> 'retired'", ra, 1, NULL, 0, NULL, NULL, NULL, err) != 0 ||
	    db_run(db, "UPDATE paper_accounts SET role = 'default', promotion_id = ? WHERE id = ?", ma, 2, NULL, 0, NULL,
		   NULL, NULL, err) != 0 ||
	    upd_set_status(db, id, new_status, by_admin ? user_id : 0, promo, err) != 0 ||
	    db_run(db, "UPDATE updater_proposals SET status = 'superseded', decided_by = ?, decided_at = NOW(6) "
		       "WHERE label = ? AND status = 'proposed' AND id <> ?", oa, 3, NULL, 0, NULL, NULL, NULL, err) != 0)
		return -1;
	if (paper_queue_step(db, label) < 0) {
		buf_printf(err, "database: %s", db_error(db));
		return -1;
	}
	*promotion_id = promo;
	return 1;
}

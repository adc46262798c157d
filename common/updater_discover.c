/*
 * updater_discover: the updater finds its candidates (see updater.h,
 * updater_discover; sql/026).
 *
 * Theory of operation. The caller holds the label's rule row locked
 * (updater_lock), so two discoveries of one label never run at once and
 * the count of active shadows read here stays true until the commit. The
 * candidates are read with plain (non-locking) SELECTs and written with
 * INSERT ... VALUES: an INSERT ... SELECT would take shared locks on the
 * rows it reads (dataset_labels, paper_accounts), which the prefetch job
 * writes while holding other locks, so it could deadlock with it. At most
 * UPD_DISCOVER_MAX accounts are opened per call; the next paper step of
 * the label opens the rest.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "paper_queue.h"
#include "updater.h"

#define UPD_DISCOVER_MAX 16

/* One qualifying strategy version: its best eligible run on the label. */
struct upd_found {
	char      run[40], asset[80], kind[16], fee[40], lev[40];
	long long version;
};

struct upd_found_list {
	struct upd_found f[UPD_DISCOVER_MAX];
	size_t n;
};

/* Copy a text column into dst (empty when NULL). */
static void upd_copy(char *dst, size_t cap, const struct db_col *c)
{
	snprintf(dst, cap, "%.*s", c->is_null ? 0 : (int)c->len, c->is_null ? "" : c->buf);
}

/* Row callback: one candidate. */
static bool upd_found_row(void *ctx, const struct db_col *col, size_t ncol)
{
	struct upd_found_list *l = ctx;
	(void)ncol;
	if (l->n == UPD_DISCOVER_MAX)
		return false;
	struct upd_found *f = &l->f[l->n++];
	upd_copy(f->run, sizeof f->run, &col[0]);
	f->version = col[1].i;
	upd_copy(f->kind, sizeof f->kind, &col[2]);
	upd_copy(f->asset, sizeof f->asset, &col[3]);
	upd_copy(f->fee, sizeof f->fee, &col[4]);
	upd_copy(f->lev, sizeof f->lev, &col[5]);
	return true;
}

/* The rule's min_age_days and the free shadow slots of label. 1, 0 (no rule, disabled or full), -1 error. */
static int upd_slots(struct db *db, const char *label, char age[40], long long *slots, struct buf *err)
{
	struct db_col c[] = { { .type = DB_T_TEXT, .buf = age, .cap = 40 }, DB_COL_INT, DB_COL_INT };
	struct db_arg a[] = { DB_ARG_TEXT(label) };
	bool found = false;
	if (db_run(db, "SELECT CAST(r.min_age_days AS CHAR), r.max_shadows, (SELECT COUNT(*) FROM paper_accounts s "
		       "WHERE s.label = r.label AND s.role = 'shadow' AND s.state = 'active') FROM updater_rules r "
		       "WHERE r.label = ? AND r.enabled = 1", a, 1, c, 3, db_row_once, &found, NULL, err) != 0)
		return -1;
	*slots = found ? c[1].i - c[2].i : 0;
	if (*slots > UPD_DISCOVER_MAX)
		*slots = UPD_DISCOVER_MAX;
	return *slots > 0;
}

int updater_discover(struct db *db, const char *label, double fee_bps, double max_leverage, struct buf *err)
{
	char age[40] = "";
	long long slots = 0;
	int rc = upd_slots(db, label, age, &slots, err);
	if (rc <= 0)
		return rc;
	long long start = 0;
	char assets[1024] = "";
	struct db_col dc[] = { DB_COL_INT, DB_COL_TEXT(assets) };
	struct db_arg la[] = { DB_ARG_TEXT(label) };
	bool found = false;
	if (db_run(db, "SELECT d.last_ts, JSON_VALUE(d.assets, '$[0]') FROM dataset_labels l JOIN datasets d "
		       "ON d.id = l.dataset_id WHERE l.label = ?", la, 1, dc, 2, db_row_once, &found, NULL, err) != 0)
		return -1;
	if (!found)
		return 0;   /* the label holds no version yet */
	start = dc[0].i;
	char fee[32], lev[32];
	snprintf(fee, sizeof fee, "%.17g", fee_bps);
	snprintf(lev, sizeof lev, "%.17g", max_leverage);
	char run[40], kind[16], asset[80], f[40], l[40];
	struct db_col cc[] = { DB_COL_TEXT(run), DB_COL_INT, DB_COL_TEXT(kind), DB_COL_TEXT(asset), DB_COL_TEXT(f),
			       DB_COL_TEXT(l) };
	struct db_arg ca[] = { DB_ARG_TEXT(assets), DB_ARG_TEXT(fee), DB_ARG_TEXT(lev), DB_ARG_TEXT(label),
			       DB_ARG_TEXT(label), DB_ARG_TEXT(age), DB_ARG_TEXT(label), DB_ARG_INT(slots) };
	struct upd_found_list *fl = calloc(1, sizeof *fl);
	if (!fl) {
		buf_puts(err, "out of memory");
		return -1;
	}
	/* the best eligible run of every qualifying version, the best versions first */
	if (db_run(db, "SELECT q.run_id, q.strategy_version_id, q.kind, COALESCE(q.asset, ?), "
		       "COALESCE(JSON_VALUE(q.engine, '$.fee_bps'), ?), COALESCE(JSON_VALUE(q.engine, '$.max_leverage'), ?) "
		       "FROM (SELECT m.run_id, m.strategy_version_id, m.score, v.kind, r.asset, r.engine, ROW_NUMBER() OVER "
		       "(PARTITION BY m.strategy_version_id ORDER BY m.score DESC, m.completed_at, m.run_id) AS k "
		       "FROM run_metrics m JOIN runs r ON r.id = m.run_id JOIN strategy_versions v ON v.id = m.strategy_version_id "
		       "WHERE m.eligible = 1 AND m.score IS NOT NULL AND v.kind IN ('simulate', 'positions') "
		       "AND (m.dataset_version = ? OR m.dataset_version IN (SELECT p.dataset_version FROM data_prefetches p "
		       "WHERE p.window_label = ? AND p.status = 'completed' AND p.dataset_version IS NOT NULL)) "
		       "AND v.created_at <= NOW(6) - INTERVAL ROUND(? * 86400000000) MICROSECOND "
		       "AND NOT EXISTS (SELECT 1 FROM paper_accounts a WHERE a.label = ? "
		       "AND a.strategy_version_id = m.strategy_version_id AND a.state <> 'retired')) q "
		       "WHERE q.k = 1 ORDER BY q.score DESC, q.strategy_version_id LIMIT ?", ca, 8, cc, 6, upd_found_row, fl,
		   NULL, err) != 0) {
		free(fl);
		return -1;
	}
	int opened = 0;
	for (size_t i = 0; i < fl->n; i++) {
		const struct upd_found *x = &fl->f[i];
		struct db_arg ia[] = { DB_ARG_TEXT(label), DB_ARG_INT(x->version), DB_ARG_TEXT(x->run), DB_ARG_TEXT(x->kind),
				       DB_ARG_TEXT(x->asset), DB_ARG_TEXT(x->fee), DB_ARG_TEXT(x->lev), DB_ARG_INT(start),
				       DB_ARG_INT(start) };
		if (db_run(db, "INSERT INTO paper_accounts (promotion_id, role, origin, label, strategy_version_id, run_id, "
			       "kind, asset, fee_bps, max_leverage, start_ts, last_ts) "
			       "VALUES (NULL, 'shadow', 'updater', ?, ?, ?, ?, ?, ?, ?, ?, ?)", ia, 9, NULL, 0, NULL, NULL,
			   NULL, err) != 0) {
			free(fl);
			return -1;
		}
		opened++;
	}
	free(fl);
	if (opened > 0 && paper_queue_step(db, label) < 0) {
		buf_printf(err, "database: %s", db_error(db));
		return -1;
	}
	return opened;
}

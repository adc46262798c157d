/*
 * register: a stored market-data version → the `datasets` registry, the
 * window's moving label in dataset_labels and what follows a new version
 * (contract in register.h). One code path for the prefetch job's finishing
 * transaction (prefetch_job.c pf_commit) and `agenttest data fetch`
 * (evaluator/cli/cmd_fetch.c), so a version fetched either way is pinned,
 * labelled, stepped and scored the same.
 */
#include "evaluator/runner/market/register.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dsretire.h"
#include "log.h"
#include "paper_queue.h"
#include "updater.h"
#include "xalloc.h"
#include "evaluator/engine.h"
#include "evaluator/runner/jobs.h"

#define MK_RETAIN_SCAN 1000   /* older versions looked at per new version */

/* db_row_fn: note that a row came. */
static bool mk_got_row(void *ctx, const struct db_col *cols, size_t ncols)
{
	(void)cols;
	(void)ncols;
	*(bool *)ctx = true;
	return false;
}

/* JSON array text of the asset names into b. */
static void mk_assets_json(const char *const *assets, size_t n, struct buf *b)
{
	buf_putc(b, '[');
	for (size_t i = 0; i < n; i++)
		buf_printf(b, "%s\"%s\"", i ? "," : "", assets[i]);   /* names are ds_valid_asset: no quoting */
	buf_putc(b, ']');
}

/* The label, the paper step, the updater's candidates, the window history
 * and the forward scores of a version just registered as `version`. */
static int mk_link(struct db *db, const char *window, const char *version, struct buf *err)
{
	struct db_arg m[] = { DB_ARG_TEXT(window), DB_ARG_TEXT(version) };
	if (db_exec(db, "INSERT INTO dataset_labels (label, dataset_id) SELECT ?, id FROM datasets WHERE version = ? "
			"ON DUPLICATE KEY UPDATE dataset_id = VALUES(dataset_id)", m, 2, NULL, 0, NULL, NULL, NULL,
		    0) != DB_OK ||
	    paper_queue_step(db, window) < 0) {   /* new candles: advance the label's paper account */
		buf_printf(err, "database: %s", db_error(db));
		return -1;
	}
	/* the rule's candidates (sql/026), also for a label with no account to step yet */
	if (updater_discover(db, window, ENGINE_DEFAULT_FEE_BPS, ENGINE_DEFAULT_MAX_LEVERAGE, err) < 0)
		return -1;
	/* forward scores (issue 18): the version joins its window's history, and the
	 * window's evaluations and agent iterations are scored on it */
	if (db_exec(db, "UPDATE datasets SET window_label = ? WHERE version = ? AND window_label IS NULL", m, 2, NULL,
		    0, NULL, NULL, NULL, 0) != DB_OK) {
		buf_printf(err, "database: %s", db_error(db));
		return -1;
	}
	return forward_enqueue(db, window, err);
}

int mk_register(struct db *db, const char *window, const struct mk_version *v, const char *const *assets, size_t n,
		int64_t interval_ms, char have[65], struct buf *err)
{
	bool found = false;
	char h[65] = "";
	have[0] = '\0';
	/* the window's updater rule first, the order paper steps and promotions lock in
	 * (common/updater.h): the discovery in mk_link runs under it */
	if (updater_lock(db, window, err) != 0)
		return -1;
	struct buf aj = BUF_INIT;
	mk_assets_json(assets, n, &aj);
	struct db_arg ins[] = { DB_ARG_TEXT(v->label), DB_ARG_TEXT(v->hash), DB_ARG_TEXT(v->path),
				DB_ARG_TEXT(buf_cstr(&aj)), DB_ARG_INT(interval_ms), DB_ARG_INT((long long)v->bars),
				DB_ARG_INT(v->first_ms), DB_ARG_INT(v->last_ms) };
	struct db_col hc[] = { DB_COL_TEXT(h) };
	struct db_arg key[] = { DB_ARG_TEXT(v->label) };
	enum db_status st = db_exec(db, "INSERT IGNORE INTO datasets (version, dataset_hash, path, assets, interval_ms, "
					"bars, first_ts, last_ts) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
				    ins, 8, NULL, 0, NULL, NULL, NULL, 0);
	buf_free(&aj);
	if (st != DB_OK || db_exec(db, "SELECT dataset_hash FROM datasets WHERE version = ? FOR UPDATE", key, 1, hc, 1,
				   mk_got_row, &found, NULL, 0) != DB_OK) {
		buf_printf(err, "database: %s", db_error(db));
		return -1;
	}
	if (!found) {
		buf_printf(err, "dataset version %s vanished while it was registered", v->label);
		return -1;
	}
	memcpy(have, h, sizeof h);
	if (strcmp(h, v->hash) != 0)
		return 0;   /* a label is immutable: the caller reports the clash */
	return mk_link(db, window, v->label, err) < 0 ? -1 : 1;
}

/* Row callback of mk_retain: collect (id, hash) of the older versions. */
struct mk_old {
	long long id[MK_RETAIN_SCAN];
	char      hash[MK_RETAIN_SCAN][65];
	size_t    n;
};

static bool mk_old_row(void *ctx, const struct db_col *c, size_t ncols)
{
	struct mk_old *o = ctx;
	(void)ncols;
	if (o->n == MK_RETAIN_SCAN)
		return false;
	o->id[o->n] = c[0].i;
	snprintf(o->hash[o->n], sizeof o->hash[o->n], "%s", c[1].buf);
	o->n++;
	return true;
}

int mk_retain(struct db *db, const char *data_dir, const char *window, const char *hash, long keep)
{
	struct mk_old *old = xcalloc(1, sizeof *old);
	char like[80], h[65];
	int retired = 0;
	snprintf(like, sizeof like, "%s-%%", window);
	struct db_col c[] = { DB_COL_INT, DB_COL_TEXT(h) };
	struct db_arg a[] = { DB_ARG_TEXT(like), DB_ARG_TEXT(hash), DB_ARG_INT(keep - 1) };
	if (db_exec(db, "SELECT id, dataset_hash FROM datasets WHERE version LIKE ? AND dataset_hash <> ? "
			"ORDER BY id DESC LIMIT 1000 OFFSET ?", a, 3, c, 2, mk_old_row, old, NULL, 0) != DB_OK) {
		log_msg(LOG_LVL_WARNING, "retention_failed", "%s: %s", window, db_error(db));
		goto out;
	}
	for (size_t i = 0; i < old->n; i++) {
		int r = dsretire_unregister(db, old->id[i]);
		if (r <= 0)
			continue;   /* pinned (kept) or a database error (tried again next time) */
		retired++;
		if (strcmp(old->hash[i], hash) != 0 && dsretire_hash_in_use(db, old->hash[i]) == 0 &&
		    dsretire_remove_files(data_dir, old->hash[i]) != 0)
			log_msg(LOG_LVL_WARNING, "retention_failed", "cannot remove version %s of %s", old->hash[i],
				window);
	}
out:
	free(old);
	return retired;
}

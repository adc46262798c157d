/*
 * register.h: registering a stored market-data version (market.h
 * mk_store/mk_refresh) in the database, shared by the prefetch job and
 * `agenttest data fetch` (docs/market-data.md, "Registration").
 */
#ifndef AGENTTEST_RUNNER_MARKET_REGISTER_H
#define AGENTTEST_RUNNER_MARKET_REGISTER_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "db.h"
#include "evaluator/runner/market/market.h"

/*
 * Inside the caller's transaction: take the window's updater rule lock,
 * record v (label, hash, path, assets, interval, bars, first/last) in
 * `datasets` (INSERT IGNORE: the same label and hash again is accepted),
 * and, when the label's registered hash is v's, point the window's label
 * (dataset_labels) at it, queue the window's paper step, the updater's
 * candidates, the window history (datasets.window_label) and a forward-score
 * job. Returns 1 registered, 0 when the label is already registered with
 * another hash (have gets that hash; nothing else changed: a label is
 * immutable), -1 on a database error (err filled; the caller rolls back).
 */
int mk_register(struct db *db, const char *window, const struct mk_version *v, const char *const *assets, size_t n,
		int64_t interval_ms, char have[65], struct buf *err);

/*
 * Retention (MANTIS_DATA_KEEP_VERSIONS = keep, 1..1000), outside a
 * transaction, after a new version `hash` of `window` is registered: keep
 * the keep - 1 newest other registered versions, retire the older ones that
 * nothing pins (dsretire.h: their rows, then their files under data_dir once
 * no row uses the bytes). Best effort: failures are logged. Returns the
 * versions retired.
 */
int mk_retain(struct db *db, const char *data_dir, const char *window, const char *hash, long keep);

#endif

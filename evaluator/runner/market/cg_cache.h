/*
 * cg_cache: the CoinGlass rows already fetched, kept per (asset, field)
 * under a cache directory (<MANTIS_DATA_DIR>/coinglass-cache), so that a
 * later fetch asks the API only for the time range it does not hold yet.
 *
 * A field name carries its interval (oi_1h, oi_1d, ...), so one file per
 * (symbol, interval, series): <dir>/<ASSET>.<field>.cgc. It holds one
 * contiguous range [from, to] of candle open times that was fully
 * fetched, and every row the API had in it (open time, value; a missing
 * value is NaN, a zero is zero). Only closed candles go in (the caller
 * sets `to` at or before the last candle closed when it fetched), so a
 * cached value is final. The file is written to a temporary name and
 * renamed, and carries a BLAKE2b-256 of its contents: a torn, truncated
 * or foreign file is ignored (the range is fetched again), never used.
 * The API key is never written here.
 */
#ifndef AGENTTEST_MARKET_CG_CACHE_H
#define AGENTTEST_MARKET_CG_CACHE_H

#include <stddef.h>
#include <stdint.h>

/* One cached series: rows with open time in [from, to], increasing. */
struct mk_cg_cached {
	int64_t  from, to;
	size_t   n;
	int64_t *t;
	double  *v;
};

/* Load the cached series of (asset, field) from dir into c (c->t, c->v
 * malloc'd, the caller frees them). 1 loaded, 0 none or unusable (c left
 * empty). */
int mk_cg_cache_load(const char *dir, const char *asset, const char *field, struct mk_cg_cached *c);

/* Store rows (t, v, n; increasing open times) restricted to [from, to] as
 * the cached series of (asset, field) in dir (created if missing).
 * Best effort: 0 stored, -1 not (a later fetch then asks the API again). */
int mk_cg_cache_save(const char *dir, const char *asset, const char *field, int64_t from, int64_t to,
		     const int64_t *t, const double *v, size_t n);

#endif

/*
 * market: the Binance klines fetcher and the dataset versions it writes.
 *
 * Entry points (request in, progress callback, cancel check, result out),
 * used by `agenttest data fetch` and meant for the runner's prefetch job:
 *
 *   mk_fetch()    candles of every requested asset over [start, end] from
 *                 Binance's public REST API (libcurl; one connection per
 *                 worker thread, reused across pages; `parallel` assets at
 *                 once). It either returns every closed candle the server
 *                 has, or fails naming the asset and the time range: never
 *                 a silently short series.
 *   mk_fetch_window() mk_fetch of a window of days_back days ending at the
 *                 last bar served (window.c): what the prefetch job and
 *                 `agenttest data fetch` store.
 *   mk_store()    those series on one minute grid → an immutable dataset
 *                 version under <data_dir>/versions/<dataset hash>/, and the
 *                 moving label <data_dir>/<window> (a symlink swapped
 *                 atomically) pointed at it; the quality report is written
 *                 next to it (quality.json) and returned; the files'
 *                 SHA-256 midstates too (midstate.h), for mk_refresh.
 *   mk_refresh()  the newest version of a window + only the candles newer
 *                 than its last one (the last few stored candles are
 *                 fetched again and must match) → a new version.
 *
 * Retry rules (docs/market-data.md): 429 and 418 wait Retry-After seconds
 * (else rate_wait_ms) and give up after max_429 in a row; 5xx, timeouts,
 * connection errors, answers that are not a JSON list and an empty page
 * before the end of the window are retried with exponential backoff up to
 * max_retries times; any other status fails at once. An empty page after
 * every retry ends the asset's series, except right after a full page of
 * 1000 (the server had more): that fails the fetch. The still-open candle
 * is never stored.
 */
#ifndef AGENTTEST_RUNNER_MARKET_H
#define AGENTTEST_RUNNER_MARKET_H

#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "evaluator/klines.h"

enum mk_err {
	MK_OK = 0,
	MK_ERR_HTTP,        /* the server kept failing (5xx, timeouts, 4xx) */
	MK_ERR_RATE,        /* rate limited (429/418) max_429 times in a row */
	MK_ERR_DATA,        /* the server answered something that is not klines */
	MK_ERR_EMPTY,       /* an asset has no candle at all in the window */
	MK_ERR_CANCELLED,   /* the cancel check said stop */
	MK_ERR_STORE,       /* the dataset could not be written */
	MK_ERR_MISMATCH,    /* refresh: re-fetched overlap differs from the stored candles */
	MK_ERR__MAX
};

/* Machine code for an error ("fetch_failed", "rate_limited", ...). */
const char *mk_errcode(enum mk_err e);

struct mk_request {
	const char        *base_url;    /* e.g. http://127.0.0.1:8080 (no trailing slash) */
	const char *const *assets;      /* BTC, ETH, ... (symbol = asset + "USDT") */
	size_t             n_assets;
	const char        *interval;    /* Binance interval name: 1m, 5m, 15m, 1h, 4h, 1d */
	int64_t            start_ms, end_ms; /* window, inclusive open times */
	int64_t            now_ms;      /* candles closing after this are still open */
	int                parallel;    /* assets fetched at once, 1..8 */
	long               pace_ms;     /* sleep between pages of one asset (0: none) */
	long               timeout_ms;  /* per request */
	long               rate_wait_ms;/* wait on 429/418 without Retry-After */
	int                max_429;     /* consecutive 429/418 that give up (the last one is not waited on) */
	int                max_retries; /* attempts for 5xx/timeouts/bad answers */
	long               backoff_ms;  /* first backoff, doubled per retry */
	const int64_t     *end_each;    /* NULL, or asset i's own end (inclusive, instead of end_ms) */
	/* Called (from worker threads, serialised) after every page. */
	void             (*progress)(void *ud, size_t assets_done, size_t n_assets, size_t rows);
	/* Non-zero: stop as soon as possible (checked between pages and during transfers). */
	int              (*cancelled)(void *ud);
	void              *ud;
};

/* Fill r with the defaults (pace 50 ms, timeout 30 s, rate wait 60 s, 5
 * rate-limit answers, 5 retries, backoff 500 ms, 2 in parallel). */
void mk_request_defaults(struct mk_request *r);

/* Interval name → ms (1m → 60000); -1 if not supported. */
int64_t mk_interval_ms(const char *name);

/*
 * The Binance base URL: `configured` (BINANCE_API_URL) with trailing
 * slashes stripped if non-empty; otherwise the first endpoint of `list`
 * (BINANCE_API_URLS, comma-separated; NULL or empty: api.binance.com,
 * api1.binance.com, api.binance.us) whose /api/v3/ping answers 200 within
 * 5 s, tried in order. Writes into out (outlen bytes). Sets *us when the
 * base is binance.us (its pacing is 200 ms). Returns 0, or -1 with err
 * filled: BINANCE_API_URL too long, or no endpoint answered (err names each
 * endpoint tried and why it was passed over; unlike the original, which
 * then used the first anyway and fetched nothing).
 */
int mk_base_url(const char *configured, const char *list, char *out, size_t outlen, int *us, char *err,
		size_t errlen);

/* Fetch. out[i] (n_assets, zeroed by the caller) receives asset i's candles
 * in [start, end]. On failure err names the asset and the time range; the
 * series are freed by the caller either way. */
enum mk_err mk_fetch(const struct mk_request *r, struct kl_series *out, char *err, size_t errlen);

/*
 * The window of a fetch (window.c; docs/market-data.md, "The window"): a
 * function of its last bar only, so that every fetch ending on the same
 * bar (the same version label) stores the same candles, whatever the clock
 * said when it ran.
 *
 *   last  = the newest candle any asset has (the server may serve the
 *           newest closed candles late: not always the clock's last
 *           closed candle)
 *   first = mk_window_first(last) = last − days_back days + ival_ms
 *           (days_back days of candles ending with last's close)
 *
 * Every series keeps its candles in [first, last]; the grid then runs from
 * the oldest candle any asset keeps (no all-NaN edge rows, as before) to
 * last; an asset that ends before last keeps a NaN tail (a gap).
 */
int64_t mk_window_first(int64_t last_ms, long days_back, int64_t ival_ms);

/* Trim series s (n assets named `assets`) to the window of their last bar
 * (above); *first_ms and *last_ms get the grid's bounds. An asset left
 * without a candle fails as in mk_fetch (MK_ERR_EMPTY, "<asset>: no candle
 * at all in <first>..<last>"). */
enum mk_err mk_window_trim(const char *const *assets, struct kl_series *s, size_t n, long days_back,
			   int64_t ival_ms, int64_t *first_ms, int64_t *last_ms, char *err, size_t errlen);

/* Put head's candles older than s's first in front of s (s takes head's
 * arrays; the refused counts are summed); head is left empty. */
void mk_series_prepend(struct kl_series *s, struct kl_series *head);

/*
 * Fetch the window of days_back days of r's assets ending at the last bar
 * the server serves, into out (zeroed by the caller; freed by the caller
 * either way): r->end_ms is set to the clock's last closed candle (from
 * r->now_ms), r->start_ms to mk_window_first(r->end_ms); when the last bar
 * served is earlier (the newest candles late), the missing first bars are
 * fetched in a second request per asset, from the window's first bar up to
 * the asset's first candle fetched (so never an empty page; no progress
 * calls); then mk_window_trim. The prefetch job and `agenttest data fetch` both use it.
 */
enum mk_err mk_fetch_window(struct mk_request *r, long days_back, struct kl_series *out, int64_t *first_ms,
			    int64_t *last_ms, char *err, size_t errlen);

struct mk_cg_request;

/* A stored version. */
struct mk_version {
	char         hash[65];
	char         path[4608];    /* <data_dir>/versions/<hash> */
	char         label[160];    /* manifest version label */
	json_object *quality;       /* {asset: report}, caller puts */
	size_t       bars;
	int64_t      first_ms, last_ms;
};

/*
 * Store series (n assets named `assets`) over the grid [first_ms, last_ms]
 * as a version of `window` (e.g. "binance-1m-60d") under data_dir, and
 * point the label at it. source_json: provenance object text (not hashed).
 * cg: NULL, or the mk_cg_fetch columns over the same grid, stored as the
 * extra fields mk_cg_fields after the five OHLCV fields.
 */
enum mk_err mk_store(const char *data_dir, const char *window, const char *const *assets, size_t n,
		     const struct kl_series *s, int64_t first_ms, int64_t last_ms, int64_t interval_ms,
		     const double *cg, const char *source_json, struct mk_version *v, char *err, size_t errlen);

/*
 * Refresh window `window` under data_dir: open its newest version, fetch
 * (with r's base, pacing and callbacks; r->assets/start/end are set here)
 * the last `overlap` stored candles again plus everything newer up to
 * r->end_ms, refuse a mismatch in the overlap, and store the old candles
 * plus the new ones as a new version. *added gets the new candles summed
 * over assets (0: nothing new, no new version; v->hash is the current one).
 * cg: NULL (the new version holds the candles only), or the CoinGlass
 * request (base, key, cache, pacing) whose fields the new version holds
 * over its whole grid (mk_cg_fetch_grid; with its cache_dir set only the
 * hours since the last fetch are asked for).
 */
enum mk_err mk_refresh(const char *data_dir, const char *window, struct mk_request *r, size_t overlap,
		       const struct mk_cg_request *cg, struct mk_version *v, size_t *added, char *err, size_t errlen);

/*
 * CoinGlass (spec/mantis.md §4.3; fetch_coinglass.c): the derivatives
 * fields below for every asset, from the v4 API (header CG-API-KEY,
 * envelope {code:"0", msg, data}), placed on a minute grid causally
 * (kl_align_causal: a value is visible from the minute its hourly or daily
 * candle has closed; NaN before, and NaN where the API gave no value; a
 * zero stays zero). HTTP 429 waits Retry-After (else rate_wait_ms × the
 * attempt) and is tried again, max_429 attempts in all; 5xx, connection
 * errors, a body that is not the envelope and a code other than "0" are
 * retried with backoff up to
 * max_retries; any other status fails at once. Failures name the asset,
 * the field and the time range, never the key.
 */
#define MK_CG_FIELDS 6
extern const char *const mk_cg_fields[MK_CG_FIELDS]; /* oi_1h, oi_1d, funding_1h, liq_long_1h, liq_short_1h, ls_ratio_1h */

struct mk_cg_request {
	const char        *base_url;    /* COINGLASS_API_URL or https://open-api-v4.coinglass.com */
	const char        *api_key;     /* sent as CG-API-KEY only */
	const char        *cache_dir;   /* rows already fetched (cg_cache.h), NULL: none */
	const char *const *assets;      /* tickers; the USDT pair where the endpoint wants one */
	size_t             n_assets;
	int64_t            start_ms, end_ms; /* the grid's first and last minute */
	long               pace_ms, timeout_ms, rate_wait_ms, backoff_ms;
	int                max_429, max_retries;
	void             (*progress)(void *ud, size_t assets_done, size_t n_assets);
	int              (*cancelled)(void *ud);
	void              *ud;
};

/* Defaults: pace 300 ms, timeout 30 s, rate wait 15 s, 3 rate-limit
 * answers, 5 retries, backoff 500 ms. */
void mk_cg_request_defaults(struct mk_cg_request *r);

/* mk_cg_fetch of r's assets over the minute grid [first_ms, last_ms] (step
 * ival_ms; r's start/end are taken from it) into *cols, allocated here
 * (n_assets × MK_CG_FIELDS × T; the caller frees it; NULL on failure). */
enum mk_err mk_cg_fetch_grid(const struct mk_cg_request *r, int64_t first_ms, int64_t last_ms, int64_t ival_ms,
			     double **cols, char *err, size_t errlen);

/* Fetch every field of every asset onto grid (T minutes); cols holds
 * n_assets × MK_CG_FIELDS × T doubles, column (a, f) at (a*MK_CG_FIELDS+f)*T. */
enum mk_err mk_cg_fetch(const struct mk_cg_request *r, const int64_t *grid, size_t T, double *cols, char *err,
			size_t errlen);

#endif

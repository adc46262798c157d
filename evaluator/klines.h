/*
 * klines: the pure half of the market-data fetcher (no network, no files).
 *
 * - kl_parse_page(): one Binance /api/v3/klines JSON answer → rows appended
 *   to a per-asset series; a still-open candle (close time after `now`) is
 *   never stored; a duplicate or out-of-order open time is refused (counted,
 *   not stored); anything that is not a list of kline rows is an error.
 * - kl_grid(): every asset's series placed on one complete minute grid
 *   (NaN where an asset has no candle: gaps are explicit, never filled),
 *   with a quality report per asset (rows, expected, coverage, gaps,
 *   refused rows, first/last timestamp).
 * - kl_align_causal(): the CoinGlass rule of spec/mantis.md §4.3: at minute
 *   m the value of the last candle whose open time is <= m - period (a value
 *   is visible only once its candle has closed), NaN before the first.
 *
 * The fetcher (evaluator/runner/market/) drives these; unit tests drive them
 * directly (tests/unit/evaluator/test_klines.c).
 */
#ifndef AGENTTEST_EVALUATOR_KLINES_H
#define AGENTTEST_EVALUATOR_KLINES_H

#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

enum kl_err {
	KL_OK = 0,
	KL_ERR_JSON,      /* not JSON, or not a JSON list */
	KL_ERR_ROW,       /* a row is not a kline (too short, bad number, bad OHLC) */
	KL_ERR_GRID,      /* an open time off the interval grid */
	KL_ERR__MAX
};

/* One asset's candles in time order (struct-of-arrays, growable). */
struct kl_series {
	int64_t *t;                 /* open times, ms, strictly increasing */
	double  *v[5];              /* open, high, low, close, volume */
	size_t   n, cap;
	size_t   dup_refused;       /* rows with an open time already stored */
	size_t   order_refused;     /* rows older than the last stored one */
	size_t   open_dropped;      /* still-open candles not stored */
};

/* Free the arrays and zero the series. */
void kl_series_free(struct kl_series *s);
/* Make room for at least `cap` candles in all, so that appending up to
 * that many moves nothing (a fetch reserves the window's candle count).
 * Never shrinks; keeps the stored candles. */
void kl_series_reserve(struct kl_series *s, size_t cap);
/* Append one candle; refuses (counts, returns 1) a time <= the last one;
 * 0 when stored. */
int kl_series_push(struct kl_series *s, int64_t t, const double v[5]);
/* Index of the first candle of s at or after t (s->n if none); s's times
 * are strictly increasing (kl_series_push keeps them so). */
size_t kl_series_lower_bound(const struct kl_series *s, int64_t t);

/*
 * Parse one klines page (`text`, `len` bytes). Every row with close_time <=
 * now_ms and open time in [from_ms, to_ms] is appended to s (rows outside
 * are ignored, duplicates refused as above). *rows gets the number of rows
 * in the page (stored or not), *last_close the last row's close time (-1 if
 * the page is empty). Returns KL_OK, or an error with msg filled.
 */
enum kl_err kl_parse_page(const char *text, size_t len, int64_t interval_ms, int64_t from_ms,
			  int64_t to_ms, int64_t now_ms, struct kl_series *s, size_t *rows,
			  int64_t *last_close, char *msg, size_t msglen);

/*
 * The fast path kl_parse_page() tries first (klines_scan.c): the same
 * result for a page in Binance's own shape, without a JSON tree. Returns 1
 * when it handled the page (s, *rows, *last_close set), 0 when the page is
 * not in that shape or holds anything the full parser would refuse (s left
 * as it was; the full parser then decides, with its message).
 */
int kl_scan_page(const char *text, size_t len, int64_t interval_ms, int64_t from_ms, int64_t to_ms,
		 int64_t now_ms, struct kl_series *s, size_t *rows, int64_t *last_close);

/* The full (json-c) parser alone, same contract as kl_parse_page(); the
 * tests and tests/fuzz/fuzz_klines.c compare the two paths. */
enum kl_err kl_parse_page_json(const char *text, size_t len, int64_t interval_ms, int64_t from_ms, int64_t to_ms,
			       int64_t now_ms, struct kl_series *s, size_t *rows, int64_t *last_close, char *msg,
			       size_t msglen);

/* A run of missing candles: `len` grid steps starting at `start_ms`. */
struct kl_gap {
	int64_t start_ms;
	int64_t len;
};

/* Quality of one asset on the grid. */
struct kl_quality {
	size_t         rows;          /* candles present */
	size_t         expected;      /* grid length */
	double         coverage;      /* rows / expected */
	size_t         n_gaps;
	struct kl_gap *gaps;          /* n_gaps runs (heap) */
	size_t         dup_refused, order_refused, open_dropped;
	int64_t        first_ms, last_ms; /* -1 when rows == 0 */
};

/* Free a report's gaps. */
void kl_quality_free(struct kl_quality *q);

/*
 * The grid from first_ms to last_ms (both multiples of interval_ms,
 * first <= last) holds T = (last-first)/interval + 1 rows. Place series s on
 * it: col[f][i] (f = 0..4, each T doubles, caller-allocated) gets the
 * candle at time first + i*interval or NaN. Fills q. Candles outside the
 * grid are not placed (and not counted in rows).
 */
void kl_grid(const struct kl_series *s, int64_t first_ms, int64_t last_ms, int64_t interval_ms,
	     double *const col[5], struct kl_quality *q);

/* The quality report as JSON: {rows, expected, coverage, gaps:[[start,len]...],
 * duplicates_refused, out_of_order_refused, open_candles_dropped,
 * first_timestamp_ms, last_timestamp_ms}. At most max_gaps gaps listed
 * (n_gaps is always exact). */
json_object *kl_quality_json(const struct kl_quality *q, size_t max_gaps);

/*
 * Causal alignment: candles (open times `copen`, values `cval`, n of them,
 * any order, open times distinct), minutes `m` (nm of them, increasing).
 * out[j] = value of the candle with the greatest open time <= m[j] - period_ms,
 * NaN if none. Zero values are kept. O(n log n + nm). Returns 0, -1 on a
 * repeated candle time.
 */
int kl_align_causal(const int64_t *copen, const double *cval, size_t n, const int64_t *m,
		    size_t nm, int64_t period_ms, double *out);

#endif

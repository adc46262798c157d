/*
 * fetch_coinglass: the CoinGlass v4 derivatives fields of spec/mantis.md
 * §4.3 over libcurl, aligned causally onto the candles' minute grid
 * (contract in market.h, mk_cg_fetch).
 *
 * Theory of operation: one curl handle (one connection) walks every asset
 * and every field of mk_cg_fields in turn. A field is one series of an
 * endpoint (open interest, funding, liquidations, long/short ratio),
 * fetched over [grid start − 2 days, grid end] in pages of 1000 rows
 * (next start_time = last row time + the series' period; the walk ends on
 * a short page, a row at or after the end, or a page with no new row).
 * Every answer must be the
 * envelope {"code":"0","msg":...,"data":[rows]}; each row has "time" (ms)
 * and a value under the field's key (or one of its fallbacks). A value
 * that is null or absent is kept as a missing value (NaN), a zero is kept
 * as zero. The rows are then placed on the grid with kl_align_causal()
 * (a value is visible from the minute its candle has closed). The API key
 * travels only in the CG-API-KEY header and is never written to a
 * message. With r->cache_dir set, rows already fetched are read from the
 * CoinGlass cache (cg_cache.h: per asset and field, i.e. symbol and
 * interval, with the time range it covers) and only the range it lacks is
 * asked for; what was fetched extends the cache (cg_field_rows).
 * Memory: the response buffer and one asset-field series at a
 * time.
 */
#include "evaluator/runner/market/cg_cache.h"
#include "evaluator/runner/market/curl_util.h"
#include "evaluator/runner/market/market.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>
#include <sodium.h>

#include "buf.h"
#include "xalloc.h"

#define CG_PAGE       1000
#define CG_LOOKBACK   (2 * 86400000LL)
#define CG_CACHE_KEEP (370 * 86400000LL)  /* rows cached before the end: the widest window (365 d) + lookback */

/* One field: where it comes from and how its value is read. */
struct cg_field {
	const char *path;       /* endpoint under the base URL */
	int         usdt;       /* symbol is <ASSET>USDT (else the ticker) */
	const char *exchange;   /* extra query parameter, or NULL */
	const char *interval;   /* CoinGlass interval name */
	int64_t     period_ms;
	const char *keys[4];    /* value key, then fallbacks; NULL-terminated */
};

const char *const mk_cg_fields[MK_CG_FIELDS] = { "oi_1h", "oi_1d", "funding_1h", "liq_long_1h", "liq_short_1h",
						 "ls_ratio_1h" };

static const struct cg_field cg_table[MK_CG_FIELDS] = {
	{ "/api/futures/open-interest/aggregated-history", 0, NULL, "1h", 3600000, { "close" } },
	{ "/api/futures/open-interest/aggregated-history", 0, NULL, "1d", 86400000, { "close" } },
	{ "/api/futures/funding-rate/history", 1, "exchange=Binance", "1h", 3600000, { "close" } },
	{ "/api/futures/liquidation/aggregated-history", 0, "exchange_list=Binance", "1h", 3600000,
	  { "aggregated_long_liquidation_usd", "longLiquidationUsd", "buyVolUsd" } },
	{ "/api/futures/liquidation/aggregated-history", 0, "exchange_list=Binance", "1h", 3600000,
	  { "aggregated_short_liquidation_usd", "shortLiquidationUsd", "sellVolUsd" } },
	{ "/api/futures/global-long-short-account-ratio/history", 1, "exchange=Binance", "1h", 3600000,
	  { "global_account_long_short_ratio", "longRate", "longAccount", "ratio" } },
};

void mk_cg_request_defaults(struct mk_cg_request *r)
{
	memset(r, 0, sizeof *r);
	r->pace_ms = 300;
	r->timeout_ms = 30000;
	r->rate_wait_ms = 15000;
	r->max_429 = 3;
	r->max_retries = 5;
	r->backoff_ms = 500;
}

/* Global libcurl set-up, once per process. */
static void cg_curl_init(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
}

/* Seconds of a Retry-After header (delta-seconds), or -1. */
static long cg_retry_after(CURL *h)
{
	struct curl_header *hd = NULL;
	if (curl_easy_header(h, "Retry-After", 0, CURLH_HEADER, -1, &hd) != CURLHE_OK || !hd)
		return -1;
	char *end;
	errno = 0;
	long s = strtol(hd->value, &end, 10);
	return errno || end == hd->value || *end || s < 0 || s > 3600 ? -1 : s;
}

/* A row's value: a JSON number or numeric string → *v; null or absent →
 * NaN (missing). Returns -1 for anything else. */
static int cg_value(json_object *row, const char *const *keys, double *v)
{
	*v = NAN;
	for (size_t k = 0; k < 4 && keys[k]; k++) {
		json_object *x;
		if (!json_object_object_get_ex(row, keys[k], &x))
			continue;
		if (!x)
			return 0; /* null: missing */
		if (json_object_is_type(x, json_type_double) || json_object_is_type(x, json_type_int)) {
			*v = json_object_get_double(x);
		} else if (json_object_is_type(x, json_type_string)) {
			const char *s = json_object_get_string(x);
			char *end;
			errno = 0;
			*v = strtod(s, &end);
			if (errno || end == s || *end)
				return -1;
		} else {
			return -1;
		}
		return isfinite(*v) ? 0 : -1;
	}
	return 0;
}

/* Outcome of one page. */
enum cg_page { CG_OK, CG_RETRY, CG_RATE, CG_FATAL, CG_BAD };

/* GET url, check the envelope; on CG_OK *data is the row array (owned by *root). */
static enum cg_page cg_get(CURL *h, const char *url, struct buf *b, json_object **root, json_object **data,
			   long *ra, char *why, size_t whylen)
{
	long code = 0;
	buf_reset(b);
	*root = NULL;
	*ra = -1;
	curl_easy_setopt(h, CURLOPT_URL, url);
	CURLcode cc = curl_easy_perform(h);
	if (cc != CURLE_OK) {
		snprintf(why, whylen, "%s", curl_easy_strerror(cc));
		return CG_RETRY;
	}
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
	if (code == 429) {
		*ra = cg_retry_after(h);
		snprintf(why, whylen, "HTTP 429");
		return CG_RATE;
	}
	if (code != 200) {
		snprintf(why, whylen, "HTTP %ld", code);
		return code >= 500 ? CG_RETRY : CG_FATAL;
	}
	*root = json_tokener_parse(buf_cstr(b));
	json_object *c = NULL, *m = NULL;
	if (!*root || !json_object_is_type(*root, json_type_object) || !json_object_object_get_ex(*root, "code", &c)) {
		snprintf(why, whylen, "not a CoinGlass envelope");
		return CG_RETRY;
	}
	json_object_object_get_ex(*root, "msg", &m);
	if (strcmp(json_object_get_string(c), "0") != 0) {
		snprintf(why, whylen, "code %.16s: %.200s", json_object_get_string(c), m ? json_object_get_string(m) : "");
		return CG_RETRY;
	}
	if (!json_object_object_get_ex(*root, "data", data) || !json_object_is_type(*data, json_type_array)) {
		snprintf(why, whylen, "envelope without a data list");
		return CG_BAD;
	}
	return CG_OK;
}

/* x rounded down to a multiple of p (p > 0). */
static int64_t cg_floor(int64_t x, int64_t p)
{
	int64_t q = x / p;
	return (q - (x % p < 0)) * p;
}

/* Append row (ts, x) to (t, v, n, cap). */
static void cg_push(int64_t **t, double **v, size_t *n, size_t *cap, int64_t ts, double x)
{
	if (*n == *cap) {
		*cap = *cap ? *cap * 2 : 1024;
		*t = xrealloc(*t, xmul(*cap, sizeof **t));
		*v = xrealloc(*v, xmul(*cap, sizeof **v));
	}
	(*t)[*n] = ts;
	(*v)[*n] = x;
	(*n)++;
}

/* Fetch the rows of field f of asset `asset` with open time in [from, end]
 * and append them to (t, v, n, cap) after the rows already there (a row
 * at or before the last one held is dropped); 0, or err filled and the
 * error returned. */
static enum mk_err cg_series(const struct mk_cg_request *r, CURL *h, struct buf *b, const char *asset, size_t f,
			     int64_t from, int64_t end, int64_t **t, double **v, size_t *n, size_t *capp, char *err,
			     size_t errlen)
{
	const struct cg_field *F = &cg_table[f];
	int64_t last = *n ? (*t)[*n - 1] : INT64_MIN;
	int n429 = 0, nretry = 0;
	char url[2048], why[320] = "";
	while (from <= end) {
		if (r->cancelled && r->cancelled(r->ud))
			return snprintf(err, errlen, "cancelled"), MK_ERR_CANCELLED;
		snprintf(url, sizeof url, "%s%s?symbol=%s%s%s%s&interval=%s&limit=%d&start_time=%lld&end_time=%lld",
			 r->base_url, F->path, asset, F->usdt ? "USDT" : "", F->exchange ? "&" : "",
			 F->exchange ? F->exchange : "", F->interval, CG_PAGE, (long long)from, (long long)end);
		json_object *root, *data = NULL;
		long ra;
		enum cg_page pg = cg_get(h, url, b, &root, &data, &ra, why, sizeof why);
		if (pg == CG_RATE) {
			json_object_put(root);
			if (++n429 >= r->max_429)
				return snprintf(err, errlen, "CoinGlass %s %s: rate limited %d times in a row fetching %lld..%lld, giving up",
						asset, mk_cg_fields[f], n429, (long long)from, (long long)end), MK_ERR_RATE;
			if (mk_nap(r->cancelled, r->ud, ra >= 0 ? ra * 1000 : r->rate_wait_ms * n429))
				return snprintf(err, errlen, "cancelled"), MK_ERR_CANCELLED;
			continue;
		}
		n429 = 0;
		if (pg == CG_RETRY) {
			json_object_put(root);
			if (++nretry > r->max_retries)
				return snprintf(err, errlen, "CoinGlass %s %s: fetching %lld..%lld failed after %d attempts: %s",
						asset, mk_cg_fields[f], (long long)from, (long long)end, nretry, why), MK_ERR_HTTP;
			if (mk_nap(r->cancelled, r->ud, r->backoff_ms << (nretry - 1 < 6 ? nretry - 1 : 6)))
				return snprintf(err, errlen, "cancelled"), MK_ERR_CANCELLED;
			continue;
		}
		if (pg != CG_OK) {
			json_object_put(root);
			snprintf(err, errlen, "CoinGlass %s %s: fetching %lld..%lld refused: %s", asset, mk_cg_fields[f],
				 (long long)from, (long long)end, why);
			return pg == CG_BAD ? MK_ERR_DATA : MK_ERR_HTTP;
		}
		nretry = 0;
		size_t rows = json_object_array_length(data), before = *n;
		for (size_t i = 0; i < rows; i++) {
			json_object *row = json_object_array_get_idx(data, i), *tm;
			double x;
			if (!json_object_is_type(row, json_type_object) || !json_object_object_get_ex(row, "time", &tm) ||
			    !json_object_is_type(tm, json_type_int) || cg_value(row, F->keys, &x) != 0) {
				snprintf(err, errlen, "CoinGlass %s %s: bad row %zu of the page from %lld", asset,
					 mk_cg_fields[f], i, (long long)from);
				json_object_put(root);
				return MK_ERR_DATA;
			}
			int64_t ts = json_object_get_int64(tm);
			if (ts <= last || ts > end)
				continue; /* duplicate across pages, or past the window */
			cg_push(t, v, n, capp, ts, x);
			last = ts;
		}
		json_object_put(root);
		if (rows < CG_PAGE || last >= end || *n == before)
			break; /* short page, the end reached, or a page with nothing new */
		from = last + F->period_ms;
		if (r->pace_ms > 0 && mk_nap(r->cancelled, r->ud, r->pace_ms))
			return snprintf(err, errlen, "cancelled"), MK_ERR_CANCELLED;
	}
	return MK_OK;
}

/*
 * The rows of field f of asset `asset` over [start − 2 days, end] into
 * (t, v, n) (reset first), taken from the cache where it holds them and
 * fetched for the rest: before the cached range, and after it up to the
 * end. Then the cache is extended with what was fetched, up to the last
 * row received whose candle had closed by the grid's last minute (a
 * closed candle the API has not published yet is asked for again next
 * time, never cached as absent), trimmed to CG_CACHE_KEEP before the end.
 * A cached range that neither overlaps nor touches the one asked for is
 * not used (the whole range is fetched and replaces it).
 */
static enum mk_err cg_field_rows(const struct mk_cg_request *r, CURL *h, struct buf *b, const char *asset,
				 size_t f, int64_t **t, double **v, size_t *n, size_t *cap, char *err, size_t errlen)
{
	const struct cg_field *F = &cg_table[f];
	/* aligned on the period, so that the next fetch of a later window starts inside the cached range */
	int64_t from = cg_floor(r->start_ms - CG_LOOKBACK, F->period_ms), to = r->end_ms;
	int64_t closed_to = r->end_ms + 60000 - F->period_ms; /* open times of candles closed by then */
	struct mk_cg_cached c;
	enum mk_err rc = MK_OK;
	*n = 0;
	int have = mk_cg_cache_load(r->cache_dir, asset, mk_cg_fields[f], &c);
	if (have && (c.to < from - 1 || c.from > to + 1)) {
		free(c.t);
		free(c.v);
		have = 0;
	}
	if (!have) {
		rc = cg_series(r, h, b, asset, f, from, to, t, v, n, cap, err, errlen);
	} else {
		if (from < c.from)
			rc = cg_series(r, h, b, asset, f, from, c.from - 1, t, v, n, cap, err, errlen);
		for (size_t i = 0; rc == MK_OK && i < c.n; i++)
			if (*n == 0 || c.t[i] > (*t)[*n - 1])
				cg_push(t, v, n, cap, c.t[i], c.v[i]);
		if (rc == MK_OK && to > c.to)
			rc = cg_series(r, h, b, asset, f, c.to + 1, to, t, v, n, cap, err, errlen);
	}
	if (rc == MK_OK && r->cache_dir) {
		int64_t nf = have && c.from < from ? c.from : from, nt = have ? c.to : INT64_MIN;
		for (size_t i = *n; i > 0; i--)
			if ((*t)[i - 1] <= closed_to) {
				nt = (*t)[i - 1] > nt ? (*t)[i - 1] : nt;
				break;
			}
		if (nf < to - CG_CACHE_KEEP)
			nf = cg_floor(to - CG_CACHE_KEEP, F->period_ms);
		if (nt >= nf)
			(void)mk_cg_cache_save(r->cache_dir, asset, mk_cg_fields[f], nf, nt, *t, *v, *n);
	}
	if (have) {
		free(c.t);
		free(c.v);
	}
	return rc;
}

enum mk_err mk_cg_fetch(const struct mk_cg_request *r, const int64_t *grid, size_t T, double *cols, char *err,
			size_t errlen)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	pthread_once(&once, cg_curl_init);
	CURL *h = curl_easy_init();
	if (!h)
		abort();
	struct buf b = BUF_INIT;
	struct curl_slist *hdr = NULL;
	char key[600];
	if (snprintf(key, sizeof key, "CG-API-KEY: %s", r->api_key) >= (int)sizeof key || strpbrk(r->api_key, "\r\n")) {
		curl_easy_cleanup(h);
		return snprintf(err, errlen, "the CoinGlass key is not a valid header value"), MK_ERR_HTTP;
	}
	hdr = curl_slist_append(hdr, key);
	hdr = curl_slist_append(hdr, "accept: application/json");
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, mk_curl_collect);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &b);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, r->timeout_ms);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_USERAGENT, "agenttest/" AGENTTEST_VERSION);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	enum mk_err rc = MK_OK;
	int64_t *t = NULL;
	double *v = NULL;
	size_t cap = 0;
	for (size_t a = 0; a < r->n_assets && rc == MK_OK; a++) {
		for (size_t f = 0; f < MK_CG_FIELDS && rc == MK_OK; f++) {
			size_t n = 0;
			rc = cg_field_rows(r, h, &b, r->assets[a], f, &t, &v, &n, &cap, err, errlen);
			if (rc == MK_OK &&
			    kl_align_causal(t, v, n, grid, T, cg_table[f].period_ms, cols + (a * MK_CG_FIELDS + f) * T) != 0) {
				snprintf(err, errlen, "CoinGlass %s %s: repeated row time", r->assets[a], mk_cg_fields[f]);
				rc = MK_ERR_DATA;
			}
		}
		if (rc == MK_OK && r->progress)
			r->progress(r->ud, a + 1, r->n_assets);
	}
	sodium_memzero(key, sizeof key);
	free(t);
	free(v);
	curl_slist_free_all(hdr);
	curl_easy_cleanup(h);
	buf_free(&b);
	return rc;
}

enum mk_err mk_cg_fetch_grid(const struct mk_cg_request *r, int64_t first_ms, int64_t last_ms, int64_t ival_ms,
			     double **cols, char *err, size_t errlen)
{
	struct mk_cg_request q = *r;
	size_t T = (size_t)((last_ms - first_ms) / ival_ms) + 1;
	int64_t *grid = xcalloc(T, sizeof *grid);
	for (size_t i = 0; i < T; i++)
		grid[i] = first_ms + (int64_t)i * ival_ms;
	q.start_ms = first_ms;
	q.end_ms = last_ms;
	*cols = xcalloc(xmul(xmul(q.n_assets, MK_CG_FIELDS), T), sizeof **cols);
	enum mk_err rc = mk_cg_fetch(&q, grid, T, *cols, err, errlen);
	free(grid);
	if (rc != MK_OK) {
		free(*cols);
		*cols = NULL;
	}
	return rc;
}

/*
 * fetch_binance: paginated /api/v3/klines over libcurl (contract in market.h).
 *
 * Theory of operation: mk_fetch() starts `parallel` worker threads; each
 * takes the next asset index under a mutex, walks its window one page of
 * at most 1000 candles at a time (next startTime = last close time + 1)
 * with its own curl easy handle (so the connection is reused page after
 * page), and appends the rows to that asset's series. A page is retried
 * by the rules of market.h; when an asset fails for good it records the
 * error (first one wins) and every worker stops at its next page. The
 * window's end is reached when a page ends at or after end_ms, or when a
 * page is empty for every retry (the server has nothing more), unless the
 * page before it was full: then the server had more, and the asset fails
 * rather than keep a short series. Memory:
 * one response buffer per worker plus the series.
 */
#include "evaluator/runner/market/curl_util.h"
#include "evaluator/runner/market/market.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "buf.h"
#include "xalloc.h"

#define MK_PAGE        1000
#define MK_RESERVE_MAX ((size_t)1 << 22) /* candles reserved up front per asset, at most */
#define MK_RECV_BUF    (256L * 1024)    /* curl's receive buffer: a whole page in few reads */

/* Global libcurl set-up, once per process. */
static void mk_curl_init(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
}

const char *mk_errcode(enum mk_err e)
{
	static const char *const codes[MK_ERR__MAX] = {
		[MK_OK] = "ok",
		[MK_ERR_HTTP] = "fetch_failed",
		[MK_ERR_RATE] = "rate_limited",
		[MK_ERR_DATA] = "bad_upstream_data",
		[MK_ERR_EMPTY] = "no_data",
		[MK_ERR_CANCELLED] = "cancelled",
		[MK_ERR_STORE] = "io_error",
		[MK_ERR_MISMATCH] = "upstream_mismatch",
	};
	return (unsigned)e < MK_ERR__MAX ? codes[e] : "internal";
}

void mk_request_defaults(struct mk_request *r)
{
	memset(r, 0, sizeof *r);
	r->interval = "1m";
	r->parallel = 2;
	r->pace_ms = 50;
	r->timeout_ms = 30000;
	r->rate_wait_ms = 60000;
	r->max_429 = 5;
	r->max_retries = 5;
	r->backoff_ms = 500;
}

int64_t mk_interval_ms(const char *name)
{
	static const struct { const char *n; int64_t ms; } t[] = {
		{ "1m", 60000 }, { "3m", 180000 }, { "5m", 300000 }, { "15m", 900000 },
		{ "30m", 1800000 }, { "1h", 3600000 }, { "4h", 14400000 }, { "1d", 86400000 },
	};
	for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
		if (strcmp(t[i].n, name) == 0)
			return t[i].ms;
	return -1;
}

/* curl progress callback (ud: the job, whose first member is the request):
 * abort the transfer on cancel. */
static int mk_xfer(void *ud, curl_off_t a, curl_off_t b, curl_off_t c, curl_off_t d)
{
	const struct mk_request *r = *(const struct mk_request *const *)ud;
	return r->cancelled && r->cancelled(r->ud) ? 1 : 0;
}

/* Copy base (len bytes) into out without its trailing slashes; sets *us.
 * 0, or -1 if it does not fit. */
static int mk_base_copy(const char *base, size_t len, char *out, size_t outlen, int *us)
{
	while (len > 0 && base[len - 1] == '/')
		len--;
	if (len + 1 > outlen)
		return -1;
	memcpy(out, base, len);
	out[len] = '\0';
	*us = strstr(out, "binance.us") != NULL;
	return 0;
}

/* GET base/api/v3/ping with h (5 s): 1 when it answers 200, else 0 with
 * why filled ("HTTP 503", or curl's reason). */
static int mk_ping(CURL *h, const char *base, char *why, size_t whylen)
{
	char url[1100];
	long code = 0;
	struct buf b = BUF_INIT;
	snprintf(url, sizeof url, "%s/api/v3/ping", base);
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 5000L);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, mk_curl_collect);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &b);
	CURLcode cc = curl_easy_perform(h);
	buf_free(&b);
	if (cc != CURLE_OK) {
		snprintf(why, whylen, "%s", curl_easy_strerror(cc));
		return 0;
	}
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
	if (code == 200)
		return 1;
	snprintf(why, whylen, "HTTP %ld", code);
	return 0;
}

int mk_base_url(const char *configured, const char *list, char *out, size_t outlen, int *us, char *err,
		size_t errlen)
{
	static const char defaults[] = "https://api.binance.com,https://api1.binance.com,https://api.binance.us";
	if (configured && *configured) {
		if (mk_base_copy(configured, strlen(configured), out, outlen, us) == 0)
			return 0;
		snprintf(err, errlen, "BINANCE_API_URL is too long");
		return -1;
	}
	const char *l = list && *list ? list : defaults;
	struct buf tried = BUF_INIT;
	int rc = -1;
	CURL *h = curl_easy_init();
	if (!h)
		buf_puts(&tried, "libcurl could not start");
	for (const char *p = l; h && *p && rc != 0;) {
		size_t len = strcspn(p, ",");
		char base[1024], why[CURL_ERROR_SIZE + 32];
		int u = 0;
		if (len && mk_base_copy(p, len, base, sizeof base, &u) == 0 && base[0]) {
			if (mk_ping(h, base, why, sizeof why)) {
				rc = mk_base_copy(base, strlen(base), out, outlen, us);
				if (rc != 0)
					buf_printf(&tried, "%s%s (too long)", tried.len ? ", " : "", base);
			} else
				buf_printf(&tried, "%s%s (%s)", tried.len ? ", " : "", base, why);
		} else if (len)
			buf_printf(&tried, "%s%.*s (unusable)", tried.len ? ", " : "", (int)(len > 64 ? 64 : len), p);
		p += len + (p[len] == ',');
	}
	curl_easy_cleanup(h);
	if (rc != 0)
		snprintf(err, errlen, "no Binance endpoint answered GET /api/v3/ping with 200 (set BINANCE_API_URL or "
			 "BINANCE_API_URLS); tried: %s", tried.len ? buf_cstr(&tried) : "nothing (empty list)");
	buf_free(&tried);
	return rc;
}

/* Shared state of one mk_fetch(). */
struct mk_job {
	const struct mk_request *r;
	struct kl_series        *out;
	pthread_mutex_t          mu;
	pthread_mutex_t          pmu;       /* serialises the progress callback (held over mu) */
	size_t                   next;      /* next asset to take */
	size_t                   done;      /* assets finished */
	size_t                   rows;      /* candles stored so far */
	enum mk_err              rc;        /* first failure */
	char                     err[512];
};

/* Record the first failure. */
static void mk_fail(struct mk_job *j, enum mk_err rc, const char *msg)
{
	pthread_mutex_lock(&j->mu);
	if (j->rc == MK_OK) {
		j->rc = rc;
		snprintf(j->err, sizeof j->err, "%s", msg);
	}
	pthread_mutex_unlock(&j->mu);
}

/* Count `rows` more candles and `assets` more assets done, then call the
 * progress callback with the totals, one thread at a time (market.h), so
 * the caller sees counts that never go down. */
static void mk_report(struct mk_job *j, size_t rows, size_t assets)
{
	pthread_mutex_lock(&j->pmu);
	pthread_mutex_lock(&j->mu);
	j->rows += rows;
	j->done += assets;
	size_t done = j->done, all = j->rows;
	pthread_mutex_unlock(&j->mu);
	if (j->r->progress)
		j->r->progress(j->r->ud, done, j->r->n_assets, all);
	pthread_mutex_unlock(&j->pmu);
}

/* True once any asset failed or the caller cancelled. */
static int mk_stopping(struct mk_job *j)
{
	pthread_mutex_lock(&j->mu);
	int stop = j->rc != MK_OK;
	pthread_mutex_unlock(&j->mu);
	if (!stop && j->r->cancelled && j->r->cancelled(j->r->ud)) {
		mk_fail(j, MK_ERR_CANCELLED, "cancelled");
		stop = 1;
	}
	return stop;
}

/* Seconds of a Retry-After header (delta-seconds only), or -1. */
static long mk_retry_after(CURL *h)
{
	struct curl_header *hd = NULL;
	if (curl_easy_header(h, "Retry-After", 0, CURLH_HEADER, -1, &hd) != CURLHE_OK || !hd)
		return -1;
	char *end;
	errno = 0;
	long s = strtol(hd->value, &end, 10);
	if (errno || end == hd->value || *end || s < 0 || s > 3600)
		return -1;
	return s;
}

/* One page outcome. */
enum mk_page { PAGE_OK, PAGE_RETRY, PAGE_RATE, PAGE_FATAL };

/* GET one page into b; classify. *code gets the HTTP status (0: none). */
static enum mk_page mk_get(CURL *h, const struct mk_request *r, const char *url, struct buf *b,
			   long *code, long *retry_after, char *why, size_t whylen)
{
	buf_reset(b);
	*code = 0;
	*retry_after = -1;
	curl_easy_setopt(h, CURLOPT_URL, url);
	CURLcode cc = curl_easy_perform(h);
	if (cc != CURLE_OK) {
		snprintf(why, whylen, "%s", curl_easy_strerror(cc));
		return PAGE_RETRY;
	}
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, code);
	if (*code == 200)
		return PAGE_OK;
	snprintf(why, whylen, "HTTP %ld: %.200s", *code, buf_cstr(b));
	if (*code == 429 || *code == 418) {
		*retry_after = mk_retry_after(h);
		return PAGE_RATE;
	}
	if (*code >= 500)
		return PAGE_RETRY;
	return PAGE_FATAL;
}

/* Configure a worker's handle. */
static CURL *mk_handle(struct mk_job *j, struct buf *b)
{
	const struct mk_request *r = j->r;
	CURL *h = curl_easy_init();
	if (!h)
		abort();
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, mk_curl_collect);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, b);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, r->timeout_ms);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, r->timeout_ms < 10000 ? r->timeout_ms : 10000L);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, mk_xfer);
	curl_easy_setopt(h, CURLOPT_XFERINFODATA, j);
	curl_easy_setopt(h, CURLOPT_USERAGENT, "agenttest/" AGENTTEST_VERSION);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(h, CURLOPT_BUFFERSIZE, MK_RECV_BUF);
	return h;
}

/*
 * Map in the series' reserved arrays at once (MADV_POPULATE_WRITE, Linux
 * 5.14+): one call per array instead of one page fault per 4 KiB while
 * pages of candles arrive, which was most of the fetch's kernel time.
 * Best effort: an older kernel refuses the advice and the pages fault in
 * as they are touched.
 */
static void mk_prefault(struct kl_series *s)
{
#ifdef MADV_POPULATE_WRITE
	long pg = sysconf(_SC_PAGESIZE);
	if (pg <= 0)
		return;
	for (int f = -1; f < 5; f++) {
		uintptr_t a = (uintptr_t)(f < 0 ? (void *)s->t : (void *)s->v[f]);
		size_t each = f < 0 ? sizeof *s->t : sizeof *s->v[0];
		uintptr_t lo = (a + (uintptr_t)pg - 1) & ~((uintptr_t)pg - 1), hi = (a + s->cap * each) & ~((uintptr_t)pg - 1);
		if (a && hi > lo)
			(void)madvise((void *)lo, hi - lo, MADV_POPULATE_WRITE);
	}
#else
	(void)s;
#endif
}

/* Fetch asset i; returns 0 or records the failure. */
static int mk_asset(struct mk_job *j, CURL *h, struct buf *b, size_t i)
{
	const struct mk_request *r = j->r;
	struct kl_series *s = &j->out[i];
	int64_t ival = mk_interval_ms(r->interval), from = r->start_ms;
	int64_t end = r->end_each ? r->end_each[i] : r->end_ms;   /* this asset's end of the window */
	int n429 = 0, nretry = 0;
	size_t prev_rows = 0; /* rows of the last page that had any */
	char url[1024], why[512] = "", msg[512];
	/* the window's candle count up front: pages append without moving the series */
	uint64_t want = ival > 0 ? (uint64_t)(end - from) / (uint64_t)ival + 1 : 0;
	kl_series_reserve(s, s->n + (want < MK_RESERVE_MAX ? (size_t)want : MK_RESERVE_MAX));
	mk_prefault(s);
	while (from <= end) {
		if (mk_stopping(j))
			return -1;
		snprintf(url, sizeof url, "%s/api/v3/klines?symbol=%sUSDT&interval=%s&limit=%d&startTime=%lld&endTime=%lld",
			 r->base_url, r->assets[i], r->interval, MK_PAGE, (long long)from, (long long)end);
		long code, ra;
		enum mk_page pg = mk_get(h, r, url, b, &code, &ra, why, sizeof why);
		size_t rows = 0;
		int64_t last_close = -1;
		if (pg == PAGE_OK) {
			size_t before = s->n;
			enum kl_err ke = kl_parse_page(buf_cstr(b), b->len, ival, r->start_ms, end, r->now_ms,
						       s, &rows, &last_close, why, sizeof why);
			if (ke == KL_ERR_ROW || ke == KL_ERR_GRID) {
				snprintf(msg, sizeof msg, "%.32s: bad kline from %lld: %.300s", r->assets[i], (long long)from, why);
				mk_fail(j, MK_ERR_DATA, msg);
				return -1;
			}
			if (ke == KL_ERR_JSON)
				pg = PAGE_RETRY;
			else if (rows == 0 && from + ival <= end && nretry < r->max_retries) {
				snprintf(why, sizeof why, "empty page before the end of the window");
				pg = PAGE_RETRY;
			} else {
				mk_report(j, s->n - before, 0);
			}
		}
		if (pg == PAGE_RATE) {
			if (++n429 >= r->max_429) {
				snprintf(msg, sizeof msg, "%.32s: rate limited %d times in a row fetching %lld..%lld, giving up (%.300s)",
					 r->assets[i], n429, (long long)from, (long long)end, why);
				mk_fail(j, MK_ERR_RATE, msg);
				return -1;
			}
			if (mk_nap(r->cancelled, r->ud, ra >= 0 ? ra * 1000 : r->rate_wait_ms))
				return mk_stopping(j), -1;
			continue;
		}
		n429 = 0;
		if (pg == PAGE_RETRY) {
			if (++nretry > r->max_retries) {
				snprintf(msg, sizeof msg, "%.32s: fetching %lld..%lld failed after %d attempts: %.300s",
					 r->assets[i], (long long)from, (long long)end, nretry, why);
				mk_fail(j, MK_ERR_HTTP, msg);
				return -1;
			}
			if (mk_nap(r->cancelled, r->ud, r->backoff_ms << (nretry - 1 < 6 ? nretry - 1 : 6)))
				return mk_stopping(j), -1;
			continue;
		}
		if (pg == PAGE_FATAL) {
			snprintf(msg, sizeof msg, "%.32s: fetching %lld..%lld refused: %.300s", r->assets[i], (long long)from,
				 (long long)end, why);
			mk_fail(j, MK_ERR_HTTP, msg);
			return -1;
		}
		if (rows == 0 && prev_rows == MK_PAGE && from + ival <= end) {
			/* a full page says the server had candles up to its end, yet
			 * every retry of the next one was empty: a short series otherwise */
			snprintf(msg, sizeof msg, "%.32s: fetching %lld..%lld failed after %d attempts: empty pages right "
				 "after a full one", r->assets[i], (long long)from, (long long)end, nretry + 1);
			mk_fail(j, MK_ERR_HTTP, msg);
			return -1;
		}
		nretry = 0;
		if (rows == 0 || last_close + 1 <= from)
			break; /* nothing more from the server in the window */
		prev_rows = rows;
		from = last_close + 1;
		if (from <= end && r->pace_ms > 0 && mk_nap(r->cancelled, r->ud, r->pace_ms))
			return mk_stopping(j), -1;
	}
	if (s->n == 0) {
		snprintf(msg, sizeof msg, "%s: no candle at all in %lld..%lld", r->assets[i], (long long)r->start_ms,
			 (long long)end);
		mk_fail(j, MK_ERR_EMPTY, msg);
		return -1;
	}
	return 0;
}

/* Worker thread: take assets until none is left or the job stops. */
static void *mk_worker(void *ud)
{
	struct mk_job *j = ud;
	struct buf b = BUF_INIT;
	CURL *h = mk_handle(j, &b);
	for (;;) {
		pthread_mutex_lock(&j->mu);
		size_t i = j->next < j->r->n_assets && j->rc == MK_OK ? j->next++ : SIZE_MAX;
		pthread_mutex_unlock(&j->mu);
		if (i == SIZE_MAX || mk_asset(j, h, &b, i) != 0)
			break;
		mk_report(j, 0, 1);
	}
	curl_easy_cleanup(h);
	buf_free(&b);
	return NULL;
}

enum mk_err mk_fetch(const struct mk_request *r, struct kl_series *out, char *err, size_t errlen)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	pthread_once(&once, mk_curl_init);
	if (mk_interval_ms(r->interval) < 0 || r->n_assets == 0 || r->start_ms > r->end_ms) {
		snprintf(err, errlen, "bad request: interval %s, %zu assets, window %lld..%lld", r->interval,
			 r->n_assets, (long long)r->start_ms, (long long)r->end_ms);
		return MK_ERR_DATA;
	}
	struct mk_job j = { .r = r, .out = out, .rc = MK_OK };
	pthread_mutex_init(&j.mu, NULL);
	pthread_mutex_init(&j.pmu, NULL);
	int nt = r->parallel < 1 ? 1 : r->parallel > 8 ? 8 : r->parallel;
	if ((size_t)nt > r->n_assets)
		nt = (int)r->n_assets;
	pthread_t th[8];
	int started = 0;
	for (int t = 0; t < nt; t++)
		if (pthread_create(&th[t], NULL, mk_worker, &j) == 0)
			started++;
	if (started == 0)
		mk_worker(&j);
	for (int t = 0; t < started; t++)
		pthread_join(th[t], NULL);
	pthread_mutex_destroy(&j.mu);
	pthread_mutex_destroy(&j.pmu);
	if (j.rc != MK_OK)
		snprintf(err, errlen, "%s", j.err);
	return j.rc;
}


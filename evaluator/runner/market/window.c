/*
 * window: the candles of a window of days_back days that ends at the last
 * bar the server actually served (contract in market.h), shared by the
 * runner's prefetch job and `agenttest data fetch`.
 *
 * Why: a version's label is `<window>-<last bar>`, so everything stored
 * under it must be a function of that last bar. The fetch's end follows
 * the wall clock (the last closed candle), but Binance sometimes serves
 * the newest closed candle a little late; a window whose first bar also
 * followed the clock then gave two fetches a minute apart the same last
 * bar (same label) and different first bars (another hash: a `conflict`
 * at registration). Here the first bar is derived from the last bar
 * served: first = last − days_back days + one interval (days_back days of
 * candles, ending with the last bar's close).
 *
 * The fetch asks for [clock end − days_back days + interval, clock end];
 * when the last bar served is earlier than the clock's end, the bars the
 * window needs before that start are fetched in a second, short request
 * per asset (up to its first candle fetched) and put in front; then every
 * series is trimmed to the window.
 */
#include "evaluator/runner/market/market.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xalloc.h"

#define MK_DAY_MS INT64_C(86400000)

int64_t mk_window_first(int64_t last_ms, long days_back, int64_t ival_ms)
{
	return last_ms - (int64_t)days_back * MK_DAY_MS + ival_ms;
}

enum mk_err mk_window_trim(const char *const *assets, struct kl_series *s, size_t n, long days_back,
			   int64_t ival_ms, int64_t *first_ms, int64_t *last_ms, char *err, size_t errlen)
{
	int64_t last = INT64_MIN;
	for (size_t i = 0; i < n; i++)
		if (s[i].n && s[i].t[s[i].n - 1] > last)
			last = s[i].t[s[i].n - 1];
	if (last == INT64_MIN) {
		snprintf(err, errlen, "no candle at all in the window");
		return MK_ERR_EMPTY;
	}
	int64_t want = mk_window_first(last, days_back, ival_ms), first = INT64_MAX;
	for (size_t i = 0; i < n; i++) {
		size_t k = kl_series_lower_bound(&s[i], want);
		if (k == s[i].n) {   /* the same error as an asset without a candle in the fetched range */
			snprintf(err, errlen, "%s: no candle at all in %lld..%lld", assets[i], (long long)want,
				 (long long)last);
			return MK_ERR_EMPTY;
		}
		if (k > 0) {
			size_t keep = s[i].n - k;
			memmove(s[i].t, s[i].t + k, keep * sizeof *s[i].t);
			for (int f = 0; f < 5; f++)
				memmove(s[i].v[f], s[i].v[f] + k, keep * sizeof *s[i].v[f]);
			s[i].n = keep;
		}
		if (s[i].t[0] < first)
			first = s[i].t[0];
	}
	*first_ms = first;
	*last_ms = last;
	return MK_OK;
}

void mk_series_prepend(struct kl_series *s, struct kl_series *head)
{
	size_t h = head->n;
	if (s->n)
		while (h > 0 && head->t[h - 1] >= s->t[0])
			h--;   /* only what lies before s */
	if (h == 0) {
		kl_series_free(head);
		return;
	}
	kl_series_reserve(head, h + s->n);
	memcpy(head->t + h, s->t, s->n * sizeof *s->t);
	for (int f = 0; f < 5; f++)
		memcpy(head->v[f] + h, s->v[f], s->n * sizeof *s->v[f]);
	head->n = h + s->n;
	head->dup_refused += s->dup_refused;
	head->order_refused += s->order_refused;
	head->open_dropped += s->open_dropped;
	kl_series_free(s);
	*s = *head;
	memset(head, 0, sizeof *head);
}

enum mk_err mk_fetch_window(struct mk_request *r, long days_back, struct kl_series *out, int64_t *first_ms,
			    int64_t *last_ms, char *err, size_t errlen)
{
	int64_t ival = mk_interval_ms(r->interval);
	if (ival <= 0 || days_back < 1) {
		snprintf(err, errlen, "bad request: interval %s, %ld days back", r->interval, days_back);
		return MK_ERR_DATA;
	}
	r->end_ms = (r->now_ms / ival) * ival - ival;   /* the last closed candle's open time */
	r->start_ms = mk_window_first(r->end_ms, days_back, ival);
	enum mk_err rc = mk_fetch(r, out, err, errlen);
	if (rc != MK_OK)
		return rc;
	int64_t last = INT64_MIN;
	for (size_t i = 0; i < r->n_assets; i++)
		if (out[i].n && out[i].t[out[i].n - 1] > last)
			last = out[i].t[out[i].n - 1];
	int64_t want = mk_window_first(last, days_back, ival);
	if (want < r->start_ms) {
		/* The newest candles came late: the window begins before what was
		 * asked for. Each asset's head runs up to its first candle fetched,
		 * so the server always has a candle in it (never an empty page
		 * retried for an asset listed later; a gap at the fetch's start is
		 * looked behind); prepend keeps what lies before that candle. */
		struct mk_request h = *r;
		int64_t *ends = xcalloc(r->n_assets, sizeof *ends);
		h.start_ms = want;
		h.end_ms = want;
		for (size_t i = 0; i < r->n_assets; i++) {
			ends[i] = out[i].t[0];
			h.end_ms = ends[i] > h.end_ms ? ends[i] : h.end_ms;
		}
		h.end_each = ends;
		h.progress = NULL;   /* the progress counted the assets once */
		struct kl_series *head = xcalloc(r->n_assets, sizeof *head);
		rc = mk_fetch(&h, head, err, errlen);
		for (size_t i = 0; i < r->n_assets; i++) {
			if (rc == MK_OK)
				mk_series_prepend(&out[i], &head[i]);
			kl_series_free(&head[i]);
		}
		free(head);
		free(ends);
		if (rc != MK_OK)
			return rc;
	}
	return mk_window_trim(r->assets, out, r->n_assets, days_back, ival, first_ms, last_ms, err, errlen);
}

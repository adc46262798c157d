/*
 * klines: Binance kline pages → series → one grid, quality reports, causal
 * alignment of slower series (the contract is in klines.h).
 *
 * Memory: a series grows by doubling (struct-of-arrays, 48 bytes a candle)
 * unless kl_series_reserve() sized it first (the fetcher reserves the
 * window: no copy, no remap while pages arrive);
 * kl_grid() writes into caller columns and allocates only the gap list.
 */
#include "evaluator/klines.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xalloc.h"

#define KL_JSON_DEPTH 4

void kl_series_free(struct kl_series *s)
{
	free(s->t);
	for (int f = 0; f < 5; f++)
		free(s->v[f]);
	memset(s, 0, sizeof *s);
}

void kl_series_reserve(struct kl_series *s, size_t cap)
{
	if (cap <= s->cap)
		return;
	s->cap = cap;
	s->t = xreallocarray(s->t, s->cap, sizeof *s->t);
	for (int f = 0; f < 5; f++)
		s->v[f] = xreallocarray(s->v[f], s->cap, sizeof *s->v[f]);
}

size_t kl_series_lower_bound(const struct kl_series *s, int64_t t)
{
	size_t lo = 0, hi = s->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (s->t[mid] < t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int kl_series_push(struct kl_series *s, int64_t t, const double v[5])
{
	if (s->n > 0 && t <= s->t[s->n - 1]) {
		size_t lo = kl_series_lower_bound(s, t); /* is t already stored? */
		if (s->t[lo] == t)
			s->dup_refused++;
		else
			s->order_refused++;
		return 1;
	}
	if (s->n == s->cap)
		kl_series_reserve(s, s->cap ? xmul(s->cap, 2) : 4096);
	s->t[s->n] = t;
	for (int f = 0; f < 5; f++)
		s->v[f][s->n] = v[f];
	s->n++;
	return 0;
}

/* A JSON integer (or integral string) → int64; -1 if neither. */
static int kl_int(json_object *o, int64_t *out)
{
	if (json_object_is_type(o, json_type_int)) {
		errno = 0;
		*out = json_object_get_int64(o);
		return errno ? -1 : 0;
	}
	return -1;
}

/* A Binance decimal string (or JSON number) → finite double; -1 otherwise. */
static int kl_num(json_object *o, double *out)
{
	if (json_object_is_type(o, json_type_string)) {
		const char *s = json_object_get_string(o);
		char *end;
		errno = 0;
		double d = strtod(s, &end);
		if (errno || end == s || *end || !isfinite(d))
			return -1;
		*out = d;
		return 0;
	}
	if (json_object_is_type(o, json_type_double) || json_object_is_type(o, json_type_int)) {
		*out = json_object_get_double(o);
		return isfinite(*out) ? 0 : -1;
	}
	return -1;
}

/* One row [open_time, o, h, l, c, v, close_time, ...] → fields; KL_ERR_ROW
 * with msg on anything else. */
static enum kl_err kl_row(json_object *row, size_t i, int64_t *t, int64_t *ct, double v[5],
			  char *msg, size_t msglen)
{
	if (!json_object_is_type(row, json_type_array) || json_object_array_length(row) < 7) {
		snprintf(msg, msglen, "row %zu is not a kline (an array of at least 7 items)", i);
		return KL_ERR_ROW;
	}
	if (kl_int(json_object_array_get_idx(row, 0), t) || kl_int(json_object_array_get_idx(row, 6), ct)) {
		snprintf(msg, msglen, "row %zu: open or close time is not an integer", i);
		return KL_ERR_ROW;
	}
	for (int f = 0; f < 5; f++)
		if (kl_num(json_object_array_get_idx(row, (size_t)f + 1), &v[f])) {
			snprintf(msg, msglen, "row %zu: field %d is not a finite number", i, f + 1);
			return KL_ERR_ROW;
		}
	if (!(v[0] > 0 && v[1] > 0 && v[2] > 0 && v[3] > 0 && v[4] >= 0) || v[2] > fmin(v[0], v[3]) ||
	    v[1] < fmax(v[0], v[3])) {
		snprintf(msg, msglen, "row %zu (open time %lld): prices not positive or low/high inconsistent",
			 i, (long long)*t);
		return KL_ERR_ROW;
	}
	return KL_OK;
}

enum kl_err kl_parse_page(const char *text, size_t len, int64_t interval_ms, int64_t from_ms,
			  int64_t to_ms, int64_t now_ms, struct kl_series *s, size_t *rows,
			  int64_t *last_close, char *msg, size_t msglen)
{
	if (interval_ms > 0 && kl_scan_page(text, len, interval_ms, from_ms, to_ms, now_ms, s, rows, last_close))
		return KL_OK;
	return kl_parse_page_json(text, len, interval_ms, from_ms, to_ms, now_ms, s, rows, last_close, msg, msglen);
}

enum kl_err kl_parse_page_json(const char *text, size_t len, int64_t interval_ms, int64_t from_ms, int64_t to_ms,
			       int64_t now_ms, struct kl_series *s, size_t *rows, int64_t *last_close, char *msg,
			       size_t msglen)
{
	enum kl_err rc = KL_OK;
	json_tokener *tok = json_tokener_new_ex(KL_JSON_DEPTH);
	json_object *root = NULL;
	*rows = 0;
	*last_close = -1;
	if (!tok)
		abort();
	root = json_tokener_parse_ex(tok, text, (int)len);
	if (!root || json_tokener_get_error(tok) != json_tokener_success ||
	    (size_t)json_tokener_get_parse_end(tok) != len) {
		snprintf(msg, msglen, "answer is not JSON (or has trailing bytes)");
		rc = KL_ERR_JSON;
		goto out;
	}
	if (!json_object_is_type(root, json_type_array)) {
		snprintf(msg, msglen, "answer is JSON but not a list: %.120s", json_object_to_json_string(root));
		rc = KL_ERR_JSON;
		goto out;
	}
	size_t n = json_object_array_length(root);
	for (size_t i = 0; i < n; i++) {
		int64_t t, ct;
		double v[5];
		rc = kl_row(json_object_array_get_idx(root, i), i, &t, &ct, v, msg, msglen);
		if (rc != KL_OK)
			goto out;
		if (t % interval_ms != 0 || ct != t + interval_ms - 1) {
			snprintf(msg, msglen, "row %zu: open time %lld / close time %lld off the %lld ms grid", i,
				 (long long)t, (long long)ct, (long long)interval_ms);
			rc = KL_ERR_GRID;
			goto out;
		}
		*last_close = ct;
		if (t < from_ms || t > to_ms)
			continue;
		if (ct > now_ms) {
			s->open_dropped++;
			continue;
		}
		kl_series_push(s, t, v);
	}
	*rows = n;
out:
	json_object_put(root);
	json_tokener_free(tok);
	return rc;
}

void kl_quality_free(struct kl_quality *q)
{
	free(q->gaps);
	q->gaps = NULL;
	q->n_gaps = 0;
}

/* Record a gap of len steps at start. */
static void kl_gap_add(struct kl_quality *q, size_t *cap, int64_t start, int64_t len)
{
	if (q->n_gaps == *cap) {
		*cap = *cap ? *cap * 2 : 16;
		q->gaps = xreallocarray(q->gaps, *cap, sizeof *q->gaps);
	}
	q->gaps[q->n_gaps].start_ms = start;
	q->gaps[q->n_gaps].len = len;
	q->n_gaps++;
}

void kl_grid(const struct kl_series *s, int64_t first_ms, int64_t last_ms, int64_t interval_ms,
	     double *const col[5], struct kl_quality *q)
{
	size_t T = (size_t)((last_ms - first_ms) / interval_ms) + 1, cap = 0;
	memset(q, 0, sizeof *q);
	q->expected = T;
	q->first_ms = q->last_ms = -1;
	q->dup_refused = s->dup_refused;
	q->order_refused = s->order_refused;
	q->open_dropped = s->open_dropped;
	for (int f = 0; f < 5; f++)
		for (size_t i = 0; i < T; i++)
			col[f][i] = NAN;
	size_t next = 0; /* first grid index not yet accounted for */
	for (size_t k = 0; k < s->n; k++) {
		int64_t t = s->t[k];
		if (t < first_ms || t > last_ms)
			continue;
		size_t i = (size_t)((t - first_ms) / interval_ms);
		if (i > next)
			kl_gap_add(q, &cap, first_ms + (int64_t)next * interval_ms, (int64_t)(i - next));
		for (int f = 0; f < 5; f++)
			col[f][i] = s->v[f][k];
		if (q->rows == 0)
			q->first_ms = t;
		q->last_ms = t;
		q->rows++;
		next = i + 1;
	}
	if (next < T)
		kl_gap_add(q, &cap, first_ms + (int64_t)next * interval_ms, (int64_t)(T - next));
	q->coverage = T ? (double)q->rows / (double)T : 0.0;
}

json_object *kl_quality_json(const struct kl_quality *q, size_t max_gaps)
{
	json_object *o = json_object_new_object(), *g = json_object_new_array();
	json_object_object_add(o, "rows", json_object_new_int64((int64_t)q->rows));
	json_object_object_add(o, "expected", json_object_new_int64((int64_t)q->expected));
	json_object_object_add(o, "coverage", json_object_new_double(q->coverage));
	json_object_object_add(o, "n_gaps", json_object_new_int64((int64_t)q->n_gaps));
	for (size_t i = 0; i < q->n_gaps && i < max_gaps; i++) {
		json_object *p = json_object_new_array();
		json_object_array_add(p, json_object_new_int64(q->gaps[i].start_ms));
		json_object_array_add(p, json_object_new_int64(q->gaps[i].len));
		json_object_array_add(g, p);
	}
	json_object_object_add(o, "gaps", g);
	json_object_object_add(o, "duplicates_refused", json_object_new_int64((int64_t)q->dup_refused));
	json_object_object_add(o, "out_of_order_refused", json_object_new_int64((int64_t)q->order_refused));
	json_object_object_add(o, "open_candles_dropped", json_object_new_int64((int64_t)q->open_dropped));
	json_object_object_add(o, "first_timestamp_ms", json_object_new_int64(q->first_ms));
	json_object_object_add(o, "last_timestamp_ms", json_object_new_int64(q->last_ms));
	return o;
}

/* A candle of the aligned series. */
struct kl_pair {
	int64_t t;
	double  v;
};

/* qsort order of candles by open time. */
static int kl_cmp_pair(const void *a, const void *b)
{
	int64_t x = ((const struct kl_pair *)a)->t, y = ((const struct kl_pair *)b)->t;
	return (x > y) - (x < y);
}

int kl_align_causal(const int64_t *copen, const double *cval, size_t n, const int64_t *m,
		    size_t nm, int64_t period_ms, double *out)
{
	struct kl_pair *p = xcalloc(n ? n : 1, sizeof *p);
	int rc = 0;
	for (size_t i = 0; i < n; i++) {
		p[i].t = copen[i];
		p[i].v = cval[i];
	}
	qsort(p, n, sizeof *p, kl_cmp_pair);
	for (size_t i = 1; i < n; i++)
		if (p[i].t == p[i - 1].t)
			rc = -1;
	size_t k = 0; /* candles whose open time is <= the current threshold */
	for (size_t j = 0; rc == 0 && j < nm; j++) {
		while (k < n && p[k].t <= m[j] - period_ms)
			k++;
		out[j] = k ? p[k - 1].v : NAN;
	}
	free(p);
	return rc;
}

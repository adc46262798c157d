/*
 * klines_scan: the fast path of kl_parse_page() (klines.h) for the shape
 * Binance actually sends: a list of rows [open_time, "open", "high", "low",
 * "close", "volume", close_time, ...more strings or numbers], integers
 * unquoted, prices as plain decimal strings, no escapes.
 *
 * It builds no JSON tree: one pass over the bytes; each price string is
 * converted in place by an exact fast path (ks_decimal) or strtod(), both
 * giving the correctly rounded double the json-c path's strtod() gives for
 * the same characters, so the values are bit-identical; the same row checks. It
 * accepts a page only when the json-c path would accept it with the same
 * result; on anything else (another shape, an escape, a bad value, a row
 * off the grid) it undoes what it appended and says "not handled", and the
 * caller runs the json-c path, which produces the one error message.
 */
#include "evaluator/klines.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Cursor over the page. */
struct ks {
	const char *p, *end;
};

/* Skip JSON whitespace. */
static void ks_ws(struct ks *k)
{
	while (k->p < k->end && (*k->p == ' ' || *k->p == '\n' || *k->p == '\r' || *k->p == '\t'))
		k->p++;
}

/* Expect character c (after whitespace); 0 or -1. */
static int ks_char(struct ks *k, char c)
{
	ks_ws(k);
	if (k->p >= k->end || *k->p != c)
		return -1;
	k->p++;
	return 0;
}

/* A non-negative JSON integer of at most 18 digits → *v; 0 or -1. */
static int ks_int(struct ks *k, int64_t *v)
{
	ks_ws(k);
	const char *s = k->p;
	int64_t x = 0;
	while (k->p < k->end && *k->p >= '0' && *k->p <= '9' && k->p - s < 18)
		x = x * 10 + (*k->p++ - '0');
	if (k->p == s || (k->p < k->end && *k->p >= '0' && *k->p <= '9') || (k->p - s > 1 && *s == '0'))
		return -1;
	*v = x;
	return 0;
}

/* True for a character of a plain decimal number. */
static int ks_numch(char c)
{
	return (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '+' || c == 'e' || c == 'E';
}

/* Exact powers of ten representable in a double. */
static const double ks_pow10[23] = { 1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
				     1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22 };

/*
 * Clinger's fast path, in the same pass that finds the closing quote:
 * "digits[.digits]" (no sign or exponent) whose significant digits,
 * trailing zeros dropped, form an integer m < 10^15 with at most 22
 * decimals: m and 10^decimals are exact doubles, so the one IEEE division
 * m / 10^decimals is the correctly rounded value, the same double strtod()
 * returns. Returns the position of the closing quote with *v set, or NULL
 * when the fast path does not apply (the caller then uses strtod).
 */
static const char *ks_decimal(const char *p, const char *end, double *v)
{
	uint64_t m = 0;
	int digits = 0, decimals = 0, dot = 0, zeros = 0, any = 0;
	for (; p < end && *p != '"'; p++) {
		unsigned d = (unsigned)(*p - '0');
		if (d > 9) {
			if (*p != '.' || dot++)
				return NULL;
			continue;
		}
		any = 1;
		if (d == 0 && dot) {
			zeros++; /* held back: significant only if a non-zero digit follows */
			continue;
		}
		for (; zeros > 0; zeros--) {
			m *= 10;
			decimals++;
			digits += m != 0;
		}
		m = m * 10 + d;
		decimals += dot;
		digits += m != 0;
		if (digits > 15)
			return NULL;
	}
	if (p >= end || !any || decimals > 22)
		return NULL;
	*v = (double)m / ks_pow10[decimals];
	return p;
}

/* A quoted plain decimal → finite *v (the fast path, else strtod on the
 * characters); 0 or -1. */
static int ks_price(struct ks *k, double *v)
{
	if (ks_char(k, '"') != 0)
		return -1;
	const char *q = ks_decimal(k->p, k->end, v);
	if (q) {
		k->p = q + 1;
		return 0;
	}
	const char *s = k->p;
	while (k->p < k->end && ks_numch(*k->p))
		k->p++;
	if (k->p == s || k->p >= k->end || *k->p != '"')
		return -1;
	char *e;
	errno = 0;
	*v = strtod(s, &e);
	if (errno || e != k->p || !isfinite(*v))
		return -1;
	k->p++;
	return 0;
}

/* Skip one trailing item: a string of printable ASCII without escapes, or
 * an integer (anything else is left to the full parser). */
static int ks_skip(struct ks *k)
{
	ks_ws(k);
	if (k->p < k->end && *k->p == '"') {
		const char *q = k->p + 1;
		while (q < k->end && *q != '"') {
			unsigned char ch = (unsigned char)*q++;
			if (ch < 0x20 || ch >= 0x7f || ch == '\\')
				return -1;
		}
		if (q >= k->end)
			return -1;
		k->p = q + 1;
		return 0;
	}
	/* an unquoted item: a JSON integer only (-?(0|[1-9][0-9]*)) */
	if (k->p < k->end && *k->p == '-')
		k->p++;
	const char *s = k->p;
	while (k->p < k->end && *k->p >= '0' && *k->p <= '9')
		k->p++;
	if (k->p == s || (*s == '0' && k->p - s > 1))
		return -1;
	return k->p < k->end && (*k->p == ',' || *k->p == ']' || *k->p == ' ' || *k->p == '\n' || *k->p == '\r' ||
				 *k->p == '\t') ? 0 : -1;
}

/* One row into t, ct, v; 0 or -1 (not the fast shape, or a value the
 * json-c path refuses). */
static int ks_row(struct ks *k, int64_t *t, int64_t *ct, double v[5])
{
	if (ks_char(k, '[') != 0 || ks_int(k, t) != 0)
		return -1;
	for (int f = 0; f < 5; f++)
		if (ks_char(k, ',') != 0 || ks_price(k, &v[f]) != 0)
			return -1;
	if (ks_char(k, ',') != 0 || ks_int(k, ct) != 0)
		return -1;
	for (;;) {
		ks_ws(k);
		if (k->p < k->end && *k->p == ']') {
			k->p++;
			break;
		}
		if (ks_char(k, ',') != 0 || ks_skip(k) != 0)
			return -1;
	}
	if (!(v[0] > 0 && v[1] > 0 && v[2] > 0 && v[3] > 0 && v[4] >= 0) || v[2] > fmin(v[0], v[3]) ||
	    v[1] < fmax(v[0], v[3]))
		return -1;
	return 0;
}

int kl_scan_page(const char *text, size_t len, int64_t interval_ms, int64_t from_ms, int64_t to_ms,
		 int64_t now_ms, struct kl_series *s, size_t *rows, int64_t *last_close)
{
	struct ks k = { text, text + len };
	size_t n0 = s->n, dup0 = s->dup_refused, ord0 = s->order_refused, open0 = s->open_dropped, n = 0;
	int64_t lc = -1;
	if (ks_char(&k, '[') != 0)
		goto undo;
	ks_ws(&k);
	if (k.p < k.end && *k.p == ']') {
		k.p++;
	} else {
		for (;;) {
			int64_t t, ct;
			double v[5];
			if (ks_row(&k, &t, &ct, v) != 0 || t % interval_ms != 0 || ct != t + interval_ms - 1)
				goto undo;
			n++;
			lc = ct;
			if (t >= from_ms && t <= to_ms) {
				if (ct > now_ms)
					s->open_dropped++;
				else
					kl_series_push(s, t, v);
			}
			ks_ws(&k);
			if (k.p < k.end && *k.p == ',') {
				k.p++;
				continue;
			}
			if (ks_char(&k, ']') != 0)
				goto undo;
			break;
		}
	}
	ks_ws(&k);
	if (k.p != k.end)
		goto undo;
	*rows = n;
	*last_close = lc;
	return 1;
undo:
	s->n = n0;
	s->dup_refused = dup0;
	s->order_refused = ord0;
	s->open_dropped = open0;
	return 0;
}

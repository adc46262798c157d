/* klines: Binance page parsing (open candle, duplicates, non-list, bad rows),
 * grid placement with gaps and the quality report, causal alignment
 * (spec/mantis.md §4.3 and its tests 17/18: hourly and daily candles). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "evaluator/klines.h"

#define M 60000

static enum kl_err parse(const char *txt, int64_t now, struct kl_series *s, size_t *rows, int64_t *lc)
{
	char msg[256];
	return kl_parse_page(txt, strlen(txt), M, 0, INT64_MAX, now, s, rows, lc, msg, sizeof msg);
}

static void test_page_rows_open_candle_and_duplicates(void **st)
{
	(void)st;
	struct kl_series s = { 0 };
	size_t rows;
	int64_t lc;
	const char *p = "[[0,\"10\",\"11\",\"9\",\"10.5\",\"3\",59999,\"0\",1,\"0\",\"0\",\"0\"],"
			"[60000,\"10.5\",\"12\",\"10\",\"11\",\"0\",119999,\"0\",1,\"0\",\"0\",\"0\"],"
			"[120000,\"11\",\"11\",\"11\",\"11\",\"1\",179999,\"0\",1,\"0\",\"0\",\"0\"]]";
	/* now = 150000: the third candle is still open, never stored */
	assert_int_equal(parse(p, 150000, &s, &rows, &lc), KL_OK);
	assert_int_equal(rows, 3);
	assert_int_equal(lc, 179999);
	assert_int_equal(s.n, 2);
	assert_int_equal(s.open_dropped, 1);
	assert_true(s.v[3][1] == 11.0 && s.v[4][1] == 0.0);
	/* the same page again: two duplicates refused, the third now closed */
	assert_int_equal(parse(p, 200000, &s, &rows, &lc), KL_OK);
	assert_int_equal(s.n, 3);
	assert_int_equal(s.dup_refused, 2);
	/* an older row after a newer one is refused as out of order */
	const double v[5] = { 1, 1, 1, 1, 1 };
	assert_int_equal(kl_series_push(&s, 60000 + M / 2, v), 1);
	assert_int_equal(s.order_refused, 1);
	kl_series_free(&s);
}

static void test_page_errors(void **st)
{
	(void)st;
	struct kl_series s = { 0 };
	size_t rows;
	int64_t lc;
	assert_int_equal(parse("{\"code\":-1121,\"msg\":\"Invalid symbol.\"}", 1, &s, &rows, &lc), KL_ERR_JSON);
	assert_int_equal(parse("[[0,\"1\"", 1, &s, &rows, &lc), KL_ERR_JSON);
	assert_int_equal(parse("[] x", 1, &s, &rows, &lc), KL_ERR_JSON);
	assert_int_equal(parse("[[0,\"1\",\"1\",\"1\",\"1\",\"1\"]]", 1 << 30, &s, &rows, &lc), KL_ERR_ROW);
	assert_int_equal(parse("[[0,\"1\",\"2\",\"1\",\"x\",\"1\",59999]]", 1 << 30, &s, &rows, &lc), KL_ERR_ROW);
	/* high below close */
	assert_int_equal(parse("[[0,\"1\",\"1\",\"1\",\"2\",\"1\",59999]]", 1 << 30, &s, &rows, &lc), KL_ERR_ROW);
	/* off the minute grid */
	assert_int_equal(parse("[[5,\"1\",\"1\",\"1\",\"1\",\"1\",60004]]", 1 << 30, &s, &rows, &lc), KL_ERR_GRID);
	assert_int_equal(parse("[]", 1, &s, &rows, &lc), KL_OK);
	assert_int_equal(rows, 0);
	assert_int_equal(lc, -1);
	assert_int_equal(s.n, 0);
	kl_series_free(&s);
}

/* A reserved series appends without moving and keeps what it held; a
 * smaller reservation never shrinks it. */
static void test_series_reserve(void **st)
{
	(void)st;
	struct kl_series s = { 0 };
	double v[5] = { 1, 2, 0.5, 1.5, 10 };
	assert_int_equal(kl_series_push(&s, 60000, v), 0);
	kl_series_reserve(&s, 100000);
	assert_int_equal(s.cap, 100000);
	assert_int_equal(s.n, 1);
	assert_true(s.t[0] == 60000 && s.v[3][0] == 1.5);
	const int64_t *t0 = s.t;
	for (int64_t i = 2; i <= 100000; i++)
		assert_int_equal(kl_series_push(&s, i * 60000, v), 0);
	assert_ptr_equal(s.t, t0);          /* no move while within the reservation */
	kl_series_reserve(&s, 10);
	assert_int_equal(s.cap, 100000);
	assert_int_equal(kl_series_push(&s, 100001 * 60000LL, v), 0); /* past it: grows */
	assert_true(s.cap > 100000 && s.n == 100001 && s.t[99999] == 100000 * 60000LL);
	kl_series_free(&s);
}

static void test_grid_gaps_and_quality(void **st)
{
	(void)st;
	struct kl_series s = { 0 };
	const double v[5] = { 2, 3, 1, 2, 5 };
	/* minutes 1, 2, 5, 6 of a grid 0..9 */
	int64_t mins[] = { 1, 2, 5, 6 };
	for (size_t i = 0; i < 4; i++)
		assert_int_equal(kl_series_push(&s, mins[i] * M, v), 0);
	double c[5][10];
	double *const col[5] = { c[0], c[1], c[2], c[3], c[4] };
	struct kl_quality q;
	kl_grid(&s, 0, 9 * M, M, col, &q);
	assert_int_equal(q.rows, 4);
	assert_int_equal(q.expected, 10);
	assert_true(fabs(q.coverage - 0.4) < 1e-15);
	assert_int_equal(q.n_gaps, 3);
	assert_int_equal(q.gaps[0].start_ms, 0);
	assert_int_equal(q.gaps[0].len, 1);
	assert_int_equal(q.gaps[1].start_ms, 3 * M);
	assert_int_equal(q.gaps[1].len, 2);
	assert_int_equal(q.gaps[2].start_ms, 7 * M);
	assert_int_equal(q.gaps[2].len, 3);
	assert_int_equal(q.first_ms, M);
	assert_int_equal(q.last_ms, 6 * M);
	assert_true(isnan(c[3][0]) && c[3][1] == 2.0 && isnan(c[3][3]) && c[4][6] == 5.0 && isnan(c[0][9]));
	json_object *j = kl_quality_json(&q, 2);
	assert_int_equal(json_object_array_length(json_object_object_get(j, "gaps")), 2);
	assert_int_equal(json_object_get_int64(json_object_object_get(j, "n_gaps")), 3);
	json_object_put(j);
	kl_quality_free(&q);
	kl_series_free(&s);
}

/* spec/mantis.md test 17: hourly candles 0..3h; minutes 0-59 NaN, 60-119 ->
 * 100, 120-179 -> 200, 180-239 -> 300 (a value enters when its candle closed). */
static void test_align_hourly(void **st)
{
	(void)st;
	const int64_t H = 3600000;
	int64_t open[] = { 2 * H, 0, H, 3 * H }; /* any order */
	double val[] = { 200, 100, 0.0, 400 };
	/* candle at 1h carries a genuine zero: it must be kept, not dropped */
	val[2] = 0.0;
	int64_t m[240];
	double out[240];
	for (int i = 0; i < 240; i++)
		m[i] = (int64_t)i * M;
	assert_int_equal(kl_align_causal(open, val, 4, m, 240, H, out), 0);
	for (int i = 0; i < 60; i++)
		assert_true(isnan(out[i]));
	for (int i = 60; i < 120; i++)
		assert_true(out[i] == 100);
	for (int i = 120; i < 180; i++)
		assert_true(out[i] == 0.0);
	for (int i = 180; i < 240; i++)
		assert_true(out[i] == 200);
	/* causality: every value seen at minute m comes from a candle closed by m */
	for (int i = 0; i < 240; i++) {
		int64_t closed_by = -1;
		for (int k = 0; k < 4; k++)
			if (open[k] + H <= m[i] && open[k] > closed_by)
				closed_by = open[k];
		assert_true(closed_by < 0 ? isnan(out[i]) : out[i] == val[closed_by / H == 0 ? 1 : closed_by / H == 1 ? 2 : 0]);
	}
	int64_t dup[] = { 0, 0 };
	assert_int_equal(kl_align_causal(dup, val, 2, m, 240, H, out), -1);
}

/* spec/mantis.md test 18: daily candles; first day NaN, day 2 -> 10, day 3 -> 20. */
static void test_align_daily(void **st)
{
	(void)st;
	const int64_t D = 86400000;
	int64_t open[] = { 0, D, 2 * D };
	double val[] = { 10, 20, 30 };
	int64_t m[] = { 0, D - M, D, 2 * D - M, 2 * D, 3 * D - M };
	double out[6];
	assert_int_equal(kl_align_causal(open, val, 3, m, 6, D, out), 0);
	assert_true(isnan(out[0]) && isnan(out[1]));
	assert_true(out[2] == 10 && out[3] == 10);
	assert_true(out[4] == 20 && out[5] == 20);
}

/* The fast scanner (klines_scan.c) takes Binance's own shape and gives the
 * json-c path's result bit for bit; a page outside that shape (an escape)
 * or with a bad row is left to the json-c path, which still fails it with
 * its message, and the scanner leaves the series as it was. */
static void test_scanner_matches_the_json_path(void **st)
{
	(void)st;
	char fast[8192], slow[8192];
	size_t nf = 0, ns = 0;
	nf += (size_t)snprintf(fast + nf, sizeof fast - nf, "[");
	ns += (size_t)snprintf(slow + ns, sizeof slow - ns, "[");
	for (int i = 0; i < 40; i++) {
		/* prices with many digits, exponents and trailing zeros: strtod's rounding is what counts */
#define ROW "%s[%d,\"%d.12345678901234567\",\"%d.9e0\",\"%d.000001\",\"%d.50000000\",\"%de-3\",%d,\"0\",17,\"%s\",\"0\",\"0\"]"
		int t = i * M, b = 100 + i;
		nf += (size_t)snprintf(fast + nf, sizeof fast - nf, ROW, i ? "," : "", t, b, b + 1, b - 1, b, i, t + M - 1,
				       "1.5");
		ns += (size_t)snprintf(slow + ns, sizeof slow - ns, ROW, i ? "," : "", t, b, b + 1, b - 1, b, i, t + M - 1,
				       "1\\u002e5");
	}
	snprintf(fast + nf, sizeof fast - nf, "]");
	snprintf(slow + ns, sizeof slow - ns, "]");
	struct kl_series a = { 0 }, b = { 0 };
	size_t ra, rb;
	int64_t la, lb;
	assert_int_equal(kl_scan_page(fast, strlen(fast), M, 0, INT64_MAX, 1 << 30, &a, &ra, &la), 1);
	assert_int_equal(kl_scan_page(slow, strlen(slow), M, 0, INT64_MAX, 1 << 30, &b, &rb, &lb), 0);
	assert_int_equal(b.n, 0);
	assert_int_equal(parse(slow, 1 << 30, &b, &rb, &lb), KL_OK);
	assert_int_equal(a.n, 40);
	assert_int_equal(b.n, 40);
	assert_int_equal(ra, rb);
	assert_int_equal(la, lb);
	assert_memory_equal(a.t, b.t, 40 * sizeof *a.t);
	for (int f = 0; f < 5; f++)
		assert_memory_equal(a.v[f], b.v[f], 40 * sizeof *a.v[f]);
	/* a canonical page with an inconsistent row: not handled, and the json-c error stands */
	const char *bad = "[[0,\"10\",\"11\",\"9\",\"10\",\"1\",59999],[60000,\"10\",\"11\",\"10.5\",\"10\",\"1\",119999]]";
	size_t n0 = a.n;
	assert_int_equal(kl_scan_page(bad, strlen(bad), M, 0, INT64_MAX, 1 << 30, &a, &ra, &la), 0);
	assert_int_equal(a.n, n0);
	kl_series_free(&a);
	memset(&a, 0, sizeof a);
	assert_int_equal(parse(bad, 1 << 30, &a, &ra, &la), KL_ERR_ROW);
	kl_series_free(&a);
	kl_series_free(&b);
}

/* The scanner's decimal fast path against strtod (the json-c path): 3000
 * pseudo-random prices with 0..10 decimals, leading and trailing zeros,
 * 1..15 significant digits and beyond, bit-identical. */
static void test_scanner_decimals_match_strtod(void **st)
{
	(void)st;
	static char fast[3000 * 160], slow[3000 * 160];
	size_t nf = 0, ns = 0;
	uint64_t x = 88172645463325252ULL;
	nf += (size_t)snprintf(fast + nf, sizeof fast - nf, "[");
	ns += (size_t)snprintf(slow + ns, sizeof slow - ns, "[");
	for (int i = 0; i < 3000; i++) {
		char price[64];
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		int dec = (int)(x % 11), width = 1 + (int)((x >> 8) % 17);
		uint64_t m = (x >> 16) % 100000000000000000ULL;
		for (int w = 17; w > width; w--)
			m /= 10;
		double d = (double)(m ? m : 1);
		snprintf(price, sizeof price, "%.*f", dec, 1.0 + d / (double)(1ULL << (x >> 60)));
		int t = i * M;
		nf += (size_t)snprintf(fast + nf, sizeof fast - nf, "%s[%d,\"%s\",\"%s\",\"%s\",\"%s\",\"%s\",%d,\"0\"]",
				       i ? "," : "", t, price, price, price, price, price, t + M - 1);
		ns += (size_t)snprintf(slow + ns, sizeof slow - ns, "%s[%d,\"%s\",\"%s\",\"%s\",\"%s\",\"%s\",%d,\"\\u0030\"]",
				       i ? "," : "", t, price, price, price, price, price, t + M - 1);
	}
	snprintf(fast + nf, sizeof fast - nf, "]");
	snprintf(slow + ns, sizeof slow - ns, "]");
	struct kl_series a = { 0 }, b = { 0 };
	size_t ra, rb;
	int64_t la, lb;
	assert_int_equal(kl_scan_page(fast, strlen(fast), M, 0, INT64_MAX, INT64_MAX, &a, &ra, &la), 1);
	assert_int_equal(kl_scan_page(slow, strlen(slow), M, 0, INT64_MAX, INT64_MAX, &b, &rb, &lb), 0);
	assert_int_equal(parse(slow, INT64_MAX, &b, &rb, &lb), KL_OK);
	assert_int_equal(a.n, 3000);
	assert_int_equal(b.n, 3000);
	for (int f = 0; f < 5; f++)
		assert_memory_equal(a.v[f], b.v[f], 3000 * sizeof *a.v[f]);
	kl_series_free(&a);
	kl_series_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_page_rows_open_candle_and_duplicates),
		cmocka_unit_test(test_page_errors),
		cmocka_unit_test(test_scanner_matches_the_json_path),
		cmocka_unit_test(test_scanner_decimals_match_strtod),
		cmocka_unit_test(test_grid_gaps_and_quality),
		cmocka_unit_test(test_series_reserve),
		cmocka_unit_test(test_align_hourly),
		cmocka_unit_test(test_align_daily),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

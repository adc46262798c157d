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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_page_rows_open_candle_and_duplicates),
		cmocka_unit_test(test_page_errors),
		cmocka_unit_test(test_grid_gaps_and_quality),
		cmocka_unit_test(test_align_hourly),
		cmocka_unit_test(test_align_daily),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* runner/market without a network: interval names, the BINANCE_API_URL rule
 * (trailing slashes stripped, binance.us pacing flag), error codes, a
 * cancelled fetch that stops before its first request, a bad request; the
 * window of a fetch taken from its last bar (window.c, golden values). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "evaluator/runner/market/market.h"

static void test_intervals_and_codes(void **st)
{
	(void)st;
	assert_int_equal(mk_interval_ms("1m"), 60000);
	assert_int_equal(mk_interval_ms("1h"), 3600000);
	assert_int_equal(mk_interval_ms("1d"), 86400000);
	assert_int_equal(mk_interval_ms("2m"), -1);
	assert_string_equal(mk_errcode(MK_ERR_RATE), "rate_limited");
	assert_string_equal(mk_errcode(MK_ERR_HTTP), "fetch_failed");
	assert_string_equal(mk_errcode(MK_ERR__MAX), "internal");
}

static void test_base_url(void **st)
{
	(void)st;
	char out[64], err[300];
	int us = -1;
	assert_int_equal(mk_base_url("http://127.0.0.1:9/", NULL, out, sizeof out, &us, err, sizeof err), 0);
	assert_string_equal(out, "http://127.0.0.1:9");
	assert_int_equal(us, 0);
	assert_int_equal(mk_base_url("https://api.binance.us///", "http://127.0.0.1:9", out, sizeof out, &us, err,
				     sizeof err), 0);
	assert_string_equal(out, "https://api.binance.us");
	assert_int_equal(us, 1);
	char small[8];
	assert_int_equal(mk_base_url("http://127.0.0.1:9", NULL, small, sizeof small, &us, err, sizeof err), -1);
	assert_non_null(strstr(err, "too long"));
}

static int always(void *ud)
{
	(*(int *)ud)++;
	return 1;
}

static void test_cancelled_before_any_request(void **st)
{
	(void)st;
	struct mk_request r;
	mk_request_defaults(&r);
	const char *assets[] = { "BTC", "ETH" };
	int calls = 0;
	r.base_url = "http://127.0.0.1:9"; /* discard port: never contacted */
	r.assets = assets;
	r.n_assets = 2;
	r.start_ms = 0;
	r.end_ms = 60000 * 10;
	r.now_ms = r.end_ms + 60000;
	r.cancelled = always;
	r.ud = &calls;
	struct kl_series s[2] = { 0 };
	char err[256];
	assert_int_equal(mk_fetch(&r, s, err, sizeof err), MK_ERR_CANCELLED);
	assert_true(calls >= 1);
	assert_int_equal(s[0].n + s[1].n, 0);
	/* the caller frees the series either way (mk_fetch reserves them up front) */
	kl_series_free(&s[0]);
	kl_series_free(&s[1]);
	r.interval = "7m";
	assert_int_equal(mk_fetch(&r, s, err, sizeof err), MK_ERR_DATA);
	assert_non_null(strstr(err, "interval 7m"));
	kl_series_free(&s[0]);
	kl_series_free(&s[1]);
}

#define H  INT64_C(3600000)
#define T0 INT64_C(1700002800000) /* 2023-11-14T23:00Z, on the hour */

/* Series with the hourly candles T0 + k*H for k in [lo, hi] except
 * [gap_lo, gap_hi]; close = k (the value travels with its time), the
 * other fields k + f / 10. */
static void hours(struct kl_series *s, int lo, int hi, int gap_lo, int gap_hi)
{
	for (int k = lo; k <= hi; k++) {
		if (k >= gap_lo && k <= gap_hi)
			continue;
		double v[5] = { k, k + 0.1, k - 0.1, k, 10.0 * k };
		assert_int_equal(kl_series_push(s, T0 + k * H, v), 0);
	}
}

static void test_window_first_golden(void **st)
{
	(void)st;
	/* days_back days of candles ending with the last one's close */
	assert_int_equal(mk_window_first(INT64_C(1700110800000), 1, H), INT64_C(1700028000000));
	assert_int_equal(mk_window_first(INT64_C(1764892740000), 60, 60000), INT64_C(1759708800000));
	assert_int_equal(mk_window_first(INT64_C(1764892740000), 1, 60000), INT64_C(1764806400000));
	/* 1440 one-minute bars in a day: last - first = 1439 minutes */
	assert_int_equal((INT64_C(1764892740000) - mk_window_first(INT64_C(1764892740000), 1, 60000)) / 60000, 1439);
	/* 1d candles, 3 days back: the last three daily candles */
	assert_int_equal(mk_window_first(INT64_C(1764806400000), 3, 86400000), INT64_C(1764633600000));
}

static void test_window_trim_multi_asset_golden(void **st)
{
	(void)st;
	const char *assets[] = { "A", "B", "C" };
	struct kl_series s[3] = { 0 };
	hours(&s[0], 0, 30, -1, -1);   /* the newest candle of any asset: hour 30 */
	hours(&s[1], 2, 27, 10, 12);   /* ends 3 hours earlier, a gap inside */
	hours(&s[2], 9, 30, -1, -1);   /* listed after the window's first bar */
	s[1].dup_refused = 2;
	int64_t first = 0, last = 0;
	char err[200] = "";
	assert_int_equal(mk_window_trim(assets, s, 3, 1, H, &first, &last, err, sizeof err), MK_OK);
	/* last = T0 + 30 h; first bar = last - 1 day + 1 h = T0 + 7 h */
	assert_int_equal(last, INT64_C(1700110800000));
	assert_int_equal(first, INT64_C(1700028000000));
	assert_int_equal(s[0].n, 24);  /* hours 7..30 */
	assert_int_equal(s[0].t[0], T0 + 7 * H);
	assert_true(s[0].v[3][0] == 7.0 && s[0].v[4][0] == 70.0 && s[0].v[1][23] == 30.1);
	assert_int_equal(s[1].n, 18);  /* hours 7, 8, 9, 13..27: the gap and the early end stay gaps */
	assert_int_equal(s[1].t[0], T0 + 7 * H);
	assert_int_equal(s[1].t[3], T0 + 13 * H);
	assert_true(s[1].v[3][3] == 13.0 && s[1].v[3][17] == 27.0);
	assert_int_equal(s[1].dup_refused, 2);  /* the counts of the fetch are kept */
	assert_int_equal(s[2].n, 22);  /* hours 9..30: nothing to trim */
	assert_int_equal(s[2].t[0], T0 + 9 * H);
	/* trimming again changes nothing */
	assert_int_equal(mk_window_trim(assets, s, 3, 1, H, &first, &last, err, sizeof err), MK_OK);
	assert_int_equal(first, T0 + 7 * H);
	assert_int_equal(s[0].n + s[1].n + s[2].n, 24 + 18 + 22);
	for (int i = 0; i < 3; i++)
		kl_series_free(&s[i]);

	/* no asset has the window's first bar: the grid starts at the oldest kept */
	hours(&s[0], 9, 30, -1, -1);
	hours(&s[1], 11, 29, -1, -1);
	assert_int_equal(mk_window_trim(assets, s, 2, 1, H, &first, &last, err, sizeof err), MK_OK);
	assert_int_equal(first, T0 + 9 * H);
	assert_int_equal(last, T0 + 30 * H);
	for (int i = 0; i < 2; i++)
		kl_series_free(&s[i]);

	/* an asset whose candles all end before the window's first bar: no_data, as
	 * for an asset without a candle in the fetched range */
	hours(&s[0], 0, 30, -1, -1);
	hours(&s[1], 0, 6, -1, -1);
	assert_int_equal(mk_window_trim(assets, s, 2, 1, H, &first, &last, err, sizeof err), MK_ERR_EMPTY);
	assert_string_equal(err, "B: no candle at all in 1700028000000..1700110800000");
	for (int i = 0; i < 2; i++)
		kl_series_free(&s[i]);
	/* nothing at all */
	assert_int_equal(mk_window_trim(assets, s, 2, 1, H, &first, &last, err, sizeof err), MK_ERR_EMPTY);
}

static void test_series_prepend_golden(void **st)
{
	(void)st;
	struct kl_series s = { 0 }, head = { 0 };
	hours(&s, 5, 8, -1, -1);
	hours(&head, 1, 6, 3, 3);   /* 1, 2, 4, 5, 6: 5 and 6 are s's already */
	for (size_t i = 0; i < head.n; i++)
		head.v[3][i] = -head.v[3][i];   /* tell the head's values from s's */
	s.open_dropped = 1;
	head.dup_refused = 1;
	mk_series_prepend(&s, &head);
	assert_int_equal(head.n, 0);
	assert_null(head.t);
	assert_int_equal(s.n, 7);
	static const int64_t want_h[7] = { 1, 2, 4, 5, 6, 7, 8 };
	static const double want_c[7] = { -1, -2, -4, 5, 6, 7, 8 };
	for (int i = 0; i < 7; i++) {
		assert_int_equal(s.t[i], T0 + want_h[i] * H);
		assert_true(s.v[3][i] == want_c[i]);
		assert_true(s.v[4][i] == 10.0 * (double)want_h[i]);
	}
	assert_int_equal(s.open_dropped, 1);
	assert_int_equal(s.dup_refused, 1);
	/* an empty head leaves s as it was */
	mk_series_prepend(&s, &head);
	assert_int_equal(s.n, 7);
	kl_series_free(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_intervals_and_codes),
		cmocka_unit_test(test_base_url),
		cmocka_unit_test(test_cancelled_before_any_request),
		cmocka_unit_test(test_window_first_golden),
		cmocka_unit_test(test_window_trim_multi_asset_golden),
		cmocka_unit_test(test_series_prepend_golden),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

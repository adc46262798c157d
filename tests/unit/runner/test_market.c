/* runner/market without a network: interval names, the BINANCE_API_URL rule
 * (trailing slashes stripped, binance.us pacing flag), error codes, a
 * cancelled fetch that stops before its first request, a bad request. */
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_intervals_and_codes),
		cmocka_unit_test(test_base_url),
		cmocka_unit_test(test_cancelled_before_any_request),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

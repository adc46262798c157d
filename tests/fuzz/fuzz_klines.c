/* Differential fuzzer of the klines page parsers (evaluator/klines.h): when
 * the fast scanner (kl_scan_page) accepts a page, the full json-c parser
 * (kl_parse_page_json) must accept it too with bit-identical series and
 * counts; when the scanner declines, it must leave the series untouched.
 * Either way no crash, leak or undefined behaviour. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "evaluator/klines.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kl_series a = { 0 }, b = { 0 };
	size_t ra = 0, rb = 0;
	int64_t la = 0, lb = 0;
	char msg[256];
	const int64_t M = 60000, now = 120000;
	if (kl_scan_page((const char *)data, size, M, 0, INT64_MAX, now, &a, &ra, &la)) {
		if (kl_parse_page_json((const char *)data, size, M, 0, INT64_MAX, now, &b, &rb, &lb, msg, sizeof msg) !=
			    KL_OK ||
		    a.n != b.n || ra != rb || la != lb || a.dup_refused != b.dup_refused ||
		    a.order_refused != b.order_refused || a.open_dropped != b.open_dropped ||
		    (a.n && memcmp(a.t, b.t, a.n * sizeof *a.t) != 0))
			abort();
		for (int f = 0; f < 5; f++)
			if (a.n && memcmp(a.v[f], b.v[f], a.n * sizeof *a.v[f]) != 0)
				abort();
	} else if (a.n || a.dup_refused || a.order_refused || a.open_dropped) {
		abort();
	}
	kl_series_free(&a);
	kl_series_free(&b);
	return 0;
}

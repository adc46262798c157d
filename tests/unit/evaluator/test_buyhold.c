/* The buy-and-hold benchmark (evaluator/buyhold.c): golden values pinned bit
 * for bit, gaps forward-filled, leading gaps flat at 1.0, a series with no
 * price at all flat at 1.0. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <math.h>
#include <cmocka.h>

#include "evaluator/buyhold.h"

static void test_golden(void **s)
{
	(void)s;
	static const double p[] = { 100, 101, 99.5, 103 };
	/* 101/100, 99.5/100, 103/100 as IEEE doubles */
	static const double g[] = { 0x1p+0, 0x1.028f5c28f5c29p+0, 0x1.fd70a3d70a3d7p-1, 0x1.07ae147ae147bp+0 };
	double out[4];
	buyhold_curve(p, 4, out);
	assert_memory_equal(out, g, sizeof g);
}

static void test_gaps(void **s)
{
	(void)s;
	const double p[] = { NAN, -1, 50, NAN, 0, 75, INFINITY, 25 };
	static const double g[] = { 1, 1, 1, 1, 1, 1.5, 1.5, 0.5 };
	double out[8];
	buyhold_curve(p, 8, out);
	assert_memory_equal(out, g, sizeof g);
}

static void test_no_price(void **s)
{
	(void)s;
	const double p[] = { NAN, NAN, NAN };
	double out[3];
	buyhold_curve(p, 3, out);
	for (int i = 0; i < 3; i++)
		assert_true(out[i] == 1.0);
	buyhold_curve(p, 0, out);   /* nothing to write, nothing read */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_golden),
		cmocka_unit_test(test_gaps),
		cmocka_unit_test(test_no_price),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

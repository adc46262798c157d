/*
 * test_audit_cuts.c: the causality audit's cut points (bt_audit_cuts in
 * evaluator/runner/drive/backtest.c). Golden values pin the points a seed
 * gives (they are part of what makes a run reproducible); a simulate run's
 * minimum cut of 2 only drops the cut at 1 and never moves another.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "evaluator/runner/drive/backtest.h"

/* The cuts as a list, for readable failures. */
static size_t cuts_of(size_t n, uint64_t seed, size_t min_cut, size_t out[BT_MAX_CUTS])
{
	memset(out, 0, sizeof(size_t) * BT_MAX_CUTS);
	return bt_audit_cuts(n, seed, min_cut, out);
}

static void test_golden_points(void **s)
{
	(void)s;
	size_t c[BT_MAX_CUTS];
	/* 25 %, 50 %, 75 % and three draws of splitmix64 from the seed (checked
	 * against an independent Python version of the same definition) */
	assert_int_equal(cuts_of(10080, 42, 1, c), 6);
	const size_t want[6] = { 2217, 2520, 3025, 5040, 7560, 8077 };
	assert_memory_equal(c, want, sizeof want);
	assert_int_equal(cuts_of(5, 42, 1, c), 4);
	const size_t want5[4] = { 1, 2, 3, 4 };
	assert_memory_equal(c, want5, sizeof want5);
	assert_int_equal(cuts_of(5, 42, 2, c), 3);
	assert_memory_equal(c, want5 + 1, 3 * sizeof *c);
}

static void test_too_short_has_no_cuts(void **s)
{
	(void)s;
	size_t c[BT_MAX_CUTS];
	assert_int_equal(cuts_of(0, 7, 1, c), 0);
	assert_int_equal(cuts_of(1, 7, 1, c), 0);
	assert_int_equal(cuts_of(2, 7, 1, c), 1);
	assert_int_equal(c[0], 1);
	assert_int_equal(cuts_of(2, 7, 2, c), 0);   /* simulate on two bars: nothing to compare */
}

/* For every seed and length, min_cut 2 is min_cut 1 without the cut at 1. */
static void test_min_cut_only_drops_the_first_bar(void **s)
{
	(void)s;
	size_t a[BT_MAX_CUTS], b[BT_MAX_CUTS];
	for (size_t n = 2; n < 40; n++) {
		for (uint64_t seed = 0; seed < 200; seed++) {
			size_t na = cuts_of(n, seed, 1, a), nb = cuts_of(n, seed, 2, b);
			size_t skip = na > 0 && a[0] == 1;
			assert_int_equal(nb, na - skip);
			assert_memory_equal(b, a + skip, nb * sizeof *b);
			for (size_t i = 0; i < nb; i++)
				assert_true(b[i] >= 2 && b[i] < n && (i == 0 || b[i] > b[i - 1]));
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_golden_points),
		cmocka_unit_test(test_too_short_has_no_cuts),
		cmocka_unit_test(test_min_cut_only_drops_the_first_bar),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * Python repr(float) formatting (evaluator/pyrepr.c) against a table made by
 * Python itself (gen_pyrepr_table.py), plus the examples the spec names.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <math.h>
#include <cmocka.h>

#include "evaluator/pyrepr.h"
#include "pyrepr_table.h"

static void check(double x, const char *want)
{
	char got[PYREPR_MAX];
	size_t n = pyrepr_double(x, got);
	assert_int_equal(n, strlen(got));
	assert_string_equal(got, want);
}

static void test_spec_examples(void **state)
{
	(void)state;
	check(1.0, "1.0");
	check(2e-05, "2e-05");
	check(1e16, "1e+16");
	check(0.1, "0.1");
	check(1e-07, "1e-07");
	check(123456789012345.0, "123456789012345.0");
	check(1234567890123456.0, "1234567890123456.0");
	check(0.0001, "0.0001");
	check(-0.0, "-0.0");
	check(0.0, "0.0");
	check(NAN, "nan");
	check(INFINITY, "inf");
	check(-INFINITY, "-inf");
	check(0.1 + 0.2, "0.30000000000000004");
	check(1.7976931348623157e308, "1.7976931348623157e+308");
	check(5e-324, "5e-324");
}

static void test_python_table(void **state)
{
	(void)state;
	size_t n = sizeof pyrepr_table / sizeof pyrepr_table[0];
	size_t bad = 0;
	for (size_t i = 0; i < n; i++) {
		double x;
		uint64_t bits = pyrepr_table[i].bits;
		memcpy(&x, &bits, sizeof x);
		char got[PYREPR_MAX];
		pyrepr_double(x, got);
		if (strcmp(got, pyrepr_table[i].repr) != 0) {
			if (bad < 20)
				print_error("0x%016llx: got %s want %s\n", (unsigned long long)bits, got,
					    pyrepr_table[i].repr);
			bad++;
		}
	}
	assert_true(n > 7000);
	assert_int_equal(bad, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_spec_examples),
		cmocka_unit_test(test_python_table),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * Unit tests of the one verdict-to-error mapping
 * (evaluator/runner/drive/verdict_map.c): every sandbox status, the
 * SIGXCPU special case of a signal death, and out-of-range statuses.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "evaluator/runner/drive/verdict_map.h"

/* The error of a verdict with status st and signal sig. */
static enum ev_err map(int st, int sig)
{
	struct sbx_verdict v;
	memset(&v, 0, sizeof v);
	v.status = (enum sbx_status)st;
	v.exit_signal = sig;
	return verdict_map_error(&v);
}

static void test_every_status(void **state)
{
	(void)state;
	static const struct { enum sbx_status st; enum ev_err want; const char *code; } table[] = {
		{ SBX_OK, EV_OK, NULL },
		{ SBX_RE, EV_OK, NULL },
		{ SBX_SG, EV_CRASHED, "crashed" },
		{ SBX_TO, EV_TIMEOUT, "timeout" },
		{ SBX_ML, EV_MEMORY_LIMIT, "memory_limit" },
		{ SBX_SY, EV_FORBIDDEN_SYSCALL, "forbidden_syscall" },
		{ SBX_OL, EV_OUTPUT_LIMIT, "output_limit" },
		{ SBX_XX, EV_INTERNAL, "internal" },
	};
	/* the table covers every status, each once */
	assert_int_equal(sizeof table / sizeof table[0], SBX_STATUS__MAX);
	for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
		assert_int_equal(table[i].st, (enum sbx_status)i);
		assert_int_equal(map(table[i].st, table[i].st == SBX_SG ? SIGSEGV : 0), table[i].want);
		if (table[i].code)
			assert_string_equal(ev_errcode(table[i].want), table[i].code);
	}
}

static void test_signals(void **state)
{
	(void)state;
	assert_int_equal(map(SBX_SG, SIGXCPU), EV_TIMEOUT);  /* RLIMIT_CPU */
	assert_int_equal(map(SBX_SG, SIGKILL), EV_CRASHED);
	assert_int_equal(map(SBX_SG, SIGABRT), EV_CRASHED);
	assert_int_equal(map(SBX_SG, 0), EV_CRASHED);
	/* SIGXCPU matters only for a signal death */
	assert_int_equal(map(SBX_RE, SIGXCPU), EV_OK);
	assert_int_equal(map(SBX_ML, SIGXCPU), EV_MEMORY_LIMIT);
}

static void test_out_of_range(void **state)
{
	(void)state;
	assert_int_equal(map(SBX_STATUS__MAX, 0), EV_INTERNAL);
	assert_int_equal(map(-1, 0), EV_INTERNAL);
	assert_int_equal(map(1000, SIGXCPU), EV_INTERNAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_status),
		cmocka_unit_test(test_signals),
		cmocka_unit_test(test_out_of_range),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

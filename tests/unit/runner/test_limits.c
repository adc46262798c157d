/*
 * test_limits.c: the operator's run limits (evaluator/runner/limits.c):
 * defaults, explicit values, wall defaulting to twice the CPU limit, and
 * refusal of malformed or out-of-range values.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "config.h"
#include "evaluator/runner/runner.h"

/* Parse text as a configuration file and run runner_limits on it. */
static bool limits_of(const char *text, struct sbx_limits *l, struct buf *err)
{
	struct config cfg;
	memset(&cfg, 0, sizeof cfg);
	struct buf perr = BUF_INIT;
	unsetenv("AGENTTEST_RUN_CPU_SECONDS");
	unsetenv("AGENTTEST_RUN_WALL_SECONDS");
	unsetenv("AGENTTEST_RUN_MEMORY_MB");
	assert_true(config_parse_text(&cfg, "test.conf", text, strlen(text), &perr));
	bool ok = runner_limits(&cfg, l, err);
	config_free(&cfg);
	buf_free(&perr);
	return ok;
}

static void test_defaults(void **state)
{
	struct sbx_limits l;
	struct buf err = BUF_INIT;
	assert_true(limits_of("", &l, &err));
	assert_true(l.cpu_seconds == 60 && l.wall_seconds == 120);
	assert_int_equal(l.memory_bytes, 256u << 20);
	buf_free(&err);
}

static void test_values(void **state)
{
	struct sbx_limits l;
	struct buf err = BUF_INIT;
	assert_true(limits_of("AGENTTEST_RUN_CPU_SECONDS=2\nAGENTTEST_RUN_MEMORY_MB=192\n", &l, &err));
	assert_true(l.cpu_seconds == 2 && l.wall_seconds == 4);
	assert_int_equal(l.memory_bytes, 192u << 20);
	assert_true(limits_of("AGENTTEST_RUN_CPU_SECONDS=1.5\nAGENTTEST_RUN_WALL_SECONDS=30\n", &l, &err));
	assert_true(l.cpu_seconds == 1.5 && l.wall_seconds == 30);
	/* the environment overrides the file, as for every key */
	setenv("AGENTTEST_RUN_CPU_SECONDS", "7", 1);
	struct config cfg;
	memset(&cfg, 0, sizeof cfg);
	assert_true(config_parse_text(&cfg, "t", "AGENTTEST_RUN_CPU_SECONDS=3\n", 28, &err));
	assert_true(runner_limits(&cfg, &l, &err));
	assert_true(l.cpu_seconds == 7);
	config_free(&cfg);
	unsetenv("AGENTTEST_RUN_CPU_SECONDS");
	buf_free(&err);
}

static void test_refusals(void **state)
{
	static const char *bad[] = {
		"AGENTTEST_RUN_CPU_SECONDS=0\n", "AGENTTEST_RUN_CPU_SECONDS=abc\n", "AGENTTEST_RUN_CPU_SECONDS=nan\n",
		"AGENTTEST_RUN_CPU_SECONDS=1e9\n", "AGENTTEST_RUN_MEMORY_MB=8\n", "AGENTTEST_RUN_MEMORY_MB=100.5\n",
		"AGENTTEST_RUN_CPU_SECONDS=10\nAGENTTEST_RUN_WALL_SECONDS=5\n", "AGENTTEST_RUN_WALL_SECONDS=-1\n",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		struct sbx_limits l;
		struct buf err = BUF_INIT;
		assert_false(limits_of(bad[i], &l, &err));
		assert_non_null(strstr(buf_cstr(&err), "AGENTTEST_RUN_"));
		buf_free(&err);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_values),
		cmocka_unit_test(test_refusals),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * test_zygote_pool.c: the zygote pool holds one helper per concurrent run
 * of the largest runner (64 slots plus 8 code checks): the size requested
 * with AGENTTEST_SANDBOX_ZYGOTES is honoured up to SBX_ZYGOTES_MAX (it was
 * silently clamped to 16, so slots beyond 16 ran without a zygote).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "sandbox/sandbox.h"

static void test_pool_size(void **state)
{
	unsetenv("AGENTTEST_SANDBOX_ZYGOTES");
	assert_int_equal(sbx_zygote_pool_size(), 2);
	setenv("AGENTTEST_SANDBOX_ZYGOTES", "40", 1);
	assert_int_equal(sbx_zygote_pool_size(), 40);
	setenv("AGENTTEST_SANDBOX_ZYGOTES", "72", 1);
	assert_int_equal(sbx_zygote_pool_size(), 72);
	setenv("AGENTTEST_SANDBOX_ZYGOTES", "100000", 1);
	assert_int_equal(sbx_zygote_pool_size(), SBX_ZYGOTES_MAX);
	setenv("AGENTTEST_SANDBOX_ZYGOTES", "0", 1);
	assert_int_equal(sbx_zygote_pool_size(), 1);
	assert_true(SBX_ZYGOTES_MAX >= 64 + 8);
	unsetenv("AGENTTEST_SANDBOX_ZYGOTES");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pool_size),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

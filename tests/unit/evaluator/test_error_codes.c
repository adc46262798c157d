/*
 * test_error_codes.c: every machine code the evaluator, the dataset layer
 * and the runner emit is listed in docs/development.md ("Error codes"),
 * written as `code`. Run from the repository root (as tests/run.sh does).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "evaluator/dataset.h"
#include "evaluator/errors.h"
#include "evaluator/runner/market/market.h"

static char *doc;

/* Read docs/development.md. */
static int setup(void **state)
{
	FILE *f = fopen("docs/development.md", "r");
	if (!f)
		return -1;
	doc = calloc(1, 1 << 20);
	size_t n = doc ? fread(doc, 1, (1 << 20) - 1, f) : 0;
	fclose(f);
	return n > 0 ? 0 : -1;
}

static int teardown(void **state)
{
	free(doc);
	return 0;
}

/* Fail naming code if `code` is not in the error-code section. */
static void listed(const char *code)
{
	const char *sec = strstr(doc, "## Error codes");
	assert_non_null(sec);
	const char *end = strstr(sec + 3, "\n## ");
	char q[64];
	snprintf(q, sizeof q, "`%s`", code);
	const char *hit = strstr(sec, q);
	if (!hit || (end && hit > end))
		fail_msg("error code %s is not listed in docs/development.md", code);
}

static void test_run_codes(void **state)
{
	for (int e = 1; e < EV_ERR__MAX; e++)
		listed(ev_errcode((enum ev_err)e));
	/* codes the runner writes itself (evaluator/runner/job.c, main.c) */
	listed("dataset_mismatch");
	listed("cancelled");
	listed("invalid_config");
	listed("conflict");   /* prefetch_job.c: a version label registered with another hash */
	listed("no_api_key");        /* agent_job.c: an LLM driver's owner has no Anthropic key */
	listed("budget_exhausted");  /* agent_job.c: an LLM budget is used up (the agent pauses) */
}

/* What the strategy host claims is the user's error, never a trusted-side verdict. */
static void test_host_codes_are_the_users(void **state)
{
	(void)state;
	assert_int_equal(ev_from_host_code("bad_output"), EV_BAD_OUTPUT);
	assert_int_equal(ev_from_host_code("strategy_error"), EV_STRATEGY_ERROR);
	static const char *const forged[] = { "internal", "memory_limit", "timeout", "runner_lost", "crashed", NULL };
	for (size_t i = 0; forged[i]; i++)
		assert_int_equal(ev_from_host_code(forged[i]), EV_STRATEGY_ERROR);
	assert_int_equal(ev_from_host_code(NULL), EV_STRATEGY_ERROR);
}

static void test_dataset_codes(void **state)
{
	for (int e = 1; e < DS_ERR__MAX; e++)
		listed(ds_errcode((enum ds_err)e));
}

static void test_market_codes(void **state)
{
	for (int e = 1; e < MK_ERR__MAX; e++)
		listed(mk_errcode((enum mk_err)e));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_run_codes),
		cmocka_unit_test(test_dataset_codes),
		cmocka_unit_test(test_market_codes),
		cmocka_unit_test(test_host_codes_are_the_users),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}

/*
 * test_cancel.c: cancelling a running backtest through the on_host hook
 * (evaluator/runner/cancel.c). bt_run drives the real strategy host in
 * trusted mode (AGENTTEST_HOST_DIR = the tree's sandbox/host) with a
 * strategy that sleeps 30 s; job_cancel() from another thread must end it
 * within a few seconds, whether it arrives while the host runs or before
 * the host has started.
 */
#include <limits.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "evaluator/runner/drive/backtest.h"
#include "evaluator/runner/runner.h"

static const char code[] =
	"import time\n"
	"def simulate(prices, params):\n"
	"    time.sleep(30)\n"
	"    return [1.0] * len(prices)\n";

static double prices[64];

/* Monotonic seconds. */
static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* Point the library at the tree's strategy host. */
static int setup(void **state)
{
	char cwd[PATH_MAX], dir[PATH_MAX + 16];
	if (!getcwd(cwd, sizeof cwd))
		return -1;
	snprintf(dir, sizeof dir, "%s/sandbox/host", cwd);
	setenv("AGENTTEST_HOST_DIR", dir, 1);
	for (size_t i = 0; i < 64; i++)
		prices[i] = 100.0 + (double)i;
	signal(SIGPIPE, SIG_IGN);
	return 0;
}

/* Thread body: cancel ctl after 2 s (the host is then inside simulate). */
static void *canceller(void *arg)
{
	usleep(2000000);
	job_cancel(arg, false);
	return NULL;
}

/* Run the sleeping strategy with ctl's hook; returns bt_run's wall time. */
static double run_sleeper(struct job_ctl *ctl, struct bt_result *res)
{
	struct bt_request rq = {
		.code = code, .code_len = sizeof code - 1, .kind = BT_KIND_SIMULATE, .prices = prices,
		.n = 64, .bars_per_year = 365, .params_json = "{}",
		.engine = { .fee_bps = ENGINE_DEFAULT_FEE_BPS, .max_leverage = ENGINE_DEFAULT_MAX_LEVERAGE }, .sbx = { .mode = SBX_TRUSTED, .limits = { .cpu_seconds = 60 } },
		.on_host = job_on_host, .on_host_arg = ctl,
	};
	double t0 = now_s();
	bt_run(&rq, res);
	return now_s() - t0;
}

static void test_cancel_running(void **state)
{
	struct job_ctl *ctl = job_ctl_new();
	struct bt_result res;
	pthread_t th;
	memset(&res, 0, sizeof res);
	assert_int_equal(pthread_create(&th, NULL, canceller, ctl), 0);
	double t = run_sleeper(ctl, &res);
	pthread_join(th, NULL);
	assert_true(t >= 1.9 && t < 12);
	assert_int_equal(res.verdict.status, SBX_SG);
	assert_non_null(strstr(res.verdict.message, "cancelled"));
	assert_true(job_cancelled(ctl, NULL));
	bt_result_free(&res);
	job_ctl_free(ctl);
}

static void test_cancel_before_start(void **state)
{
	struct job_ctl *ctl = job_ctl_new();
	struct bt_result res;
	bool hand_back = true;
	memset(&res, 0, sizeof res);
	job_cancel(ctl, false);
	double t = run_sleeper(ctl, &res);
	assert_true(t < 10);
	assert_int_equal(res.verdict.status, SBX_SG);
	assert_non_null(strstr(res.verdict.message, "cancelled"));
	assert_true(job_cancelled(ctl, &hand_back));
	assert_false(hand_back);
	bt_result_free(&res);
	job_ctl_free(ctl);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cancel_running),
		cmocka_unit_test(test_cancel_before_start),
	};
	return cmocka_run_group_tests(tests, setup, NULL);
}

/*
 * test_sigmask.c: runs started from a thread whose signal state is hostile
 * (SIGTERM, SIGINT and SIGCHLD blocked, SIGCHLD and SIGPIPE ignored, as a
 * runner slot may have) must still be cancellable and limited: the sandbox
 * resets the mask and dispositions in every process it creates
 * (sandbox/sigreset.c). Trusted mode with a fake host, so no root needed;
 * the supervisor code is the one every mode uses.
 */
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "sandbox/sandbox.h"

static char tmpdir[64];

static const char host_py[] =
	"import signal, sys, time\n"
	"cmd = sys.stdin.readline().strip()\n"
	"if cmd == 'sleep':\n"
	"    time.sleep(30)\n"
	"elif cmd == 'spin':\n"
	"    while True: pass\n"
	"elif cmd == 'mask':\n"
	"    print(sorted(int(s) for s in signal.pthread_sigmask(signal.SIG_BLOCK, [])),\n"
	"          signal.getsignal(signal.SIGCHLD) == signal.SIG_DFL); sys.stdout.flush()\n";

/* Write host_py as <tmpdir>/agenttest_host/__main__.py. */
static int setup(void **state)
{
	char path[128];
	snprintf(tmpdir, sizeof tmpdir, "/tmp/sbx-sigmask-XXXXXX");
	if (!mkdtemp(tmpdir))
		return -1;
	snprintf(path, sizeof path, "%s/agenttest_host", tmpdir);
	mkdir(path, 0755);
	snprintf(path, sizeof path, "%s/agenttest_host/__main__.py", tmpdir);
	FILE *f = fopen(path, "w");
	if (!f)
		return -1;
	fputs(host_py, f);
	fclose(f);
	setenv("AGENTTEST_HOST_DIR", tmpdir, 1);
	return 0;
}

/* Remove the fake host. */
static int teardown(void **state)
{
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
	signal(SIGCHLD, SIG_DFL);
	return system(cmd) == 0 ? 0 : -1;
}

/* Monotonic seconds. */
static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

struct job {
	const char *cmd;
	double cpu, wall, cancel_after;
	struct sbx_verdict v;
	char out[256];
	double took;
	int start_rc;
};

/* Thread body: block the signals, start the run, maybe cancel it, finish. */
static void *runner_thread(void *arg)
{
	struct job *j = arg;
	sigset_t m;
	sigemptyset(&m);
	sigaddset(&m, SIGTERM);
	sigaddset(&m, SIGINT);
	sigaddset(&m, SIGCHLD);
	pthread_sigmask(SIG_BLOCK, &m, NULL);
	struct sbx_spec spec = { .mode = SBX_TRUSTED, .limits = { .cpu_seconds = j->cpu, .wall_seconds = j->wall } };
	struct sbx_run r;
	char err[256];
	double t0 = now_s();
	j->start_rc = sbx_start(&spec, &r, err, sizeof err);
	if (j->start_rc != 0)
		return NULL;
	size_t len = strlen(j->cmd);
	if (write(r.to_host, j->cmd, len) != (ssize_t)len)
		j->start_rc = -2;
	if (j->cancel_after > 0) {
		usleep((useconds_t)(j->cancel_after * 1e6));
		sbx_kill(&r);
	}
	ssize_t n = read(r.from_host, j->out, sizeof j->out - 1);
	j->out[n > 0 ? n : 0] = '\0';
	sbx_finish(&r, &j->v);
	j->took = now_s() - t0;
	return NULL;
}

/* Run j on a fresh thread with the hostile signal state. */
static void run(struct job *j)
{
	pthread_t th;
	signal(SIGCHLD, SIG_IGN);
	signal(SIGPIPE, SIG_IGN);
	assert_int_equal(pthread_create(&th, NULL, runner_thread, j), 0);
	pthread_join(th, NULL);
	assert_int_equal(j->start_rc, 0);
}

static void test_kill_with_term_blocked(void **state)
{
	struct job j = { .cmd = "sleep\n", .cpu = 20, .wall = 20, .cancel_after = 0.5 };
	run(&j);
	assert_int_equal(j.v.status, SBX_SG);
	assert_non_null(strstr(j.v.message, "cancelled"));
	assert_true(j.took < 5);
}

static void test_kill_at_once(void **state)
{
	/* the cancellation reaches the supervisor before it has set up */
	struct job j = { .cmd = "sleep\n", .cpu = 20, .wall = 20, .cancel_after = 1e-6 };
	run(&j);
	assert_int_equal(j.v.status, SBX_SG);
	assert_non_null(strstr(j.v.message, "cancelled"));
	assert_true(j.took < 5);
}

static void test_cpu_limit_with_chld_ignored(void **state)
{
	struct job j = { .cmd = "spin\n", .cpu = 0.5, .wall = 10 };
	run(&j);
	assert_int_equal(j.v.status, SBX_TO);
	assert_true(j.took < 5);
}

static void test_wall_limit(void **state)
{
	struct job j = { .cmd = "sleep\n", .cpu = 5, .wall = 0.5 };
	run(&j);
	assert_int_equal(j.v.status, SBX_TO);
	assert_true(j.took < 5);
}

static void test_host_starts_clean(void **state)
{
	struct job j = { .cmd = "mask\n", .cpu = 5, .wall = 10 };
	run(&j);
	assert_int_equal(j.v.status, SBX_OK);
	assert_string_equal(j.out, "[] True\n");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kill_with_term_blocked),
		cmocka_unit_test(test_kill_at_once),
		cmocka_unit_test(test_cpu_limit_with_chld_ignored),
		cmocka_unit_test(test_wall_limit),
		cmocka_unit_test(test_host_starts_clean),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}

/*
 * test_trusted.c: the sbx_* API in SBX_TRUSTED mode against a fake strategy
 * host (a temporary agenttest_host/__main__.py whose behaviour is chosen by
 * the first line it reads): echo, exit codes, CPU and wall limits, output
 * limit, cancellation, the explicit environment and closed descriptors.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "sandbox/sandbox.h"

static char tmpdir[64];

static const char host_py[] =
	"import os, sys, time\n"
	"cmd = sys.stdin.readline().strip()\n"
	"if cmd == 'echo':\n"
	"    sys.stdout.write(sys.stdin.read()); sys.stdout.flush()\n"
	"elif cmd == 'exit3':\n"
	"    sys.exit(3)\n"
	"elif cmd == 'raise':\n"
	"    raise ValueError('boom')\n"
	"elif cmd == 'spin':\n"
	"    while True: pass\n"
	"elif cmd == 'sleep':\n"
	"    time.sleep(30)\n"
	"elif cmd == 'flood':\n"
	"    while True: sys.stdout.write('x' * 65536)\n"
	"elif cmd == 'env':\n"
	"    print(' '.join(sorted(os.environ)))\n"
	"elif cmd == 'fds':\n"
	"    print(' '.join(sorted(os.listdir('/proc/self/fd'))))\n"
	"elif cmd == 'kill':\n"
	"    os.kill(os.getpid(), 9)\n";

/* Write host_py as <tmpdir>/agenttest_host/__main__.py. */
static int setup(void **state)
{
	char path[128];
	snprintf(tmpdir, sizeof tmpdir, "/tmp/sbx-trusted-XXXXXX");
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
	setenv("AGENTTEST_TEST_SECRET", "hunter2", 1);
	return 0;
}

static int teardown(void **state)
{
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

/* Run the fake host with `input`, collect stdout into out, return verdict. */
static void run(const char *input, double cpu, double wall, uint64_t outlim,
                char *out, size_t outlen, struct sbx_verdict *v)
{
	struct sbx_spec spec = { .mode = SBX_TRUSTED };
	struct sbx_run r;
	char err[256];
	spec.limits.cpu_seconds = cpu;
	spec.limits.wall_seconds = wall;
	spec.limits.output_bytes = outlim;
	assert_int_equal(sbx_start(&spec, &r, err, sizeof err), 0);
	size_t len = strlen(input);
	assert_int_equal(write(r.to_host, input, len), (ssize_t)len);
	close(r.to_host);
	r.to_host = -1;
	size_t got = 0;
	for (;;) {
		char tmp[65536];
		ssize_t n = read(r.from_host, tmp, sizeof tmp);
		if (n <= 0)
			break;
		if (got + 1 < outlen) {
			size_t c = (size_t)n < outlen - 1 - got ? (size_t)n : outlen - 1 - got;
			memcpy(out + got, tmp, c);
			got += c;
		}
	}
	out[got] = '\0';
	assert_int_equal(sbx_finish(&r, v), 0);
}

static void test_echo(void **state)
{
	char out[256];
	struct sbx_verdict v;
	run("echo\nhello frames\n", 5, 10, 0, out, sizeof out, &v);
	assert_string_equal(out, "hello frames\n");
	assert_int_equal(v.status, SBX_OK);
	assert_string_equal(sbx_status_code(v.status), "ok");
	assert_true(v.wall_seconds > 0 && v.wall_seconds < 10);
	assert_true(v.max_rss_bytes > 1000000);
	assert_non_null(strstr(v.warnings, "trusted"));
}

static void test_exit_code(void **state)
{
	char out[256];
	struct sbx_verdict v;
	run("exit3\n", 5, 10, 0, out, sizeof out, &v);
	assert_int_equal(v.status, SBX_RE);
	assert_int_equal(v.exit_code, 3);
	assert_string_equal(sbx_status_code(v.status), "strategy_error");
	run("raise\n", 5, 10, 0, out, sizeof out, &v);
	assert_int_equal(v.status, SBX_RE);
	assert_int_equal(v.exit_code, 1);
}

static void test_signal(void **state)
{
	char out[256];
	struct sbx_verdict v;
	run("kill\n", 5, 10, 0, out, sizeof out, &v);
	assert_int_equal(v.status, SBX_SG);
	assert_int_equal(v.exit_signal, 9);
	assert_string_equal(sbx_status_code(v.status), "crashed");
}

static void test_cpu_limit(void **state)
{
	char out[256];
	struct sbx_verdict v;
	/* the CPU limit stops it, not the wall limit: on a loaded machine half a
	 * second of CPU can take seconds of wall time, so the wall limit is far */
	run("spin\n", 0.5, 60, 0, out, sizeof out, &v);
	assert_int_equal(v.status, SBX_TO);
	assert_true(v.cpu_seconds >= 0.45);
	assert_true(v.wall_seconds < 60);
	assert_string_equal(sbx_status_code(v.status), "timeout");
}

static void test_wall_limit(void **state)
{
	char out[256];
	struct sbx_verdict v;
	run("sleep\n", 5, 0.5, 0, out, sizeof out, &v);
	assert_int_equal(v.status, SBX_TO);
	assert_true(v.killed);
	assert_true(v.wall_seconds >= 0.5 && v.wall_seconds < 5);   /* the CPU limit (5 s of a sleeping run) is never reached */
}

static void test_output_limit(void **state)
{
	char out[256];
	struct sbx_verdict v;
	run("flood\n", 5, 10, 1 << 20, out, sizeof out, &v);
	assert_int_equal(v.status, SBX_OL);
	assert_string_equal(sbx_status_code(v.status), "output_limit");
}

static void test_env_and_fds(void **state)
{
	char out[512];
	struct sbx_verdict v;
	run("env\n", 5, 10, 0, out, sizeof out, &v);
	assert_int_equal(v.status, SBX_OK);
	assert_null(strstr(out, "AGENTTEST_TEST_SECRET"));
	assert_non_null(strstr(out, "PATH"));
	run("fds\n", 5, 10, 0, out, sizeof out, &v);
	assert_string_equal(out, "0 1 2 3\n"); /* 3: listdir's own fd */
}

static void test_cancel(void **state)
{
	struct sbx_spec spec = { .mode = SBX_TRUSTED };
	struct sbx_run r;
	struct sbx_verdict v;
	char err[256];
	assert_int_equal(sbx_start(&spec, &r, err, sizeof err), 0);
	assert_int_equal(write(r.to_host, "sleep\n", 6), 6);
	usleep(200000);
	sbx_kill(&r);
	assert_int_equal(sbx_finish(&r, &v), 0);
	assert_int_equal(v.status, SBX_SG);
	assert_non_null(strstr(v.message, "cancelled"));
	assert_true(v.wall_seconds < 5);
}

static void test_bad_box(void **state)
{
	struct sbx_spec spec = { .mode = SBX_TRUSTED, .box_id = 100000 };
	struct sbx_run r;
	char err[256] = "";
	assert_int_equal(sbx_start(&spec, &r, err, sizeof err), -1);
	assert_non_null(strstr(err, "box id"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_echo),
		cmocka_unit_test(test_exit_code),
		cmocka_unit_test(test_signal),
		cmocka_unit_test(test_cpu_limit),
		cmocka_unit_test(test_wall_limit),
		cmocka_unit_test(test_output_limit),
		cmocka_unit_test(test_env_and_fds),
		cmocka_unit_test(test_cancel),
		cmocka_unit_test(test_bad_box),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}

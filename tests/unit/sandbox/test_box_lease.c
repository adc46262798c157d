/*
 * test_box_lease.c: machine-wide box numbers (sandbox/box_lease.c): the
 * lowest free number wins, a released or dead holder's number is reused,
 * another process never gets a held number, the agent loop's Python
 * leases (agentloop/sandbox_profile.py) share the pool, and an unsafe
 * directory is refused. Runs in a private AGENTTEST_BOX_DIR.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "sandbox/box_lease.h"

static char dir[64];

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof dir, "/tmp/agenttest-box-test-XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	chmod(dir, 0700);
	setenv("AGENTTEST_BOX_DIR", dir, 1);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* A child process that leases one number (by the C API or the Python loop),
 * writes it to the pipe and holds it until killed. Returns its pid. */
static pid_t holder(int *number, int python)
{
	int p[2];
	assert_int_equal(pipe(p), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(p[0]);
		if (python) {
			dup2(p[1], 1);
			execl("/usr/bin/python3", "python3", "-c",
			      "import sys, time; sys.path.insert(0, 'evaluator/runner');"
			      "from agentloop.sandbox_profile import Box; b = Box(); print(b.number, flush=True); time.sleep(60)",
			      (char *)NULL);
			_exit(127);
		}
		struct sbx_box_lease l = SBX_BOX_LEASE_INIT;
		char err[256];
		if (sbx_box_acquire(&l, err, sizeof err) != 0)
			_exit(1);
		dprintf(p[1], "%u\n", (unsigned)l.box_id);
		pause();
		_exit(0);
	}
	close(p[1]);
	char buf[32] = "";
	ssize_t n = read(p[0], buf, sizeof buf - 1);
	close(p[0]);
	assert_true(n > 0);
	*number = atoi(buf);
	return pid;
}

static void kill_holder(pid_t pid)
{
	kill(pid, SIGKILL);
	int st;
	waitpid(pid, &st, 0);
}

static void test_lowest_free_and_reuse(void **state)
{
	(void)state;
	struct sbx_box_lease a = SBX_BOX_LEASE_INIT, b = SBX_BOX_LEASE_INIT, c = SBX_BOX_LEASE_INIT;
	char err[256];
	assert_int_equal(sbx_box_acquire(&a, err, sizeof err), 0);
	assert_int_equal(sbx_box_acquire(&b, err, sizeof err), 0);
	/* two leases of one process are two numbers (one open file each) */
	assert_int_equal(a.box_id, 1);
	assert_int_equal(b.box_id, 2);
	sbx_box_release(&a);
	assert_int_equal(a.fd, -1);
	sbx_box_release(&a);   /* a second release is a no-op */
	assert_int_equal(sbx_box_acquire(&c, err, sizeof err), 0);
	assert_int_equal(c.box_id, 1);
	sbx_box_release(&b);
	sbx_box_release(&c);
}

static void test_other_processes_and_sigkill(void **state)
{
	(void)state;
	char err[256];
	struct sbx_box_lease mine = SBX_BOX_LEASE_INIT, next = SBX_BOX_LEASE_INIT, again = SBX_BOX_LEASE_INIT;
	assert_int_equal(sbx_box_acquire(&mine, err, sizeof err), 0);
	assert_int_equal(mine.box_id, 1);
	int theirs, py;
	pid_t c = holder(&theirs, 0);
	assert_int_equal(theirs, 2);
	/* the agent loop's Python lease takes the next number of the same pool */
	pid_t p = holder(&py, 1);
	assert_int_equal(py, 3);
	assert_int_equal(sbx_box_acquire(&next, err, sizeof err), 0);
	assert_int_equal(next.box_id, 4);
	/* a holder killed without any chance to clean up frees its number */
	kill_holder(c);
	assert_int_equal(sbx_box_acquire(&again, err, sizeof err), 0);
	assert_int_equal(again.box_id, 2);
	kill_holder(p);
	sbx_box_release(&again);
	assert_int_equal(sbx_box_acquire(&again, err, sizeof err), 0);
	assert_int_equal(again.box_id, 2);
	sbx_box_release(&again);
	sbx_box_release(&next);
	sbx_box_release(&mine);
}

static void test_unsafe_directory_refused(void **state)
{
	(void)state;
	char err[256] = "";
	struct sbx_box_lease l = SBX_BOX_LEASE_INIT;
	assert_int_equal(chmod(dir, 0777), 0);
	assert_int_equal(sbx_box_acquire(&l, err, sizeof err), -1);
	assert_non_null(strstr(err, "not writable by others"));
	assert_int_equal(l.fd, -1);
	assert_int_equal(chmod(dir, 0700), 0);
	/* a path that is a file, not a directory */
	char file[96];
	snprintf(file, sizeof file, "%s/plain", dir);
	FILE *f = fopen(file, "w");
	assert_non_null(f);
	fclose(f);
	setenv("AGENTTEST_BOX_DIR", file, 1);
	assert_int_equal(sbx_box_acquire(&l, err, sizeof err), -1);
	assert_non_null(strstr(err, "box leases:"));
	assert_string_equal(sbx_box_dir(), file);
	setenv("AGENTTEST_BOX_DIR", dir, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lowest_free_and_reuse),
		cmocka_unit_test(test_other_processes_and_sigkill),
		cmocka_unit_test(test_unsafe_directory_refused),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}

/*
 * test_jobwait.c: the waiter registry of common/jobwait.h in a temporary
 * directory: the pool-wide and per-user caps (counting another process's
 * live socket), a dead waiter's socket removed and not counted, a wake-up
 * reaching a registered waiter and being drained, leave unlinking.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>

#include "jobwait.h"

static char dir[64];

/* A socket bound at dir/name (kept open: a live waiter of "another process"). */
static int bind_at(const char *name)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_DGRAM, 0);
	assert_true(fd >= 0);
	snprintf(sa.sun_path, sizeof sa.sun_path, "%s/%s", dir, name);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
	return fd;
}

static bool exists(const char *name)
{
	char p[160];
	struct stat st;
	snprintf(p, sizeof p, "%s/%s", dir, name);
	return stat(p, &st) == 0;
}

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof dir, "/tmp/jobwait-test-XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[128];
	(void)state;
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static void test_caps(void **state)
{
	struct jobwait w, w2;
	(void)state;
	int other = bind_at("wait-1-999999.sock");
	assert_int_equal(jobwait_enter(&w, dir, 1, 10, 1), JOBWAIT_BUSY);   /* user 1 has one */
	assert_int_equal(w.fd, -1);
	assert_int_equal(jobwait_enter(&w, dir, 1, 10, 2), JOBWAIT_OK);
	assert_int_equal(jobwait_enter(&w2, dir, 2, 2, 5), JOBWAIT_BUSY);   /* pool: 3 > 2 */
	assert_int_equal(jobwait_enter(&w2, dir, 2, 3, 5), JOBWAIT_OK);
	jobwait_leave(&w2);
	jobwait_leave(&w);
	jobwait_leave(&w);   /* twice is harmless */
	char mine[64];
	snprintf(mine, sizeof mine, "wait-1-%ld.sock", (long)getpid());
	assert_false(exists(mine));
	assert_int_equal(jobwait_enter(&w, dir, 3, 0, 5), JOBWAIT_BUSY);
	assert_int_equal(jobwait_enter(&w, NULL, 3, 5, 5), JOBWAIT_NONE);
	assert_int_equal(jobwait_enter(&w, "", 3, 5, 5), JOBWAIT_NONE);
	assert_int_equal(jobwait_enter(&w, "/nonexistent-jobwait-dir", 3, 5, 5), JOBWAIT_NONE);
	close(other);
}

static void test_dead_waiter_is_removed(void **state)
{
	struct jobwait w;
	(void)state;
	close(bind_at("wait-5-777777.sock"));   /* its process is gone */
	int keep = bind_at("wait-9-1.txt");     /* not a waiter name: ignored */
	assert_true(exists("wait-5-777777.sock"));
	assert_int_equal(jobwait_enter(&w, dir, 5, 1, 1), JOBWAIT_OK);
	assert_false(exists("wait-5-777777.sock"));
	assert_true(exists("wait-9-1.txt"));
	jobwait_leave(&w);
	close(keep);
}

static void test_wake(void **state)
{
	struct jobwait w;
	(void)state;
	assert_int_equal(jobwait_enter(&w, dir, 7, 1, 1), JOBWAIT_OK);
	assert_false(jobwait_sleep(&w, 0));
	jobwait_wake_all(dir);
	jobwait_wake_all(dir);
	assert_true(jobwait_sleep(&w, 1000));
	assert_false(jobwait_sleep(&w, 0));      /* both datagrams were drained */
	jobwait_leave(&w);
	assert_false(jobwait_sleep(&w, 0));
	jobwait_wake_all(dir);                   /* nobody left: no error */
	jobwait_wake_all(NULL);
}

/*
 * A waiter for one job: the runner's "d<id>" for that job says it is final
 * (no status read needed), another job's lets it sleep on, a plain wake-up
 * asks for a read; what matters most wins when several are queued.
 */
static void test_wake_for_one_job(void **state)
{
	static const char mine[] = "0b7c52f4-6b4e-4a62-9b1e-2f7d0e4c9a11";
	static const char other[] = "0b7c52f4-6b4e-4a62-9b1e-2f7d0e4c9a12";
	struct jobwait w;
	(void)state;
	assert_int_equal(jobwait_enter(&w, dir, 7, 1, 1), JOBWAIT_OK);
	assert_int_equal(jobwait_sleep_job(&w, 0, mine), JOBWAIT_TIMEOUT);
	jobwait_wake_done(dir, other);
	assert_int_equal(jobwait_sleep_job(&w, 1000, mine), JOBWAIT_OTHER);
	jobwait_wake_done(dir, "0b7c52f4");   /* a prefix of mine is another job */
	assert_int_equal(jobwait_sleep_job(&w, 1000, mine), JOBWAIT_OTHER);
	jobwait_wake_all(dir);
	jobwait_wake_done(dir, other);
	assert_int_equal(jobwait_sleep_job(&w, 1000, mine), JOBWAIT_WOKEN);
	jobwait_wake_done(dir, other);
	jobwait_wake_done(dir, mine);
	jobwait_wake_all(dir);
	assert_int_equal(jobwait_sleep_job(&w, 1000, mine), JOBWAIT_DONE);
	assert_int_equal(jobwait_sleep_job(&w, 0, mine), JOBWAIT_TIMEOUT);   /* all drained */
	jobwait_wake_done(dir, mine);
	assert_true(jobwait_sleep(&w, 1000));   /* a plain sleeper wakes on any datagram */
	jobwait_leave(&w);
	assert_int_equal(jobwait_sleep_job(&w, 0, mine), JOBWAIT_TIMEOUT);
	jobwait_wake_done(dir, mine);           /* nobody left: no error */
	jobwait_wake_done(NULL, mine);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_caps, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dead_waiter_is_removed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_wake, setup, teardown),
		cmocka_unit_test_setup_teardown(test_wake_for_one_job, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

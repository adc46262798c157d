/*
 * Unit tests of the runner's wake-up sockets (common/notify.c):
 * bind, datagrams from notify_all reach every runner socket of the
 * directory, stale sockets of dead runners are removed, other files are
 * left alone, and an absent directory is harmless.
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

#include "notify.h"

/* A fresh temporary directory into dir[64]. */
static void tmpdir(char dir[64])
{
	snprintf(dir, 64, "/tmp/agenttest-notify-XXXXXX");
	assert_non_null(mkdtemp(dir));
}

/* Remove everything in dir and dir itself. */
static void rmtree(const char *dir)
{
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
}

static void test_bind_and_wake(void **state)
{
	(void)state;
	char dir[64];
	struct buf path = BUF_INIT;
	tmpdir(dir);
	int fd = notify_bind(dir, &path);
	assert_true(fd >= 0);
	assert_non_null(strstr(buf_cstr(&path), "/runner-"));
	int cancels = -1;
	assert_int_equal(notify_drain(fd, &cancels), 0);
	assert_int_equal(cancels, 0);
	notify_all(dir, "q");
	notify_all(dir, "c");
	notify_all(dir, "q");
	assert_int_equal(notify_drain(fd, &cancels), 3);
	assert_int_equal(cancels, 1);   /* the runner polls its cancel requests at once only for this one */
	notify_all(dir, "c");
	assert_int_equal(notify_drain(fd, NULL), 1);
	assert_int_equal(notify_drain(fd, &cancels), 0);
	assert_int_equal(cancels, 0);
	close(fd);
	buf_free(&path);
	rmtree(dir);
}

static void test_stale_sockets_are_removed(void **state)
{
	(void)state;
	char dir[64], stale[100], other[100];
	struct buf path = BUF_INIT;
	tmpdir(dir);
	/* a socket nobody receives on: bound, then closed */
	snprintf(stale, sizeof stale, "%s/runner-999999.sock", dir);
	int s = socket(AF_UNIX, SOCK_DGRAM, 0);
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	memcpy(sa.sun_path, stale, strlen(stale) + 1);
	assert_int_equal(bind(s, (struct sockaddr *)&sa, sizeof sa), 0);
	close(s);
	snprintf(other, sizeof other, "%s/not-a-runner.txt", dir);
	FILE *f = fopen(other, "w");
	assert_non_null(f);
	fclose(f);
	int fd = notify_bind(dir, &path);
	assert_true(fd >= 0);
	assert_int_not_equal(access(stale, F_OK), 0);
	assert_int_equal(access(other, F_OK), 0);
	close(fd);
	buf_free(&path);
	rmtree(dir);
}

static void test_no_directory(void **state)
{
	(void)state;
	struct buf path = BUF_INIT;
	notify_all("/nonexistent/agenttest-notify", "q");
	notify_all(NULL, "q");
	assert_int_equal(notify_bind(NULL, &path), -1);
	assert_int_equal(notify_bind("", &path), -1);
	buf_free(&path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bind_and_wake),
		cmocka_unit_test(test_stale_sockets_are_removed),
		cmocka_unit_test(test_no_directory),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

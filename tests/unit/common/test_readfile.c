/* read_file_max: contents, size cap, non-regular files, no-follow. */
#include <errno.h>
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

#include "common/readfile.h"

static char dir[64];

/* dir/name as a static path. */
static const char *at(const char *name)
{
	static char p[128];
	snprintf(p, sizeof p, "%s/%s", dir, name);
	return p;
}

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof dir, "/tmp/readfile-XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	FILE *f = fopen(at("data"), "w");
	fputs("hello\n", f);
	fclose(f);
	fclose(fopen(at("empty"), "w"));
	mkdir(at("sub"), 0700);
	mkfifo(at("fifo"), 0600);
	return symlink("data", at("link"));
}

static int teardown(void **state)
{
	(void)state;
	const char *names[] = { "data", "empty", "fifo", "link" };
	for (size_t i = 0; i < 4; i++)
		unlink(at(names[i]));
	rmdir(at("sub"));
	return rmdir(dir);
}

static void reads_whole_file(void **state)
{
	(void)state;
	char *s = NULL;
	size_t n = 0;
	assert_int_equal(read_file_max(at("data"), 6, 0, &s, &n), 0);
	assert_int_equal(n, 6);
	assert_string_equal(s, "hello\n");
	free(s);
	assert_int_equal(read_file_max(at("empty"), 0, 0, &s, &n), 0);
	assert_int_equal(n, 0);
	assert_string_equal(s, "");
	free(s);
}

static void refuses_what_it_must(void **state)
{
	(void)state;
	char *s = NULL;
	size_t n = 0;
	assert_int_equal(read_file_max(at("data"), 5, 0, &s, &n), -1);
	assert_int_equal(errno, EFBIG);
	assert_int_equal(read_file_max(at("sub"), 100, 0, &s, &n), -1);
	assert_int_equal(errno, EISDIR);
	/* a FIFO with no writer must not block */
	assert_int_equal(read_file_max(at("fifo"), 100, 0, &s, &n), -1);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(read_file_max(at("missing"), 100, 0, &s, &n), -1);
	assert_int_equal(errno, ENOENT);
	assert_null(s);
}

static void nofollow_refuses_links(void **state)
{
	(void)state;
	char *s = NULL;
	size_t n = 0;
	assert_int_equal(read_file_max(at("link"), 100, 1, &s, &n), -1);
	assert_int_equal(errno, ELOOP);
	assert_int_equal(read_file_max(at("link"), 100, 0, &s, &n), 0);
	assert_string_equal(s, "hello\n");
	free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(reads_whole_file),
		cmocka_unit_test(refuses_what_it_must),
		cmocka_unit_test(nofollow_refuses_links),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}

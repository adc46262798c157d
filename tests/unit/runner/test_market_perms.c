/*
 * test_market_perms.c: the data directory's ownership model under the real
 * users (docs/deployment.md, "Market data"): the runner (root, UMask 0027)
 * stores a version with mk_store in a directory owned by the pool's user
 * and group, mode 2770, as tmpfiles.d creates /var/lib/agenttest/market;
 * the pool (an unprivileged user of that group, here nobody:nogroup) then
 * deletes it with dsretire_remove_files, as POST /api/data-cache/delete
 * does. A version directory the runner did not share is refused to the
 * pool, which shows the test can tell the two apart. Needs root (CI runs
 * as root); without it the test says so and fails.
 */
#include <errno.h>
#include <grp.h>
#include <setjmp.h>
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

#include "common/dsretire.h"
#include "evaluator/runner/market/market.h"

#define POOL_ID 65534u   /* nobody / nogroup */

static char root_dir[64], data_dir[96];

static int setup(void **state)
{
	(void)state;
	if (geteuid() != 0) {
		fprintf(stderr, "test_market_perms needs root (the runner's user)\n");
		return -1;
	}
	snprintf(root_dir, sizeof root_dir, "/tmp/agenttest-perms-XXXXXX");
	if (!mkdtemp(root_dir) || chmod(root_dir, 0755) != 0)
		return -1;
	snprintf(data_dir, sizeof data_dir, "%s/market", root_dir);
	if (mkdir(data_dir, 0700) != 0 || chown(data_dir, POOL_ID, POOL_ID) != 0 || chmod(data_dir, 02770) != 0)
		return -1;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", root_dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* Store a 3-bar, one-asset version as the runner does; fills v. */
static void store_version(struct mk_version *v, int64_t first_ms)
{
	struct kl_series s = { 0 };
	for (int i = 0; i < 3; i++) {
		double row[5] = { 100 + i, 101 + i, 99 + i, 100.5 + i, 10 };
		assert_int_equal(kl_series_push(&s, first_ms + i * 60000, row), 0);
	}
	const char *assets[] = { "BTC" };
	char err[256] = "";
	mode_t old = umask(027);   /* the runner unit's UMask */
	enum mk_err rc = mk_store(data_dir, "perm-test-1m", assets, 1, &s, first_ms, first_ms + 120000, 60000, NULL,
				  "{\"source\":\"unit\"}", v, err, sizeof err);
	umask(old);
	kl_series_free(&s);
	assert_int_equal(rc, MK_OK);
}

/* Run dsretire_remove_files as the pool's user in a child; its result. */
static int remove_as_pool(const char *hash)
{
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		gid_t g = POOL_ID;
		if (setgroups(1, &g) != 0 || setgid(POOL_ID) != 0 || setuid(POOL_ID) != 0)
			_exit(100);
		_exit(dsretire_remove_files(data_dir, hash) == 0 ? 0 : (errno == EACCES ? 2 : 3));
	}
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	return WEXITSTATUS(st);
}

static void test_pool_deletes_what_the_runner_stored(void **state)
{
	(void)state;
	struct mk_version v;
	store_version(&v, 1704067200000);
	struct stat st;
	assert_int_equal(stat(v.path, &st), 0);
	/* the runner's files keep the pool's group, its directories are shared */
	assert_int_equal(st.st_gid, POOL_ID);
	assert_true((st.st_mode & 070) == 070);
	assert_true(st.st_mode & S_ISGID);
	char q[4700], mid[4700];
	snprintf(q, sizeof q, "%s/versions/%s.quality.json", data_dir, v.hash);
	snprintf(mid, sizeof mid, "%s/versions/%s.midstate", data_dir, v.hash);
	assert_int_equal(access(q, F_OK), 0);
	assert_int_equal(access(mid, F_OK), 0);
	assert_int_equal(remove_as_pool(v.hash), 0);
	assert_int_equal(stat(v.path, &st), -1);
	assert_int_equal(errno, ENOENT);
	assert_int_equal(access(q, F_OK), -1);
	assert_int_equal(access(mid, F_OK), -1);   /* the refresh's midstates go with the version */
	json_object_put(v.quality);
	/* the runner stores again after the pool's delete */
	store_version(&v, 1704067200000 + 3600000);
	assert_int_equal(stat(v.path, &st), 0);
	json_object_put(v.quality);
}

static void test_unshared_version_is_refused_to_the_pool(void **state)
{
	(void)state;
	/* a version directory made without the runner's sharing step: root's, 0750 */
	const char *hash = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
	char dir[4700], file[4800];
	snprintf(dir, sizeof dir, "%s/versions/%s", data_dir, hash);
	assert_int_equal(mkdir(dir, 0750), 0);
	assert_int_equal(chown(dir, 0, 0), 0);
	assert_int_equal(chmod(dir, 0750), 0);
	snprintf(file, sizeof file, "%s/manifest.json", dir);
	FILE *f = fopen(file, "w");
	assert_non_null(f);
	fclose(f);
	assert_int_equal(remove_as_pool(hash), 2);
	assert_int_equal(access(file, F_OK), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pool_deletes_what_the_runner_stored),
		cmocka_unit_test(test_unshared_version_is_refused_to_the_pool),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}

/*
 * test_dscache.c: the runner's verified-dataset cache (evaluator/runner/
 * dscache.c). A dataset is verified once and then served from the cache;
 * any change to any of its files (a column rewritten in place, not only
 * the manifest) makes the next acquire verify again, which fails the run
 * with dataset_mismatch; once the bytes are back it verifies and caches
 * again. With DSCACHE_BENCH_DIR=<dataset dir> it also prints the time of a
 * verified open and of a cached acquire (tests/bench/dscache.sh).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "evaluator/dataset.h"
#include "evaluator/runner/runner.h"
#include "evaluator/synth.h"
#include "tests/unit/evaluator/ds_testutil.h"

static char base[256], dir[300];

/* Monotonic seconds. */
static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* A one-day synthetic dataset in a temporary directory. */
static int setup(void **state)
{
	char hash[65];
	struct ds_error e = { 0 };
	struct synth_config c = { .seed = 7, .days = 1, .start_ms = 1704067200000LL, .kappa = SYNTH_ETH_KAPPA };
	ds_tmpdir(base, sizeof base);
	snprintf(dir, sizeof dir, "%s/ds", base);
	return synth_write(dir, "dscache-test", &c, hash, &e) == DS_OK ? 0 : -1;
}

static int teardown(void **state)
{
	dscache_clear();
	ds_rmtree(base);
	return 0;
}

static void test_verified_once_and_on_change(void **state)
{
	struct rresult r;
	unsigned long hits, opens;
	char path[400];
	rresult_init(&r);
	struct dataset *a = dscache_acquire(dir, &r);
	assert_non_null(a);
	dscache_release(a);
	struct dataset *b = dscache_acquire(dir, &r);
	assert_ptr_equal(a, b);        /* served from the cache, not reopened */
	dscache_stats(&hits, &opens);
	assert_int_equal(hits, 1);
	assert_int_equal(opens, 1);
	dscache_release(b);

	/* a column file rewritten in place, the manifest untouched */
	snprintf(path, sizeof path, "%s/ETH.close.f64", dir);
	ds_flip_byte(path, 100);
	struct dataset *c = dscache_acquire(dir, &r);
	assert_null(c);
	assert_int_equal(r.status, RJOB_FAILED);
	assert_string_equal(r.error_code, "dataset_mismatch");
	rresult_free(&r);

	ds_flip_byte(path, 100);       /* restored: verifies and caches again */
	rresult_init(&r);
	struct dataset *d = dscache_acquire(dir, &r);
	assert_non_null(d);
	dscache_release(d);
	d = dscache_acquire(dir, &r);
	assert_non_null(d);
	dscache_release(d);
	dscache_stats(&hits, &opens);
	assert_int_equal(opens, 3);
	assert_int_equal(hits, 2);
	rresult_free(&r);
}

static void test_missing_dataset(void **state)
{
	struct rresult r;
	char gone[400];
	rresult_init(&r);
	snprintf(gone, sizeof gone, "%s/nope", base);
	assert_null(dscache_acquire(gone, &r));
	assert_string_equal(r.error_code, "dataset_error");
	rresult_free(&r);
}

static void test_bench(void **state)
{
	const char *bd = getenv("DSCACHE_BENCH_DIR");
	enum ds_err e;
	char msg[256];
	struct rresult r;
	rresult_init(&r);
	double t0 = now_s();
	struct dataset *ds = ds_open_any(bd, 1, NULL, &e, msg, sizeof msg);
	double verified = now_s() - t0;
	assert_non_null(ds);
	ds_close(ds);
	ds = dscache_acquire(bd, &r);   /* first acquire: verifies */
	assert_non_null(ds);
	size_t bars = ds_bars(ds);
	dscache_release(ds);
	int n = 200;
	t0 = now_s();
	for (int i = 0; i < n; i++) {
		ds = dscache_acquire(bd, &r);
		assert_non_null(ds);
		dscache_release(ds);
	}
	double cached = (now_s() - t0) / n;
	printf("dataset %s: %zu bars; verified open %.3f s; cached acquire %.3f ms\n", bd, bars,
	       verified, cached * 1e3);
	rresult_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_verified_once_and_on_change),
		cmocka_unit_test(test_missing_dataset),
	};
	const struct CMUnitTest bench[] = {
		cmocka_unit_test(test_bench),
	};
	if (getenv("DSCACHE_BENCH_DIR"))
		return cmocka_run_group_tests(bench, NULL, teardown);
	return cmocka_run_group_tests(tests, setup, teardown);
}

/*
 * Dataset reader/writer: round trip, verify, gaps as NaN, corruption and
 * truncation detection, malformed manifests, writer refusals.
 */
#include <math.h>
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

#include "evaluator/dataset.h"
#include "tests/unit/evaluator/ds_testutil.h"

#define T 10

/* Write a two-asset, ten-bar dataset into base/name; returns the hash. */
static void write_small(const char *dir, char hash[65])
{
	static const char *const assets[] = { "BTC", "ETH" };
	struct ds_layout l = { .version = "t-1", .n_assets = 2, .assets = assets,
			       .interval_ms = 60000, .bars = T,
			       .source_json = "{\"generator\":\"test\"}" };
	int64_t ts[T];
	double col[T];
	struct ds_error e = { 0 };
	for (int i = 0; i < T; i++)
		ts[i] = 1704067200000LL + (i < 5 ? i : i + 2) * 60000LL; /* a 2-bar hole after bar 4 */
	struct ds_writer *w = ds_writer_begin(dir, &l, &e);
	assert_non_null(w);
	assert_int_equal(ds_writer_put_ts(w, ts, &e), DS_OK);
	for (size_t a = 0; a < 2; a++)
		for (size_t f = 0; f < 5; f++) {
			for (int i = 0; i < T; i++) {
				double px = (a ? 3000.0 : 60000.0) + i;
				col[i] = f == 4 ? 10.0 + i : f == 1 ? px + 1 : f == 2 ? px - 1 : px;
				if (a == 1 && i == 3)
					col[i] = NAN; /* ETH misses bar 3 */
			}
			assert_int_equal(ds_writer_put(w, a, f, col, &e), DS_OK);
		}
	assert_int_equal(ds_writer_commit(w, hash, &e), DS_OK);
}

static void test_round_trip(void **state)
{
	(void)state;
	char base[256], dir[300], hash[65];
	ds_tmpdir(base, sizeof base);
	snprintf(dir, sizeof dir, "%s/ds", base);
	write_small(dir, hash);
	enum ds_err err;
	char msg[512];
	for (int verify = 0; verify <= 1; verify++) {
		struct dataset *ds = ds_open(dir, verify, &err, msg, sizeof msg);
		assert_non_null(ds);
		assert_string_equal(ds_hash(ds), hash);
		assert_string_equal(ds_version(ds), "t-1");
		assert_int_equal(ds_bars(ds), T);
		assert_int_equal(ds_interval_ms(ds), 60000);
		assert_true(ds_bars_per_year(ds) == 525600.0);
		assert_int_equal(ds_asset_count(ds), 2);
		assert_string_equal(ds_asset_name(ds, 1), "ETH");
		assert_int_equal(ds_asset_index(ds, "ETH"), 1);
		assert_int_equal(ds_asset_index(ds, "SOL"), -1);
		assert_int_equal(ds_field_count(ds), 5);
		assert_int_equal(ds_field_index(ds, "volume"), 4);
		assert_int_equal(ds_timestamps(ds)[5], 1704067200000LL + 7 * 60000LL);
		const double *c = ds_column(ds, 1, DS_CLOSE);
		assert_true(c[2] == 3002.0);
		assert_true(isnan(c[3]));
		assert_true(isnan(ds_column(ds, 1, DS_VOLUME)[3]));
		assert_true(ds_column(ds, 0, DS_HIGH)[9] == 60010.0);
		assert_ptr_equal(ds_column(ds, 0, DS_HIGH), ds_column_at(ds, 0, 1));
		assert_null(ds_column_at(ds, 2, 0));
		assert_non_null(strstr(ds_manifest_json(ds), "\"generator\":\"test\""));
		ds_close(ds);
	}
	/* the same content under another label and directory: the same hash */
	char dir2[300], hash2[65];
	snprintf(dir2, sizeof dir2, "%s/sub/other", base);
	write_small(dir2, hash2);
	assert_string_equal(hash, hash2);
	ds_rmtree(base);
}

static void test_writer_refuses_existing(void **state)
{
	(void)state;
	char base[256], dir[300], hash[65];
	ds_tmpdir(base, sizeof base);
	snprintf(dir, sizeof dir, "%s/ds", base);
	write_small(dir, hash);
	static const char *const assets[] = { "BTC" };
	struct ds_layout l = { .version = "x", .n_assets = 1, .assets = assets, .interval_ms = 1, .bars = 1 };
	struct ds_error e = { 0 };
	assert_null(ds_writer_begin(dir, &l, &e));
	assert_int_equal(e.code, DS_ERR_EXISTS);
	assert_string_equal(ds_errcode(e.code), "conflict");
	ds_rmtree(base);
}

static void test_writer_bad_layouts(void **state)
{
	(void)state;
	char base[256], dir[300];
	ds_tmpdir(base, sizeof base);
	snprintf(dir, sizeof dir, "%s/ds", base);
	static const char *const ok_assets[] = { "BTC" };
	static const char *const dup_assets[] = { "BTC", "BTC" };
	static const char *const bad_assets[] = { "BT/C" };
	static const char *const no_close[] = { "open", "volume" };
	static const char *const bad_field[] = { "Close" };
	struct ds_layout cases[] = {
		{ .version = "", .n_assets = 1, .assets = ok_assets, .interval_ms = 1, .bars = 1 },
		{ .version = "../x", .n_assets = 1, .assets = ok_assets, .interval_ms = 1, .bars = 1 },
		{ .version = ".hidden", .n_assets = 1, .assets = ok_assets, .interval_ms = 1, .bars = 1 },
		{ .version = "v", .n_assets = 0, .assets = ok_assets, .interval_ms = 1, .bars = 1 },
		{ .version = "v", .n_assets = 2, .assets = dup_assets, .interval_ms = 1, .bars = 1 },
		{ .version = "v", .n_assets = 1, .assets = bad_assets, .interval_ms = 1, .bars = 1 },
		{ .version = "v", .n_assets = 1, .assets = ok_assets, .n_fields = 2, .fields = no_close, .interval_ms = 1, .bars = 1 },
		{ .version = "v", .n_assets = 1, .assets = ok_assets, .n_fields = 1, .fields = bad_field, .interval_ms = 1, .bars = 1 },
		{ .version = "v", .n_assets = 1, .assets = ok_assets, .interval_ms = 0, .bars = 1 },
		{ .version = "v", .n_assets = 1, .assets = ok_assets, .interval_ms = 1, .bars = 0 },
		{ .version = "v", .n_assets = 1, .assets = ok_assets, .interval_ms = 1, .bars = 1, .source_json = "[1]" },
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		struct ds_error e = { 0 };
		assert_null(ds_writer_begin(dir, &cases[i], &e));
		assert_int_equal(e.code, DS_ERR_INPUT);
	}
	/* nothing was left behind */
	assert_int_equal(ds_count_entries(base), 0);
	ds_rmtree(base);
}

static void test_writer_order_and_ts(void **state)
{
	(void)state;
	char base[256], dir[300];
	ds_tmpdir(base, sizeof base);
	snprintf(dir, sizeof dir, "%s/ds", base);
	static const char *const assets[] = { "A", "B" };
	struct ds_layout l = { .version = "v", .n_assets = 2, .assets = assets, .interval_ms = 60000, .bars = 3 };
	struct ds_error e = { 0 };
	int64_t bad_ts[3] = { 0, 60000, 90000 }, dup_ts[3] = { 0, 60000, 60000 }, ts[3] = { 0, 60000, 180000 };
	double col[3] = { 1, 2, 3 };
	char hash[65];
	struct ds_writer *w = ds_writer_begin(dir, &l, &e);
	assert_non_null(w);
	assert_int_equal(ds_writer_put(w, 0, 0, col, &e), DS_ERR_INPUT); /* before ts */
	assert_int_equal(ds_writer_put_ts(w, bad_ts, &e), DS_ERR_INPUT);
	assert_int_equal(ds_writer_put_ts(w, dup_ts, &e), DS_ERR_INPUT);
	assert_int_equal(ds_writer_put_ts(w, ts, &e), DS_OK);
	assert_int_equal(ds_writer_put(w, 1, 0, col, &e), DS_ERR_INPUT); /* out of order */
	assert_int_equal(ds_writer_put(w, 0, 0, col, &e), DS_OK);
	assert_int_equal(ds_writer_commit(w, hash, &e), DS_ERR_INPUT); /* incomplete */
	struct stat st;
	assert_int_not_equal(stat(dir, &st), 0);
	assert_int_equal(ds_count_entries(base), 0); /* temp dir removed */
	ds_writer_abort(NULL);
	ds_rmtree(base);
}

/* Open dir, expect failure with `code`. */
static void expect_open_fails(const char *dir, int verify, enum ds_err code)
{
	enum ds_err err = DS_OK;
	char msg[512] = "";
	struct dataset *ds = ds_open(dir, verify, &err, msg, sizeof msg);
	if (ds)
		ds_close(ds);
	assert_null(ds);
	if (err != code)
		fail_msg("expected %s, got %s: %s", ds_errcode(code), ds_errcode(err), msg);
	assert_true(msg[0] != '\0');
	/* files are named relative to the dataset: the runner shows the
	 * message to users, who must not see the server's layout (issue 11) */
	if (strstr(msg, dir))
		fail_msg("the message names the directory: %s", msg);
}

static void test_corruption_detected(void **state)
{
	(void)state;
	char base[256], dir[300], path[400], hash[65];
	ds_tmpdir(base, sizeof base);
	snprintf(dir, sizeof dir, "%s/ds", base);
	write_small(dir, hash);
	snprintf(path, sizeof path, "%s/ETH.close.f64", dir);
	ds_flip_byte(path, 17);
	enum ds_err err;
	struct dataset *ds = ds_open(dir, 0, &err, NULL, 0); /* no verify: not noticed */
	assert_non_null(ds);
	ds_close(ds);
	expect_open_fails(dir, 1, DS_ERR_HASH);
	ds_flip_byte(path, 17); /* restore */
	ds = ds_open(dir, 1, &err, NULL, 0);
	assert_non_null(ds);
	ds_close(ds);
	/* the timestamp column */
	snprintf(path, sizeof path, "%s/ts.i64", dir);
	ds_flip_byte(path, 0);
	expect_open_fails(dir, 1, DS_ERR_HASH);
	ds_rmtree(base);
}

static void test_truncated_and_missing(void **state)
{
	(void)state;
	char base[256], dir[300], path[400], hash[65];
	ds_tmpdir(base, sizeof base);
	snprintf(dir, sizeof dir, "%s/ds", base);
	write_small(dir, hash);
	snprintf(path, sizeof path, "%s/BTC.volume.f64", dir);
	assert_int_equal(truncate(path, 79), 0);
	expect_open_fails(dir, 0, DS_ERR_CORRUPT);
	assert_int_equal(unlink(path), 0);
	expect_open_fails(dir, 0, DS_ERR_CORRUPT);
	snprintf(path, sizeof path, "%s/manifest.json", dir);
	assert_int_equal(unlink(path), 0);
	expect_open_fails(dir, 0, DS_ERR_NOT_FOUND);
	expect_open_fails("/nonexistent/agenttest", 0, DS_ERR_NOT_FOUND);
	ds_rmtree(base);
}

/* Rewrite manifest.json of dir by replacing `from` with `to` (first hit). */
static void edit_manifest(const char *dir, const char *from, const char *to)
{
	char path[400];
	snprintf(path, sizeof path, "%s/manifest.json", dir);
	ds_replace_in_file(path, from, to);
}

static void test_bad_manifests(void **state)
{
	(void)state;
	static const struct { const char *from, *to; enum ds_err code; } cases[] = {
		{ "\"format_version\": 1", "\"format_version\": 2", DS_ERR_MANIFEST },
		{ "\"format_version\": 1", "\"format_version\": \"1\"", DS_ERR_MANIFEST },
		{ "\"format\": \"agenttest-dataset\"", "\"format\": \"other\"", DS_ERR_MANIFEST },
		{ "\"bars\": 10", "\"bars\": 11", DS_ERR_MANIFEST },
		{ "\"bars\": 10", "\"bars\": -1", DS_ERR_MANIFEST },
		{ "\"bars\": 10", "\"bars\": 1e3", DS_ERR_MANIFEST },
		{ "\"interval_ms\": 60000", "\"interval_ms\": 0", DS_ERR_MANIFEST },
		{ "\"interval_ms\": 60000", "\"interval_ms\": 7000", DS_ERR_CORRUPT },
		{ "\"interval_ms\": 60000", "\"interval_ms\": 30000", DS_ERR_HASH },
		{ "\"ETH\"", "\"BTC\"", DS_ERR_MANIFEST },
		{ "\"ETH\"", "\"E/H\"", DS_ERR_MANIFEST },
		{ "\"version\": \"t-1\"", "\"version\": \"../up\"", DS_ERR_MANIFEST },
		{ "\"version\": \"t-1\"", "\"version\": \"t-2\"", DS_OK },
		{ "\"version\": \"t-1\"", "\"version\": \"t-1\", \"extra\": 1", DS_ERR_MANIFEST },
		{ "\"source\": {", "\"source\": 5, \"x\": {", DS_ERR_MANIFEST },
		{ "\"first_timestamp_ms\": 1704067200000", "\"first_timestamp_ms\": 1704067200001", DS_ERR_CORRUPT },
		{ "\"dataset_hash\": \"", "\"dataset_hash\": \"0", DS_ERR_MANIFEST },
		{ "\"dataset_hash\": \"", "\"dataset_hash\": \"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\", \"z\": \"", DS_ERR_MANIFEST },
		{ "\"size\": 80", "\"size\": 81", DS_ERR_MANIFEST },
		{ "\"size\": 80", "\"size\": 80, \"mtime\": 1", DS_ERR_MANIFEST },
		{ "\"ts.i64\"", "\"ts.bin\"", DS_ERR_MANIFEST },
		{ "{", "[", DS_ERR_MANIFEST },
		{ "{", "{{", DS_ERR_MANIFEST },
		{ "\"fields\": [", "\"fields\": [ \"close\",", DS_ERR_MANIFEST },
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		char base[256], dir[300], hash[65];
		ds_tmpdir(base, sizeof base);
		snprintf(dir, sizeof dir, "%s/ds", base);
		write_small(dir, hash);
		edit_manifest(dir, cases[i].from, cases[i].to);
		if (cases[i].code == DS_OK) {
			enum ds_err err;
			struct dataset *ds = ds_open(dir, 1, &err, NULL, 0);
			assert_non_null(ds);
			assert_string_equal(ds_hash(ds), hash); /* label not hashed */
			ds_close(ds);
		} else {
			print_message("case %zu: %s -> %s\n", i, cases[i].from, cases[i].to);
			expect_open_fails(dir, 0, cases[i].code);
		}
		ds_rmtree(base);
	}
}

static void test_trailing_garbage_and_size(void **state)
{
	(void)state;
	char base[256], dir[300], path[400], hash[65];
	ds_tmpdir(base, sizeof base);
	snprintf(dir, sizeof dir, "%s/ds", base);
	write_small(dir, hash);
	snprintf(path, sizeof path, "%s/manifest.json", dir);
	FILE *f = fopen(path, "a");
	assert_non_null(f);
	fputs("\n{}\n", f);
	fclose(f);
	expect_open_fails(dir, 0, DS_ERR_MANIFEST);
	ds_rmtree(base);
}

static void test_bad_values_on_verify(void **state)
{
	(void)state;
	char base[256], dir[300];
	ds_tmpdir(base, sizeof base);
	static const char *const assets[] = { "A" };
	struct { double open, high, low, close, volume; int ok; } cases[] = {
		{ 10, 11, 9, 10, 1, 1 },
		{ 10, 11, 9, 10, -1, 0 },
		{ 10, 11, 9, -10, 1, 0 },
		{ 10, 11, 9, 12, 1, 0 },     /* close above high */
		{ 10, 11, 9, NAN, 1, 0 },    /* partly missing */
		{ NAN, NAN, NAN, NAN, NAN, 1 },
		{ 10, INFINITY, 9, 10, 1, 0 },
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		snprintf(dir, sizeof dir, "%s/ds%zu", base, i);
		struct ds_layout l = { .version = "v", .n_assets = 1, .assets = assets, .interval_ms = 1000, .bars = 1 };
		struct ds_error e = { 0 };
		int64_t ts = 0;
		char hash[65];
		struct ds_writer *w = ds_writer_begin(dir, &l, &e);
		assert_non_null(w);
		assert_int_equal(ds_writer_put_ts(w, &ts, &e), DS_OK);
		double v[5] = { cases[i].open, cases[i].high, cases[i].low, cases[i].close, cases[i].volume };
		for (size_t f = 0; f < 5; f++)
			assert_int_equal(ds_writer_put(w, 0, f, &v[f], &e), DS_OK);
		assert_int_equal(ds_writer_commit(w, hash, &e), DS_OK);
		enum ds_err err;
		struct dataset *ds = ds_open(dir, 0, &err, NULL, 0);
		assert_non_null(ds); /* values are checked on verify only */
		ds_close(ds);
		if (cases[i].ok) {
			ds = ds_open(dir, 1, &err, NULL, 0);
			assert_non_null(ds);
			ds_close(ds);
		} else {
			expect_open_fails(dir, 1, DS_ERR_CORRUPT);
		}
	}
	ds_rmtree(base);
}

static void test_extra_field(void **state)
{
	(void)state;
	char base[256], dir[300], hash[65];
	ds_tmpdir(base, sizeof base);
	snprintf(dir, sizeof dir, "%s/ds", base);
	static const char *const assets[] = { "BTC" };
	static const char *const fields[] = { "close", "funding" };
	struct ds_layout l = { .version = "deriv-1", .n_assets = 1, .assets = assets, .n_fields = 2,
			       .fields = fields, .interval_ms = 3600000, .bars = 2 };
	struct ds_error e = { 0 };
	int64_t ts[2] = { 0, 3600000 };
	double close[2] = { 1, 2 }, funding[2] = { -0.0001, NAN };
	struct ds_writer *w = ds_writer_begin(dir, &l, &e);
	assert_non_null(w);
	assert_int_equal(ds_writer_put_ts(w, ts, &e), DS_OK);
	assert_int_equal(ds_writer_put(w, 0, 0, close, &e), DS_OK);
	assert_int_equal(ds_writer_put(w, 0, 1, funding, &e), DS_OK);
	assert_int_equal(ds_writer_commit(w, hash, &e), DS_OK);
	enum ds_err err;
	struct dataset *ds = ds_open(dir, 1, &err, NULL, 0);
	assert_non_null(ds);
	assert_null(ds_column(ds, 0, DS_OPEN));
	assert_true(ds_column(ds, 0, DS_CLOSE)[1] == 2.0);
	assert_int_equal(ds_field_index(ds, "funding"), 1);
	assert_true(ds_column_at(ds, 0, 1)[0] == -0.0001);
	assert_true(ds_bars_per_year(ds) == 8760.0);
	ds_close(ds);
	ds_rmtree(base);
}

/* Random byte edits, truncations and FIFOs in place of manifest.json never
 * crash the reader (ASan/valgrind run this too) and always give a code. */
static void test_manifest_mutations(void **state)
{
	(void)state;
	char base[256], dir[300], path[400], hash[65];
	ds_tmpdir(base, sizeof base);
	snprintf(dir, sizeof dir, "%s/ds", base);
	write_small(dir, hash);
	snprintf(path, sizeof path, "%s/manifest.json", dir);
	FILE *f = fopen(path, "rb");
	assert_non_null(f);
	static char orig[1 << 16], text[1 << 16];
	size_t n = fread(orig, 1, sizeof orig, f);
	fclose(f);
	static const char alphabet[] = " {}[]\",:0123456789aex-";
	uint64_t x = 88172645463325252ULL;
	int opened = 0;
	for (int i = 0; i < 400; i++) {
		memcpy(text, orig, n);
		size_t len = n;
		for (int k = 0; k < 1 + i % 3 && len > 0; k++) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			size_t at = (size_t)(x % len);
			if (i % 7 == 0)
				len = at; /* truncate */
			else
				text[at] = alphabet[(x >> 32) % (sizeof alphabet - 1)];
		}
		f = fopen(path, "wb");
		fwrite(text, 1, len, f);
		fclose(f);
		enum ds_err err = DS_OK;
		char msg[512] = "";
		struct dataset *ds = ds_open(dir, 1, &err, msg, sizeof msg);
		if (ds) {
			opened++;
			assert_string_equal(ds_hash(ds), hash);
			ds_close(ds);
		} else {
			assert_true(err > DS_OK && err < DS_ERR__MAX && msg[0]);
		}
	}
	print_message("%d of 400 mutated manifests still opened (whitespace-only edits)\n", opened);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(mkfifo(path, 0600), 0);
	enum ds_err err;
	assert_null(ds_open(dir, 0, &err, NULL, 0)); /* must not block on the FIFO */
	assert_int_equal(err, DS_ERR_IO);
	ds_rmtree(base);
}

static void test_errcodes(void **state)
{
	(void)state;
	for (int i = 0; i < DS_ERR__MAX; i++)
		assert_non_null(ds_errcode((enum ds_err)i));
	assert_string_equal(ds_errcode(DS_ERR_HASH), "hash_mismatch");
	assert_string_equal(ds_errcode(DS_ERR_MANIFEST), "bad_manifest");
	assert_string_equal(ds_errcode((enum ds_err)99), "internal");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_writer_refuses_existing),
		cmocka_unit_test(test_writer_bad_layouts),
		cmocka_unit_test(test_writer_order_and_ts),
		cmocka_unit_test(test_corruption_detected),
		cmocka_unit_test(test_truncated_and_missing),
		cmocka_unit_test(test_bad_manifests),
		cmocka_unit_test(test_trailing_garbage_and_size),
		cmocka_unit_test(test_bad_values_on_verify),
		cmocka_unit_test(test_extra_field),
		cmocka_unit_test(test_manifest_mutations),
		cmocka_unit_test(test_errcodes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

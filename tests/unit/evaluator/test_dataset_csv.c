/*
 * prices.csv (the original layout) as an in-memory dataset: integer and
 * ISO-8601 keys, stable sort, ignored columns, and a table of malformed
 * files with the expected error code and line; ds_open_any picking the
 * layout; the ISO-8601 parser.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "evaluator/dataset.h"
#include "evaluator/dataset_priv.h"
#include "tests/unit/evaluator/ds_testutil.h"

/* Load `text` as dir/prices.csv; returns the dataset or NULL with *e. */
static struct dataset *load(const char *text, const char *asset, struct ds_error *e, char *dir, size_t dlen)
{
	char path[400];
	ds_tmpdir(dir, dlen);
	ds_write_text(dir, "prices.csv", text);
	snprintf(path, sizeof path, "%s/prices.csv", dir);
	memset(e, 0, sizeof *e);
	return ds_load_prices_csv(path, asset, e);
}

static void test_demo_integer_keys(void **state)
{
	(void)state;
	char dir[256];
	struct ds_error e;
	struct dataset *ds = load("ts,price\n1,100\n2,101\n3,102\n4,103\n5,104\n", NULL, &e, dir, sizeof dir);
	assert_non_null(ds);
	assert_int_equal(ds_bars(ds), 5);
	assert_int_equal(ds_interval_ms(ds), 86400000);
	assert_true(ds_bars_per_year(ds) == 365.0);
	assert_string_equal(ds_asset_name(ds, 0), "PRICE");
	assert_string_equal(ds_version(ds), "");
	assert_int_equal(ds_field_count(ds), 1);
	assert_null(ds_column(ds, 0, DS_OPEN));
	const double *c = ds_column(ds, 0, DS_CLOSE);
	for (int i = 0; i < 5; i++)
		assert_true(c[i] == 100.0 + i);
	assert_int_equal(ds_timestamps(ds)[0], 86400000);
	assert_int_equal(strlen(ds_hash(ds)), 64);
	char h1[65];
	memcpy(h1, ds_hash(ds), 65);
	ds_close(ds);
	ds_rmtree(dir);

	/* same content, rows shuffled, CRLF, extra column, blank line: same hash */
	ds = load("\xef\xbb\xbfts,price,note\r\n3,102,x\r\n\r\n1,100,y\r\n5,104,z\r\n2,101,\r\n4,103,w\r\n", NULL, &e, dir, sizeof dir);
	assert_non_null(ds);
	assert_string_equal(ds_hash(ds), h1);
	ds_close(ds);
	ds_rmtree(dir);

	/* another asset name or price changes the hash */
	ds = load("ts,price\n1,100\n2,101\n3,102\n4,103\n5,104\n", "BTC", &e, dir, sizeof dir);
	assert_non_null(ds);
	assert_string_equal(ds_asset_name(ds, 0), "BTC");
	assert_string_not_equal(ds_hash(ds), h1);
	ds_close(ds);
	ds_rmtree(dir);
}

static void test_iso_keys(void **state)
{
	(void)state;
	char dir[256];
	struct ds_error e;
	struct dataset *ds = load("date,close\n2024-03-25T00:00:00Z,70000.5\n2024-03-24T00:00:00Z,67000\n"
				  "2024-03-27,69000\n", NULL, &e, dir, sizeof dir);
	assert_non_null(ds);
	assert_int_equal(ds_bars(ds), 3);
	assert_int_equal(ds_timestamps(ds)[0], 1711238400000LL);
	assert_int_equal(ds_timestamps(ds)[2], 1711497600000LL);
	assert_int_equal(ds_interval_ms(ds), 86400000); /* the smallest step */
	assert_true(ds_column(ds, 0, DS_CLOSE)[0] == 67000.0);
	assert_true(ds_column(ds, 0, DS_CLOSE)[1] == 70000.5);
	ds_close(ds);
	ds_rmtree(dir);

	ds = load("ts,price\n2024-01-01T00:01:00Z,2\n2024-01-01T00:00:00Z,1\n2024-01-01T00:05:00+00:00,3\n",
		  NULL, &e, dir, sizeof dir);
	assert_non_null(ds);
	assert_int_equal(ds_interval_ms(ds), 60000);
	assert_true(ds_bars_per_year(ds) == 525600.0);
	ds_close(ds);
	ds_rmtree(dir);
}

static void test_malformed_table(void **state)
{
	(void)state;
	static const struct { const char *text; enum ds_err code; long line; } cases[] = {
		{ "", DS_ERR_INPUT, 0 },
		{ "ts,price\n", DS_ERR_INPUT, 1 },
		{ "ts\n1\n", DS_ERR_INPUT, 1 },
		{ "ts,price\n1,100\n2\n", DS_ERR_INPUT, 3 },            /* ragged: short */
		{ "ts,price\n1,100\n2,101,7\n", DS_ERR_INPUT, 3 },      /* ragged: long */
		{ "ts,price\n1,100\n2,abc\n", DS_ERR_INPUT, 3 },
		{ "ts,price\n1,100\n2,nan\n", DS_ERR_INPUT, 3 },
		{ "ts,price\n1,100\n2,inf\n", DS_ERR_INPUT, 3 },
		{ "ts,price\n1,100\n2,0\n", DS_ERR_INPUT, 3 },
		{ "ts,price\n1,100\n2,-5\n", DS_ERR_INPUT, 3 },
		{ "ts,price\n1,100\n2,1e999\n", DS_ERR_INPUT, 3 },
		{ "ts,price\n1,100\n2,\n", DS_ERR_INPUT, 3 },
		{ "ts,price\n1,100\n\n2,101\n1,102\n", DS_ERR_INPUT, 5 }, /* duplicate key */
		{ "ts,price\n1,100\n2024-01-01,101\n", DS_ERR_INPUT, 3 }, /* mixed key kinds */
		{ "ts,price\n2024-01-01,100\n7,101\n", DS_ERR_INPUT, 3 },
		{ "ts,price\n2024-02-30,100\n", DS_ERR_INPUT, 2 },
		{ "ts,price\n2024-01-01T25:00:00Z,100\n", DS_ERR_INPUT, 2 },
		{ "ts,price\n1.5,100\n", DS_ERR_INPUT, 2 },
		{ "ts,price\n999999999999,100\n", DS_ERR_INPUT, 2 },
		{ "ts,price\n2024-01-01T00:00:00Z,1\n2024-01-01T01:00:00+01:00,2\n", DS_ERR_INPUT, 3 }, /* same instant */
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		char dir[256];
		struct ds_error e;
		struct dataset *ds = load(cases[i].text, NULL, &e, dir, sizeof dir);
		if (ds) {
			ds_close(ds);
			fail_msg("case %zu accepted", i);
		}
		if (e.code != cases[i].code || e.line != cases[i].line)
			fail_msg("case %zu: got %s line %ld (%s), want %s line %ld", i, ds_errcode(e.code), e.line,
				 e.msg, ds_errcode(cases[i].code), cases[i].line);
		if (cases[i].line)
			assert_non_null(strstr(e.msg, "line"));
		ds_rmtree(dir);
	}
	struct ds_error e = { 0 };
	assert_null(ds_load_prices_csv("/nonexistent/prices.csv", NULL, &e));
	assert_int_equal(e.code, DS_ERR_NOT_FOUND);
	char dir[256];
	assert_null(load("ts,price\n1,2\n", "bad name", &e, dir, sizeof dir));
	assert_int_equal(e.code, DS_ERR_INPUT);
	ds_rmtree(dir);
}

static void test_open_any(void **state)
{
	(void)state;
	char dir[256], msg[512];
	enum ds_err err;
	ds_tmpdir(dir, sizeof dir);
	assert_null(ds_open_any(dir, 1, NULL, &err, msg, sizeof msg));
	assert_int_equal(err, DS_ERR_NOT_FOUND);
	ds_write_text(dir, "prices.csv", "ts,price\n1,100\n2,101\n");
	struct dataset *ds = ds_open_any(dir, 1, "ETH", &err, msg, sizeof msg);
	assert_non_null(ds);
	assert_string_equal(ds_dir(ds), dir);
	assert_string_equal(ds_asset_name(ds, 0), "ETH");
	assert_non_null(strstr(ds_manifest_json(ds), "\"prices.csv\""));
	ds_close(ds);
	ds_write_text(dir, "prices.csv", "ts,price\n1,100\n1,101\n");
	assert_null(ds_open_any(dir, 1, NULL, &err, msg, sizeof msg));
	assert_int_equal(err, DS_ERR_INPUT);
	assert_non_null(strstr(msg, "line 3"));
	ds_rmtree(dir);
}

static void test_iso_parser(void **state)
{
	(void)state;
	static const struct { const char *s; int64_t ms; } ok[] = {
		{ "1970-01-01", 0 },
		{ "1970-01-01T00:00:00Z", 0 },
		{ "1970-01-01 00:00:01", 1000 },
		{ "1970-01-01T00:00:00.5Z", 500 },
		{ "1970-01-01T00:00:00.123456Z", 123 },
		{ "1970-01-01T01:00:00+01:00", 0 },
		{ "1970-01-01T00:00:00-0130", 5400000 },
		{ "2000-02-29T00:00", 951782400000LL },
		{ "2024-01-01T00:00:00Z", 1704067200000LL },
		{ "1969-12-31T23:59:59Z", -1000 },
	};
	static const char *const bad[] = {
		"", "2024", "2024-1-01", "2024-13-01", "2023-02-29", "2024-01-01T", "2024-01-01T10",
		"2024-01-01T10:60", "2024-01-01T10:00:00Q", "2024-01-01T10:00:00.Z", "2024-01-01x",
		"2024-01-01T10:00:00+24:00",
	};
	for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
		int64_t ms = -7;
		if (ds__parse_iso8601(ok[i].s, &ms) != 0 || ms != ok[i].ms)
			fail_msg("%s -> %lld", ok[i].s, (long long)ms);
	}
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		int64_t ms;
		if (ds__parse_iso8601(bad[i], &ms) == 0)
			fail_msg("%s accepted", bad[i]);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_demo_integer_keys),
		cmocka_unit_test(test_iso_keys),
		cmocka_unit_test(test_malformed_table),
		cmocka_unit_test(test_open_any),
		cmocka_unit_test(test_iso_parser),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

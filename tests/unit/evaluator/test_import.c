/*
 * Importers: Binance klines (ms and µs times, header or not, several files
 * per asset in any order, several assets merged with NaN gaps) and a table
 * of malformed inputs with the expected error code and line; prices-csv;
 * asset names from file names.
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

#include "buf.h"
#include "evaluator/dataset.h"
#include "evaluator/import.h"
#include "tests/unit/evaluator/ds_testutil.h"

#define T0 1704067200000LL /* 2024-01-01T00:00:00Z */
#define HEADER "open_time,open,high,low,close,volume,close_time,quote_volume,count,taker_buy_volume,taker_buy_quote_volume,ignore\n"

/* Append one kline row for minute k (price base + k) to b; us: times in µs. */
static void row(struct buf *b, int k, double base, int us)
{
	long long o = T0 + k * 60000LL, c = o + 59999;
	double p = base + k;
	if (us)
		buf_printf(b, "%lld,%.2f,%.2f,%.2f,%.2f,%.3f,%lld,1.0,10,0.5,0.5,0\n", o * 1000, p, p + 1, p - 1, p + 0.5,
			   1.5 + k, c * 1000 + 999);
	else
		buf_printf(b, "%lld,%.2f,%.2f,%.2f,%.2f,%.3f,%lld,1.0,10,0.5,0.5,0\n", o, p, p + 1, p - 1, p + 0.5, 1.5 + k, c);
}

/* Write minutes [from, to) of one asset as a kline file dir/name. */
static void kfile(const char *dir, const char *name, int from, int to, double base, int us, int header)
{
	struct buf b = BUF_INIT;
	if (header)
		buf_puts(&b, HEADER);
	for (int k = from; k < to; k++)
		row(&b, k, base, us);
	ds_write_text(dir, name, buf_cstr(&b));
	buf_free(&b);
}

/* Import files (names relative to base) into base/out; returns the code. */
static enum ds_err run_import(const char *base, enum import_format fmt, const char *asset, size_t n,
			      const char *const *names, struct ds_error *e)
{
	char out[400], *paths[8];
	const char *cp[8];
	snprintf(out, sizeof out, "%s/out", base);
	for (size_t i = 0; i < n; i++) {
		paths[i] = malloc(400);
		snprintf(paths[i], 400, "%s/%s", base, names[i]);
		cp[i] = paths[i];
	}
	char hash[65];
	memset(e, 0, sizeof *e);
	enum ds_err rc = import_files(fmt, out, "imp-1", asset, n, cp, hash, e);
	for (size_t i = 0; i < n; i++)
		free(paths[i]);
	return rc;
}

/* Open base/out verified. */
static struct dataset *open_out(const char *base)
{
	char out[400], msg[512];
	enum ds_err err;
	snprintf(out, sizeof out, "%s/out", base);
	struct dataset *ds = ds_open(out, 1, &err, msg, sizeof msg);
	if (!ds)
		fail_msg("%s", msg);
	return ds;
}

static void test_klines_ms_header_and_filename(void **state)
{
	(void)state;
	char base[256];
	struct ds_error e;
	ds_tmpdir(base, sizeof base);
	kfile(base, "BTCUSDT-1m-2024-01.csv", 0, 5, 42000, 0, 1);
	const char *names[] = { "BTCUSDT-1m-2024-01.csv" };
	assert_int_equal(run_import(base, IMPORT_BINANCE_KLINES, NULL, 1, names, &e), DS_OK);
	struct dataset *ds = open_out(base);
	assert_string_equal(ds_asset_name(ds, 0), "BTC");
	assert_int_equal(ds_bars(ds), 5);
	assert_int_equal(ds_interval_ms(ds), 60000);
	assert_int_equal(ds_timestamps(ds)[0], T0);
	assert_true(ds_column(ds, 0, DS_OPEN)[2] == 42002.0);
	assert_true(ds_column(ds, 0, DS_HIGH)[2] == 42003.0);
	assert_true(ds_column(ds, 0, DS_LOW)[2] == 42001.0);
	assert_true(ds_column(ds, 0, DS_CLOSE)[2] == 42002.5);
	assert_true(ds_column(ds, 0, DS_VOLUME)[2] == 3.5);
	assert_non_null(strstr(ds_manifest_json(ds), "binance-klines"));
	ds_close(ds);
	ds_rmtree(base);
}

static void test_klines_us_equals_ms(void **state)
{
	(void)state;
	char b1[256], b2[256];
	struct ds_error e;
	ds_tmpdir(b1, sizeof b1);
	ds_tmpdir(b2, sizeof b2);
	kfile(b1, "ETHUSDT-1m.csv", 0, 4, 3000, 0, 1);
	kfile(b2, "ETHUSDT-1m.csv", 0, 4, 3000, 1, 0); /* µs, no header */
	{
		/* a UTF-8 byte order mark must not turn the first row into a "header" */
		char p[400], text[4096];
		snprintf(p, sizeof p, "%s/ETHUSDT-1m.csv", b2);
		FILE *f = fopen(p, "rb");
		size_t n = fread(text, 1, sizeof text - 1, f);
		fclose(f);
		text[n] = '\0';
		f = fopen(p, "wb");
		fputs("\xef\xbb\xbf", f);
		fputs(text, f);
		fclose(f);
	}
	const char *names[] = { "ETHUSDT-1m.csv" };
	assert_int_equal(run_import(b1, IMPORT_BINANCE_KLINES, NULL, 1, names, &e), DS_OK);
	assert_int_equal(run_import(b2, IMPORT_BINANCE_KLINES, NULL, 1, names, &e), DS_OK);
	struct dataset *d1 = open_out(b1), *d2 = open_out(b2);
	assert_string_equal(ds_hash(d1), ds_hash(d2));
	assert_int_equal(ds_timestamps(d2)[3], T0 + 3 * 60000);
	ds_close(d1);
	ds_close(d2);
	ds_rmtree(b1);
	ds_rmtree(b2);
}

static void test_klines_several_files_and_assets(void **state)
{
	(void)state;
	char base[256];
	struct ds_error e;
	ds_tmpdir(base, sizeof base);
	/* ETH in two files given out of order; the 2024 ms file and a 2025-style µs file */
	kfile(base, "e2.csv", 5, 10, 3000, 1, 0);
	kfile(base, "e1.csv", 0, 5, 3000, 0, 1);
	const char *eth[] = { "e2.csv", "e1.csv" };
	if (run_import(base, IMPORT_BINANCE_KLINES, "ETH", 2, eth, &e) != DS_OK)
		fail_msg("%s", e.msg);
	struct dataset *ds = open_out(base);
	assert_int_equal(ds_bars(ds), 10);
	for (int k = 0; k < 10; k++)
		assert_true(ds_column(ds, 0, DS_OPEN)[k] == 3000.0 + k);
	ds_close(ds);
	ds_rmtree(base);

	/* two assets: SOL bars 2..7 with minute 4 missing, BTC bars 0..4 */
	ds_tmpdir(base, sizeof base);
	struct buf b = BUF_INIT;
	for (int k = 2; k < 8; k++)
		if (k != 4)
			row(&b, k, 100, 0);
	ds_write_text(base, "SOLUSDT-1m-2024-01-01.csv", buf_cstr(&b));
	buf_free(&b);
	kfile(base, "BTCUSDT-1m-2024-01-01.csv", 0, 5, 42000, 0, 0);
	const char *two[] = { "SOLUSDT-1m-2024-01-01.csv", "BTCUSDT-1m-2024-01-01.csv" };
	assert_int_equal(run_import(base, IMPORT_BINANCE_KLINES, NULL, 2, two, &e), DS_OK);
	ds = open_out(base);
	assert_int_equal(ds_asset_count(ds), 2);
	assert_string_equal(ds_asset_name(ds, 0), "SOL");
	assert_string_equal(ds_asset_name(ds, 1), "BTC");
	assert_int_equal(ds_bars(ds), 8);
	assert_int_equal(ds_timestamps(ds)[7], T0 + 7 * 60000);
	const double *sol = ds_column(ds, 0, DS_CLOSE), *btc = ds_column(ds, 1, DS_CLOSE);
	assert_true(isnan(sol[0]) && isnan(sol[1]) && isnan(sol[4]));
	assert_true(sol[5] == 105.5 && sol[2] == 102.5);
	assert_true(isnan(ds_column(ds, 0, DS_VOLUME)[4]));
	assert_true(btc[4] == 42004.5);
	assert_true(isnan(btc[5]) && isnan(btc[7]));
	ds_close(ds);
	ds_rmtree(base);
}

/* One malformed-input case: file contents (two files at most) and the expected outcome. */
struct bad_case {
	const char *text1, *text2;
	enum ds_err code;
	long line;
	const char *what;
};

#define R(ms, o, h, l, c, v, cl) #ms "," #o "," #h "," #l "," #c "," #v "," #cl ",1,1,1,1,0\n"
#define OK0 R(1704067200000, 10, 11, 9, 10, 1, 1704067259999)
#define OK1 R(1704067260000, 10, 11, 9, 10, 1, 1704067319999)
#define OK2 R(1704067320000, 10, 11, 9, 10, 1, 1704067379999)

static const struct bad_case bad_cases[] = {
	{ OK0 OK2 OK1, NULL, DS_ERR_INPUT, 3, "non-increasing" },
	{ OK0 OK1 OK1, NULL, DS_ERR_INPUT, 3, "duplicate" },
	{ HEADER OK0 OK1, OK1, DS_ERR_INPUT, 1, "duplicate open time" },   /* across files: 2nd file line 1 */
	{ OK0 "1704067260000,10,11,9,10,1,1704067319999,1,1,1,1\n", NULL, DS_ERR_INPUT, 2, "ragged" },
	{ OK0 "1704067260000,10,11,9,10,1,1704067319999,1,1,1,1,0,9\n", NULL, DS_ERR_INPUT, 2, "ragged" },
	{ OK0 R(1704067260000, nan, 11, 9, 10, 1, 1704067319999), NULL, DS_ERR_INPUT, 2, "finite" },
	{ OK0 R(1704067260000, 10, inf, 9, 10, 1, 1704067319999), NULL, DS_ERR_INPUT, 2, "finite" },
	{ OK0 R(1704067260000, 10, 11, 0, 10, 1, 1704067319999), NULL, DS_ERR_INPUT, 2, "finite" },
	{ OK0 R(1704067260000, 10, 11, 9, -10, 1, 1704067319999), NULL, DS_ERR_INPUT, 2, "finite" },
	{ OK0 R(1704067260000, 10, 11, 9, 10, -1, 1704067319999), NULL, DS_ERR_INPUT, 2, "volume" },
	{ OK0 R(1704067260000, 10, 11, 9, 10, abc, 1704067319999), NULL, DS_ERR_INPUT, 2, "not a number" },
	{ OK0 R(1704067260000, 10, 11, 9, 12, 1, 1704067319999), NULL, DS_ERR_INPUT, 2, "OHLC" },
	{ OK0 R(1704067260000, 10, 11, 9, 10, 1, 1704067379999), NULL, DS_ERR_INPUT, 2, "interval" },
	{ OK0 R(1704067290000, 10, 11, 9, 10, 1, 1704067349999), NULL, DS_ERR_INPUT, 2, "grid" },
	{ R(1704067200000, 10, 11, 9, 10, 1, 1704067199999), NULL, DS_ERR_INPUT, 1, "close time before" },
	{ OK0 R(17040672600x0, 10, 11, 9, 10, 1, 1704067319999), NULL, DS_ERR_INPUT, 2, "open time" },
	{ OK0 R(1704067260000, 10, 11, 9, 10, 1, 17040673199.5), NULL, DS_ERR_INPUT, 2, "close time" },
	{ OK0 R(1704067260000500, 10, 11, 9, 10, 1, 1704067319999999), NULL, DS_ERR_INPUT, 2, "whole millisecond" },
	{ "open_time,open,high\n" OK0, NULL, DS_ERR_INPUT, 1, "header" },
	{ OK0 "open_time,open,high,low,close,volume,close_time,a,b,c,d,e\n", NULL, DS_ERR_INPUT, 2, "open time" },
	{ HEADER, NULL, DS_ERR_INPUT, 1, "no kline rows" },
	{ "", NULL, DS_ERR_INPUT, 0, "no kline rows" },
	{ "17040672O0000,10,11,9,10,1,1704067259999,1,1,1,1,0\n" OK1, NULL, DS_ERR_INPUT, 1, "open time" }, /* not a header */
	{ OK0, R(1704067200000, 10, 11, 9, 10, 1, 1704067499999), DS_ERR_INPUT, 1, "interval" },  /* second asset, 5m */
};

static void test_klines_bad_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof bad_cases / sizeof *bad_cases; i++) {
		const struct bad_case *c = &bad_cases[i];
		char base[256];
		struct ds_error e;
		ds_tmpdir(base, sizeof base);
		ds_write_text(base, "AUSDT-1m.csv", c->text1);
		const char *names[2] = { "AUSDT-1m.csv", NULL };
		size_t n = 1;
		const char *asset = "A";
		if (c->text2) {
			ds_write_text(base, "BUSDT-1m.csv", c->text2);
			names[n++] = "BUSDT-1m.csv";
			/* the interval case uses two assets; the duplicate case one */
			asset = strcmp(c->what, "interval") == 0 ? NULL : "A";
		}
		enum ds_err rc = run_import(base, IMPORT_BINANCE_KLINES, asset, n, names, &e);
		if (rc != c->code || e.line != c->line || !strstr(e.msg, c->what))
			fail_msg("case %zu (%s): got %s line %ld \"%s\", want %s line %ld", i, c->what, ds_errcode(rc), e.line,
				 e.msg, ds_errcode(c->code), c->line);
		if (c->line)
			assert_non_null(strstr(e.msg, "line"));
		assert_int_equal(ds_count_entries(base), (int)n); /* no output, no temp dir */
		ds_rmtree(base);
	}
}

/* Random edits of a valid kline file: the parser accepts or rejects with a
 * line inside the file, never crashes (ASan/valgrind run this too). */
static void test_klines_mutations(void **state)
{
	(void)state;
	struct buf orig = BUF_INIT;
	buf_puts(&orig, HEADER);
	for (int k = 0; k < 20; k++)
		row(&orig, k, 100, k % 2);
	static const char alphabet[] = ",\n.-+e0123456789 x\r";
	uint64_t x = 0x9e3779b97f4a7c15ULL;
	int accepted = 0;
	for (int i = 0; i < 500; i++) {
		char *text = malloc(orig.len + 1);
		memcpy(text, orig.data, orig.len + 1);
		size_t len = orig.len;
		for (int k = 0; k < 1 + i % 4 && len > 0; k++) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			size_t at = (size_t)(x % len);
			if (i % 9 == 0)
				text[len = at] = '\0';
			else
				text[at] = alphabet[(x >> 40) % (sizeof alphabet - 1)];
		}
		struct kline_rows rows = { 0 };
		struct ds_error e = { 0 };
		if (import_klines_parse(text, "m.csv", 0, &rows, &e) == 0) {
			accepted++;
			assert_true(rows.n >= 1 && rows.n <= 21);
		} else {
			assert_int_equal(e.code, DS_ERR_INPUT);
			assert_true(e.line >= 0 && e.line <= 30);
		}
		import_kline_rows_free(&rows);
		free(text);
	}
	print_message("%d of 500 mutated kline files accepted\n", accepted);
	buf_free(&orig);
}

static void test_import_misc_errors(void **state)
{
	(void)state;
	char base[256];
	struct ds_error e;
	ds_tmpdir(base, sizeof base);
	const char *missing[] = { "nope.csv" };
	assert_int_equal(run_import(base, IMPORT_BINANCE_KLINES, "A", 1, missing, &e), DS_ERR_NOT_FOUND);
	kfile(base, "-bad-name.csv", 0, 2, 10, 0, 0);
	const char *bad_name[] = { "-bad-name.csv" };
	assert_int_equal(run_import(base, IMPORT_BINANCE_KLINES, NULL, 1, bad_name, &e), DS_ERR_INPUT);
	assert_non_null(strstr(e.msg, "--asset"));
	assert_int_equal(run_import(base, IMPORT_BINANCE_KLINES, "a b", 1, bad_name, &e), DS_ERR_INPUT);
	assert_int_equal(run_import(base, IMPORT_BINANCE_KLINES, "A", 0, bad_name, &e), DS_ERR_INPUT);
	ds_write_text(base, "nul.csv", "");
	{
		char p[400];
		snprintf(p, sizeof p, "%s/nul.csv", base);
		FILE *f = fopen(p, "wb");
		fwrite("1,2\0,3\n", 1, 7, f);
		fclose(f);
	}
	const char *nul[] = { "nul.csv" };
	assert_int_equal(run_import(base, IMPORT_BINANCE_KLINES, "A", 1, nul, &e), DS_ERR_INPUT);
	/* output exists already */
	kfile(base, "ok.csv", 0, 2, 10, 0, 0);
	const char *ok[] = { "ok.csv" };
	assert_int_equal(run_import(base, IMPORT_BINANCE_KLINES, "A", 1, ok, &e), DS_OK);
	assert_int_equal(run_import(base, IMPORT_BINANCE_KLINES, "A", 1, ok, &e), DS_ERR_EXISTS);
	ds_rmtree(base);
}

static void test_prices_csv_import(void **state)
{
	(void)state;
	char base[256];
	struct ds_error e;
	ds_tmpdir(base, sizeof base);
	ds_write_text(base, "prices.csv", "ts,price\n3,102\n1,100\n2,101\n");
	const char *one[] = { "prices.csv" };
	assert_int_equal(run_import(base, IMPORT_PRICES_CSV, NULL, 1, one, &e), DS_OK);
	struct dataset *ds = open_out(base);
	assert_string_equal(ds_asset_name(ds, 0), "PRICE");
	assert_int_equal(ds_field_count(ds), 1);
	assert_int_equal(ds_interval_ms(ds), 86400000);
	assert_true(ds_column(ds, 0, DS_CLOSE)[2] == 102.0);
	/* the imported dataset has the same content hash as the in-memory one */
	char path[400];
	snprintf(path, sizeof path, "%s/prices.csv", base);
	struct dataset *mem = ds_load_prices_csv(path, NULL, &e);
	assert_non_null(mem);
	assert_string_equal(ds_hash(mem), ds_hash(ds));
	ds_close(mem);
	ds_close(ds);
	ds_rmtree(base);

	ds_tmpdir(base, sizeof base);
	ds_write_text(base, "prices.csv", "ts,price\n1,100\n2,-1\n");
	assert_int_equal(run_import(base, IMPORT_PRICES_CSV, "X", 1, one, &e), DS_ERR_INPUT);
	assert_int_equal(e.line, 3);
	/* irregular ISO spacing cannot be stored on a grid */
	ds_write_text(base, "prices.csv", "ts,price\n2024-01-01T00:00:00Z,1\n2024-01-01T00:02:00Z,2\n2024-01-01T00:05:00Z,3\n");
	assert_int_equal(run_import(base, IMPORT_PRICES_CSV, NULL, 1, one, &e), DS_ERR_INPUT);
	const char *two[] = { "prices.csv", "prices.csv" };
	assert_int_equal(run_import(base, IMPORT_PRICES_CSV, NULL, 2, two, &e), DS_ERR_INPUT);
	ds_rmtree(base);
}

static void test_asset_from_filename(void **state)
{
	(void)state;
	static const struct { const char *in, *out; } ok[] = {
		{ "BTCUSDT-1m-2024-01.csv", "BTC" },
		{ "/data/x/ETHUSDT-1m-2025-03-01.csv", "ETH" },
		{ "SOL.csv", "SOL" },
		{ "PEPE_klines.csv", "PEPE" },
		{ "USDT.csv", "USDT" },
	};
	char out[64];
	for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
		assert_int_equal(import_asset_from_filename(ok[i].in, out, sizeof out), 0);
		assert_string_equal(out, ok[i].out);
	}
	assert_int_equal(import_asset_from_filename("-1m.csv", out, sizeof out), -1);
	assert_int_equal(import_asset_from_filename("a b-1m.csv", out, sizeof out), -1);
	assert_int_equal(import_format_parse("binance-klines"), IMPORT_BINANCE_KLINES);
	assert_int_equal(import_format_parse("prices-csv"), IMPORT_PRICES_CSV);
	assert_int_equal(import_format_parse("parquet"), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_klines_ms_header_and_filename),
		cmocka_unit_test(test_klines_us_equals_ms),
		cmocka_unit_test(test_klines_several_files_and_assets),
		cmocka_unit_test(test_klines_bad_table),
		cmocka_unit_test(test_klines_mutations),
		cmocka_unit_test(test_import_misc_errors),
		cmocka_unit_test(test_prices_csv_import),
		cmocka_unit_test(test_asset_from_filename),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * import: turn external market data files into datasets (dataset.h format).
 *
 * Formats:
 *   prices-csv      the original agenttest prices.csv (ts,price): one file,
 *                   one asset ("close" only), rules of ds_load_prices_csv()
 *   binance-klines  Binance kline CSV (12 columns, header optional, open
 *                   times in ms or µs, detected per value by magnitude);
 *                   one or more files per asset, several assets merged on a
 *                   complete time grid with NaN where an asset has no bar
 *
 * Every rejection names the file and line (struct ds_error.line).
 */
#ifndef AGENTTEST_EVALUATOR_IMPORT_H
#define AGENTTEST_EVALUATOR_IMPORT_H

#include <stddef.h>
#include <stdint.h>

#include "evaluator/dataset.h"

enum import_format { IMPORT_PRICES_CSV, IMPORT_BINANCE_KLINES, IMPORT__MAX };

#define IMPORT_MAX_FILES 4096

/* "prices-csv" / "binance-klines" → format; -1 if unknown. */
int import_format_parse(const char *s);

/*
 * Import `n` files into a new dataset `dir` labelled `version`. `asset` names
 * the asset of every file; NULL derives it from each file name
 * (BTCUSDT-1m-2024-01.csv → BTC; prices-csv: "PRICE"). Fills hash (65).
 */
enum ds_err import_files(enum import_format fmt, const char *dir, const char *version,
			 const char *asset, size_t n, const char *const *files,
			 char hash[65], struct ds_error *e);

/* Asset name from a Binance-style file name into out: the base name up to
 * the first '-', '_' or '.', without a trailing "USDT"; -1 if not valid. */
int import_asset_from_filename(const char *path, char *out, size_t outlen);

/* Parsed kline rows of one asset (times in ms). */
struct kline_rows {
	size_t   n, cap;
	int64_t *ts;
	double  *ohlcv;     /* 5 values per row */
	long    *line;      /* input line of each row */
	int     *file;      /* index of the input file of each row */
	int64_t  interval;  /* ms, 0 until the first row */
	long     interval_line;
	int      interval_file;
};

/*
 * Parse one kline CSV text (NUL-terminated, modified in place) named `name`
 * (file index `file`) and append its rows to *rows. Checks: 12 columns,
 * integer times, finite prices > 0, volume >= 0, low <= open, close <= high,
 * strictly increasing open times, one interval (close - open + 1) for all
 * rows already in *rows. Returns 0 or -1 with *e (line set).
 */
int import_klines_parse(char *text, const char *name, int file, struct kline_rows *rows, struct ds_error *e);
/* Release the arrays of *rows. */
void import_kline_rows_free(struct kline_rows *rows);

#endif

/*
 * import: format dispatch, the prices-csv importer and asset names from file
 * names. The Binance kline importer lives in import_klines.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xalloc.h"
#include "evaluator/dataset_priv.h"
#include "evaluator/import.h"
#include "evaluator/import_priv.h"

static const char *const format_names[IMPORT__MAX] = {
	[IMPORT_PRICES_CSV] = "prices-csv",
	[IMPORT_BINANCE_KLINES] = "binance-klines",
};

int import_format_parse(const char *s)
{
	for (int i = 0; i < IMPORT__MAX; i++)
		if (s && strcmp(s, format_names[i]) == 0)
			return i;
	return -1;
}

int import_asset_from_filename(const char *path, char *out, size_t outlen)
{
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	size_t n = strcspn(base, "-_.");
	if (n > 4 && strncmp(base + n - 4, "USDT", 4) == 0)
		n -= 4;
	if (n == 0 || n >= outlen || n > DS_MAX_NAME)
		return -1;
	memcpy(out, base, n);
	out[n] = '\0';
	return ds_valid_asset(out) ? 0 : -1;
}

/* prices-csv: one file, one asset, field "close"; timestamps as loaded. */
static enum ds_err import_prices(const char *dir, const char *version, const char *asset,
				 const char *file, char hash[65], struct ds_error *e)
{
	struct dataset *src = ds_load_prices_csv(file, asset, e);
	if (!src)
		return e->code;
	enum ds_err rc;
	const char *names[1] = { ds_asset_name(src, 0) };
	static const char *const fields[1] = { "close" };
	char sj[128];
	snprintf(sj, sizeof sj, "{\"importer\": \"prices-csv\", \"input_sha256\": \"%s\"}", ds_hash(src));
	if (ds__check_ts(ds_timestamps(src), ds_bars(src), ds_interval_ms(src)) >= 0) {
		rc = ds__fail(e, DS_ERR_INPUT, 0, "%s: keys are irregularly spaced (not multiples of the smallest step "
			      "%lld ms); the dataset format needs a regular grid", file, (long long)ds_interval_ms(src));
		goto out;
	}
	struct ds_layout l = { .version = version, .n_assets = 1, .assets = names, .n_fields = 1,
			       .fields = fields, .interval_ms = ds_interval_ms(src), .bars = ds_bars(src),
			       .source_json = sj };
	struct ds_writer *w = ds_writer_begin(dir, &l, e);
	if (!w) {
		rc = e->code;
		goto out;
	}
	if ((rc = ds_writer_put_ts(w, ds_timestamps(src), e)) != DS_OK ||
	    (rc = ds_writer_put(w, 0, 0, ds_column(src, 0, DS_CLOSE), e)) != DS_OK) {
		ds_writer_abort(w);
		goto out;
	}
	rc = ds_writer_commit(w, hash, e);
out:
	ds_close(src);
	return rc;
}

enum ds_err import_files(enum import_format fmt, const char *dir, const char *version,
			 const char *asset, size_t n, const char *const *files,
			 char hash[65], struct ds_error *e)
{
	struct ds_error local;
	if (!e)
		e = &local; /* the format code below reads e->code */
	if (n == 0)
		return ds__fail(e, DS_ERR_INPUT, 0, "no input files");
	if (n > IMPORT_MAX_FILES)
		return ds__fail(e, DS_ERR_INPUT, 0, "at most %d input files", IMPORT_MAX_FILES);
	switch (fmt) {
	case IMPORT_PRICES_CSV:
		if (n != 1)
			return ds__fail(e, DS_ERR_INPUT, 0, "prices-csv takes exactly one file (one asset)");
		return import_prices(dir, version, asset, files[0], hash, e);
	case IMPORT_BINANCE_KLINES:
		return import__klines(dir, version, asset, n, files, hash, e);
	default:
		return ds__fail(e, DS_ERR_INPUT, 0, "unknown import format");
	}
}

/*
 * dataset: the dataset object, its accessors, the hash definitions and the
 * checks shared by the reader, the writer and the importers.
 *
 * Memory: a struct dataset owns a list of regions (mmap'd column files or
 * heap blocks for in-memory datasets) and releases them in ds_close(); the
 * column pointers handed out point into those regions and stay valid until
 * ds_close().
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>

#include "xalloc.h"
#include "buf.h"
#include "evaluator/dataset_priv.h"

static const char *const ds_codes[DS_ERR__MAX] = {
	[DS_OK]            = "ok",
	[DS_ERR_IO]        = "io_error",
	[DS_ERR_MANIFEST]  = "bad_manifest",
	[DS_ERR_HASH]      = "hash_mismatch",
	[DS_ERR_NO_ASSET]  = "unknown_asset",
	[DS_ERR_INPUT]     = "bad_input",
	[DS_ERR_CORRUPT]   = "corrupt_dataset",
	[DS_ERR_NOT_FOUND] = "not_found",
	[DS_ERR_EXISTS]    = "conflict",
};

static const char *const ds_std_names[DS_FIELD__MAX] = {
	[DS_OPEN] = "open", [DS_HIGH] = "high", [DS_LOW] = "low",
	[DS_CLOSE] = "close", [DS_VOLUME] = "volume",
};

const char *ds_errcode(enum ds_err e)
{
	if ((unsigned)e >= DS_ERR__MAX)
		return "internal";
	return ds_codes[e];
}

enum ds_err ds__fail(struct ds_error *e, enum ds_err code, long line, const char *fmt, ...)
{
	if (!e)
		return code;
	e->code = code;
	e->line = line;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(e->msg, sizeof e->msg, fmt, ap); /* truncation of a message is acceptable */
	va_end(ap);
	return code;
}

void ds__sha256_hex(const void *p, size_t n, char hex[65])
{
	unsigned char h[crypto_hash_sha256_BYTES];
	crypto_hash_sha256(h, p, n);
	sodium_bin2hex(hex, 65, h, sizeof h);
}

void ds__dataset_hash(int64_t interval_ms, size_t bars,
		      size_t n_assets, char *const *assets,
		      size_t n_fields, char *const *fields,
		      const char *ts_hex, char (*col_hex)[65], char out[65])
{
	struct buf b = BUF_INIT;
	buf_printf(&b, "%s-v%d\ninterval_ms=%lld\nbars=%zu\nassets=", DS_FORMAT_NAME,
		   DS_FORMAT_VERSION, (long long)interval_ms, bars);
	for (size_t i = 0; i < n_assets; i++)
		buf_printf(&b, "%s%s", i ? "," : "", assets[i]);
	buf_puts(&b, "\nfields=");
	for (size_t f = 0; f < n_fields; f++)
		buf_printf(&b, "%s%s", f ? "," : "", fields[f]);
	buf_printf(&b, "\nts=%s\n", ts_hex);
	for (size_t i = 0; i < n_assets; i++)
		for (size_t f = 0; f < n_fields; f++)
			buf_printf(&b, "%s.%s=%s\n", assets[i], fields[f], col_hex[i * n_fields + f]);
	ds__sha256_hex(b.data, b.len, out);
	buf_free(&b);
}

struct dataset *ds__alloc(void)
{
	struct dataset *ds = xcalloc(1, sizeof *ds);
	for (int f = 0; f < DS_FIELD__MAX; f++)
		ds->std_field[f] = -1;
	return ds;
}

void ds__add_region(struct dataset *ds, void *p, size_t len, int mapped)
{
	ds->regions = xreallocarray(ds->regions, ds->n_regions + 1, sizeof *ds->regions);
	ds->regions[ds->n_regions++] = (struct ds_region){ p, len, mapped };
}

void ds__map_std_fields(struct dataset *ds)
{
	for (int f = 0; f < DS_FIELD__MAX; f++)
		ds->std_field[f] = ds_field_index(ds, ds_std_names[f]);
}

const char *ds__std_field_name(enum ds_field f)
{
	return (unsigned)f < DS_FIELD__MAX ? ds_std_names[f] : NULL;
}

int ds__col_file(char *out, size_t outlen, const char *asset, const char *field)
{
	int n = snprintf(out, outlen, "%s.%s.f64", asset, field);
	return (n < 0 || (size_t)n >= outlen) ? -1 : 0;
}

void ds_close(struct dataset *ds)
{
	if (!ds)
		return;
	for (size_t i = 0; i < ds->n_regions; i++) {
		if (ds->regions[i].mapped)
			munmap(ds->regions[i].ptr, ds->regions[i].len);
		else
			free(ds->regions[i].ptr);
	}
	free(ds->regions);
	for (size_t i = 0; i < ds->n_assets; i++)
		free(ds->assets[i]);
	for (size_t i = 0; i < ds->n_fields; i++)
		free(ds->fields[i]);
	free(ds->assets);
	free(ds->fields);
	free(ds->cols);
	free(ds->dir);
	free(ds->version);
	free(ds->manifest_json);
	free(ds);
}

const char *ds_version(const struct dataset *ds) { return ds->version; }
const char *ds_hash(const struct dataset *ds) { return ds->hash; }
int64_t ds_interval_ms(const struct dataset *ds) { return ds->interval_ms; }
size_t ds_bars(const struct dataset *ds) { return ds->bars; }
size_t ds_asset_count(const struct dataset *ds) { return ds->n_assets; }
size_t ds_field_count(const struct dataset *ds) { return ds->n_fields; }
const int64_t *ds_timestamps(const struct dataset *ds) { return ds->ts; }
const char *ds_manifest_json(const struct dataset *ds) { return ds->manifest_json; }
const char *ds_dir(const struct dataset *ds) { return ds->dir; }

const char *ds_asset_name(const struct dataset *ds, size_t i)
{
	return i < ds->n_assets ? ds->assets[i] : NULL;
}

const char *ds_field_name(const struct dataset *ds, size_t i)
{
	return i < ds->n_fields ? ds->fields[i] : NULL;
}

long ds_asset_index(const struct dataset *ds, const char *name)
{
	for (size_t i = 0; i < ds->n_assets; i++)
		if (strcmp(ds->assets[i], name) == 0)
			return (long)i;
	return -1;
}

long ds_field_index(const struct dataset *ds, const char *name)
{
	for (size_t i = 0; i < ds->n_fields; i++)
		if (strcmp(ds->fields[i], name) == 0)
			return (long)i;
	return -1;
}

const double *ds_column_at(const struct dataset *ds, size_t asset, size_t field)
{
	if (asset >= ds->n_assets || field >= ds->n_fields)
		return NULL;
	return ds->cols[asset * ds->n_fields + field];
}

const double *ds_column(const struct dataset *ds, size_t asset, enum ds_field f)
{
	if ((unsigned)f >= DS_FIELD__MAX || asset >= ds->n_assets || ds->std_field[f] < 0)
		return NULL;
	return ds->cols[asset * ds->n_fields + (size_t)ds->std_field[f]];
}

double ds_bars_per_year(const struct dataset *ds)
{
	return DS_MS_PER_YEAR / (double)ds->interval_ms;
}

/* 1 if s is 1..max bytes long and every byte passes ok(). */
static int valid_name(const char *s, size_t max, int (*ok)(int c))
{
	size_t n = s ? strlen(s) : 0;
	if (n == 0 || n > max)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!ok((unsigned char)s[i]))
			return 0;
	return 1;
}

static int is_alnum_ascii(int c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}
static int label_char(int c) { return is_alnum_ascii(c) || c == '.' || c == '_' || c == '-'; }
static int asset_char(int c) { return is_alnum_ascii(c) || c == '_' || c == '-'; }
static int field_char(int c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'; }

int ds_valid_label(const char *s)
{
	/* no leading dot: a label must never name a hidden or parent directory */
	return valid_name(s, DS_MAX_LABEL, label_char) && s[0] != '.';
}
int ds_valid_asset(const char *s) { return valid_name(s, DS_MAX_NAME, asset_char); }
int ds_valid_field(const char *s) { return valid_name(s, DS_MAX_NAME, field_char); }

long ds__check_ts(const int64_t *ts, size_t n, int64_t interval_ms)
{
	for (size_t i = 1; i < n; i++) {
		if (ts[i] <= ts[i - 1])
			return (long)i;
		/* difference of two increasing int64 can overflow: compare via unsigned */
		uint64_t d = (uint64_t)ts[i] - (uint64_t)ts[i - 1];
		if (d % (uint64_t)interval_ms != 0)
			return (long)i;
	}
	return -1;
}

long ds__check_values(const struct dataset *ds, size_t asset, const char **why)
{
	const double *c[DS_FIELD__MAX];
	for (int f = 0; f < DS_FIELD__MAX; f++)
		c[f] = ds_column(ds, asset, (enum ds_field)f);
	for (size_t fi = 0; fi < ds->n_fields; fi++) {
		const double *x = ds->cols[asset * ds->n_fields + fi];
		int is_std = 0;
		for (int f = 0; f < DS_FIELD__MAX; f++)
			is_std |= ds->std_field[f] == (long)fi;
		if (is_std)
			continue;
		for (size_t t = 0; t < ds->bars; t++)
			if (isinf(x[t])) {
				*why = "infinite value";
				return (long)t;
			}
	}
	for (size_t t = 0; t < ds->bars; t++) {
		int n_nan = 0, n_std = 0;
		for (int f = 0; f < DS_FIELD__MAX; f++) {
			if (!c[f])
				continue;
			n_std++;
			double v = c[f][t];
			if (isnan(v)) {
				n_nan++;
				continue;
			}
			if (!isfinite(v) || (f == DS_VOLUME ? v < 0 : v <= 0)) {
				*why = f == DS_VOLUME ? "volume not finite and >= 0" : "price not finite and > 0";
				return (long)t;
			}
		}
		if (n_nan != 0 && n_nan != n_std) {
			*why = "bar partly missing (some OHLCV fields NaN, others not)";
			return (long)t;
		}
		if (n_nan == 0 && c[DS_HIGH] && c[DS_LOW]) {
			double hi = c[DS_HIGH][t], lo = c[DS_LOW][t];
			int bad = lo > hi;
			if (c[DS_OPEN])
				bad |= c[DS_OPEN][t] < lo || c[DS_OPEN][t] > hi;
			if (c[DS_CLOSE])
				bad |= c[DS_CLOSE][t] < lo || c[DS_CLOSE][t] > hi;
			if (bad) {
				*why = "OHLC inconsistent (need low <= open, close <= high)";
				return (long)t;
			}
		}
	}
	return -1;
}

struct dataset *ds_open_any(const char *dir, int verify, const char *asset,
			    enum ds_err *err, char *msg, size_t msglen)
{
	char path[4096];
	struct stat st;
	int n = snprintf(path, sizeof path, "%s/manifest.json", dir);
	if (n < 0 || (size_t)n >= sizeof path) {
		*err = DS_ERR_IO;
		if (msg && msglen)
			snprintf(msg, msglen, "dataset path too long");
		return NULL;
	}
	if (stat(path, &st) == 0)
		return ds_open(dir, verify, err, msg, msglen);
	snprintf(path, sizeof path, "%s/prices.csv", dir); /* shorter than above: fits */
	if (stat(path, &st) != 0) {
		*err = DS_ERR_NOT_FOUND;
		if (msg && msglen)
			snprintf(msg, msglen, "no manifest.json or prices.csv (not a dataset)");
		return NULL;
	}
	struct ds_error e = { 0 };
	struct dataset *ds = ds_load_prices_csv(path, asset, &e);
	if (!ds) {
		*err = e.code;
		size_t plen = strlen(path);   /* a read error names the file by its path: name it relative to dir */
		if (msg && msglen)
			snprintf(msg, msglen, "%s%s", strncmp(e.msg, path, plen) == 0 ? "prices.csv" : "",
				 strncmp(e.msg, path, plen) == 0 ? e.msg + plen : e.msg);
		return NULL;
	}
	free(ds->dir);
	ds->dir = xstrdup(dir);
	*err = DS_OK;
	return ds;
}

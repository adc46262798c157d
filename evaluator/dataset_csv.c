/*
 * dataset_csv: the original agenttest layout (prices.csv) as an in-memory
 * dataset, plus the small CSV and number parsers the importers share.
 *
 * prices.csv rules (docs/datasets.md): a header line; column 0 the sort key,
 * column 1 the price, further columns ignored; blank lines skipped; every row
 * has the header's column count. Keys are either all integers (day numbers:
 * timestamp = key x 86,400,000 ms, daily bars, 365 bars per year) or all
 * ISO-8601 date-times (parsed to ms; the interval is the smallest step).
 * Rows are sorted by key with a stable sort; a duplicate key, a non-finite or
 * non-positive price or a malformed row is refused naming its line.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "xalloc.h"
#include "evaluator/dataset_priv.h"
#include "common/readfile.h"

#define CSV_MAX_FILE   ((size_t)1 << 30)
#define CSV_MAX_FIELDS 64
#define MAX_DAY_KEY    INT64_C(100000000)  /* |day number| bound: no ms overflow */

size_t ds__csv_split(char *line, char **fields, size_t maxf)
{
	size_t n = 0;
	char *p = line;
	for (;;) {
		char *end = strchr(p, ',');
		if (end)
			*end = '\0';
		if (n == maxf)
			return maxf + 1;
		while (*p == ' ' || *p == '\t')
			p++;
		size_t len = strlen(p);
		while (len && (p[len - 1] == ' ' || p[len - 1] == '\t'))
			p[--len] = '\0';
		if (len >= 2 && p[0] == '"' && p[len - 1] == '"') {
			p[len - 1] = '\0';
			p++;
		}
		fields[n++] = p;
		if (!end)
			return n;
		p = end + 1;
	}
}

int ds__parse_i64(const char *s, int64_t *out)
{
	char *end;
	if (!*s || (*s != '-' && *s != '+' && (*s < '0' || *s > '9')))
		return -1;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (errno != 0 || *end != '\0')
		return -1;
	*out = v;
	return 0;
}

int ds__parse_f64(const char *s, double *out)
{
	char *end;
	if (!*s)
		return -1;
	errno = 0;
	double v = strtod(s, &end);
	if (*end != '\0' || (errno == ERANGE && fabs(v) > 1.0))
		return -1; /* underflow to a tiny value is fine; overflow is not */
	*out = v;
	return 0;
}

int64_t ds__days_from_civil(int64_t y, unsigned m, unsigned d)
{
	/* days-from-civil over 400-year eras of the proleptic Gregorian calendar */
	y -= m <= 2;
	int64_t era = (y >= 0 ? y : y - 399) / 400;
	int64_t yoe = y - era * 400;
	int64_t doy = (153 * (int64_t)(m > 2 ? m - 3 : m + 9) + 2) / 5 + (int64_t)d - 1;
	int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

/* Read exactly n digits at *p into *v, advancing *p. */
static int digits(const char **p, int n, int *v)
{
	int x = 0;
	for (int i = 0; i < n; i++) {
		char c = (*p)[i];
		if (c < '0' || c > '9')
			return -1;
		x = x * 10 + (c - '0');
	}
	*p += n;
	*v = x;
	return 0;
}

int ds__parse_iso8601(const char *s, int64_t *ms)
{
	static const int mdays[12] = { 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
	int y, mo, d, h = 0, mi = 0, sec = 0, frac_ms = 0, off_min = 0;
	const char *p = s;
	if (digits(&p, 4, &y) || *p++ != '-' || digits(&p, 2, &mo) || *p++ != '-' || digits(&p, 2, &d))
		return -1;
	if (y < 1 || mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1])
		return -1;
	int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
	if (mo == 2 && d == 29 && !leap)
		return -1;
	if (*p == 'T' || *p == ' ') {
		p++;
		if (digits(&p, 2, &h) || *p++ != ':' || digits(&p, 2, &mi))
			return -1;
		if (*p == ':') {
			p++;
			if (digits(&p, 2, &sec))
				return -1;
			if (*p == '.' || *p == ',') {
				p++;
				int nd = 0;
				for (; *p >= '0' && *p <= '9'; p++, nd++)
					if (nd < 3)
						frac_ms = frac_ms * 10 + (*p - '0');
				if (nd == 0 || nd > 9)
					return -1;
				for (int k = nd; k < 3; k++)
					frac_ms *= 10;
			}
		}
		if (h > 23 || mi > 59 || sec > 59)
			return -1;
		if (*p == 'Z') {
			p++;
		} else if (*p == '+' || *p == '-') {
			int sign = *p++ == '-' ? -1 : 1, oh, om = 0;
			if (digits(&p, 2, &oh))
				return -1;
			if (*p == ':')
				p++;
			if (*p && digits(&p, 2, &om))
				return -1;
			if (oh > 23 || om > 59)
				return -1;
			off_min = sign * (oh * 60 + om);
		}
	}
	if (*p != '\0')
		return -1;
	int64_t days = ds__days_from_civil(y, (unsigned)mo, (unsigned)d);
	*ms = ((days * 24 + h) * 60 + mi - off_min) * 60000 + (int64_t)sec * 1000 + frac_ms;
	return 0;
}

int ds_parse_time(const char *s, int64_t *ms)
{
	return ds__parse_iso8601(s, ms);
}

struct csv_row {
	int64_t ts;
	double  price;
	long    line;
	size_t  idx;
};

/* Stable order: by timestamp, then by input position. */
static int row_cmp(const void *a, const void *b)
{
	const struct csv_row *x = a, *y = b;
	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* Parse one data row's key and price. mode: 0 unknown, 1 integer, 2 ISO. */
static int parse_row(char **f, int *mode, long line, struct csv_row *r, struct ds_error *e)
{
	int64_t k;
	if (*mode == 0)
		*mode = ds__parse_i64(f[0], &k) == 0 ? 1 : 2;
	if (*mode == 1) {
		if (ds__parse_i64(f[0], &k) != 0)
			return ds__fail(e, DS_ERR_INPUT, line, "prices.csv line %ld: key \"%.40s\" is not an integer (earlier keys are)", line, f[0]), -1;
		if (k > MAX_DAY_KEY || k < -MAX_DAY_KEY)
			return ds__fail(e, DS_ERR_INPUT, line, "prices.csv line %ld: integer key out of range (day numbers, |key| <= 1e8)", line), -1;
		r->ts = k * DS_MS_PER_DAY;
	} else if (ds__parse_iso8601(f[0], &r->ts) != 0) {
		return ds__fail(e, DS_ERR_INPUT, line, "prices.csv line %ld: key \"%.40s\" is not an ISO-8601 date-time", line, f[0]), -1;
	}
	if (ds__parse_f64(f[1], &r->price) != 0)
		return ds__fail(e, DS_ERR_INPUT, line, "prices.csv line %ld: price \"%.40s\" is not a number", line, f[1]), -1;
	if (!isfinite(r->price) || r->price <= 0)
		return ds__fail(e, DS_ERR_INPUT, line, "prices.csv line %ld: price must be finite and > 0", line), -1;
	r->line = line;
	return 0;
}

/* Parse the CSV text into rows; returns the row count or -1. */
static long parse_rows(char *text, struct csv_row **out, int *mode, struct ds_error *e)
{
	char *f[CSV_MAX_FIELDS];
	size_t ncols = 0, n = 0, cap = 0;
	struct csv_row *rows = NULL;
	long line = 0;
	char *p = text;
	if (strncmp(p, "\xef\xbb\xbf", 3) == 0)
		p += 3; /* a UTF-8 byte order mark is not part of the first field */
	while (*p) {
		char *nl = strchr(p, '\n');
		if (nl)
			*nl = '\0';
		line++;
		size_t len = strlen(p);
		if (len && p[len - 1] == '\r')
			p[--len] = '\0';
		char *q = p;
		while (*q == ' ' || *q == '\t')
			q++;
		if (*q) {
			size_t nf = ds__csv_split(p, f, CSV_MAX_FIELDS);
			if (nf > CSV_MAX_FIELDS)
				goto ragged;
			if (ncols == 0) {
				if (nf < 2) {
					ds__fail(e, DS_ERR_INPUT, line, "prices.csv line %ld: header needs at least 2 columns (key, price)", line);
					goto fail;
				}
				ncols = nf;
			} else {
				if (nf != ncols)
					goto ragged;
				if (n == DS_MAX_BARS) {
					ds__fail(e, DS_ERR_INPUT, line, "prices.csv line %ld: more than %zu rows", line, DS_MAX_BARS);
					goto fail;
				}
				if (n == cap) {
					cap = cap ? cap * 2 : 1024;
					rows = xreallocarray(rows, cap, sizeof *rows);
				}
				if (parse_row(f, mode, line, &rows[n], e))
					goto fail;
				rows[n].idx = n;
				n++;
			}
		}
		if (!nl)
			break;
		p = nl + 1;
	}
	if (ncols == 0 || n == 0) {
		if (ncols)
			ds__fail(e, DS_ERR_INPUT, line, "prices.csv line %ld: no data rows after the header", line);
		else
			ds__fail(e, DS_ERR_INPUT, 0, "prices.csv: empty file (need a header and rows)");
		goto fail;
	}
	*out = rows;
	return (long)n;
ragged:
	ds__fail(e, DS_ERR_INPUT, line, "prices.csv line %ld: ragged row (header has %zu columns)", line, ncols);
fail:
	free(rows);
	return -1;
}

/* Build the dataset object from sorted rows. */
static struct dataset *build(struct csv_row *rows, size_t n, int mode, const char *asset, const char *path)
{
	struct dataset *ds = ds__alloc();
	int64_t *ts = xcalloc(n, sizeof *ts);
	double *px = xcalloc(n, sizeof *px);
	ds__add_region(ds, ts, n * sizeof *ts, 0);
	ds__add_region(ds, px, n * sizeof *px, 0);
	int64_t interval = DS_MS_PER_DAY;
	for (size_t i = 0; i < n; i++) {
		ts[i] = rows[i].ts;
		px[i] = rows[i].price;
		if (mode == 2 && i > 0 && (i == 1 || ts[i] - ts[i - 1] < interval))
			interval = ts[i] - ts[i - 1];
	}
	ds->version = xstrdup("");
	ds->dir = xstrdup(path);
	ds->interval_ms = interval;
	ds->bars = n;
	ds->n_assets = 1;
	ds->assets = xcalloc(1, sizeof *ds->assets);
	ds->assets[0] = xstrdup(asset);
	ds->n_fields = 1;
	ds->fields = xcalloc(1, sizeof *ds->fields);
	ds->fields[0] = xstrdup("close");
	ds__map_std_fields(ds);
	ds->ts = ts;
	ds->cols = xcalloc(1, sizeof *ds->cols);
	ds->cols[0] = px;
	char ts_hex[65], col_hex[1][65];
	ds__sha256_hex(ts, n * 8, ts_hex);
	ds__sha256_hex(px, n * 8, col_hex[0]);
	ds__dataset_hash(interval, n, 1, ds->assets, 1, ds->fields, ts_hex, col_hex, ds->hash);

	json_object *m = json_object_new_object(), *a = json_object_new_array(), *fl = json_object_new_array();
	json_object *src = json_object_new_object();
	json_object_object_add(m, "format", json_object_new_string("prices.csv"));
	json_object_object_add(m, "version", json_object_new_string(""));
	json_object_array_add(a, json_object_new_string(asset));
	json_object_object_add(m, "assets", a);
	json_object_array_add(fl, json_object_new_string("close"));
	json_object_object_add(m, "fields", fl);
	json_object_object_add(m, "interval_ms", json_object_new_int64(interval));
	json_object_object_add(m, "first_timestamp_ms", json_object_new_int64(ts[0]));
	json_object_object_add(m, "last_timestamp_ms", json_object_new_int64(ts[n - 1]));
	json_object_object_add(m, "bars", json_object_new_int64((int64_t)n));
	json_object_object_add(m, "dataset_hash", json_object_new_string(ds->hash));
	json_object_object_add(src, "layout", json_object_new_string("prices.csv"));
	json_object_object_add(src, "keys", json_object_new_string(mode == 1 ? "day-numbers" : "iso8601"));
	json_object_object_add(src, "path", json_object_new_string(path));
	json_object_object_add(m, "source", src);
	ds->manifest_json = xstrdup(json_object_to_json_string_ext(m, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(m);
	return ds;
}

struct dataset *ds_load_prices_csv(const char *path, const char *asset, struct ds_error *e)
{
	char *text = NULL;
	size_t len = 0;
	struct csv_row *rows = NULL;
	struct dataset *ds = NULL;
	int mode = 0;
	if (!asset)
		asset = "PRICE";
	if (!ds_valid_asset(asset)) {
		ds__fail(e, DS_ERR_INPUT, 0, "asset name \"%.40s\" invalid (1..%d of [A-Za-z0-9_-])", asset, DS_MAX_NAME);
		goto out;
	}
	if (read_file_max(path, CSV_MAX_FILE, 0, &text, &len) != 0) {
		ds__fail(e, errno == ENOENT ? DS_ERR_NOT_FOUND : errno == EFBIG ? DS_ERR_INPUT : DS_ERR_IO, 0,
			 "%s: %s", path, errno == EFBIG ? "larger than 1 GiB" : strerror(errno));
		goto out;
	}
	if (strlen(text) != len) {
		ds__fail(e, DS_ERR_INPUT, 0, "prices.csv: contains a NUL byte (not a text file)");
		goto out;
	}
	long n = parse_rows(text, &rows, &mode, e);
	if (n < 0)
		goto out;
	qsort(rows, (size_t)n, sizeof *rows, row_cmp);
	for (long i = 1; i < n; i++)
		if (rows[i].ts == rows[i - 1].ts) {
			long l = rows[i].line > rows[i - 1].line ? rows[i].line : rows[i - 1].line;
			long o = rows[i].line > rows[i - 1].line ? rows[i - 1].line : rows[i].line;
			ds__fail(e, DS_ERR_INPUT, l, "prices.csv line %ld: duplicate key (same time as line %ld)", l, o);
			goto out;
		}
	ds = build(rows, (size_t)n, mode, asset, path);
out:
	free(rows);
	free(text);
	return ds;
}

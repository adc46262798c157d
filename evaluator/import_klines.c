/*
 * import_klines: Binance kline CSV → dataset.
 *
 * Theory of operation: every file is read whole, split into lines and parsed
 * into the rows of its asset (import_klines_parse: per-file checks, line
 * numbers kept). Each asset's rows are then sorted by time (files may come
 * in any order) and checked for duplicates across files. All assets must
 * share one interval and one grid phase; the dataset's timestamp column is
 * the complete grid from the earliest to the latest bar, and every asset's
 * columns hold its bars at their grid index and NaN elsewhere, so a missing
 * minute is explicit and never shifts rows.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xalloc.h"
#include "buf.h"
#include "evaluator/dataset_priv.h"
#include "evaluator/import.h"
#include "evaluator/import_priv.h"
#include "common/readfile.h"

#define KLINE_COLS     12
#define KLINE_MAX_FILE ((size_t)1 << 30)
#define US_THRESHOLD   INT64_C(100000000000000)   /* >= 1e14: microseconds */

void import_kline_rows_free(struct kline_rows *r)
{
	free(r->ts);
	free(r->ohlcv);
	free(r->line);
	free(r->file);
	memset(r, 0, sizeof *r);
}

/* Append one row. */
static void push_row(struct kline_rows *r, int64_t ts, const double v[5], long line, int file)
{
	if (r->n == r->cap) {
		r->cap = r->cap ? r->cap * 2 : 4096;
		r->ts = xreallocarray(r->ts, r->cap, sizeof *r->ts);
		r->ohlcv = xreallocarray(r->ohlcv, xmul(r->cap, 5), sizeof *r->ohlcv);
		r->line = xreallocarray(r->line, r->cap, sizeof *r->line);
		r->file = xreallocarray(r->file, r->cap, sizeof *r->file);
	}
	r->ts[r->n] = ts;
	memcpy(&r->ohlcv[r->n * 5], v, 5 * sizeof *v);
	r->line[r->n] = line;
	r->file[r->n] = file;
	r->n++;
}

/* A Binance time in ms or µs (by magnitude) → ms; -1 if not an integer or
 * not a whole millisecond. */
static int parse_time(const char *s, int64_t *ms)
{
	int64_t v;
	if (ds__parse_i64(s, &v) != 0 || v < 0)
		return -1;
	if (v >= US_THRESHOLD)
		v /= 1000; /* floor: a close time of ...999999 µs is ...999 ms */
	*ms = v;
	return 0;
}

/* Parse and check one data row (f: its 12 fields). */
static int parse_kline(char **f, const char *name, long line, int file, int64_t prev_ts,
		       struct kline_rows *rows, struct ds_error *e)
{
	static const char *const what[5] = { "open", "high", "low", "close", "volume" };
	int64_t open_ms, close_ms, raw;
	double v[5];
	if (parse_time(f[0], &open_ms) != 0)
		return ds__fail(e, DS_ERR_INPUT, line, "%s line %ld: open time \"%.40s\" is not an integer timestamp", name, line, f[0]), -1;
	if (ds__parse_i64(f[0], &raw) == 0 && raw >= US_THRESHOLD && raw % 1000 != 0)
		return ds__fail(e, DS_ERR_INPUT, line, "%s line %ld: microsecond open time is not a whole millisecond", name, line), -1;
	if (parse_time(f[6], &close_ms) != 0)
		return ds__fail(e, DS_ERR_INPUT, line, "%s line %ld: close time \"%.40s\" is not an integer timestamp", name, line, f[6]), -1;
	for (int k = 0; k < 5; k++) {
		if (ds__parse_f64(f[1 + k], &v[k]) != 0)
			return ds__fail(e, DS_ERR_INPUT, line, "%s line %ld: %s \"%.40s\" is not a number", name, line, what[k], f[1 + k]), -1;
		if (!isfinite(v[k]) || (k == 4 ? v[k] < 0 : v[k] <= 0))
			return ds__fail(e, DS_ERR_INPUT, line, "%s line %ld: %s must be finite and %s", name, line, what[k], k == 4 ? ">= 0" : "> 0"), -1;
	}
	if (v[2] > v[0] || v[2] > v[3] || v[1] < v[0] || v[1] < v[3] || v[2] > v[1])
		return ds__fail(e, DS_ERR_INPUT, line, "%s line %ld: inconsistent OHLC (need low <= open, close <= high)", name, line), -1;
	if (prev_ts != INT64_MIN && open_ms <= prev_ts)
		return ds__fail(e, DS_ERR_INPUT, line, "%s line %ld: %s open time (previous row %lld, this row %lld)", name, line,
				open_ms == prev_ts ? "duplicate" : "non-increasing", (long long)prev_ts, (long long)open_ms), -1;
	int64_t interval = close_ms - open_ms + 1;
	if (interval <= 0)
		return ds__fail(e, DS_ERR_INPUT, line, "%s line %ld: close time before open time", name, line), -1;
	if (rows->interval == 0) {
		rows->interval = interval;
		rows->interval_line = line;
		rows->interval_file = file;
	} else if (interval != rows->interval) {
		return ds__fail(e, DS_ERR_INPUT, line, "%s line %ld: inconsistent interval: %lld ms, earlier rows %lld ms", name, line,
				(long long)interval, (long long)rows->interval), -1;
	}
	/* times are >= 0 (parse_time), so the difference cannot overflow */
	if (rows->n && (open_ms - rows->ts[0]) % interval != 0)
		return ds__fail(e, DS_ERR_INPUT, line, "%s line %ld: open time off the %lld ms grid of earlier rows", name, line,
				(long long)interval), -1;
	push_row(rows, open_ms, v, line, file);
	return 0;
}

int import_klines_parse(char *text, const char *name, int file, struct kline_rows *rows, struct ds_error *e)
{
	char *f[KLINE_COLS + 1];
	long line = 0;
	int seen_data = 0;
	int64_t prev = INT64_MIN;
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
			size_t nf = ds__csv_split(p, f, KLINE_COLS);
			int64_t dummy;
			if (!seen_data && line == 1 && !(f[0][0] >= '0' && f[0][0] <= '9') &&
			    ds__parse_i64(f[0], &dummy) != 0) {
				/* a header line: accepted only as the first line, with 12 columns */
				if (nf != KLINE_COLS)
					return ds__fail(e, DS_ERR_INPUT, line, "%s line %ld: header has %zu columns, klines have %d", name, line,
							nf > KLINE_COLS ? (size_t)KLINE_COLS + 1 : nf, KLINE_COLS), -1;
			} else {
				if (nf != KLINE_COLS)
					return ds__fail(e, DS_ERR_INPUT, line, "%s line %ld: ragged row (%s%zu columns, klines have %d)", name, line,
							nf > KLINE_COLS ? "more than " : "", nf > KLINE_COLS ? (size_t)KLINE_COLS : nf, KLINE_COLS), -1;
				if (rows->n == DS_MAX_BARS)
					return ds__fail(e, DS_ERR_INPUT, line, "%s line %ld: more than %zu rows", name, line, DS_MAX_BARS), -1;
				if (parse_kline(f, name, line, file, prev, rows, e))
					return -1;
				prev = rows->ts[rows->n - 1];
				seen_data = 1;
			}
		}
		if (!nl)
			break;
		p = nl + 1;
	}
	if (!seen_data)
		return ds__fail(e, DS_ERR_INPUT, line, "%s: no kline rows", name), -1;
	return 0;
}

/* Sort context: qsort has none, so sort an index array by (ts, file, line). */
static const struct kline_rows *sort_rows;

static int idx_cmp(const void *a, const void *b)
{
	size_t i = *(const size_t *)a, j = *(const size_t *)b;
	const struct kline_rows *r = sort_rows;
	if (r->ts[i] != r->ts[j])
		return r->ts[i] < r->ts[j] ? -1 : 1;
	if (r->file[i] != r->file[j])
		return r->file[i] < r->file[j] ? -1 : 1;
	return r->line[i] < r->line[j] ? -1 : r->line[i] > r->line[j];
}

/* Sort rows by time in place and refuse duplicates across files. */
static int sort_asset(struct kline_rows *r, const char *const *files, struct ds_error *e)
{
	size_t *idx = xcalloc(r->n, sizeof *idx);
	int rc = -1;
	for (size_t i = 0; i < r->n; i++)
		idx[i] = i;
	sort_rows = r;
	qsort(idx, r->n, sizeof *idx, idx_cmp);
	sort_rows = NULL;
	for (size_t k = 1; k < r->n; k++)
		if (r->ts[idx[k]] == r->ts[idx[k - 1]]) {
			size_t a = idx[k - 1], b = idx[k];
			ds__fail(e, DS_ERR_INPUT, r->line[b], "%s line %ld: duplicate open time %lld (also %s line %ld)",
				 files[r->file[b]], r->line[b], (long long)r->ts[b], files[r->file[a]], r->line[a]);
			goto out;
		}
	struct kline_rows s = { 0 };
	for (size_t k = 0; k < r->n; k++)
		push_row(&s, r->ts[idx[k]], &r->ohlcv[idx[k] * 5], r->line[idx[k]], r->file[idx[k]]);
	s.interval = r->interval;
	s.interval_line = r->interval_line;
	s.interval_file = r->interval_file;
	import_kline_rows_free(r);
	*r = s;
	rc = 0;
out:
	free(idx);
	return rc;
}

/* Check that all assets share interval and grid; compute the grid. */
static int common_grid(struct kline_rows *rows, size_t n_assets, const char *const *files,
		       int64_t *first, size_t *bars, struct ds_error *e)
{
	int64_t iv = rows[0].interval, lo = rows[0].ts[0], hi = rows[0].ts[rows[0].n - 1];
	for (size_t a = 1; a < n_assets; a++) {
		struct kline_rows *r = &rows[a];
		if (r->interval != iv)
			return ds__fail(e, DS_ERR_INPUT, r->interval_line, "%s line %ld: inconsistent interval: %lld ms, other assets %lld ms",
					files[r->interval_file], r->interval_line, (long long)r->interval, (long long)iv), -1;
		if ((r->ts[0] - rows[0].ts[0]) % iv != 0) /* times >= 0: no overflow */
			return ds__fail(e, DS_ERR_INPUT, r->line[0], "%s line %ld: open time off the %lld ms grid of the other assets",
					files[r->file[0]], r->line[0], (long long)iv), -1;
		lo = r->ts[0] < lo ? r->ts[0] : lo;
		hi = r->ts[r->n - 1] > hi ? r->ts[r->n - 1] : hi;
	}
	uint64_t span = ((uint64_t)hi - (uint64_t)lo) / (uint64_t)iv;
	if (span >= DS_MAX_BARS)
		return ds__fail(e, DS_ERR_INPUT, 0, "the files span more than %zu bars", DS_MAX_BARS), -1;
	*first = lo;
	*bars = (size_t)span + 1;
	return 0;
}

/* Write the merged grid through the dataset writer. */
static enum ds_err write_grid(struct ds_writer *w, struct kline_rows *rows, size_t n_assets, int64_t first,
			      size_t bars, struct ds_error *e)
{
	enum ds_err rc = DS_OK;
	int64_t iv = rows[0].interval;
	int64_t *ts = xcalloc(bars, sizeof *ts);
	double *col = xcalloc(bars, sizeof *col);
	for (size_t t = 0; t < bars; t++)
		ts[t] = first + (int64_t)t * iv;
	if ((rc = ds_writer_put_ts(w, ts, e)) != DS_OK)
		goto out;
	for (size_t a = 0; a < n_assets; a++)
		for (size_t f = 0; f < 5; f++) {
			for (size_t t = 0; t < bars; t++)
				col[t] = NAN;
			for (size_t k = 0; k < rows[a].n; k++)
				col[(size_t)((rows[a].ts[k] - first) / iv)] = rows[a].ohlcv[k * 5 + f];
			if ((rc = ds_writer_put(w, a, f, col, e)) != DS_OK)
				goto out;
		}
out:
	free(ts);
	free(col);
	return rc;
}

/* Provenance: importer name and each input's base name, asset and SHA-256. */
static void source_json(struct buf *b, const char *const *files, const int *file_asset,
			char *const *assets, const char (*file_hex)[65], size_t n)
{
	buf_puts(b, "{\"importer\": \"binance-klines\", \"files\": [");
	for (size_t i = 0; i < n; i++) {
		const char *base = strrchr(files[i], '/');
		base = base ? base + 1 : files[i];
		buf_printf(b, "%s{\"name\": \"", i ? ", " : "");
		for (const char *c = base; *c; c++) /* JSON-escape the file name */
			if (*c == '"' || *c == '\\')
				buf_printf(b, "\\%c", *c);
			else if ((unsigned char)*c < 0x20)
				buf_printf(b, "\\u%04x", (unsigned char)*c);
			else
				buf_putc(b, *c);
		buf_printf(b, "\", \"asset\": \"%s\", \"sha256\": \"%s\"}", assets[file_asset[i]], file_hex[i]);
	}
	buf_puts(b, "]}");
}

/* Everything import_files does for binance-klines, with owned state freed by the caller. */
struct kl_state {
	char   **assets;
	size_t   n_assets;
	int     *file_asset;
	char   (*file_hex)[65];
	struct kline_rows *rows;
};

/* Assign every file to an asset (by name) in first-appearance order. */
static int assign_assets(struct kl_state *s, const char *asset, size_t n, const char *const *files, struct ds_error *e)
{
	for (size_t i = 0; i < n; i++) {
		char name[DS_MAX_NAME + 1];
		if (asset) {
			if (!ds_valid_asset(asset))
				return ds__fail(e, DS_ERR_INPUT, 0, "asset name \"%.40s\" invalid (1..%d of [A-Za-z0-9_-])", asset, DS_MAX_NAME), -1;
			snprintf(name, sizeof name, "%s", asset);
		} else if (import_asset_from_filename(files[i], name, sizeof name) != 0) {
			return ds__fail(e, DS_ERR_INPUT, 0, "%s: cannot derive an asset name from the file name (use --asset)", files[i]), -1;
		}
		size_t a = 0;
		while (a < s->n_assets && strcmp(s->assets[a], name) != 0)
			a++;
		if (a == s->n_assets) {
			if (s->n_assets == DS_MAX_ASSETS)
				return ds__fail(e, DS_ERR_INPUT, 0, "more than %d assets", DS_MAX_ASSETS), -1;
			s->assets[s->n_assets++] = xstrdup(name);
		}
		s->file_asset[i] = (int)a;
	}
	return 0;
}

/* Read and parse every file into its asset's rows. */
static int read_all(struct kl_state *s, size_t n, const char *const *files, struct ds_error *e)
{
	for (size_t i = 0; i < n; i++) {
		char *text = NULL;
		size_t len = 0;
		if (read_file_max(files[i], KLINE_MAX_FILE, 0, &text, &len) != 0)
			return ds__fail(e, errno == ENOENT ? DS_ERR_NOT_FOUND : errno == EFBIG ? DS_ERR_INPUT : DS_ERR_IO, 0,
					"%s: %s", files[i], errno == EFBIG ? "larger than 1 GiB" : strerror(errno)), -1;
		ds__sha256_hex(text, len, s->file_hex[i]);
		int rc = -1;
		if (strlen(text) != len)
			ds__fail(e, DS_ERR_INPUT, 0, "%s: contains a NUL byte (not a CSV file)", files[i]);
		else
			rc = import_klines_parse(text, files[i], (int)i, &s->rows[s->file_asset[i]], e);
		free(text);
		if (rc)
			return -1;
	}
	return 0;
}

enum ds_err import__klines(const char *dir, const char *version, const char *asset, size_t n,
			   const char *const *files, char hash[65], struct ds_error *e)
{
	struct kl_state s = { 0 };
	struct buf src = BUF_INIT;
	enum ds_err rc = DS_ERR_INPUT;
	int64_t first = 0;
	size_t bars = 0;
	s.assets = xcalloc(n, sizeof *s.assets);
	s.file_asset = xcalloc(n, sizeof *s.file_asset);
	s.file_hex = xcalloc(n, sizeof *s.file_hex);
	s.rows = xcalloc(n, sizeof *s.rows);
	if (assign_assets(&s, asset, n, files, e) || read_all(&s, n, files, e))
		goto fail;
	for (size_t a = 0; a < s.n_assets; a++)
		if (sort_asset(&s.rows[a], files, e))
			goto fail;
	if (common_grid(s.rows, s.n_assets, files, &first, &bars, e))
		goto fail;
	source_json(&src, files, s.file_asset, s.assets, (const char (*)[65])s.file_hex, n);
	struct ds_layout l = { .version = version, .n_assets = s.n_assets, .assets = (const char *const *)s.assets,
			       .interval_ms = s.rows[0].interval, .bars = bars, .source_json = buf_cstr(&src) };
	struct ds_writer *w = ds_writer_begin(dir, &l, e);
	if (!w) {
		rc = e->code;
		goto out;
	}
	if ((rc = write_grid(w, s.rows, s.n_assets, first, bars, e)) != DS_OK) {
		ds_writer_abort(w);
		goto out;
	}
	rc = ds_writer_commit(w, hash, e);
	goto out;
fail:
	rc = e->code;
out:
	for (size_t a = 0; a < n; a++)
		import_kline_rows_free(&s.rows[a]);
	for (size_t a = 0; a < s.n_assets; a++)
		free(s.assets[a]);
	free(s.assets);
	free(s.file_asset);
	free(s.file_hex);
	free(s.rows);
	buf_free(&src);
	return rc;
}

/*
 * dataset: pinned, content-hashed market data (read side and write side).
 *
 * On disk a dataset is a directory (docs/datasets.md has the exact format):
 *   manifest.json             format version, version label, assets, fields,
 *                             interval, first/last timestamp, bar count,
 *                             per-file SHA-256 and size, dataset hash
 *   ts.i64                    int64 little-endian ms timestamps, one per bar
 *   <ASSET>.<field>.f64       float64 little-endian, one per bar, for every
 *                             field of the manifest's "fields" list
 *                             (open, high, low, close, volume, maybe more)
 * All assets share the one timestamp column (aligned on timestamps); a bar an
 * asset lacks holds NaN in every field of that asset: gaps are explicit and
 * rows never shift. Columns are read with mmap. The dataset hash covers the
 * bytes of the columns (through their SHA-256) and the canonical manifest
 * fields, never file names, the version label or mtimes.
 *
 * A second, in-memory source is the original agenttest layout: a directory
 * holding `prices.csv` (ts,price). It is exposed as a one-asset dataset whose
 * only field is "close" (ds_column() returns NULL for the others), with a
 * dataset hash computed the same way. ds_open_any() picks the layout.
 *
 * Thread safety: an open dataset is immutable; any number of threads may read
 * it concurrently. Opening and closing are not synchronised with readers.
 */
#ifndef AGENTTEST_EVALUATOR_DATASET_H
#define AGENTTEST_EVALUATOR_DATASET_H

#include <stddef.h>
#include <stdint.h>

enum ds_field { DS_OPEN, DS_HIGH, DS_LOW, DS_CLOSE, DS_VOLUME, DS_FIELD__MAX };

enum ds_err {
	DS_OK = 0,
	DS_ERR_IO,           /* a file could not be opened, read, mapped or written */
	DS_ERR_MANIFEST,     /* manifest missing, malformed or inconsistent */
	DS_ERR_HASH,         /* a file or the dataset hash does not match the manifest */
	DS_ERR_NO_ASSET,     /* the requested asset is not in the dataset */
	DS_ERR_INPUT,        /* an importer rejected its input (see the message) */
	DS_ERR_CORRUPT,      /* a column file has the wrong size or invalid values */
	DS_ERR_NOT_FOUND,    /* the directory holds neither manifest.json nor prices.csv */
	DS_ERR_EXISTS,       /* the output directory already exists */
	DS_ERR__MAX
};

/* Format version written into and required from manifest.json. */
#define DS_FORMAT_VERSION 1
/* Limits enforced on open and on write. */
#define DS_MAX_ASSETS   1024
#define DS_MAX_FIELDS   32
#define DS_MAX_NAME     32                  /* asset and field names, bytes */
#define DS_MAX_LABEL    128                 /* version label, bytes */
#define DS_MAX_BARS     ((size_t)1 << 27)   /* 134M bars: 255 years of minutes */
#define DS_MAX_MANIFEST ((size_t)4 << 20)   /* manifest.json, bytes */

/* An error with the input line it refers to (importers, prices.csv). */
struct ds_error {
	enum ds_err code;
	long        line;     /* 1-based line of the offending input, 0 if none */
	char        msg[512]; /* human message, already naming file and line */
};

struct dataset;  /* opaque; mmap-backed (or heap for prices.csv), read-only */

/* Machine code ("io_error", "bad_manifest", "hash_mismatch", ...) for an error. */
const char *ds_errcode(enum ds_err e);

/*
 * Open the dataset in `dir`. With verify != 0 every file hash and the dataset
 * hash are recomputed and checked, and every value is range-checked. On
 * failure returns NULL, sets *err and writes a human message into msg
 * (msglen bytes, may be NULL). The message names files relative to dir
 * ("manifest.json: ..."), never dir itself, so the runner can show it to the
 * run's owner without telling the server's layout (issue 11); a CLI that
 * wants the directory in it adds it.
 */
struct dataset *ds_open(const char *dir, int verify, enum ds_err *err, char *msg, size_t msglen);
/*
 * Open `dir` whatever its layout: manifest.json → ds_open(); else prices.csv →
 * ds_load_prices_csv() with the asset named `asset` (NULL: "PRICE"). Errors as
 * ds_open(); a prices.csv error message names the line.
 */
struct dataset *ds_open_any(const char *dir, int verify, const char *asset,
			    enum ds_err *err, char *msg, size_t msglen);
/*
 * Read an original-layout prices CSV file at `path` into an in-memory
 * dataset: header line, column 0 the sort key (all integers = day numbers,
 * or all ISO-8601 date-times), column 1 the price (> 0, finite), further
 * columns ignored, rows stably sorted by key; duplicate keys, ragged rows,
 * bad numbers refused with the line in *e. Asset name `asset` (NULL: "PRICE").
 */
struct dataset *ds_load_prices_csv(const char *path, const char *asset, struct ds_error *e);
/* Unmap and free. NULL is allowed. */
void ds_close(struct dataset *ds);

const char *ds_version(const struct dataset *ds);      /* version label ("" for prices.csv) */
const char *ds_hash(const struct dataset *ds);         /* 64 hex chars */
int64_t     ds_interval_ms(const struct dataset *ds);  /* bar interval */
size_t      ds_bars(const struct dataset *ds);         /* bar count T (>= 1) */
size_t      ds_asset_count(const struct dataset *ds);
const char *ds_asset_name(const struct dataset *ds, size_t i); /* manifest order */
/* Index of `name`, or -1. */
long        ds_asset_index(const struct dataset *ds, const char *name);
/* T timestamps (ms since the epoch, strictly increasing). */
const int64_t *ds_timestamps(const struct dataset *ds);
/* T values of one field of one asset (NaN where the asset has no bar), or
 * NULL if the dataset has no such field (prices.csv has only DS_CLOSE). */
const double  *ds_column(const struct dataset *ds, size_t asset, enum ds_field f);
/* Bars per year for annualisation, from the interval: 365 days / interval
 * (525,600 for 1-minute bars, 365 for daily bars). */
double      ds_bars_per_year(const struct dataset *ds);

/* Fields by name, in manifest order (includes extra fields such as "funding"). */
size_t      ds_field_count(const struct dataset *ds);
const char *ds_field_name(const struct dataset *ds, size_t i);
/* Index of field `name`, or -1. */
long        ds_field_index(const struct dataset *ds, const char *name);
/* T values of field index `field` of asset `asset` (both in range). */
const double *ds_column_at(const struct dataset *ds, size_t asset, size_t field);
/* The parsed manifest.json as JSON text (prices.csv: an equivalent object). */
const char *ds_manifest_json(const struct dataset *ds);
/* Directory the dataset was opened from. */
const char *ds_dir(const struct dataset *ds);

/*
 * Writer: streams one dataset into a temporary directory next to `dir` and
 * renames it into place on commit, so a crash never leaves a half dataset
 * under the final name. Columns must be put in canonical order: the
 * timestamps first, then for each asset in order every field in order.
 * NaN payloads are canonicalised (0x7ff8000000000000) while writing.
 */
struct ds_layout {
	const char        *version;      /* label, [A-Za-z0-9._-], 1..DS_MAX_LABEL */
	size_t             n_assets;
	const char *const *assets;       /* [A-Za-z0-9_-], 1..DS_MAX_NAME, unique */
	size_t             n_fields;     /* 0: the five OHLCV fields */
	const char *const *fields;       /* [a-z0-9_], must include "close" */
	int64_t            interval_ms;  /* > 0 */
	size_t             bars;         /* 1..DS_MAX_BARS */
	const char        *source_json;  /* optional JSON object text stored as
					  * "source" (provenance, not hashed) */
};
struct ds_writer;

/* Start writing; NULL on error (*e filled). `dir` must not exist yet. */
struct ds_writer *ds_writer_begin(const char *dir, const struct ds_layout *l, struct ds_error *e);
/* Put the timestamp column (bars values, strictly increasing, each step a
 * positive multiple of interval_ms). */
enum ds_err ds_writer_put_ts(struct ds_writer *w, const int64_t *ts, struct ds_error *e);
/* Put the next column in canonical order (asset, field checked). */
enum ds_err ds_writer_put(struct ds_writer *w, size_t asset, size_t field, const double *col,
			  struct ds_error *e);
/* Write the manifest, fsync and rename into place; fills hash (65 bytes)
 * with the dataset hash. Frees w whatever the outcome. */
enum ds_err ds_writer_commit(struct ds_writer *w, char hash[65], struct ds_error *e);
/* Drop the temporary directory and free w. NULL is allowed. */
void ds_writer_abort(struct ds_writer *w);

/* Parse an ISO-8601 date ("2024-01-01") or date-time ("2024-01-01T00:00:00Z",
 * offsets allowed, UTC without one) to ms since the epoch; 0 ok, -1 not valid. */
int ds_parse_time(const char *s, int64_t *ms);

/* Check a version label / asset name / field name against the rules above. */
int ds_valid_label(const char *s);
int ds_valid_asset(const char *s);
int ds_valid_field(const char *s);

#endif

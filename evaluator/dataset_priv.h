/*
 * dataset_priv: the parts of the dataset module shared by its files
 * (dataset.c, dataset_open.c, dataset_write.c, dataset_csv.c) and the
 * importers. Not a public interface.
 */
#ifndef AGENTTEST_EVALUATOR_DATASET_PRIV_H
#define AGENTTEST_EVALUATOR_DATASET_PRIV_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "evaluator/dataset.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "dataset columns are little-endian and mapped directly: little-endian hosts only"
#endif

#define DS_FORMAT_NAME "agenttest-dataset"
#define DS_TS_FILE     "ts.i64"
#define DS_MS_PER_DAY  INT64_C(86400000)
#define DS_MS_PER_YEAR (365.0 * 86400000.0)

/* One region to release on close: munmap'd (mapped) or free'd (heap). */
struct ds_region {
	void  *ptr;
	size_t len;
	int    mapped;
};

struct dataset {
	char           *dir;
	char           *version;
	char            hash[65];
	int64_t         interval_ms;
	size_t          bars;
	size_t          n_assets;
	char          **assets;
	size_t          n_fields;
	char          **fields;
	long            std_field[DS_FIELD__MAX]; /* enum ds_field → field index or -1 */
	const int64_t  *ts;
	const double  **cols;                     /* [asset * n_fields + field] */
	struct ds_region *regions;
	size_t          n_regions;
	char           *manifest_json;
};

/* Fill *e (may be NULL) with code, line and a printf message; returns code. */
enum ds_err ds__fail(struct ds_error *e, enum ds_err code, long line, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* Lower-case hex SHA-256 of n bytes. */
void ds__sha256_hex(const void *p, size_t n, char hex[65]);

/*
 * The dataset hash (docs/datasets.md, "Dataset hash"): SHA-256 of the
 * canonical text built from the interval, bar count, asset and field names
 * in order and the SHA-256 of every column file (ts_hex, then col_hex in
 * [asset * n_fields + field] order).
 */
void ds__dataset_hash(int64_t interval_ms, size_t bars,
		      size_t n_assets, char *const *assets,
		      size_t n_fields, char *const *fields,
		      const char *ts_hex, char (*col_hex)[65], char out[65]);

/* A fresh, empty dataset; std_field all -1. */
struct dataset *ds__alloc(void);
/* Record a region that ds_close() releases. */
void ds__add_region(struct dataset *ds, void *p, size_t len, int mapped);
/* Fill std_field from the field names. */
void ds__map_std_fields(struct dataset *ds);
/* Name of a standard field ("open" ... "volume"). */
const char *ds__std_field_name(enum ds_field f);
/* Build the canonical column file name "<asset>.<field>.f64" into out. */
int ds__col_file(char *out, size_t outlen, const char *asset, const char *field);

/*
 * Check the timestamps: strictly increasing and every step a positive
 * multiple of interval_ms. Returns -1 if fine, else the index of the first bad
 * bar (>= 1).
 */
long ds__check_ts(const int64_t *ts, size_t n, int64_t interval_ms);

/*
 * Range-check the values of one asset (cols indexed by field): prices
 * (open/high/low/close) NaN or finite > 0, volume NaN or finite >= 0, other
 * fields NaN or finite; the OHLCV fields are all NaN or all present at each
 * bar; low <= open, close <= high. Returns -1 if fine, else the bad bar and
 * a reason in *why.
 */
long ds__check_values(const struct dataset *ds, size_t asset, const char **why);


/*
 * Split one CSV line [p, end) at commas into at most maxf fields (pointers
 * into a writable copy: the caller's line buffer is modified). Surrounding
 * spaces and one pair of double quotes are stripped from each field.
 * Returns the field count, or maxf + 1 if there are more.
 */
size_t ds__csv_split(char *line, char **fields, size_t maxf);

/* Parse a full decimal int64 (optional sign); 0 ok, -1 otherwise. */
int ds__parse_i64(const char *s, int64_t *out);
/* Parse a full finite-or-not double with strtod; 0 ok, -1 not a number. */
int ds__parse_f64(const char *s, double *out);
/* Parse an ISO-8601 date or date-time (UTC unless an offset is given) to ms
 * since the epoch; 0 ok, -1 otherwise. */
int ds__parse_iso8601(const char *s, int64_t *ms);
/* Days since 1970-01-01 of a proleptic Gregorian date. */
int64_t ds__days_from_civil(int64_t y, unsigned m, unsigned d);

#endif

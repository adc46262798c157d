/*
 * dataset: pinned, content-hashed market data (read side and write side).
 *
 * On disk a dataset is a directory:
 *   manifest.json             version label, assets, interval, first timestamp,
 *                             bar count, per-file SHA-256, dataset hash
 *   ts.i64                    int64 little-endian ms timestamps, one per bar
 *   <ASSET>.<field>.f64       float64 little-endian, one per bar, for
 *                             field in open, high, low, close, volume
 * All assets share the one timestamp column (aligned on timestamps); a bar an
 * asset lacks holds NaN in every field of that asset: gaps are explicit and
 * rows never shift. Columns are read with mmap. The dataset hash covers the
 * bytes of the columns and the canonical manifest fields, never file names
 * or mtimes (see docs/datasets.md for the exact definition).
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
	DS_ERR__MAX
};

struct dataset;  /* opaque; mmap-backed, read-only */

/* Machine code ("io_error", "bad_manifest", "hash_mismatch", ...) for an error. */
const char *ds_errcode(enum ds_err e);

/*
 * Open the dataset in `dir`. With verify != 0 every file hash and the dataset
 * hash are recomputed and checked. On failure returns NULL, sets *err and
 * writes a human message into msg (msglen bytes, may be NULL).
 */
struct dataset *ds_open(const char *dir, int verify, enum ds_err *err, char *msg, size_t msglen);
/* Unmap and free. NULL is allowed. */
void ds_close(struct dataset *ds);

const char *ds_version(const struct dataset *ds);      /* version label */
const char *ds_hash(const struct dataset *ds);         /* 64 hex chars */
int64_t     ds_interval_ms(const struct dataset *ds);  /* bar interval */
size_t      ds_bars(const struct dataset *ds);         /* bar count T */
size_t      ds_asset_count(const struct dataset *ds);
const char *ds_asset_name(const struct dataset *ds, size_t i); /* manifest order */
/* Index of `name`, or -1. */
long        ds_asset_index(const struct dataset *ds, const char *name);
/* T timestamps (ms since the epoch, strictly increasing). */
const int64_t *ds_timestamps(const struct dataset *ds);
/* T values of one field of one asset (NaN where the asset has no bar). */
const double  *ds_column(const struct dataset *ds, size_t asset, enum ds_field f);
/* Bars per year for annualisation, from the interval: 365 days / interval. */
double      ds_bars_per_year(const struct dataset *ds);

#endif

/*
 * dataset_extend.h: writing a dataset that extends a stored one (a market
 * data refresh: the same first bar, more bars at the end) without reading
 * and hashing the unchanged bytes again.
 *
 * A column file's SHA-256 is a stream hash, so the hash of "stored bytes +
 * new bytes" is the SHA-256 state after the stored bytes (its midstate)
 * continued with the new ones. The writer reports each file's midstate
 * (ds_writer_midstates) so the caller can keep it beside the version, and
 * takes a file's stored prefix as a file descriptor and its midstate
 * (the *_extend puts): the prefix is copied in the kernel
 * (copy_file_range), never read into memory nor hashed again. The bytes
 * and hashes written are exactly those of the plain puts with the same
 * values, so the dataset hash does not depend on which path wrote it. The
 * caller vouches that the midstate belongs to those bytes: check it against
 * the stored manifest's file hash first (finalise a copy and compare).
 */
#ifndef AGENTTEST_EVALUATOR_DATASET_EXTEND_H
#define AGENTTEST_EVALUATOR_DATASET_EXTEND_H

#include <stddef.h>
#include <stdint.h>

#include <sodium.h>

#include "evaluator/dataset.h"

/* ds_writer_put_ts, except that the first `keep` timestamps are the first
 * keep*8 bytes of src_fd (SHA-256 state after them: *mid); ts[keep..] are
 * written. ts must still hold all bars (they are checked as a whole). */
enum ds_err ds_writer_put_ts_extend(struct ds_writer *w, int src_fd, size_t keep, const crypto_hash_sha256_state *mid,
				    const int64_t *ts, struct ds_error *e);

/* ds_writer_put, except that the first `keep` values are the first keep*8
 * bytes of src_fd (already canonical; SHA-256 state after them: *mid);
 * col[keep..] are written. keep 0: ds_writer_put. */
enum ds_err ds_writer_put_extend(struct ds_writer *w, size_t asset, size_t field, int src_fd, size_t keep,
				 const crypto_hash_sha256_state *mid, const double *col, struct ds_error *e);

/* The SHA-256 states, before finalisation, of the files put so far: *n of
 * them, the timestamps first, then the columns in canonical order. Valid
 * until commit or abort. */
const crypto_hash_sha256_state *ds_writer_midstates(const struct ds_writer *w, size_t *n);

#endif

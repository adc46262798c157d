/*
 * midstate.h: the SHA-256 midstates of a stored version's files, kept
 * beside it as versions/<hash>.midstate, so that a refresh can hash the new
 * version's files without reading the unchanged bytes again
 * (evaluator/dataset_extend.h; docs/market-data.md, "Refresh").
 *
 * File: the 8 bytes "agtmid1\n", the file count and the state size (two
 * little-endian u64), then one crypto_hash_sha256_state per file of the
 * version (timestamps first, then the columns in canonical order). It is a
 * cache: a missing, short or foreign file, or one whose states do not
 * finalise to the manifest's file hashes, is ignored (the refresh then
 * writes those files the plain way).
 */
#ifndef AGENTTEST_RUNNER_MARKET_MIDSTATE_H
#define AGENTTEST_RUNNER_MARKET_MIDSTATE_H

#include <stddef.h>

#include <sodium.h>

#include "evaluator/dataset.h"

/* Write versions/<hash>.midstate under data_dir (tmp + rename). 0 or -1. */
int mk_midstate_save(const char *data_dir, const char *hash, const crypto_hash_sha256_state *mid, size_t n);

/* The midstates of stored version ds (its hash names the file), each one
 * checked: finalising it gives the manifest's sha256 of that file. NULL when
 * there is no usable file; else 1 + assets × fields states (caller frees). */
crypto_hash_sha256_state *mk_midstate_load(const char *data_dir, const struct dataset *ds);

#endif

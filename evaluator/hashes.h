/*
 * hashes: the reproducibility hashes of a run (spec/agenttest.md §3.3).
 *
 *   code_hash   = SHA-256 hex of the strategy file's bytes
 *   config_hash = SHA-256 hex of the canonical JSON (canon_json.h) of
 *                 {"dataset_version": V, "params": P}, plus "engine": {...}
 *                 for positions strategies (fee and leverage change results,
 *                 so they are part of the configuration; simulate strategies
 *                 keep the original's two keys and its test vectors)
 * The dataset hash belongs to the dataset (dataset.h). SHA-256 is libsodium's.
 */
#ifndef AGENTTEST_EVALUATOR_HASHES_H
#define AGENTTEST_EVALUATOR_HASHES_H

#include <stddef.h>

#include <json-c/json.h>

#include "buf.h"

#define HASH_HEX_LEN 64

/* SHA-256 of n bytes at p as 64 lowercase hex digits plus NUL. */
void hash_sha256_hex(const void *p, size_t n, char out[HASH_HEX_LEN + 1]);

/* code_hash of the strategy source bytes. */
void hash_code(const void *code, size_t n, char out[HASH_HEX_LEN + 1]);

/*
 * config_hash of (dataset_version, params[, engine]). params must be a JSON
 * object (NULL means {}); engine is NULL for simulate strategies. If canon is
 * not NULL the canonical text is appended to it. Returns 0, or -1 with a
 * message in err (params not an object, invalid UTF-8, too deep).
 */
int hash_config(const char *dataset_version, json_object *params, json_object *engine,
		char out[HASH_HEX_LEN + 1], struct buf *canon, char *err, size_t errlen);

/*
 * The same with the asset a run uses, as the first key ("asset") when not
 * NULL. The server passes it when it is not the dataset's first (default)
 * asset, so a default run keeps the original's hash (the dataset hash fixes
 * its asset) and a run on another asset gets another hash.
 */
int hash_config_asset(const char *dataset_version, const char *asset, json_object *params, json_object *engine,
		      char out[HASH_HEX_LEN + 1], struct buf *canon, char *err, size_t errlen);

#endif

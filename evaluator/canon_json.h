/*
 * canon_json: the canonical JSON text that config_hash is computed over, and
 * a strict parser for caller-supplied JSON (params).
 *
 * The canonical form is Python's json.dumps(obj, sort_keys=True,
 * separators=(",", ":"), ensure_ascii=False) (spec/agenttest.md §3.3):
 * object keys sorted by code point at every level, no whitespace, non-ASCII
 * characters raw as UTF-8, escapes only for '"', '\\', \n, \r, \t, \b, \f
 * and \u00XX (lowercase hex) for the other control characters; integers as
 * integers, floats as Python's repr (pyrepr.h), NaN/Infinity/-Infinity bare,
 * true/false/null. Every JSON the evaluator prints goes through the same
 * writer, so its floats are Python-compatible too.
 */
#ifndef AGENTTEST_EVALUATOR_CANON_JSON_H
#define AGENTTEST_EVALUATOR_CANON_JSON_H

#include <stddef.h>

#include <json-c/json.h>

#include "buf.h"

/* Deepest nesting cj_parse accepts and cj_write walks. */
#define CJ_MAX_DEPTH 32

/*
 * Append the canonical JSON of o (NULL is JSON null) to b. Returns 0, or -1
 * with a message in err (errlen bytes) when a string is not valid UTF-8 or
 * the nesting exceeds CJ_MAX_DEPTH; b may then hold a partial text.
 */
int cj_write(struct buf *b, json_object *o, char *err, size_t errlen);

/* Append s (len bytes, valid UTF-8 not checked) as a canonical JSON string. */
void cj_write_string(struct buf *b, const char *s, size_t len);

/* Append a double as canonical JSON (repr, or NaN/Infinity/-Infinity). */
void cj_write_double(struct buf *b, double x);

/*
 * Parse exactly one JSON value from text (len bytes): nesting at most
 * CJ_MAX_DEPTH, no trailing bytes but whitespace, strings valid UTF-8 (no
 * lone surrogates), integer literals within int64/uint64 (json-c would clamp
 * them silently, which would change the hash). Returns 0 and a new reference
 * in *out (NULL for a JSON null), or -1 with a message in err.
 */
int cj_parse(const char *text, size_t len, json_object **out, char *err, size_t errlen);

/* Is s (len bytes) well-formed UTF-8 without surrogates? */
int cj_valid_utf8(const char *s, size_t len);

#endif

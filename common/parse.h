/*
 * parse: small, strict text parsers shared by the configuration, the
 * DATABASE_URL parser and the FastCGI request parser.
 */
#ifndef AGENTTEST_PARSE_H
#define AGENTTEST_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Parse the n bytes at s as a base-10 integer in [min, max]: an optional '-'
 * then digits only, the whole input consumed, no spaces, no '+', no overflow.
 * Returns true and sets *out on success, false otherwise (*out untouched).
 */
bool parse_int(const char *s, size_t n, int64_t min, int64_t max, int64_t *out);

/*
 * Percent-decode n bytes of s into dst (which holds at least n+1 bytes).
 * With plus_is_space, '+' decodes to ' ' (form encoding). A '%' not followed
 * by two hex digits, or a decoded NUL byte, is an error. On success returns
 * true, stores the decoded length in *dlen and NUL-terminates dst.
 */
bool parse_pct_decode(const char *s, size_t n, bool plus_is_space, char *dst, size_t *dlen);

/* Case-insensitive ASCII comparison of n bytes of a with the string b. */
bool parse_ieq(const char *a, size_t n, const char *b);

#endif

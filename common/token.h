/*
 * token: API tokens.
 *
 * A token is "at_" followed by 32 random bytes in unpadded base64url (46
 * characters in all). It is shown once, when created; the database keeps only
 * BLAKE2b-256 of the token text keyed with the server secret
 * (crypto_generichash), plus the first TOKEN_PREFIX_LEN characters for
 * display. Verification hashes the presented text with the same key, looks
 * the row up by hash (unique index) and compares the hashes again with
 * crypto_verify_32. The shared admin token MANTIS_AUTH_TOKEN is checked the
 * same way (hash both, constant-time compare), so its length never leaks
 * through timing either.
 */
#ifndef AGENTTEST_TOKEN_H
#define AGENTTEST_TOKEN_H

#include <stdbool.h>
#include <stddef.h>

#include "secret.h"

#define TOKEN_RAW_BYTES 32
#define TOKEN_TAG "at_"
#define TOKEN_TEXT_LEN 46         /* "at_" + 43 base64url characters */
#define TOKEN_PREFIX_LEN 10       /* stored for display: "at_" + 7 characters */
#define TOKEN_HASH_BYTES 32
#define TOKEN_MAX_PRESENTED 512   /* longer credentials are rejected unread */

/* Make a new token: TOKEN_TEXT_LEN characters plus NUL into out. */
void token_generate(char out[TOKEN_TEXT_LEN + 1]);

/* True if the n bytes at s have the exact shape of a generated token. */
bool token_well_formed(const char *s, size_t n);

/* Keyed BLAKE2b-256 of the n bytes at s. */
void token_hash(const unsigned char key[SECRET_BYTES], const char *s, size_t n,
                unsigned char out[TOKEN_HASH_BYTES]);

/* Constant-time equality of two hashes. */
bool token_hash_equal(const unsigned char a[TOKEN_HASH_BYTES], const unsigned char b[TOKEN_HASH_BYTES]);

#endif

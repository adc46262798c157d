/*
 * secret_store: third-party API keys (Anthropic, CoinGlass) encrypted at rest
 * in the `secrets` table (sql/013_market_data.sql).
 *
 * Theory of operation. Each row holds one value for (owner_id, kind); owner 0
 * is the admin-set default that applies to every user without one of their
 * own. The value is sealed with libsodium's XChaCha20-Poly1305-IETF AEAD
 * (crypto_aead_xchacha20poly1305_ietf_*, not crypto_secretbox, because the
 * row's identity is bound as associated data):
 *
 *   key   = crypto_kdf_derive_from_key(32, subkey 1, context "secretst",
 *                                      server secret of AGENTTEST_SECRET_FILE)
 *   nonce = 24 random bytes, fresh on every write
 *   ad    = "agenttest-secret-v1" || owner_id (8 bytes, little-endian) || kind
 *   row   = (nonce, ciphertext = sealed value || 16-byte tag)
 *
 * So a copy of the database alone reveals nothing; a ciphertext copied to
 * another owner or kind, or altered in any byte, fails to open; a different
 * server secret fails to open. The derived key lives on the stack for one
 * call and is wiped. Plaintext is never logged: error messages name the
 * owner and kind only. See docs/configuration.md ("Secrets at rest").
 */
#ifndef AGENTTEST_SECRET_STORE_H
#define AGENTTEST_SECRET_STORE_H

#include <stdbool.h>
#include <stdint.h>

#include "buf.h"
#include "db.h"
#include "secret.h"

#define SECRET_STORE_VALUE_MAX 4096 /* bytes of plaintext per value */
#define SECRET_STORE_NONCE_BYTES 24
#define SECRET_STORE_TAG_BYTES 16

/* True for a kind the store accepts: "anthropic" or "coinglass". */
bool secret_store_kind_ok(const char *kind);

/*
 * Seal value (1..SECRET_STORE_VALUE_MAX bytes, NUL-terminated) for
 * (owner_id, kind) and insert or replace the row. owner_id 0 is the
 * admin-set default. False with a message in err (bad kind, bad length,
 * database failure).
 */
bool secret_store_put(struct db *db, const unsigned char server_key[SECRET_BYTES], uint64_t owner_id,
                      const char *kind, const char *value, struct buf *err);

/*
 * Open the value stored for exactly (owner_id, kind); no fallback to the
 * default (the caller asks for owner 0 when it wants that). Returns 1 with
 * the plaintext appended to out (reset first; the caller wipes it with
 * sodium_memzero(out->data, out->len) before freeing), 0 when there is no
 * row, -1 on an error (database, bad kind, or a row that does not open:
 * another server secret, tampering, a row moved to another owner or kind).
 */
int secret_store_get(struct db *db, const unsigned char server_key[SECRET_BYTES], uint64_t owner_id,
                     const char *kind, struct buf *out, struct buf *err);

/* Delete the row for (owner_id, kind). 1 deleted, 0 none, -1 error (err). */
int secret_store_delete(struct db *db, uint64_t owner_id, const char *kind, struct buf *err);

/*
 * A display form of value that never shows more than a short prefix and
 * the last 4 characters: "sk-ant-...wxyz" for Anthropic keys (the "sk-ant-"
 * scheme prefix), else the first 4 characters, "..." and the last 4; "***"
 * for a value shorter than 16 bytes (too short to show anything). out is
 * reset first.
 */
void secret_store_mask(const char *value, struct buf *out);

/*
 * The sealing step alone (no database), for tests and for secret_store_put:
 * encrypt value[0..len) for (owner_id, kind) into nonce and ct, whose size
 * must be len + SECRET_STORE_TAG_BYTES. False on a bad kind or length.
 */
bool secret_store_seal(const unsigned char server_key[SECRET_BYTES], uint64_t owner_id, const char *kind,
                       const char *value, size_t len, unsigned char nonce[SECRET_STORE_NONCE_BYTES],
                       unsigned char *ct);

/*
 * The opening step alone: decrypt ct[0..ctlen) sealed for (owner_id, kind)
 * with nonce, appending the plaintext to out (reset first). False when it
 * does not authenticate (out is left empty).
 */
bool secret_store_open(const unsigned char server_key[SECRET_BYTES], uint64_t owner_id, const char *kind,
                       const unsigned char nonce[SECRET_STORE_NONCE_BYTES], const unsigned char *ct,
                       size_t ctlen, struct buf *out);

/*
 * A value sealed for one job instead of a `secrets` row (the CoinGlass key
 * of one prefetch, sql/020): the same key derivation and AEAD, with the
 * associated data "agenttest-job-secret-v1" || job_id || kind, so the
 * ciphertext opens only for that job and kind (and never as a `secrets`
 * row, nor a row's ciphertext as this). job_id: 1..64 bytes. Same
 * results as secret_store_seal / secret_store_open.
 */
bool secret_store_seal_job(const unsigned char server_key[SECRET_BYTES], const char *job_id, const char *kind,
                           const char *value, size_t len, unsigned char nonce[SECRET_STORE_NONCE_BYTES],
                           unsigned char *ct);
bool secret_store_open_job(const unsigned char server_key[SECRET_BYTES], const char *job_id, const char *kind,
                           const unsigned char nonce[SECRET_STORE_NONCE_BYTES], const unsigned char *ct,
                           size_t ctlen, struct buf *out);

#endif

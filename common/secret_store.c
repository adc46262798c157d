#include "secret_store.h"

#include <string.h>

#include <sodium.h>

#define SS_AD_TAG "agenttest-secret-v1"
#define SS_JOB_AD_TAG "agenttest-job-secret-v1"
#define SS_JOB_ID_MAX 64
#define SS_KDF_CONTEXT "secretst" /* crypto_kdf_CONTEXTBYTES == 8 */
#define SS_KDF_SUBKEY 1
#define SS_KIND_MAX 16

static const char *const ss_kinds[] = { "anthropic", "coinglass" };

bool secret_store_kind_ok(const char *kind)
{
	if (kind == NULL)
		return false;
	for (size_t i = 0; i < sizeof ss_kinds / sizeof ss_kinds[0]; i++)
		if (strcmp(kind, ss_kinds[i]) == 0)
			return true;
	return false;
}

/* True when (owner_id, kind) can name a row (owner_id fits BIGINT as bound); else a message in err. */
static bool ss_row_ok(uint64_t owner_id, const char *kind, struct buf *err)
{
	if (!secret_store_kind_ok(kind)) {
		buf_puts(err, "unknown secret kind");
		return false;
	}
	if (owner_id > (uint64_t)INT64_MAX) {
		buf_puts(err, "secret owner id out of range");
		return false;
	}
	return true;
}

/* Derive the store's own key from the server secret. */
static void ss_derive(const unsigned char server_key[SECRET_BYTES],
                      unsigned char key[crypto_aead_xchacha20poly1305_ietf_KEYBYTES])
{
	crypto_kdf_derive_from_key(key, crypto_aead_xchacha20poly1305_ietf_KEYBYTES, SS_KDF_SUBKEY, SS_KDF_CONTEXT,
	                           server_key);
}

/* Build the associated data for (owner_id, kind) into ad; returns its length. */
static size_t ss_ad(uint64_t owner_id, const char *kind, unsigned char ad[sizeof SS_AD_TAG + 8 + SS_KIND_MAX])
{
	size_t n = sizeof SS_AD_TAG - 1, klen = strlen(kind);
	memcpy(ad, SS_AD_TAG, n);
	for (int i = 0; i < 8; i++)
		ad[n++] = (unsigned char)(owner_id >> (8 * i));
	memcpy(ad + n, kind, klen);
	return n + klen;
}

/* Seal value[0..len) with associated data ad[0..adlen) into nonce and ct. */
static bool ss_seal_ad(const unsigned char server_key[SECRET_BYTES], const unsigned char *ad, size_t adlen,
                       const char *value, size_t len, unsigned char nonce[SECRET_STORE_NONCE_BYTES],
                       unsigned char *ct)
{
	unsigned char key[crypto_aead_xchacha20poly1305_ietf_KEYBYTES];
	unsigned long long ctlen = 0;
	if (len == 0 || len > SECRET_STORE_VALUE_MAX || sodium_init() < 0)
		return false;
	ss_derive(server_key, key);
	randombytes_buf(nonce, SECRET_STORE_NONCE_BYTES);
	crypto_aead_xchacha20poly1305_ietf_encrypt(ct, &ctlen, (const unsigned char *)value, len, ad, adlen, NULL,
	                                           nonce, key);
	sodium_memzero(key, sizeof key);
	return ctlen == len + SECRET_STORE_TAG_BYTES;
}

/* Open ct[0..ctlen) sealed with associated data ad into out (reset first). */
static bool ss_open_ad(const unsigned char server_key[SECRET_BYTES], const unsigned char *ad, size_t adlen,
                       const unsigned char nonce[SECRET_STORE_NONCE_BYTES], const unsigned char *ct,
                       size_t ctlen, struct buf *out)
{
	unsigned char key[crypto_aead_xchacha20poly1305_ietf_KEYBYTES];
	unsigned long long plen = 0;
	buf_reset(out);
	if (ctlen <= SECRET_STORE_TAG_BYTES || ctlen > SECRET_STORE_VALUE_MAX + SECRET_STORE_TAG_BYTES ||
	    sodium_init() < 0)
		return false;
	/* reserve once, so the plaintext is never copied by a later growth */
	buf_reserve(out, ctlen);
	ss_derive(server_key, key);
	int rc = crypto_aead_xchacha20poly1305_ietf_decrypt((unsigned char *)out->data, &plen, NULL, ct, ctlen, ad,
	                                                    adlen, nonce, key);
	sodium_memzero(key, sizeof key);
	if (rc != 0) {
		sodium_memzero(out->data, ctlen);
		out->data[0] = '\0';
		return false;
	}
	out->len = (size_t)plen;
	out->data[out->len] = '\0';
	return true;
}

bool secret_store_seal(const unsigned char server_key[SECRET_BYTES], uint64_t owner_id, const char *kind,
                       const char *value, size_t len, unsigned char nonce[SECRET_STORE_NONCE_BYTES],
                       unsigned char *ct)
{
	unsigned char ad[sizeof SS_AD_TAG + 8 + SS_KIND_MAX];
	if (!secret_store_kind_ok(kind))
		return false;
	return ss_seal_ad(server_key, ad, ss_ad(owner_id, kind, ad), value, len, nonce, ct);
}

bool secret_store_open(const unsigned char server_key[SECRET_BYTES], uint64_t owner_id, const char *kind,
                       const unsigned char nonce[SECRET_STORE_NONCE_BYTES], const unsigned char *ct,
                       size_t ctlen, struct buf *out)
{
	unsigned char ad[sizeof SS_AD_TAG + 8 + SS_KIND_MAX];
	buf_reset(out);
	if (!secret_store_kind_ok(kind))
		return false;
	return ss_open_ad(server_key, ad, ss_ad(owner_id, kind, ad), nonce, ct, ctlen, out);
}

/* Associated data of a job's value: tag || job_id || 0 || kind; 0 if job_id or kind is unusable. */
static size_t ss_job_ad(const char *job_id, const char *kind,
                        unsigned char ad[sizeof SS_JOB_AD_TAG + SS_JOB_ID_MAX + 1 + SS_KIND_MAX])
{
	size_t n = sizeof SS_JOB_AD_TAG - 1, jlen = job_id ? strlen(job_id) : 0;
	if (jlen == 0 || jlen > SS_JOB_ID_MAX || !secret_store_kind_ok(kind))
		return 0;
	memcpy(ad, SS_JOB_AD_TAG, n);
	memcpy(ad + n, job_id, jlen);
	n += jlen;
	ad[n++] = 0;
	memcpy(ad + n, kind, strlen(kind));
	return n + strlen(kind);
}

bool secret_store_seal_job(const unsigned char server_key[SECRET_BYTES], const char *job_id, const char *kind,
                           const char *value, size_t len, unsigned char nonce[SECRET_STORE_NONCE_BYTES],
                           unsigned char *ct)
{
	unsigned char ad[sizeof SS_JOB_AD_TAG + SS_JOB_ID_MAX + 1 + SS_KIND_MAX];
	size_t adlen = ss_job_ad(job_id, kind, ad);
	return adlen > 0 && ss_seal_ad(server_key, ad, adlen, value, len, nonce, ct);
}

bool secret_store_open_job(const unsigned char server_key[SECRET_BYTES], const char *job_id, const char *kind,
                           const unsigned char nonce[SECRET_STORE_NONCE_BYTES], const unsigned char *ct,
                           size_t ctlen, struct buf *out)
{
	unsigned char ad[sizeof SS_JOB_AD_TAG + SS_JOB_ID_MAX + 1 + SS_KIND_MAX];
	size_t adlen = ss_job_ad(job_id, kind, ad);
	buf_reset(out);
	return adlen > 0 && ss_open_ad(server_key, ad, adlen, nonce, ct, ctlen, out);
}

bool secret_store_put(struct db *db, const unsigned char server_key[SECRET_BYTES], uint64_t owner_id,
                      const char *kind, const char *value, struct buf *err)
{
	static const char sql[] =
		"INSERT INTO secrets (owner_id, kind, nonce, ciphertext) VALUES (?, ?, ?, ?)"
		" ON DUPLICATE KEY UPDATE nonce = VALUES(nonce), ciphertext = VALUES(ciphertext),"
		" updated_at = CURRENT_TIMESTAMP(3)";
	unsigned char nonce[SECRET_STORE_NONCE_BYTES];
	unsigned char ct[SECRET_STORE_VALUE_MAX + SECRET_STORE_TAG_BYTES];
	size_t len = value ? strlen(value) : 0;

	if (!ss_row_ok(owner_id, kind, err))
		return false;
	if (len == 0 || len > SECRET_STORE_VALUE_MAX) {
		buf_printf(err, "a %s secret must be 1..%d bytes", kind, SECRET_STORE_VALUE_MAX);
		return false;
	}
	if (!secret_store_seal(server_key, owner_id, kind, value, len, nonce, ct)) {
		buf_printf(err, "cannot seal the %s secret of owner %llu", kind, (unsigned long long)owner_id);
		return false;
	}
	struct db_arg args[4] = { DB_ARG_INT((long long)owner_id), DB_ARG_TEXT(kind), DB_ARG_BLOB(nonce, sizeof nonce),
	                          DB_ARG_BLOB(ct, len + SECRET_STORE_TAG_BYTES) };
	enum db_status st = db_exec(db, sql, args, 4, NULL, 0, NULL, NULL, NULL, 0);
	if (st != DB_OK) {
		buf_printf(err, "storing the %s secret: %s", kind, db_error(db));
		return false;
	}
	return true;
}

int secret_store_get(struct db *db, const unsigned char server_key[SECRET_BYTES], uint64_t owner_id,
                     const char *kind, struct buf *out, struct buf *err)
{
	unsigned char nonce[SECRET_STORE_NONCE_BYTES];
	unsigned char ct[SECRET_STORE_VALUE_MAX + SECRET_STORE_TAG_BYTES];
	struct db_col cols[2] = { { .type = DB_T_BLOB, .buf = (char *)nonce, .cap = sizeof nonce },
	                          { .type = DB_T_BLOB, .buf = (char *)ct, .cap = sizeof ct } };
	struct db_result res;

	buf_reset(out);
	if (!ss_row_ok(owner_id, kind, err))
		return -1;
	struct db_arg args[2] = { DB_ARG_INT((long long)owner_id), DB_ARG_TEXT(kind) };
	enum db_status st = db_exec(db, "SELECT nonce, ciphertext FROM secrets WHERE owner_id = ? AND kind = ?", args,
	                            2, cols, 2, NULL, NULL, &res, DB_IDEMPOTENT);
	if (st != DB_OK) {
		buf_printf(err, "reading the %s secret: %s", kind, db_error(db));
		return -1;
	}
	if (res.rows == 0)
		return 0;
	if (cols[0].len != sizeof nonce ||
	    !secret_store_open(server_key, owner_id, kind, nonce, ct, cols[1].len, out)) {
		buf_printf(err, "the stored %s secret of owner %llu does not open (another server secret, or altered)",
		           kind, (unsigned long long)owner_id);
		return -1;
	}
	return 1;
}

int secret_store_delete(struct db *db, uint64_t owner_id, const char *kind, struct buf *err)
{
	struct db_result res;

	if (!ss_row_ok(owner_id, kind, err))
		return -1;
	struct db_arg args[2] = { DB_ARG_INT((long long)owner_id), DB_ARG_TEXT(kind) };
	enum db_status st = db_exec(db, "DELETE FROM secrets WHERE owner_id = ? AND kind = ?", args, 2, NULL, 0, NULL,
	                            NULL, &res, DB_IDEMPOTENT);
	if (st != DB_OK) {
		buf_printf(err, "deleting the %s secret: %s", kind, db_error(db));
		return -1;
	}
	return res.affected > 0 ? 1 : 0;
}

void secret_store_mask(const char *value, struct buf *out)
{
	static const char anthropic[] = "sk-ant-";
	size_t len = value ? strlen(value) : 0;

	buf_reset(out);
	if (len < 16) {
		buf_puts(out, "***");
		return;
	}
	size_t pre = strncmp(value, anthropic, sizeof anthropic - 1) == 0 ? sizeof anthropic - 1 : 4;
	buf_append(out, value, pre);
	buf_puts(out, "...");
	buf_append(out, value + len - 4, 4);
}

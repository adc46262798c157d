#include "cursor.h"

#include <string.h>

#include <sodium.h>

#define CUR_AD_TAG     "agenttest-cursor"
#define CUR_KDF_CTX    "cursorv1" /* crypto_kdf_CONTEXTBYTES == 8 */
#define CUR_KDF_SUBKEY 1
#define CUR_NONCE      crypto_aead_xchacha20poly1305_ietf_NPUBBYTES
#define CUR_TAG        crypto_aead_xchacha20poly1305_ietf_ABYTES
#define CUR_POS        8
#define CUR_TOKEN      (1 + CUR_NONCE + CUR_POS + CUR_TAG)
#define CUR_AD_MAX     (sizeof CUR_AD_TAG - 1 + 2 + CURSOR_SCOPE_MAX)

_Static_assert(CUR_TOKEN == 49, "cursor token layout");
_Static_assert(CURSOR_TEXT_LEN == (CUR_TOKEN * 4 + 2) / 3, "cursor text length");

/* The cursor key derived from the server secret. */
static void cur_derive(const unsigned char server_key[SECRET_BYTES],
		       unsigned char key[crypto_aead_xchacha20poly1305_ietf_KEYBYTES])
{
	crypto_kdf_derive_from_key(key, crypto_aead_xchacha20poly1305_ietf_KEYBYTES, CUR_KDF_SUBKEY, CUR_KDF_CTX,
				   server_key);
}

/* The associated data of (kind, scope) into ad; its length, 0 if scope is too long. */
static size_t cur_ad(enum cursor_kind kind, const char *scope, unsigned char ad[CUR_AD_MAX])
{
	size_t n = sizeof CUR_AD_TAG - 1, slen = scope ? strlen(scope) : 0;
	if (slen > CURSOR_SCOPE_MAX)
		return 0;
	memcpy(ad, CUR_AD_TAG, n);
	ad[n++] = CURSOR_VERSION;
	ad[n++] = (unsigned char)kind;
	if (slen)
		memcpy(ad + n, scope, slen);
	return n + slen;
}

bool cursor_encode(const unsigned char server_key[SECRET_BYTES], enum cursor_kind kind, const char *scope, int64_t pos,
		   char out[CURSOR_TEXT_LEN + 1])
{
	unsigned char key[crypto_aead_xchacha20poly1305_ietf_KEYBYTES], ad[CUR_AD_MAX], plain[CUR_POS];
	unsigned char tok[CUR_TOKEN];
	size_t adlen = cur_ad(kind, scope, ad);
	out[0] = '\0';
	if (kind <= 0 || kind >= CURSOR__MAX || pos < 0 || adlen == 0)
		return false;
	for (int i = 0; i < CUR_POS; i++)
		plain[i] = (unsigned char)((uint64_t)pos >> (8 * (CUR_POS - 1 - i)));
	tok[0] = CURSOR_VERSION;
	randombytes_buf(tok + 1, CUR_NONCE);
	cur_derive(server_key, key);
	crypto_aead_xchacha20poly1305_ietf_encrypt(tok + 1 + CUR_NONCE, NULL, plain, CUR_POS, ad, adlen, NULL,
						   tok + 1, key);
	sodium_memzero(key, sizeof key);
	sodium_bin2base64(out, CURSOR_TEXT_LEN + 1, tok, sizeof tok, sodium_base64_VARIANT_URLSAFE_NO_PADDING);
	return true;
}

enum cursor_err cursor_decode(const unsigned char server_key[SECRET_BYTES], enum cursor_kind kind, const char *scope,
			      const char *text, int64_t *pos)
{
	unsigned char key[crypto_aead_xchacha20poly1305_ietf_KEYBYTES], ad[CUR_AD_MAX], plain[CUR_POS];
	unsigned char tok[CUR_TOKEN];
	size_t n = 0, adlen = cur_ad(kind, scope, ad);
	const char *end = NULL;
	if (!text || strlen(text) != CURSOR_TEXT_LEN || kind <= 0 || kind >= CURSOR__MAX || adlen == 0)
		return CURSOR_MALFORMED;
	if (sodium_base642bin(tok, sizeof tok, text, CURSOR_TEXT_LEN, NULL, &n, &end,
			      sodium_base64_VARIANT_URLSAFE_NO_PADDING) != 0 ||
	    n != sizeof tok || end != text + CURSOR_TEXT_LEN || tok[0] != CURSOR_VERSION)
		return CURSOR_MALFORMED;
	cur_derive(server_key, key);
	int r = crypto_aead_xchacha20poly1305_ietf_decrypt(plain, NULL, NULL, tok + 1 + CUR_NONCE, CUR_POS + CUR_TAG, ad,
							   adlen, tok + 1, key);
	sodium_memzero(key, sizeof key);
	if (r != 0)
		return CURSOR_UNVERIFIED;
	uint64_t v = 0;
	for (int i = 0; i < CUR_POS; i++)
		v = v << 8 | plain[i];
	if (v > (uint64_t)INT64_MAX)
		return CURSOR_UNVERIFIED;   /* never sealed by cursor_encode */
	*pos = (int64_t)v;
	return CURSOR_OK;
}

const char *cursor_strerror(enum cursor_err err)
{
	switch (err) {
	case CURSOR_OK:
		return "ok";
	case CURSOR_MALFORMED:
		return "cursor is not a cursor of this server: pass the next_cursor of the previous page back unchanged";
	case CURSOR_UNVERIFIED:
		return "cursor does not verify: it was altered, or it belongs to another list, user or run";
	case CURSOR_ERR__MAX:
		break;
	}
	return "cursor is invalid";
}

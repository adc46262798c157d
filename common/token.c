#include "token.h"

#include <string.h>

#include <sodium.h>

void token_generate(char out[TOKEN_TEXT_LEN + 1])
{
	unsigned char raw[TOKEN_RAW_BYTES];
	char b64[64];
	randombytes_buf(raw, sizeof raw);
	sodium_bin2base64(b64, sizeof b64, raw, sizeof raw, sodium_base64_VARIANT_URLSAFE_NO_PADDING);
	memcpy(out, TOKEN_TAG, 3);
	memcpy(out + 3, b64, TOKEN_TEXT_LEN - 3);
	out[TOKEN_TEXT_LEN] = '\0';
	sodium_memzero(raw, sizeof raw);
	sodium_memzero(b64, sizeof b64);
}

bool token_well_formed(const char *s, size_t n)
{
	unsigned char raw[TOKEN_RAW_BYTES];
	size_t len = 0;
	const char *end = NULL;
	if (n != TOKEN_TEXT_LEN || memcmp(s, TOKEN_TAG, 3) != 0)
		return false;
	int rc = sodium_base642bin(raw, sizeof raw, s + 3, n - 3, NULL, &len, &end,
	                           sodium_base64_VARIANT_URLSAFE_NO_PADDING);
	sodium_memzero(raw, sizeof raw);
	return rc == 0 && len == TOKEN_RAW_BYTES && end == s + n;
}

void token_hash(const unsigned char key[SECRET_BYTES], const char *s, size_t n,
                unsigned char out[TOKEN_HASH_BYTES])
{
	crypto_generichash(out, TOKEN_HASH_BYTES, (const unsigned char *)s, n, key, SECRET_BYTES);
}

bool token_hash_equal(const unsigned char a[TOKEN_HASH_BYTES], const unsigned char b[TOKEN_HASH_BYTES])
{
	return crypto_verify_32(a, b) == 0;
}

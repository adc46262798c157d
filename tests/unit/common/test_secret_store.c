/*
 * The secret store's cryptography without a database (common/secret_store.h):
 * seal/open round trip, a fresh nonce per seal, a wrong server key, every
 * byte of ciphertext and nonce tampered, the row moved to another owner or
 * kind, bad kinds and lengths, and the display mask. The database half
 * (put/get/delete against MariaDB) is test_secret_store_db in test_db.c.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include <sodium.h>

#include "common/secret_store.h"

static const char value[] = "sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789-wxyz";

/* Seal value for (owner, kind) with key into nonce/ct; returns the ciphertext length. */
static size_t seal(const unsigned char key[SECRET_BYTES], uint64_t owner, const char *kind,
                   unsigned char nonce[SECRET_STORE_NONCE_BYTES], unsigned char *ct)
{
	assert_true(secret_store_seal(key, owner, kind, value, strlen(value), nonce, ct));
	return strlen(value) + SECRET_STORE_TAG_BYTES;
}

static void test_round_trip_and_fresh_nonce(void **state)
{
	unsigned char key[SECRET_BYTES], n1[SECRET_STORE_NONCE_BYTES], n2[SECRET_STORE_NONCE_BYTES];
	unsigned char c1[sizeof value + SECRET_STORE_TAG_BYTES], c2[sizeof c1];
	struct buf out = BUF_INIT;

	randombytes_buf(key, sizeof key);
	size_t len = seal(key, 7, "anthropic", n1, c1);
	seal(key, 7, "anthropic", n2, c2);
	assert_true(secret_store_open(key, 7, "anthropic", n1, c1, len, &out));
	assert_int_equal(out.len, strlen(value));
	assert_string_equal(buf_cstr(&out), value);
	/* a new random nonce on every seal, so equal values never look equal */
	assert_memory_not_equal(n1, n2, sizeof n1);
	assert_memory_not_equal(c1, c2, len);
	/* the plaintext does not appear in the ciphertext */
	assert_null(memmem(c1, len, "abcdefgh", 8));
	/* owner 0 (the default) is a distinct, valid owner */
	seal(key, 0, "coinglass", n2, c2);
	assert_true(secret_store_open(key, 0, "coinglass", n2, c2, len, &out));
	assert_string_equal(buf_cstr(&out), value);
	sodium_memzero(out.data, out.len);
	buf_free(&out);
	(void)state;
}

static void test_wrong_server_key_fails(void **state)
{
	unsigned char key[SECRET_BYTES], other[SECRET_BYTES], nonce[SECRET_STORE_NONCE_BYTES];
	unsigned char ct[sizeof value + SECRET_STORE_TAG_BYTES];
	struct buf out = BUF_INIT;

	randombytes_buf(key, sizeof key);
	memcpy(other, key, sizeof other);
	other[SECRET_BYTES - 1] ^= 1;
	size_t len = seal(key, 3, "coinglass", nonce, ct);
	assert_false(secret_store_open(other, 3, "coinglass", nonce, ct, len, &out));
	assert_int_equal(out.len, 0);
	assert_string_equal(buf_cstr(&out), "");
	buf_free(&out);
	(void)state;
}

static void test_tampering_fails(void **state)
{
	unsigned char key[SECRET_BYTES], nonce[SECRET_STORE_NONCE_BYTES];
	unsigned char ct[sizeof value + SECRET_STORE_TAG_BYTES];
	struct buf out = BUF_INIT;

	randombytes_buf(key, sizeof key);
	size_t len = seal(key, 42, "anthropic", nonce, ct);
	for (size_t i = 0; i < len; i++) {
		ct[i] ^= 0x01;
		assert_false(secret_store_open(key, 42, "anthropic", nonce, ct, len, &out));
		ct[i] ^= 0x01;
	}
	for (size_t i = 0; i < sizeof nonce; i++) {
		nonce[i] ^= 0x80;
		assert_false(secret_store_open(key, 42, "anthropic", nonce, ct, len, &out));
		nonce[i] ^= 0x80;
	}
	/* truncated (tag cut) and empty ciphertexts */
	assert_false(secret_store_open(key, 42, "anthropic", nonce, ct, len - 1, &out));
	assert_false(secret_store_open(key, 42, "anthropic", nonce, ct, SECRET_STORE_TAG_BYTES, &out));
	/* untouched it still opens */
	assert_true(secret_store_open(key, 42, "anthropic", nonce, ct, len, &out));
	sodium_memzero(out.data, out.len);
	buf_free(&out);
	(void)state;
}

static void test_owner_and_kind_swap_fails(void **state)
{
	unsigned char key[SECRET_BYTES], nonce[SECRET_STORE_NONCE_BYTES];
	unsigned char ct[sizeof value + SECRET_STORE_TAG_BYTES];
	struct buf out = BUF_INIT;

	randombytes_buf(key, sizeof key);
	size_t len = seal(key, 5, "anthropic", nonce, ct);
	assert_false(secret_store_open(key, 6, "anthropic", nonce, ct, len, &out));
	assert_false(secret_store_open(key, 0, "anthropic", nonce, ct, len, &out));
	assert_false(secret_store_open(key, 5 + (1ull << 32), "anthropic", nonce, ct, len, &out));
	assert_false(secret_store_open(key, 5, "coinglass", nonce, ct, len, &out));
	buf_free(&out);
	(void)state;
}

static void test_bad_kind_and_length(void **state)
{
	unsigned char key[SECRET_BYTES], nonce[SECRET_STORE_NONCE_BYTES];
	static unsigned char ct[SECRET_STORE_VALUE_MAX + 1 + SECRET_STORE_TAG_BYTES];
	static char big[SECRET_STORE_VALUE_MAX + 2];

	randombytes_buf(key, sizeof key);
	assert_true(secret_store_kind_ok("anthropic"));
	assert_true(secret_store_kind_ok("coinglass"));
	assert_false(secret_store_kind_ok("openai"));
	assert_false(secret_store_kind_ok(""));
	assert_false(secret_store_kind_ok(NULL));
	assert_false(secret_store_seal(key, 1, "other", "x", 1, nonce, ct));
	assert_false(secret_store_seal(key, 1, "anthropic", "", 0, nonce, ct));
	memset(big, 'a', sizeof big - 1);
	assert_true(secret_store_seal(key, 1, "anthropic", big, SECRET_STORE_VALUE_MAX, nonce, ct));
	assert_false(secret_store_seal(key, 1, "anthropic", big, SECRET_STORE_VALUE_MAX + 1, nonce, ct));
	(void)state;
}

static void test_mask(void **state)
{
	struct buf m = BUF_INIT;

	secret_store_mask("sk-ant-api03-0123456789abcdefwxyz", &m);
	assert_string_equal(buf_cstr(&m), "sk-ant-...wxyz");
	secret_store_mask("0123456789abcdef0123456789abwxyz", &m);
	assert_string_equal(buf_cstr(&m), "0123...wxyz");
	secret_store_mask("0123456789abcdef", &m); /* 16 bytes: the shortest shown */
	assert_string_equal(buf_cstr(&m), "0123...cdef");
	secret_store_mask("0123456789abcde", &m);
	assert_string_equal(buf_cstr(&m), "***");
	secret_store_mask("sk-ant-short", &m);
	assert_string_equal(buf_cstr(&m), "***");
	secret_store_mask("", &m);
	assert_string_equal(buf_cstr(&m), "***");
	secret_store_mask(NULL, &m);
	assert_string_equal(buf_cstr(&m), "***");
	buf_free(&m);
	(void)state;
}

static int setup(void **state)
{
	(void)state;
	return sodium_init() < 0;
}

/* A value sealed for a job opens for that job and kind only, never as a
 * secrets row, and a row's ciphertext never opens as a job's. */
static void test_job_seal_bound_to_the_job(void **state)
{
	static const char job[] = "6f1c2b7e-0d4a-4c1e-9a51-3e2f8b9c0d11";
	unsigned char key[SECRET_BYTES], nonce[SECRET_STORE_NONCE_BYTES];
	unsigned char ct[sizeof value + SECRET_STORE_TAG_BYTES];
	struct buf out = BUF_INIT;
	size_t len = strlen(value) + SECRET_STORE_TAG_BYTES;

	randombytes_buf(key, sizeof key);
	assert_true(secret_store_seal_job(key, job, "coinglass", value, strlen(value), nonce, ct));
	assert_null(memmem(ct, len, "abcdefgh", 8));
	assert_true(secret_store_open_job(key, job, "coinglass", nonce, ct, len, &out));
	assert_string_equal(buf_cstr(&out), value);
	assert_false(secret_store_open_job(key, "6f1c2b7e-0d4a-4c1e-9a51-3e2f8b9c0d12", "coinglass", nonce, ct, len,
					   &out));
	assert_int_equal(out.len, 0);
	assert_false(secret_store_open_job(key, job, "anthropic", nonce, ct, len, &out));
	assert_false(secret_store_open(key, 0, "coinglass", nonce, ct, len, &out));
	/* and the other way: a row's ciphertext is not a job's */
	size_t rlen = seal(key, 0, "coinglass", nonce, ct);
	assert_false(secret_store_open_job(key, job, "coinglass", nonce, ct, rlen, &out));
	/* unusable job ids and kinds are refused */
	assert_false(secret_store_seal_job(key, "", "coinglass", value, strlen(value), nonce, ct));
	assert_false(secret_store_seal_job(key, job, "nope", value, strlen(value), nonce, ct));
	buf_free(&out);
	(void)state;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip_and_fresh_nonce),
		cmocka_unit_test(test_wrong_server_key_fails),
		cmocka_unit_test(test_tampering_fails),
		cmocka_unit_test(test_owner_and_kind_swap_fails),
		cmocka_unit_test(test_bad_kind_and_length),
		cmocka_unit_test(test_mask),
		cmocka_unit_test(test_job_seal_bound_to_the_job),
	};
	return cmocka_run_group_tests_name("secret_store", tests, setup, NULL);
}

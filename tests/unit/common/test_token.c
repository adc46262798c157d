/* Tokens (format, keyed hashing, constant-time compare), the secret file
 * (creation, mode and size checks) and the MANTIS_AUTH_TOKEN strength rule. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include <sodium.h>

#include "common/secret.h"
#include "common/strength.h"
#include "common/token.h"

static void test_generate_format(void **state)
{
	char a[TOKEN_TEXT_LEN + 1], b[TOKEN_TEXT_LEN + 1];
	token_generate(a);
	token_generate(b);
	assert_int_equal(strlen(a), TOKEN_TEXT_LEN);
	assert_memory_equal(a, "at_", 3);
	assert_string_not_equal(a, b);
	for (size_t i = 3; i < TOKEN_TEXT_LEN; i++)
		assert_non_null(strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_", a[i]));
	assert_true(token_well_formed(a, strlen(a)));
	(void)state;
}

static void test_well_formed_rejects(void **state)
{
	char t[TOKEN_TEXT_LEN + 2];
	token_generate(t);
	assert_false(token_well_formed(t, TOKEN_TEXT_LEN - 1));
	t[0] = 'x';
	assert_false(token_well_formed(t, TOKEN_TEXT_LEN));
	token_generate(t);
	t[10] = '+'; /* standard base64, not url-safe */
	assert_false(token_well_formed(t, TOKEN_TEXT_LEN));
	token_generate(t);
	t[TOKEN_TEXT_LEN] = 'A';
	t[TOKEN_TEXT_LEN + 1] = '\0';
	assert_false(token_well_formed(t, TOKEN_TEXT_LEN + 1));
	/* 43 characters whose last one has non-zero padding bits: not canonical */
	char nc[] = "at_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAB";
	assert_int_equal(strlen(nc), TOKEN_TEXT_LEN);
	assert_false(token_well_formed(nc, strlen(nc)));
	assert_false(token_well_formed("", 0));
	(void)state;
}

static void test_hash_keyed_and_compare(void **state)
{
	unsigned char k1[SECRET_BYTES], k2[SECRET_BYTES];
	unsigned char h1[TOKEN_HASH_BYTES], h2[TOKEN_HASH_BYTES], h3[TOKEN_HASH_BYTES];
	char t[TOKEN_TEXT_LEN + 1];
	memset(k1, 1, sizeof k1);
	memset(k2, 2, sizeof k2);
	token_generate(t);
	token_hash(k1, t, strlen(t), h1);
	token_hash(k1, t, strlen(t), h2);
	token_hash(k2, t, strlen(t), h3);
	assert_true(token_hash_equal(h1, h2));
	assert_false(token_hash_equal(h1, h3));
	t[5] ^= 1;
	token_hash(k1, t, strlen(t), h2);
	assert_false(token_hash_equal(h1, h2));
	/* the hash is keyed BLAKE2b-256 of the text */
	unsigned char ref[32];
	crypto_generichash(ref, 32, (const unsigned char *)"abc", 3, k1, 32);
	token_hash(k1, "abc", 3, h1);
	assert_memory_equal(ref, h1, 32);
	(void)state;
}

static void test_secret_file(void **state)
{
	char dir[] = "/tmp/agenttest-secret-XXXXXX";
	char path[128];
	unsigned char k1[SECRET_BYTES], k2[SECRET_BYTES];
	struct buf err = BUF_INIT;
	struct stat st;

	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/secret.key", dir);
	assert_false(secret_load(path, false, k1, &err));
	buf_reset(&err);
	assert_true(secret_load(path, true, k1, &err));
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_int_equal(st.st_size, SECRET_BYTES);
	assert_true(secret_load(path, true, k2, &err)); /* existing file kept */
	assert_memory_equal(k1, k2, SECRET_BYTES);
	chmod(path, 0640);
	buf_reset(&err);
	assert_false(secret_load(path, false, k2, &err));
	assert_non_null(strstr(buf_cstr(&err), "refusing"));
	chmod(path, 0600);
	FILE *f = fopen(path, "a");
	fputc('x', f);
	fclose(f);
	buf_reset(&err);
	assert_false(secret_load(path, false, k2, &err));
	assert_non_null(strstr(buf_cstr(&err), "exactly 32 bytes"));
	unlink(path);
	rmdir(dir);
	buf_free(&err);
	(void)state;
}

static void test_strength_rule(void **state)
{
	static const struct { const char *tok; bool ok; } cases[] = {
		{ "short1A", false },                       /* < 12 */
		{ "aaaaaaaaaaaaaaaaaaaaaaaa", false },      /* one class */
		{ "abcdefghijklmnop", false },              /* one class, 16 distinct */
		{ "abababababab12", false },                /* 14 * log2(4) = 28 bits */
		{ "abcabcabc123", false },                  /* 12 * log2(6) = 31 bits */
		{ "abcdef123456", true },                   /* 12 * log2(12) = 43 bits */
		{ "Correct-Horse-42", true },
		{ "ZZZZZZZZZZZZ!!!!", false },              /* 16 * 1 = 16 bits */
		{ "at_9svBOZJeKKqlUWUfVA2P8RaE7IEFzqlGsIQ0RXpoxnM", true },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct buf why = BUF_INIT;
		bool ok = strength_check(cases[i].tok, &why);
		if (ok != cases[i].ok)
			fail_msg("%s: expected %d (%s)", cases[i].tok, cases[i].ok, buf_cstr(&why));
		if (!ok)
			assert_true(why.len > 0);
		buf_free(&why);
	}
	(void)state;
}

int main(void)
{
	if (sodium_init() < 0)
		return 1;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_generate_format),
		cmocka_unit_test(test_well_formed_rejects),
		cmocka_unit_test(test_hash_keyed_and_compare),
		cmocka_unit_test(test_secret_file),
		cmocka_unit_test(test_strength_rule),
	};
	return cmocka_run_group_tests_name("token", tests, NULL, NULL);
}

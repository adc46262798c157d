/*
 * The pagination cursor codec (common/cursor.h): round trip of positions
 * from 0 to INT64_MAX, text shape (66 URL-safe characters, no padding), a
 * fresh nonce per cursor and no position in clear, every character altered,
 * another list kind, scope or server secret, truncated, padded and
 * non-base64 text, an unknown version byte, and bad encode arguments.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include <sodium.h>

#include "common/cursor.h"

static unsigned char key[SECRET_BYTES];

static int setup(void **state)
{
	(void)state;
	if (sodium_init() < 0)
		return -1;
	randombytes_buf(key, sizeof key);
	return 0;
}

/* True if every character of s is in the URL-safe base64 alphabet. */
static bool urlsafe(const char *s)
{
	for (; *s; s++)
		if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '-' ||
		      *s == '_'))
			return false;
	return true;
}

static void test_round_trip(void **state)
{
	static const int64_t pos[] = { 0, 1, 2, 255, 256, 65535, 1000000007, INT32_MAX, (int64_t)1 << 40,
				       INT64_MAX - 1, INT64_MAX };
	char text[CURSOR_TEXT_LEN + 1];
	(void)state;
	for (size_t i = 0; i < sizeof pos / sizeof pos[0]; i++) {
		int64_t got = -1;
		assert_true(cursor_encode(key, CURSOR_RUNS, "u:7", pos[i], text));
		assert_int_equal(strlen(text), CURSOR_TEXT_LEN);
		assert_true(urlsafe(text));
		assert_int_equal(cursor_decode(key, CURSOR_RUNS, "u:7", text, &got), CURSOR_OK);
		assert_true(got == pos[i]);
	}
	/* the empty scope is a scope like any other */
	int64_t got = -1;
	assert_true(cursor_encode(key, CURSOR_TRADES, "", 42, text));
	assert_int_equal(cursor_decode(key, CURSOR_TRADES, "", text, &got), CURSOR_OK);
	assert_true(got == 42);
}

static void test_opaque_and_fresh(void **state)
{
	char a[CURSOR_TEXT_LEN + 1], b[CURSOR_TEXT_LEN + 1];
	unsigned char bin[64];
	size_t n = 0;
	(void)state;
	assert_true(cursor_encode(key, CURSOR_RUNS, "u:1", 123456789, a));
	assert_true(cursor_encode(key, CURSOR_RUNS, "u:1", 123456789, b));
	/* a new nonce each time: the same position never gives the same text */
	assert_string_not_equal(a, b);
	/* and the position is not in the bytes in clear (big- or little-endian) */
	assert_int_equal(sodium_base642bin(bin, sizeof bin, a, strlen(a), NULL, &n, NULL,
					   sodium_base64_VARIANT_URLSAFE_NO_PADDING), 0);
	assert_int_equal(n, 49);
	static const unsigned char be[4] = { 0x07, 0x5b, 0xcd, 0x15 }, le[4] = { 0x15, 0xcd, 0x5b, 0x07 };
	assert_null(memmem(bin + 1, n - 1, be, sizeof be));
	assert_null(memmem(bin + 1, n - 1, le, sizeof le));
	assert_int_equal(bin[0], CURSOR_VERSION);
}

static void test_every_character_altered(void **state)
{
	static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
	char text[CURSOR_TEXT_LEN + 1], bad[CURSOR_TEXT_LEN + 1];
	(void)state;
	assert_true(cursor_encode(key, CURSOR_EVALUATIONS, "u:3", 99, text));
	for (size_t i = 0; i < CURSOR_TEXT_LEN; i++) {
		memcpy(bad, text, sizeof bad);
		/* the next letter of the alphabet: always a different, valid base64 character */
		const char *at = strchr(alphabet, text[i]);
		assert_non_null(at);
		bad[i] = alphabet[((size_t)(at - alphabet) + 1) % 64];
		int64_t got = -1;
		enum cursor_err e = cursor_decode(key, CURSOR_EVALUATIONS, "u:3", bad, &got);
		/* the first characters carry the version byte: malformed; the last
		 * one's low bits are not data (strict decoding refuses them); the
		 * rest fails the tag */
		assert_int_not_equal(e, CURSOR_OK);
		assert_true(got == -1);
	}
}

static void test_foreign_cursors(void **state)
{
	char text[CURSOR_TEXT_LEN + 1];
	unsigned char other[SECRET_BYTES];
	int64_t got = -1;
	(void)state;
	randombytes_buf(other, sizeof other);
	assert_true(cursor_encode(key, CURSOR_RUNS, "u:7", 5, text));
	assert_int_equal(cursor_decode(key, CURSOR_RUNS, "u:8", text, &got), CURSOR_UNVERIFIED);
	assert_int_equal(cursor_decode(key, CURSOR_RUNS, "u:70", text, &got), CURSOR_UNVERIFIED);
	assert_int_equal(cursor_decode(key, CURSOR_EVALUATIONS, "u:7", text, &got), CURSOR_UNVERIFIED);
	assert_int_equal(cursor_decode(key, CURSOR_TRADES, "u:7", text, &got), CURSOR_UNVERIFIED);
	assert_int_equal(cursor_decode(key, CURSOR_AGENT_EVENTS, "u:7", text, &got), CURSOR_UNVERIFIED);
	assert_int_equal(cursor_decode(other, CURSOR_RUNS, "u:7", text, &got), CURSOR_UNVERIFIED);
	assert_true(got == -1);
}

static void test_malformed_text(void **state)
{
	char text[CURSOR_TEXT_LEN + 1], bad[CURSOR_TEXT_LEN + 8];
	int64_t got = -1;
	(void)state;
	assert_true(cursor_encode(key, CURSOR_RUNS, "u:7", 5, text));
	static const char *const junk[] = { "", "0", "100", "abc", "-1", "null" };
	for (size_t i = 0; i < sizeof junk / sizeof junk[0]; i++)
		assert_int_equal(cursor_decode(key, CURSOR_RUNS, "u:7", junk[i], &got), CURSOR_MALFORMED);
	assert_int_equal(cursor_decode(key, CURSOR_RUNS, "u:7", NULL, &got), CURSOR_MALFORMED);
	/* one character short, one too many, padding, the standard alphabet */
	snprintf(bad, sizeof bad, "%.*s", CURSOR_TEXT_LEN - 1, text);
	assert_int_equal(cursor_decode(key, CURSOR_RUNS, "u:7", bad, &got), CURSOR_MALFORMED);
	snprintf(bad, sizeof bad, "%sA", text);
	assert_int_equal(cursor_decode(key, CURSOR_RUNS, "u:7", bad, &got), CURSOR_MALFORMED);
	snprintf(bad, sizeof bad, "%.*s=", CURSOR_TEXT_LEN - 1, text);
	assert_int_equal(cursor_decode(key, CURSOR_RUNS, "u:7", bad, &got), CURSOR_MALFORMED);
	snprintf(bad, sizeof bad, "%s", text);
	bad[10] = '+';
	assert_int_equal(cursor_decode(key, CURSOR_RUNS, "u:7", bad, &got), CURSOR_MALFORMED);
	bad[10] = ' ';
	assert_int_equal(cursor_decode(key, CURSOR_RUNS, "u:7", bad, &got), CURSOR_MALFORMED);
	/* another version byte (the first six bits of the text) */
	snprintf(bad, sizeof bad, "%s", text);
	bad[0] = bad[0] == 'B' ? 'C' : 'B';
	assert_int_equal(cursor_decode(key, CURSOR_RUNS, "u:7", bad, &got), CURSOR_MALFORMED);
	assert_true(got == -1);
}

static void test_bad_arguments(void **state)
{
	char text[CURSOR_TEXT_LEN + 1], scope[CURSOR_SCOPE_MAX + 2];
	int64_t got = -1;
	(void)state;
	assert_false(cursor_encode(key, CURSOR_RUNS, "u:1", -1, text));
	assert_string_equal(text, "");
	assert_false(cursor_encode(key, (enum cursor_kind)0, "u:1", 1, text));
	assert_false(cursor_encode(key, CURSOR__MAX, "u:1", 1, text));
	memset(scope, 'x', sizeof scope - 1);
	scope[sizeof scope - 1] = '\0';
	assert_false(cursor_encode(key, CURSOR_RUNS, scope, 1, text));
	scope[CURSOR_SCOPE_MAX] = '\0';   /* exactly the maximum is fine */
	assert_true(cursor_encode(key, CURSOR_RUNS, scope, 1, text));
	assert_int_equal(cursor_decode(key, CURSOR_RUNS, scope, text, &got), CURSOR_OK);
	assert_true(got == 1);
	assert_int_equal(cursor_decode(key, CURSOR__MAX, scope, text, &got), CURSOR_MALFORMED);
	assert_non_null(strstr(cursor_strerror(CURSOR_MALFORMED), "next_cursor"));
	assert_non_null(strstr(cursor_strerror(CURSOR_UNVERIFIED), "altered"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_opaque_and_fresh),
		cmocka_unit_test(test_every_character_altered),
		cmocka_unit_test(test_foreign_cursors),
		cmocka_unit_test(test_malformed_text),
		cmocka_unit_test(test_bad_arguments),
	};
	return cmocka_run_group_tests(tests, setup, NULL);
}

/* UTF-8 (common/utf8.c): well-formed characters are recognised; for JSON
 * replies valid text passes unchanged, every invalid byte becomes U+FFFD,
 * and a cut character is dropped. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "common/utf8.h"

#define FFFD "\xef\xbf\xbd"

/* utf8_clean of s (strlen bytes) must be want. */
static void clean_is(const char *s, const char *want)
{
	char out[UTF8_CLEAN_CAP(64)];
	assert_true(strlen(s) <= 64);
	size_t n = utf8_clean(s, strlen(s), out, sizeof out);
	assert_string_equal(out, want);
	assert_int_equal(n, strlen(want));
}

static void test_valid_text_unchanged(void **state)
{
	clean_is("", "");
	clean_is("plain ascii \"q\" \\ \t", "plain ascii \"q\" \\ \t");
	clean_is("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x93\x88 \xe6\x97\xa5\xe6\x9c\xac", /* café € 📈 日本 */
		 "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x93\x88 \xe6\x97\xa5\xe6\x9c\xac");
	clean_is("\xf4\x8f\xbf\xbf", "\xf4\x8f\xbf\xbf");   /* U+10FFFF, the last code point */
	(void)state;
}

static void test_invalid_bytes_replaced(void **state)
{
	clean_is("a\xff" "b", "a" FFFD "b");                  /* never a UTF-8 byte */
	clean_is("\x80x", FFFD "x");                          /* stray continuation */
	clean_is("\xc0\xaf", FFFD FFFD);                      /* overlong '/' */
	clean_is("\xe0\x80\xaf", FFFD FFFD FFFD);             /* overlong, 3 bytes */
	clean_is("\xed\xa0\x80", FFFD FFFD FFFD);             /* surrogate U+D800 */
	clean_is("\xf4\x90\x80\x80", FFFD FFFD FFFD FFFD);    /* above U+10FFFF */
	clean_is("\xe2\x82" "x", FFFD FFFD "x");              /* cut short inside the text */
	clean_is("end\xe2\x82", "end" FFFD FFFD);             /* cut short at the end */
	clean_is("\xc3\xa9\xe9t\xc3\xa9", "\xc3\xa9" FFFD "t\xc3\xa9"); /* Latin-1 among UTF-8 */
	(void)state;
}

static void test_small_cap_stops_at_a_character(void **state)
{
	char out[6];
	/* "ab€" is 5 bytes: all fit; "ab€€" would need 8: stops after the first € */
	assert_int_equal(utf8_clean("ab\xe2\x82\xac\xe2\x82\xac", 8, out, sizeof out), 5);
	assert_string_equal(out, "ab\xe2\x82\xac");
	(void)state;
}

static void test_seq_len(void **state)
{
	assert_int_equal(utf8_seq_len("a", 1), 1);
	assert_int_equal(utf8_seq_len("\xc3\xa9x", 3), 2);
	assert_int_equal(utf8_seq_len("\xe2\x82\xac", 3), 3);
	assert_int_equal(utf8_seq_len("\xf0\x9f\x93\x88", 4), 4);
	assert_int_equal(utf8_seq_len("\xe2\x82\xac", 2), 0);     /* cut short by n */
	assert_int_equal(utf8_seq_len("\xc1\xbf", 2), 0);          /* overlong */
	assert_int_equal(utf8_seq_len("\xed\xbf\xbf", 3), 0);     /* surrogate U+DFFF */
	assert_int_equal(utf8_seq_len("\xf8\x88\x80\x80", 4), 0); /* 5-byte lead */
	assert_int_equal(utf8_seq_len("\xbf", 1), 0);
	(void)state;
}

static void test_uncut_len(void **state)
{
	assert_int_equal(utf8_uncut_len("", 0), 0);
	assert_int_equal(utf8_uncut_len("abc", 3), 3);
	assert_int_equal(utf8_uncut_len("ab\xc3\xa9", 4), 4);          /* whole é */
	assert_int_equal(utf8_uncut_len("ab\xc3", 3), 2);              /* half an é */
	assert_int_equal(utf8_uncut_len("ab\xe2\x82", 4), 2);          /* two thirds of € */
	assert_int_equal(utf8_uncut_len("ab\xf0\x9f\x93", 5), 2);      /* three quarters of 📈 */
	assert_int_equal(utf8_uncut_len("ab\xf0\x9f\x93\x88", 6), 6);  /* whole 📈 */
	assert_int_equal(utf8_uncut_len("ab\xff", 3), 3);              /* not a cut: left to utf8_clean */
	assert_int_equal(utf8_uncut_len("\x80\x80\x80\x80\x80", 5), 5);
	(void)state;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_valid_text_unchanged),
		cmocka_unit_test(test_invalid_bytes_replaced),
		cmocka_unit_test(test_small_cap_stops_at_a_character),
		cmocka_unit_test(test_seq_len),
		cmocka_unit_test(test_uncut_len),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

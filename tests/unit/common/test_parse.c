/* Strict integer parsing, percent-decoding, the arena and JSON escaping. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "common/arena.h"
#include "common/log.h"
#include "common/parse.h"

static void test_parse_int(void **state)
{
	int64_t v = 7;
	assert_true(parse_int("0", 1, 0, 10, &v) && v == 0);
	assert_true(parse_int("-5", 2, -10, 10, &v) && v == -5);
	assert_true(parse_int("9223372036854775807", 19, INT64_MIN, INT64_MAX, &v) && v == INT64_MAX);
	assert_true(parse_int("-9223372036854775808", 20, INT64_MIN, INT64_MAX, &v) && v == INT64_MIN);
	v = 7;
	assert_false(parse_int("9223372036854775808", 19, INT64_MIN, INT64_MAX, &v));
	assert_false(parse_int("", 0, 0, 10, &v));
	assert_false(parse_int("-", 1, -10, 10, &v));
	assert_false(parse_int("+1", 2, 0, 10, &v));
	assert_false(parse_int(" 1", 2, 0, 10, &v));
	assert_false(parse_int("1 ", 2, 0, 10, &v));
	assert_false(parse_int("1.0", 3, 0, 10, &v));
	assert_false(parse_int("0x1", 3, 0, 10, &v));
	assert_false(parse_int("11", 2, 0, 10, &v));
	assert_false(parse_int("-11", 3, -10, 10, &v));
	assert_false(parse_int("123456789012345678901", 21, INT64_MIN, INT64_MAX, &v));
	assert_int_equal(v, 7);
	assert_true(parse_int("12x", 2, 0, 100, &v) && v == 12); /* only n bytes are read */
	(void)state;
}

static void test_pct_decode(void **state)
{
	char out[64];
	size_t n;
	assert_true(parse_pct_decode("a%20b+c", 7, true, out, &n));
	assert_string_equal(out, "a b c");
	assert_true(parse_pct_decode("a%20b+c", 7, false, out, &n));
	assert_string_equal(out, "a b+c");
	assert_int_equal(n, 5);
	assert_true(parse_pct_decode("%2f%2F", 6, false, out, &n));
	assert_string_equal(out, "//");
	assert_false(parse_pct_decode("%", 1, false, out, &n));
	assert_false(parse_pct_decode("%2", 2, false, out, &n));
	assert_false(parse_pct_decode("%zz", 3, false, out, &n));
	assert_false(parse_pct_decode("%00", 3, false, out, &n));
	assert_true(parse_ieq("Bearer", 6, "bearer"));
	assert_false(parse_ieq("Bearer", 5, "bearer"));
	(void)state;
}

static void test_arena(void **state)
{
	struct arena a;
	arena_init(&a, 256);
	char *p = arena_alloc(&a, 10);
	memset(p, 'x', 10);
	char *q = arena_strndup(&a, "hello", 5);
	assert_string_equal(q, "hello");
	assert_true((uintptr_t)q % _Alignof(max_align_t) == 0);
	char *big = arena_alloc(&a, 100000); /* its own chunk */
	memset(big, 1, 100000);
	int *z = arena_calloc(&a, 100, sizeof *z);
	for (int i = 0; i < 100; i++)
		assert_int_equal(z[i], 0);
	arena_reset(&a);
	char *r = arena_alloc(&a, 16);
	memset(r, 0, 16);
	arena_reset(&a);
	arena_free(&a);
	(void)state;
}

static void test_json_escape(void **state)
{
	struct buf b = BUF_INIT;
	log_json_escape(&b, "a\"b\\c\nd\x01\xc3\xa9", 10);
	assert_string_equal(buf_cstr(&b), "a\\\"b\\\\c\\nd\\u0001\xc3\xa9");   /* é kept */
	buf_reset(&b);
	/* a stray continuation byte, an overlong '/', a cut-short 3-byte
	 * character and a surrogate each become U+FFFD; DEL is escaped; a
	 * 4-byte character is kept */
	log_json_escape(&b, "\x80x\xc0\xafy\xe2\x82\x7f\xed\xa0\x80\xf0\x9f\x98\x80", 15);
	assert_string_equal(buf_cstr(&b), "\\ufffdx\\ufffd\\ufffdy\\ufffd\\ufffd\\u007f\\ufffd\\ufffd\\ufffd\xf0\x9f\x98\x80");
	buf_reset(&b);
	buf_put_u64(&b, 0);
	buf_putc(&b, ' ');
	buf_put_u64(&b, 18446744073709551615ULL);
	buf_putc(&b, ' ');
	buf_put_i64(&b, -9223372036854775807LL - 1);
	buf_putc(&b, ' ');
	buf_put_i64(&b, 42);
	assert_string_equal(buf_cstr(&b), "0 18446744073709551615 -9223372036854775808 42");
	buf_reset(&b);
	log_time(&b);
	/* 2026-11-29T22:55:43.755Z */
	assert_int_equal(b.len, 24);
	assert_true(b.data[4] == '-' && b.data[10] == 'T' && b.data[19] == '.' && b.data[23] == 'Z');
	buf_free(&b);
	enum log_level l;
	assert_true(log_parse_level("WARN", &l) && l == LOG_LVL_WARNING);
	assert_true(log_parse_level("Debug", &l) && l == LOG_LVL_DEBUG);
	assert_false(log_parse_level("verbose", &l));
	(void)state;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_int),
		cmocka_unit_test(test_pct_decode),
		cmocka_unit_test(test_arena),
		cmocka_unit_test(test_json_escape),
	};
	return cmocka_run_group_tests_name("parse", tests, NULL, NULL);
}

/* Canonical JSON writer and strict parser (evaluator/canon_json.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "evaluator/canon_json.h"

/* Parse `in` strictly and return its canonical text (caller frees). */
static char *canon_of(const char *in)
{
	json_object *o = NULL;
	char err[256];
	int prc = cj_parse(in, strlen(in), &o, err, sizeof err);
	if (prc != 0)
		print_error("%s: %s\n", in, err);
	assert_int_equal(prc, 0);
	struct buf b = BUF_INIT;
	assert_int_equal(cj_write(&b, o, err, sizeof err), 0);
	json_object_put(o);
	return buf_detach(&b, NULL);
}

static void expect(const char *in, const char *want)
{
	char *got = canon_of(in);
	assert_string_equal(got, want);
	free(got);
}

static void reject(const char *in)
{
	json_object *o = NULL;
	char err[256] = "";
	int prc = cj_parse(in, strlen(in), &o, err, sizeof err);
	if (prc != -1)
		print_error("accepted: %s\n", in);
	assert_int_equal(prc, -1);
	assert_null(o);
	assert_true(err[0] != '\0');
}

static void test_sorted_nested(void **s)
{
	(void)s;
	expect("{\"b\": 1, \"a\": {\"z\": [3, 2, {\"y\": 1, \"x\": 2}], \"c\": null}}",
	       "{\"a\":{\"c\":null,\"z\":[3,2,{\"x\":2,\"y\":1}]},\"b\":1}");
	expect("[]", "[]");
	expect("{}", "{}");
	expect(" true ", "true");
	expect("false", "false");
	expect("null", "null");
	/* code point order: uppercase < lowercase < non-ASCII */
	expect("{\"é\":1,\"a\":2,\"Z\":3,\"\\u00e0\":4}", "{\"Z\":3,\"a\":2,\"à\":4,\"é\":1}");
}

static void test_escapes(void **s)
{
	(void)s;
	expect("\"a\\\"b\\\\c\\/d\"", "\"a\\\"b\\\\c/d\"");
	expect("\"\\n\\r\\t\\b\\f\"", "\"\\n\\r\\t\\b\\f\"");
	expect("\"\\u0001\\u001f\\u007f\"", "\"\\u0001\\u001f\x7f\"");
	expect("\"\\u00e9\\u4e2d\\ud83d\\ude00\"", "\"é中😀\"");
}

static void test_numbers(void **s)
{
	(void)s;
	expect("[1, -7, 0, -0, 1.0, 2e-05, 1e16, 0.1, 1e-7, 123456789012345.0, 1.5E3]",
	       "[1,-7,0,0,1.0,2e-05,1e+16,0.1,1e-07,123456789012345.0,1500.0]");
	expect("[9223372036854775807, -9223372036854775808, 18446744073709551615]",
	       "[9223372036854775807,-9223372036854775808,18446744073709551615]");
	expect("1e400", "Infinity");
	expect("-1e400", "-Infinity");
}

static void test_write_double(void **s)
{
	(void)s;
	struct buf b = BUF_INIT;
	cj_write_double(&b, 0.0 / 0.0 * 0.0 + __builtin_nan(""));
	buf_putc(&b, ' ');
	cj_write_double(&b, __builtin_inf());
	buf_putc(&b, ' ');
	cj_write_double(&b, -__builtin_inf());
	assert_string_equal(buf_cstr(&b), "NaN Infinity -Infinity");
	buf_free(&b);
}

static void test_rejects(void **s)
{
	(void)s;
	reject("");
	reject("{");
	reject("{\"a\":1} x");
	reject("{\"a\":1,}");
	reject("[12345678901234567890123]");
	reject("[-9223372036854775809]");
	reject("\"\\ud800\"");
	reject("\"\xff\"");
	reject("{'a':1}");
	expect("[NaN, Infinity, -Infinity]", "[NaN,Infinity,-Infinity]");
	reject("\"\\udc00\"");
	expect("\"\\ud83d\\ude00x\"", "\"😀x\"");
	char deep[200];
	size_t n = 0;
	for (int i = 0; i < 40; i++)
		deep[n++] = '[';
	for (int i = 0; i < 40; i++)
		deep[n++] = ']';
	deep[n] = '\0';
	reject(deep);
}

static void test_utf8(void **s)
{
	(void)s;
	assert_true(cj_valid_utf8("abc\xc3\xa9", 5));
	assert_false(cj_valid_utf8("\xc0\xaf", 2));         /* overlong */
	assert_false(cj_valid_utf8("\xed\xa0\x80", 3));     /* surrogate */
	assert_false(cj_valid_utf8("\xf4\x90\x80\x80", 4)); /* > U+10FFFF */
	assert_false(cj_valid_utf8("\xe4\xb8", 2));         /* truncated */
	/* the writer refuses a json-c string with invalid bytes */
	json_object *o = json_object_new_string_len("\xff", 1);
	struct buf b = BUF_INIT;
	char err[128];
	assert_int_equal(cj_write(&b, o, err, sizeof err), -1);
	json_object_put(o);
	buf_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sorted_nested),
		cmocka_unit_test(test_escapes),
		cmocka_unit_test(test_numbers),
		cmocka_unit_test(test_write_double),
		cmocka_unit_test(test_rejects),
		cmocka_unit_test(test_utf8),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

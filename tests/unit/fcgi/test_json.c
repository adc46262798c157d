/* JSON bodies (depth limit, trailing bytes, strictness, UTF-8) and the field
 * validators (types, ranges, lengths, required, unknown fields). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "fcgi/app.h"

/* Parse s; returns the status and releases the object. */
static enum body_status parse(const char *s)
{
	json_object *o = NULL;
	char msg[160];
	enum body_status st = body_parse(s, strlen(s), &o, msg, sizeof msg);
	assert_true((st == BODY_OK) == (o != NULL));
	json_object_put(o);
	return st;
}

static void test_body_ok(void **state)
{
	assert_int_equal(parse("{}"), BODY_OK);
	assert_int_equal(parse("  {\"a\": [1, 2.5, \"x\", null, true]}\r\n\t "), BODY_OK);
	assert_int_equal(parse("{\"s\":\"caf\xc3\xa9 \\u00e9\"}"), BODY_OK);
	(void)state;
}

static void test_body_rejects(void **state)
{
	assert_int_equal(parse(""), BODY_EMPTY);
	assert_int_equal(parse("  \n"), BODY_EMPTY);
	assert_int_equal(parse("{"), BODY_MALFORMED);
	assert_int_equal(parse("{\"a\":1,}"), BODY_MALFORMED);
	assert_int_equal(parse("{'a':1}"), BODY_MALFORMED);
	assert_int_equal(parse("{\"a\":01}"), BODY_MALFORMED);
	assert_int_equal(parse("{\"a\":NaN}"), BODY_MALFORMED);
	assert_int_equal(parse("/* c */ {}"), BODY_MALFORMED);
	assert_int_equal(parse("{\"s\":\"\xff\"}"), BODY_MALFORMED);
	assert_int_equal(parse("{} {}"), BODY_TRAILING);
	assert_int_equal(parse("{}x"), BODY_TRAILING);
	assert_int_equal(parse("{}\0"), BODY_OK); /* strlen stops at the NUL */
	assert_int_equal(parse("[1]"), BODY_NOT_OBJECT);
	assert_int_equal(parse("\"s\""), BODY_NOT_OBJECT);
	assert_int_equal(parse("3"), BODY_NOT_OBJECT);
	/* a NUL byte inside the body counts as data */
	json_object *o = NULL;
	char msg[160];
	assert_int_equal(body_parse("{}\0x", 4, &o, msg, sizeof msg), BODY_TRAILING);
	(void)state;
}

static void test_depth_limit(void **state)
{
	char deep[512];
	size_t n = 0;
	/* JSON_MAX_DEPTH - 1 nested arrays inside the object: accepted */
	n += (size_t)snprintf(deep + n, sizeof deep - n, "{\"a\":");
	for (int i = 0; i < JSON_MAX_DEPTH - 1; i++)
		deep[n++] = '[';
	for (int i = 0; i < JSON_MAX_DEPTH - 1; i++)
		deep[n++] = ']';
	deep[n++] = '}';
	deep[n] = '\0';
	assert_int_equal(parse(deep), BODY_OK);
	n = 0;
	n += (size_t)snprintf(deep + n, sizeof deep - n, "{\"a\":");
	for (int i = 0; i < JSON_MAX_DEPTH; i++)
		deep[n++] = '[';
	for (int i = 0; i < JSON_MAX_DEPTH; i++)
		deep[n++] = ']';
	deep[n++] = '}';
	deep[n] = '\0';
	assert_int_equal(parse(deep), BODY_TOO_DEEP);
	(void)state;
}

static json_object *obj(const char *s)
{
	json_object *o = NULL;
	char msg[160];
	assert_int_equal(body_parse(s, strlen(s), &o, msg, sizeof msg), BODY_OK);
	return o;
}

static void test_string_field(void **state)
{
	json_object *o = obj("{\"name\":\"abc\",\"n\":5,\"z\":\"a\\u0000b\",\"nul\":null}");
	struct field_error e;
	const char *s = "default";
	assert_true(field_string(o, "name", FIELD_REQUIRED, 1, 10, &s, &e));
	assert_string_equal(s, "abc");
	s = "default";
	assert_true(field_string(o, "missing", FIELD_OPTIONAL, 1, 10, &s, &e));
	assert_string_equal(s, "default");
	assert_false(field_string(o, "missing", FIELD_REQUIRED, 1, 10, &s, &e));
	assert_string_equal(e.code, "missing_field");
	assert_non_null(strstr(e.msg, "'missing'"));
	assert_false(field_string(o, "n", FIELD_REQUIRED, 1, 10, &s, &e));
	assert_string_equal(e.code, "invalid_field");
	assert_non_null(strstr(e.msg, "'n' must be a string"));
	assert_false(field_string(o, "name", FIELD_REQUIRED, 4, 10, &s, &e));
	assert_false(field_string(o, "name", FIELD_REQUIRED, 1, 2, &s, &e));
	assert_false(field_string(o, "z", FIELD_REQUIRED, 0, 10, &s, &e));
	assert_non_null(strstr(e.msg, "NUL"));
	assert_false(field_string(o, "nul", FIELD_OPTIONAL, 0, 10, &s, &e)); /* null is not a string */
	assert_true(field_string(o, "nul", FIELD_NULLABLE, 0, 10, &s, &e));
	assert_false(field_string(o, "nul", FIELD_REQUIRED | FIELD_NULLABLE, 0, 10, &s, &e));
	json_object_put(o);
	(void)state;
}

static void test_int_field(void **state)
{
	json_object *o = obj("{\"a\":5,\"b\":5.0,\"c\":\"5\",\"d\":-3,\"big\":99999999999999999999,"
	                     "\"nbig\":-99999999999999999999,\"t\":true}");
	struct field_error e;
	int64_t v = 42;
	assert_true(field_int(o, "a", FIELD_REQUIRED, 1, 10, &v, &e) && v == 5);
	assert_false(field_int(o, "b", FIELD_REQUIRED, 1, 10, &v, &e));
	assert_false(field_int(o, "c", FIELD_REQUIRED, 1, 10, &v, &e));
	assert_false(field_int(o, "t", FIELD_REQUIRED, 1, 10, &v, &e));
	assert_false(field_int(o, "d", FIELD_REQUIRED, 0, 10, &v, &e));
	assert_non_null(strstr(e.msg, "from 0 to 10"));
	assert_false(field_int(o, "a", FIELD_REQUIRED, 6, 10, &v, &e));
	assert_false(field_int(o, "big", FIELD_REQUIRED, 0, INT64_MAX - 1, &v, &e));
	assert_false(field_int(o, "nbig", FIELD_REQUIRED, INT64_MIN + 1, 0, &v, &e));
	v = 42;
	assert_true(field_int(o, "none", FIELD_OPTIONAL, 0, 1, &v, &e) && v == 42);
	json_object_put(o);
	(void)state;
}

static void test_other_fields(void **state)
{
	json_object *o = obj("{\"x\":1.5,\"i\":2,\"b\":false,\"o\":{},\"arr\":[1,2,3],\"s\":\"1\"}");
	struct field_error e;
	double d;
	bool b = true;
	json_object *p;
	assert_true(field_number(o, "x", FIELD_REQUIRED, 0, 2, &d, &e) && d == 1.5);
	assert_true(field_number(o, "i", FIELD_REQUIRED, 0, 2, &d, &e) && d == 2.0);
	assert_false(field_number(o, "x", FIELD_REQUIRED, 0, 1, &d, &e));
	assert_false(field_number(o, "s", FIELD_REQUIRED, 0, 2, &d, &e));
	assert_true(field_bool(o, "b", FIELD_REQUIRED, &b, &e) && !b);
	assert_false(field_bool(o, "i", FIELD_REQUIRED, &b, &e));
	assert_true(field_object(o, "o", FIELD_REQUIRED, &p, &e));
	assert_false(field_object(o, "arr", FIELD_REQUIRED, &p, &e));
	assert_true(field_array(o, "arr", FIELD_REQUIRED, 3, &p, &e));
	assert_false(field_array(o, "arr", FIELD_REQUIRED, 2, &p, &e));
	assert_false(field_array(o, "o", FIELD_REQUIRED, 2, &p, &e));
	static const char *const ok[] = { "x", "i", "b", "o", "arr", "s", NULL };
	static const char *const few[] = { "x", NULL };
	assert_true(field_only(o, ok, &e));
	assert_false(field_only(o, few, &e));
	assert_non_null(strstr(e.msg, "unknown field 'i'"));
	json_object_put(o);
	(void)state;
}

static void test_content_type(void **state)
{
	assert_true(req_is_json_type("application/json"));
	assert_true(req_is_json_type("Application/JSON; charset=utf-8"));
	assert_true(req_is_json_type("application/merge-patch+json"));
	assert_false(req_is_json_type("text/plain"));
	assert_false(req_is_json_type("application/jsonx"));
	assert_false(req_is_json_type("application/x-www-form-urlencoded"));
	assert_false(req_is_json_type("multipart/form-data; boundary=x"));
	assert_false(req_is_json_type("text/json+json/x"));
	assert_false(req_is_json_type(""));
	assert_false(req_is_json_type(NULL));
	(void)state;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_body_ok),
		cmocka_unit_test(test_body_rejects),
		cmocka_unit_test(test_depth_limit),
		cmocka_unit_test(test_string_field),
		cmocka_unit_test(test_int_field),
		cmocka_unit_test(test_other_fields),
		cmocka_unit_test(test_content_type),
	};
	return cmocka_run_group_tests_name("json", tests, NULL, NULL);
}

/* code_hash and config_hash with the spec's test vectors (spec/agenttest.md §3.3). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "evaluator/canon_json.h"
#include "evaluator/hashes.h"

static void config_vector(const char *params, const char *want_canon, const char *want_hash)
{
	json_object *p = NULL;
	char err[256], h[HASH_HEX_LEN + 1];
	assert_int_equal(cj_parse(params, strlen(params), &p, err, sizeof err), 0);
	struct buf canon = BUF_INIT;
	assert_int_equal(hash_config("v1", p, NULL, h, &canon, err, sizeof err), 0);
	assert_string_equal(buf_cstr(&canon), want_canon);
	assert_string_equal(h, want_hash);
	buf_free(&canon);
	json_object_put(p);
}

static void test_config_vectors(void **s)
{
	(void)s;
	config_vector("{}", "{\"dataset_version\":\"v1\",\"params\":{}}",
		      "5b9b970e1810a692fa1683f23e450cdfdff1dac62aff136afc113a4d17f748f3");
	config_vector("{\"window\": 3}", "{\"dataset_version\":\"v1\",\"params\":{\"window\":3}}",
		      "a11f3fccae1362d967f483b47c2b13cc5cb805d2f1fbe354d0cb258447ae3a0c");
	config_vector("{\"é\": \"x\\n\", \"b\": 1.0, \"a\": [1, 2e-05, null, true]}",
		      "{\"dataset_version\":\"v1\",\"params\":{\"a\":[1,2e-05,null,true],\"b\":1.0,\"é\":\"x\\n\"}}",
		      "274e1ad71d5023103bed7e46a21a0856efb1e63438f83bd748b6024486ee06e4");
}

static void test_config_null_params_is_empty(void **s)
{
	(void)s;
	char err[128], h[HASH_HEX_LEN + 1];
	assert_int_equal(hash_config("v1", NULL, NULL, h, NULL, err, sizeof err), 0);
	assert_string_equal(h, "5b9b970e1810a692fa1683f23e450cdfdff1dac62aff136afc113a4d17f748f3");
}

static void test_config_engine_and_errors(void **s)
{
	(void)s;
	char err[128] = "", h[HASH_HEX_LEN + 1], h2[HASH_HEX_LEN + 1];
	json_object *eng = json_object_new_object();
	json_object_object_add(eng, "fee_bps", json_object_new_double(10.0));
	struct buf canon = BUF_INIT;
	assert_int_equal(hash_config("v1", NULL, eng, h, &canon, err, sizeof err), 0);
	assert_string_equal(buf_cstr(&canon), "{\"dataset_version\":\"v1\",\"engine\":{\"fee_bps\":10.0},\"params\":{}}");
	assert_int_equal(hash_config("v1", NULL, NULL, h2, NULL, err, sizeof err), 0);
	assert_string_not_equal(h, h2);
	json_object *arr = json_object_new_array();
	assert_int_equal(hash_config("v1", arr, NULL, h, NULL, err, sizeof err), -1);
	assert_non_null(strstr(err, "object"));
	json_object_put(arr);
	json_object_put(eng);
	buf_free(&canon);
}

/* The asset a server run uses is the first key when given; NULL keeps the
 * original's canonical form. */
static void test_config_asset(void **s)
{
	(void)s;
	char err[128] = "", h[HASH_HEX_LEN + 1], h2[HASH_HEX_LEN + 1];
	struct buf canon = BUF_INIT;
	assert_int_equal(hash_config_asset("v1", NULL, NULL, NULL, h, NULL, err, sizeof err), 0);
	assert_string_equal(h, "5b9b970e1810a692fa1683f23e450cdfdff1dac62aff136afc113a4d17f748f3");
	assert_int_equal(hash_config_asset("v1", "DOGE", NULL, NULL, h2, &canon, err, sizeof err), 0);
	assert_string_equal(buf_cstr(&canon), "{\"asset\":\"DOGE\",\"dataset_version\":\"v1\",\"params\":{}}");
	assert_string_not_equal(h, h2);
	assert_int_equal(hash_config_asset("v1", "\xff", NULL, NULL, h2, NULL, err, sizeof err), -1);
	assert_non_null(strstr(err, "UTF-8"));
	buf_free(&canon);
}

static void test_code_and_sha256(void **s)
{
	(void)s;
	char h[HASH_HEX_LEN + 1];
	hash_sha256_hex("", 0, h);
	assert_string_equal(h, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	hash_code("abc", 3, h);
	assert_string_equal(h, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_config_vectors),
		cmocka_unit_test(test_config_null_params_is_empty),
		cmocka_unit_test(test_config_engine_and_errors),
		cmocka_unit_test(test_config_asset),
		cmocka_unit_test(test_code_and_sha256),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

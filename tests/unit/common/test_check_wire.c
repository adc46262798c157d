/*
 * Unit tests of the check service's wire header and socket path rule
 * (common/check_wire.c), the part the pool and the runner share:
 * the byte layout, a round trip, every field a receiver must refuse, the
 * length limit at its edge, and the path defaults and refusals; and that
 * CHECK_CHECKER_VERSION, under which the API caches verdicts, was bumped
 * with the last change of the host's check.py (its pinned SHA-256).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/readfile.h"
#include "evaluator/hashes.h"
#include "check_wire.h"

static void test_layout_is_fixed(void **state)
{
	uint8_t h[CHECK_HDR_LEN];
	(void)state;
	check_hdr_encode(h, CHECK_REQUEST, CHECK_OP_STRATEGY, 0x01020304u);
	static const uint8_t want[CHECK_HDR_LEN] = { 'A', 'T', 'C', 'Q', 1, 1, 0, 0, 0x04, 0x03, 0x02, 0x01 };
	assert_memory_equal(h, want, sizeof want);
	check_hdr_encode(h, CHECK_ANSWER, CHECK_ST_BUSY, 7);
	static const uint8_t ans[CHECK_HDR_LEN] = { 'A', 'T', 'C', 'A', 1, 1, 0, 0, 7, 0, 0, 0 };
	assert_memory_equal(h, ans, sizeof ans);
}

static void test_round_trip(void **state)
{
	uint8_t h[CHECK_HDR_LEN];
	unsigned code = 99;
	uint32_t len = 1;
	(void)state;
	check_hdr_encode(h, CHECK_REQUEST, CHECK_OP_PING, 0);
	assert_int_equal(check_hdr_decode(h, CHECK_REQUEST, CHECK_OP__MAX, CHECK_CODE_MAX, &code, &len), 0);
	assert_int_equal(code, CHECK_OP_PING);
	assert_int_equal(len, 0);
	check_hdr_encode(h, CHECK_ANSWER, CHECK_ST_FAILED, CHECK_ANSWER_MAX);
	assert_int_equal(check_hdr_decode(h, CHECK_ANSWER, CHECK_ST__MAX, CHECK_ANSWER_MAX, &code, &len), 0);
	assert_int_equal(code, CHECK_ST_FAILED);
	assert_int_equal(len, CHECK_ANSWER_MAX);
}

static void test_refusals(void **state)
{
	uint8_t h[CHECK_HDR_LEN], bad[CHECK_HDR_LEN];
	unsigned code;
	uint32_t len;
	(void)state;
	check_hdr_encode(h, CHECK_REQUEST, CHECK_OP_STRATEGY, CHECK_CODE_MAX);
	assert_int_equal(check_hdr_decode(h, CHECK_REQUEST, CHECK_OP__MAX, CHECK_CODE_MAX, &code, &len), 0);
	/* the other direction's magic */
	assert_int_equal(check_hdr_decode(h, CHECK_ANSWER, CHECK_ST__MAX, CHECK_CODE_MAX, &code, &len), -1);
	/* one past the length limit */
	check_hdr_encode(bad, CHECK_REQUEST, CHECK_OP_STRATEGY, CHECK_CODE_MAX + 1);
	assert_int_equal(check_hdr_decode(bad, CHECK_REQUEST, CHECK_OP__MAX, CHECK_CODE_MAX, &code, &len), -1);
	/* a huge length (sign trouble would accept it) */
	memcpy(bad, h, sizeof bad);
	bad[11] = 0xff;
	assert_int_equal(check_hdr_decode(bad, CHECK_REQUEST, CHECK_OP__MAX, CHECK_CODE_MAX, &code, &len), -1);
	/* unknown op, other version, non-zero reserved bytes, a changed magic byte */
	static const size_t at[] = { 5, 4, 6, 7, 0, 3 };
	static const uint8_t val[] = { CHECK_OP__MAX, 2, 1, 1, 'B', 'A' };
	for (size_t i = 0; i < sizeof at / sizeof at[0]; i++) {
		memcpy(bad, h, sizeof bad);
		bad[at[i]] = val[i];
		assert_int_equal(check_hdr_decode(bad, CHECK_REQUEST, CHECK_OP__MAX, CHECK_CODE_MAX, &code, &len), -1);
	}
}

static void test_socket_path_rule(void **state)
{
	char p[108], small[8], big[300];
	(void)state;
	assert_int_equal(check_socket_path("/x/c.sock", "/run/n", p, sizeof p), 0);
	assert_string_equal(p, "/x/c.sock");
	assert_int_equal(check_socket_path("", "/run/n", p, sizeof p), 0);
	assert_string_equal(p, "/run/n/check.sock");
	assert_int_equal(check_socket_path(NULL, NULL, p, sizeof p), 0);
	assert_string_equal(p, CHECK_SOCKET_DEFAULT);
	/* relative paths and paths that do not fit a sockaddr_un are refused */
	assert_int_equal(check_socket_path("rel.sock", NULL, p, sizeof p), -1);
	assert_string_equal(p, "");
	assert_int_equal(check_socket_path(NULL, "var/run", p, sizeof p), -1);
	memset(big, 'a', sizeof big - 1);
	big[0] = '/';
	big[sizeof big - 1] = '\0';
	assert_int_equal(check_socket_path(big, NULL, p, sizeof p), -1);
	assert_int_equal(check_socket_path(NULL, NULL, small, sizeof small), -1);
	assert_string_equal(small, "");
}

/* check.py is the file CHECK_CHECKER_SHA256 pins: a change needs a new CHECK_CHECKER_VERSION. */
static void test_checker_version_pinned(void **state)
{
	char *src = NULL, hex[HASH_HEX_LEN + 1];
	size_t len = 0;
	(void)state;
	assert_int_equal(read_file_max("sandbox/host/agenttest_host/check.py", 1u << 20, 0, &src, &len), 0);
	hash_sha256_hex(src, len, hex);
	free(src);
	if (strcmp(hex, CHECK_CHECKER_SHA256) != 0)
		fail_msg("sandbox/host/agenttest_host/check.py changed (sha256 %s): bump CHECK_CHECKER_VERSION and "
			 "CHECK_CHECKER_SHA256 in common/check_wire.h, or cached verdicts of the old check "
			 "are reused", hex);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_layout_is_fixed),
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_socket_path_rule),
		cmocka_unit_test(test_checker_version_pinned),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * test_verdict.c: the verdict record (sandbox/verdict.c): round trip,
 * hostile and malformed records, status letters and runner-facing codes,
 * and the defaults of sbx_limits_fill.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "sandbox/sbx_int.h"

static void test_round_trip(void **state)
{
	struct sbx_verdict v, w;
	char buf[SBX_META_MAX];
	memset(&v, 0, sizeof v);
	v.status = SBX_SY;
	v.exit_signal = 9;
	snprintf(v.syscall_name, sizeof v.syscall_name, "socket");
	v.cpu_seconds = 1.25;
	v.wall_seconds = 2.5;
	v.max_rss_bytes = 123456789;
	v.cg_mem_bytes = 987654321;
	v.killed = 1;
	sbx_limits_fill(&v.limits);
	snprintf(v.message, sizeof v.message, "forbidden\nsystem call");
	snprintf(v.warnings, sizeof v.warnings, "cgroup v1");
	int n = sbx_verdict_format(&v, buf, sizeof buf);
	assert_true(n > 0);
	assert_int_equal(sbx_verdict_parse(buf, (size_t)n, &w), 0);
	assert_int_equal(w.status, SBX_SY);
	assert_int_equal(w.exit_signal, 9);
	assert_string_equal(w.syscall_name, "socket");
	assert_true(w.cpu_seconds > 1.24 && w.cpu_seconds < 1.26);
	assert_int_equal(w.max_rss_bytes, 123456789);
	assert_int_equal(w.cg_mem_bytes, 987654321);
	assert_int_equal(w.killed, 1);
	assert_int_equal(w.limits.memory_bytes, 256u << 20);
	assert_string_equal(w.message, "forbidden system call"); /* newline flattened */
	assert_string_equal(w.warnings, "cgroup v1");
}

static void test_malformed(void **state)
{
	struct sbx_verdict v;
	static const char *const bad[] = {
		"",                                  /* no status */
		"exitcode:1\n",                      /* no status */
		"status:ZZ\n",                       /* unknown status */
		"status:OK\nexitcode:abc\n",         /* not a number */
		"status:OK\nexitcode:99999999999\n", /* out of range */
		"status:OK\ntime:-1\n",              /* negative time */
		"status:OK\ntime:nan\n",             /* not finite */
		"status:OK\nmax-rss:-5\n",           /* negative size */
		"status:OK\nno colon here\n",        /* not key:value */
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		assert_int_equal(sbx_verdict_parse(bad[i], strlen(bad[i]), &v), -1);
		assert_int_equal(v.status, SBX_XX);
	}
	const char nul[] = "status:OK\nmessage:a\0b\n";
	assert_int_equal(sbx_verdict_parse(nul, sizeof nul - 1, &v), -1);
	char big[SBX_META_MAX + 10];
	memset(big, 'a', sizeof big);
	memcpy(big, "status:OK\n", 10);
	assert_int_equal(sbx_verdict_parse(big, sizeof big, &v), -1);
	char longline[1000];
	memset(longline, 'x', sizeof longline);
	memcpy(longline, "status:OK\nmessage:", 18);
	assert_int_equal(sbx_verdict_parse(longline, sizeof longline, &v), -1);
}

static void test_unknown_keys_ignored(void **state)
{
	struct sbx_verdict v;
	const char rec[] = "future-key:1\nstatus:TO\nkilled:1\n";
	assert_int_equal(sbx_verdict_parse(rec, sizeof rec - 1, &v), 0);
	assert_int_equal(v.status, SBX_TO);
	assert_int_equal(v.killed, 1);
}

static void test_codes(void **state)
{
	static const char *const want[SBX_STATUS__MAX] = {
		"ok", "strategy_error", "crashed", "timeout", "memory_limit",
		"forbidden_syscall", "output_limit", "internal",
	};
	for (int i = 0; i < SBX_STATUS__MAX; i++) {
		assert_string_equal(sbx_status_code((enum sbx_status)i), want[i]);
		assert_int_equal(sbx_status_parse(sbx_status_letters((enum sbx_status)i)), i);
	}
	assert_string_equal(sbx_status_code(SBX_STATUS__MAX), "internal");
	assert_int_equal(sbx_status_parse("ok"), SBX_STATUS__MAX);
}

static void test_limits_defaults(void **state)
{
	struct sbx_limits l = { 0 };
	sbx_limits_fill(&l);
	assert_true(l.cpu_seconds == 60.0 && l.wall_seconds == 120.0);
	assert_int_equal(l.memory_bytes, 256u << 20);
	assert_int_equal(l.processes, 16);
	assert_int_equal(l.open_files, 64);
	struct sbx_limits m = { .cpu_seconds = 5 };
	sbx_limits_fill(&m);
	assert_true(m.wall_seconds == 10.0);
}

static void test_note(void **state)
{
	char f[16] = "";
	sbx_note(f, sizeof f, "a%d", 1);
	sbx_note(f, sizeof f, "b");
	assert_string_equal(f, "a1; b");
	sbx_note(f, sizeof f, "a very long note that will not fit");
	assert_int_equal(strlen(f) < sizeof f, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_unknown_keys_ignored),
		cmocka_unit_test(test_codes),
		cmocka_unit_test(test_limits_defaults),
		cmocka_unit_test(test_note),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

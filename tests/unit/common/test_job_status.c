/*
 * test_job_status.c: the one string table of enum job_status matches the
 * ENUM of every job table (sql/002, sql/004) and parses back.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "job_status.h"

static void test_names_round_trip(void **state)
{
	(void)state;
	static const char *const sql_enum[] = { "queued", "running", "completed", "failed", "cancelled" };
	assert_int_equal(JOB__NSTATUS, 5);
	for (int i = 0; i < JOB__NSTATUS; i++) {
		enum job_status s = JOB__NSTATUS;
		assert_string_equal(job_status_name((enum job_status)i), sql_enum[i]);
		assert_true(job_status_parse(sql_enum[i], &s));
		assert_int_equal(s, i);
		assert_non_null(strstr(job_status_list(), sql_enum[i]));
	}
	enum job_status s = JOB_RUNNING;
	assert_false(job_status_parse("done", &s));
	assert_false(job_status_parse(NULL, &s));
	assert_int_equal(s, JOB_RUNNING);
	assert_string_equal(job_status_name(JOB__NSTATUS), "unknown");
}

static void test_final(void **state)
{
	(void)state;
	assert_false(job_status_final(JOB_QUEUED));
	assert_false(job_status_final(JOB_RUNNING));
	assert_true(job_status_final(JOB_COMPLETED));
	assert_true(job_status_final(JOB_FAILED));
	assert_true(job_status_final(JOB_CANCELLED));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names_round_trip),
		cmocka_unit_test(test_final),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * test_agent_proc.c: the harness process of an agent iteration
 * (evaluator/runner/agent_proc.c) with a stand-in "python" (a shell script
 * given as env->python): the request reaches its stdin and its stdout comes
 * back whole, the runner's secrets are not in its environment, the extra
 * variables are, a cancel ends it (SIGTERM to its process group) and is
 * reported as stopped, a failure carries its exit status and stderr tail,
 * and what it writes on fd 3 becomes activity lines (agent_activity.c:
 * split, cleaned, capped).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "evaluator/runner/agent_proc.c"
#include "evaluator/runner/agent_activity.c"

static char script[64];

/* Write the stand-in interpreter with body sh and point env at it. */
static void stand_in(struct agent_env *env, const char *sh)
{
	snprintf(script, sizeof script, "/tmp/agenttest-agent-proc-XXXXXX");
	int fd = mkstemp(script);
	assert_true(fd >= 0);
	FILE *f = fdopen(fd, "w");
	fprintf(f, "#!/bin/sh\n%s\n", sh);
	fclose(f);
	chmod(script, 0700);
	memset(env, 0, sizeof *env);
	env->python = script;
	snprintf(env->loop_dir, sizeof env->loop_dir, "/loop");
	snprintf(env->host_dir, sizeof env->host_dir, "/host");
	snprintf(env->bin_dir, sizeof env->bin_dir, "/bin");
	snprintf(env->exports[env->nexport++], sizeof env->exports[0], "MANTIS_CLAUDE_TIMEOUT=77");
}

static void test_round_trip_and_environment(void **state)
{
	struct agent_env env;
	struct buf out = BUF_INIT, err = BUF_INIT;
	bool stopped = true;
	(void)state;
	setenv("DATABASE_URL", "mariadb://secret@db/x", 1);
	setenv("ANTHROPIC_API_KEY", "sk-ant-secret", 1);
	stand_in(&env, "cat; env | grep -q -e DATABASE_URL -e ANTHROPIC && exit 3\n"
		       "[ \"$PYTHONPATH\" = /loop:/host ] || exit 4\n[ \"$MANTIS_CLAUDE_TIMEOUT\" = 77 ] || exit 5\n"
		       "[ \"$AGENTTEST_BINDIR\" = /bin ] || exit 6\nexit 0");
	struct job_ctl *ctl = job_ctl_new();
	int rc = agent_proc_run(&env, ctl, "{\"iteration\":1}", &out, &err, &stopped, NULL);
	assert_int_equal(rc, 0);
	assert_false(stopped);
	assert_string_equal(buf_cstr(&out), "{\"iteration\":1}");
	job_ctl_free(ctl);
	unlink(script);
	buf_free(&out);
	buf_free(&err);
}

static void test_failure_keeps_status_and_stderr(void **state)
{
	struct agent_env env;
	struct buf out = BUF_INIT, err = BUF_INIT;
	bool stopped;
	(void)state;
	stand_in(&env, "echo 'Traceback: boom' >&2; exit 9");
	struct job_ctl *ctl = job_ctl_new();
	assert_int_equal(agent_proc_run(&env, ctl, "{}", &out, &err, &stopped, NULL), -1);
	assert_false(stopped);
	assert_non_null(strstr(buf_cstr(&err), "Traceback: boom"));
	assert_non_null(strstr(buf_cstr(&err), "exit status 9"));
	job_ctl_free(ctl);
	unlink(script);
	buf_free(&out);
	buf_free(&err);
}

/* What a user reads of a failed harness: its last line and the reason, no server path. */
static void test_failure_summary_hides_paths(void **state)
{
	struct agent_env env;
	struct buf out = BUF_INIT, err = BUF_INIT;
	bool stopped;
	char line[256];
	(void)state;
	stand_in(&env, "echo 'Traceback (most recent call last):' >&2; "
		       "echo '  File \"/srv/checkout/evaluator/runner/agentloop/job.py\", line 3, in main' >&2; "
		       "echo \"FileNotFoundError: [Errno 2] No such file: '/srv/data/x.json' (see /srv/a)\" >&2; exit 4");
	struct job_ctl *ctl = job_ctl_new();
	assert_int_equal(agent_proc_run(&env, ctl, "{}", &out, &err, &stopped, NULL), -1);
	assert_non_null(strstr(buf_cstr(&err), "/srv/checkout"));   /* the whole tail, for the log */
	agent_err_summary(buf_cstr(&err), line, sizeof line);
	assert_string_equal(line, "FileNotFoundError: [Errno 2] No such file: '<path>' (see <path>) (harness exit status 4)");
	job_ctl_free(ctl);
	unlink(script);
	/* no stderr at all: the reason alone; a path at the start of a line; a cut */
	agent_err_summary(" (harness killed by signal 9)", line, sizeof line);
	assert_string_equal(line, "(harness killed by signal 9)");
	agent_err_summary("x\n/usr/lib/python3/a.py: bad\n\n", line, sizeof line);
	assert_string_equal(line, "<path>: bad");
	agent_err_summary("pipe: Too many open files", line, 8);
	assert_string_equal(line, "pipe: T");
	buf_free(&out);
	buf_free(&err);
}

static void test_cancel_stops_the_group(void **state)
{
	struct agent_env env;
	struct buf out = BUF_INIT, err = BUF_INIT;
	bool stopped = false;
	struct timespec t0, t1;
	(void)state;
	stand_in(&env, "sleep 30 & wait");
	struct job_ctl *ctl = job_ctl_new();
	job_cancel(ctl, false);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(agent_proc_run(&env, ctl, "{}", &out, &err, &stopped, NULL), -1);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	assert_true(stopped);
	/* SIGTERM reaches the whole group (the sleep too: else stdout would stay open 30 s) */
	assert_true(t1.tv_sec - t0.tv_sec < 10);
	job_ctl_free(ctl);
	unlink(script);
	buf_free(&out);
	buf_free(&err);
}

static void test_activity_lines_on_fd3(void **state)
{
	struct agent_env env;
	struct buf out = BUF_INIT, err = BUF_INIT;
	struct agent_activity act;
	bool stopped;
	(void)state;
	/* three lines, the last one unterminated and written after stdout closed */
	stand_in(&env, "[ \"$AGENTTEST_ACTIVITY_FD\" = 3 ] || exit 3\necho one >&3; echo; printf 'two\\n\\n' >&3\n"
		       "exec 1>&-; sleep 0.2; printf 'three' >&3");
	agent_activity_init(&act, NULL, "a", 4);
	struct job_ctl *ctl = job_ctl_new();
	assert_int_equal(agent_proc_run(&env, ctl, "{}", &out, &err, &stopped, &act), 0);
	assert_int_equal(act.lines, 2);              /* the empty line is skipped */
	assert_string_equal(buf_cstr(&act.partial), "three");
	agent_activity_finish(&act);
	assert_int_equal(act.lines, 3);
	/* without a feed the lines are read and dropped: the harness never blocks */
	assert_int_equal(agent_proc_run(&env, ctl, "{}", &out, &err, &stopped, NULL), 0);
	job_ctl_free(ctl);
	unlink(script);
	buf_free(&out);
	buf_free(&err);
}

static void test_activity_cap_and_clean(void **state)
{
	struct agent_activity act;
	char o[16], big[ACT_LINE_MAX * 2];
	(void)state;
	assert_int_equal(agent_activity_clean("a\tb\x1b[31m \r", 10, o, sizeof o), 8);
	assert_string_equal(o, "a b [31m");
	assert_int_equal(agent_activity_clean("x\xff\xc0\xafy", 5, o, sizeof o), 11);
	assert_string_equal(o, "x\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbdy"); /* invalid, overlong: U+FFFD each byte */
	assert_int_equal(agent_activity_clean("\xed\xa0\x80", 3, o, sizeof o), 9); /* a surrogate */
	assert_int_equal(agent_activity_clean("ab\xc3\xa9", 4, o, 4), 2);          /* cut before a split character */
	assert_string_equal(o, "ab");
	memset(big, 'z', sizeof big);
	char *line = malloc(ACT_LINE_MAX + 1);
	assert_int_equal(agent_activity_clean(big, sizeof big, line, ACT_LINE_MAX + 1), ACT_LINE_MAX);
	free(line);
	agent_activity_init(&act, NULL, "a", 1);
	for (int i = 0; i < ACT_LINES_MAX + 50; i++)
		agent_activity_feed(&act, "line\n", 5);
	assert_int_equal(act.lines, ACT_LINES_MAX + 1); /* the cap, plus one notice */
	agent_activity_feed(&act, big, sizeof big);      /* an overlong partial line stays bounded */
	assert_true(act.partial.len <= ACT_LINE_MAX * 4);
	agent_activity_finish(&act);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip_and_environment),
		cmocka_unit_test(test_failure_keeps_status_and_stderr),
		cmocka_unit_test(test_failure_summary_hides_paths),
		cmocka_unit_test(test_cancel_stops_the_group),
		cmocka_unit_test(test_activity_lines_on_fd3),
		cmocka_unit_test(test_activity_cap_and_clean),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

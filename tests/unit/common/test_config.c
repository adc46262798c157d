/* Configuration: file syntax, environment overrides, typed values, the
 * cross-key rules, and line-numbered errors. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "common/config.h"

static const char *const vars[] = {
	"AGENTTEST_CONFIG", "DATABASE_URL", "AGENTTEST_SECRET_FILE", "AGENTTEST_FCGI_SOCKET", "AGENTTEST_WORKERS",
	"AGENTTEST_BODY_LIMIT", "MANTIS_AUTH_TOKEN", "MANTIS_HOST", "MANTIS_PORT", "AGENTTEST_AUTH",
	"MANTIS_LOG_LEVEL", "DATASET_VERSION", "DATASET_DIR", "STRATEGIES_DIR", "MANTIS_WORKERS",
	"MANTIS_MAX_AGENTS", "BINANCE_API_URL", NULL,
};

static char tmpl[64];

static int setup(void **state)
{
	(void)state;
	for (const char *const *v = vars; *v; v++)
		unsetenv(*v);
	snprintf(tmpl, sizeof tmpl, "/tmp/agenttest-config-XXXXXX");
	int fd = mkstemp(tmpl);
	close(fd);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	unlink(tmpl);
	return 0;
}

/* Write text to the temporary file. */
static void write_file(const char *text)
{
	FILE *f = fopen(tmpl, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

/* Load from the temporary file; returns success, error text in err. */
static bool load(struct config *cfg, struct buf *err)
{
	buf_reset(err);
	return config_load(cfg, tmpl, err);
}

static void test_defaults(void **state)
{
	struct config cfg;
	struct buf err = BUF_INIT;
	write_file("");
	assert_true(load(&cfg, &err));
	assert_string_equal(cfg.db.user, "agenttest");
	assert_string_equal(cfg.db.socket, "/run/mysqld/mysqld.sock");
	assert_string_equal(cfg.secret_file, "/var/lib/agenttest/secret.key");
	assert_int_equal(cfg.body_limit, 1048576);
	assert_string_equal(cfg.mantis_host, "127.0.0.1");
	assert_int_equal(cfg.mantis_port, 8000);
	assert_int_equal(cfg.auth, CONFIG_AUTH_AUTO);
	assert_null(cfg.mantis_auth_token);
	assert_string_equal(cfg.dataset_version, "synth-v1");
	assert_null(cfg.dataset_dir);
	assert_string_equal(cfg.strategies_dir, "strategies");
	assert_true(cfg.workers >= 1);
	assert_int_equal(cfg.log_level, LOG_LVL_INFO);
	assert_true(config_validate(&cfg, &err));
	config_free(&cfg);
	buf_free(&err);
	(void)state;
}

static void test_file_values(void **state)
{
	struct config cfg;
	struct buf err = BUF_INIT;
	write_file("# a comment\n\n  MANTIS_PORT = 9001  \nAGENTTEST_WORKERS=3\r\n"
	           "DATASET_DIR = \"/data/with space\"\nMANTIS_LOG_LEVEL = WARNING\nAGENTTEST_AUTH = required\n"
	           "DATABASE_URL = mariadb://u:p%40ss@db.example:3307/agenttest\nMANTIS_AUTH_TOKEN =\n");
	assert_true(load(&cfg, &err));
	assert_int_equal(cfg.mantis_port, 9001);
	assert_int_equal(cfg.workers, 3);
	assert_string_equal(cfg.dataset_dir, "/data/with space");
	assert_int_equal(cfg.log_level, LOG_LVL_WARNING);
	assert_int_equal(cfg.auth, CONFIG_AUTH_REQUIRED);
	assert_string_equal(cfg.db.password, "p@ss");
	assert_int_equal(cfg.db.port, 3307);
	assert_null(cfg.mantis_auth_token); /* empty means unset */
	assert_true(config_auth_required(&cfg));
	config_free(&cfg);
	buf_free(&err);
	(void)state;
}

/* MANTIS_WORKERS sets the pool size; AGENTTEST_WORKERS wins over it. */
static void test_mantis_workers(void **state)
{
	struct config cfg;
	struct buf err = BUF_INIT;
	write_file("MANTIS_WORKERS = 5\n");
	assert_true(load(&cfg, &err));
	assert_int_equal(cfg.workers, 5);
	config_free(&cfg);
	write_file("MANTIS_WORKERS = 5\nAGENTTEST_WORKERS = 3\n");
	assert_true(load(&cfg, &err));
	assert_int_equal(cfg.workers, 3);
	config_free(&cfg);
	write_file("MANTIS_WORKERS = 0\n");
	assert_false(load(&cfg, &err));
	assert_non_null(strstr(buf_cstr(&err), "MANTIS_WORKERS"));
	buf_free(&err);
	(void)state;
}

/* Load with stderr captured into out (size n). */
static bool load_capturing(struct config *cfg, struct buf *err, char *out, size_t n)
{
	char path[] = "/tmp/agenttest-config-log-XXXXXX";
	int fd = mkstemp(path), saved = dup(2);
	bool ok;
	ssize_t got;

	assert_true(fd >= 0 && saved >= 0);
	fflush(stderr);
	dup2(fd, 2);
	ok = load(cfg, err);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	got = pread(fd, out, n - 1, 0);
	out[got > 0 ? got : 0] = '\0';
	close(fd);
	unlink(path);
	return ok;
}

/* Applied runner keys are known, and so are the agent keys since issue 15
 * (no "unknown key", no "no effect yet"); unknown keys are named. */
static void test_known_and_no_effect_keys(void **state)
{
	struct config cfg;
	struct buf err = BUF_INIT;
	char out[4096];
	write_file("AGENTTEST_RUN_CPU_SECONDS = 10\nAGENTTEST_RUN_WALL_SECONDS = 20\n"
	           "AGENTTEST_RUN_MEMORY_MB = 300\nMANTIS_MAX_AGENTS = 4\nNOT_A_KEY = 1\n");
	setenv("BINANCE_API_URL", "http://127.0.0.1:9/", 1);
	setenv("MANTIS_CLAUDE_TIMEOUT", "600", 1);
	assert_true(load_capturing(&cfg, &err, out, sizeof out));
	unsetenv("BINANCE_API_URL");
	unsetenv("MANTIS_CLAUDE_TIMEOUT");
	assert_null(strstr(out, "unknown key AGENTTEST_RUN"));
	assert_null(strstr(out, "unknown key MANTIS_MAX_AGENTS"));
	assert_non_null(strstr(out, "unknown key NOT_A_KEY"));
	assert_null(strstr(out, "MANTIS_MAX_AGENTS"));
	assert_null(strstr(out, "MANTIS_CLAUDE_TIMEOUT"));
	assert_int_equal(cfg.max_agents, 4);
	assert_int_equal(cfg.pause_timeout_s, 3600);
	/* effective since the market-data fetcher reads it */
	assert_null(strstr(out, "BINANCE_API_URL"));
	assert_null(strstr(out, "MANTIS_PAUSE_TIMEOUT"));
	config_free(&cfg);
	buf_free(&err);
	(void)state;
}

static void test_env_overrides_file(void **state)
{
	struct config cfg;
	struct buf err = BUF_INIT;
	write_file("MANTIS_PORT = 9001\nSTRATEGIES_DIR = /a\n");
	setenv("MANTIS_PORT", "9100", 1);
	assert_true(load(&cfg, &err));
	assert_int_equal(cfg.mantis_port, 9100);
	assert_string_equal(cfg.strategies_dir, "/a");
	assert_string_equal(config_get(&cfg, "MANTIS_PORT"), "9100");
	config_free(&cfg);
	/* AGENTTEST_CONFIG names the file when no path is given */
	setenv("AGENTTEST_CONFIG", tmpl, 1);
	unsetenv("MANTIS_PORT");
	assert_true(config_load(&cfg, NULL, &err));
	assert_int_equal(cfg.mantis_port, 9001);
	config_free(&cfg);
	buf_free(&err);
	(void)state;
}

/* Expect a load failure whose message contains want. */
static void expect_error(const char *text, const char *want)
{
	struct config cfg;
	struct buf err = BUF_INIT;
	write_file(text);
	assert_false(load(&cfg, &err));
	if (strstr(buf_cstr(&err), want) == NULL)
		fail_msg("error '%s' does not contain '%s'", buf_cstr(&err), want);
	buf_free(&err);
}

static void test_syntax_errors(void **state)
{
	char line2[128];
	snprintf(line2, sizeof line2, "%s:2:", tmpl);
	expect_error("MANTIS_PORT = 1\nnot a pair\n", line2);
	expect_error("mantis_port = 1\n", "invalid key");
	expect_error("MANTIS_PORT = 1\nMANTIS_PORT = 2\n", "duplicate key MANTIS_PORT (first set on line 1)");
	expect_error("DATASET_DIR = \"/x\n", "unbalanced double quote");
	expect_error("DATASET_DIR = a\001b\n", "control character");
	expect_error("= 5\n", "invalid key");
	(void)state;
}

static void test_value_errors(void **state)
{
	char where[160];
	snprintf(where, sizeof where, "%s:3: MANTIS_PORT must be an integer", tmpl);
	expect_error("# x\n\nMANTIS_PORT = 80a\n", where);
	expect_error("MANTIS_PORT = 70000\n", "from 1 to 65535");
	expect_error("AGENTTEST_WORKERS = 0\n", "AGENTTEST_WORKERS");
	expect_error("AGENTTEST_BODY_LIMIT = -1\n", "AGENTTEST_BODY_LIMIT");
	expect_error("AGENTTEST_AUTH = maybe\n", "'auto' or 'required'");
	expect_error("MANTIS_LOG_LEVEL = loud\n", "MANTIS_LOG_LEVEL");
	expect_error("DATABASE_URL = postgres://x/y\n", "must start with mariadb://");
	expect_error("AGENTTEST_FCGI_SOCKET = relative.sock\n", "AGENTTEST_FCGI_SOCKET");
	setenv("MANTIS_PORT", "x", 1);
	expect_error("", "environment variable MANTIS_PORT must be an integer");
	unsetenv("MANTIS_PORT");
	(void)state;
}

static void test_missing_file(void **state)
{
	struct config cfg;
	struct buf err = BUF_INIT;
	assert_false(config_load(&cfg, "/nonexistent/agenttest.conf", &err));
	assert_non_null(strstr(buf_cstr(&err), "cannot open"));
	buf_free(&err);
	(void)state;
}

/* Validate the file text; returns the outcome. */
static bool validates(const char *text, struct buf *err)
{
	struct config cfg;
	write_file(text);
	buf_reset(err);
	assert_true(load(&cfg, err));
	bool ok = config_validate(&cfg, err);
	config_free(&cfg);
	return ok;
}

static void test_validate_rules(void **state)
{
	struct buf err = BUF_INIT;
	assert_true(validates("MANTIS_HOST = localhost\n", &err));
	assert_true(validates("MANTIS_HOST = ::1\n", &err));
	assert_false(validates("MANTIS_HOST = 0.0.0.0\n", &err));
	assert_non_null(strstr(buf_cstr(&err), "not a loopback address"));
	assert_false(validates("MANTIS_HOST = 127.0.0.2\n", &err));
	assert_true(validates("MANTIS_HOST = 0.0.0.0\nAGENTTEST_AUTH = required\n", &err));
	assert_true(validates("MANTIS_HOST = 0.0.0.0\nMANTIS_AUTH_TOKEN = Correct-Horse-42\n", &err));
	assert_false(validates("MANTIS_AUTH_TOKEN = aaaaaaaaaaaaaaaa\n", &err));
	assert_non_null(strstr(buf_cstr(&err), "MANTIS_AUTH_TOKEN is too weak"));
	assert_false(validates("MANTIS_AUTH_TOKEN = Short1\n", &err));
	buf_free(&err);
	(void)state;
}

static void test_parse_text_direct(void **state)
{
	struct config cfg;
	struct buf err = BUF_INIT;
	memset(&cfg, 0, sizeof cfg);
	assert_true(config_parse_text(&cfg, "t", "A = 1\nB=\"2\"", 11, &err));
	assert_int_equal(cfg.nraw, 2);
	assert_string_equal(cfg.raw[1].value, "2");
	config_free(&cfg);
	memset(&cfg, 0, sizeof cfg);
	assert_false(config_parse_text(&cfg, "t", "A = 1\0B", 7, &err));
	assert_non_null(strstr(buf_cstr(&err), "NUL"));
	config_free(&cfg);
	buf_free(&err);
	(void)state;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_defaults, setup, teardown),
		cmocka_unit_test_setup_teardown(test_file_values, setup, teardown),
		cmocka_unit_test_setup_teardown(test_env_overrides_file, setup, teardown),
		cmocka_unit_test_setup_teardown(test_syntax_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_value_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_missing_file, setup, teardown),
		cmocka_unit_test_setup_teardown(test_validate_rules, setup, teardown),
		cmocka_unit_test_setup_teardown(test_parse_text_direct, setup, teardown),
		cmocka_unit_test_setup_teardown(test_mantis_workers, setup, teardown),
		cmocka_unit_test_setup_teardown(test_known_and_no_effect_keys, setup, teardown),
	};
	return cmocka_run_group_tests_name("config", tests, NULL, NULL);
}

/* DATABASE_URL: both documented forms, percent-decoding, and a table of
 * malformed URLs that must be refused. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "common/dburl.h"

static void test_tcp_form(void **state)
{
	struct dburl u;
	struct buf err = BUF_INIT;
	assert_true(dburl_parse("mariadb://agent:s3cret@db.internal:3307/agenttest", &u, &err));
	assert_string_equal(u.user, "agent");
	assert_string_equal(u.password, "s3cret");
	assert_string_equal(u.host, "db.internal");
	assert_int_equal(u.port, 3307);
	assert_string_equal(u.database, "agenttest");
	assert_null(u.socket);
	dburl_free(&u);
	assert_null(u.user);
	buf_free(&err);
	(void)state;
}

static void test_socket_form(void **state)
{
	struct dburl u;
	struct buf err = BUF_INIT;
	assert_true(dburl_parse("mariadb://root@localhost/agenttest?socket=/var/run/mysqld.sock", &u, &err));
	assert_string_equal(u.user, "root");
	assert_null(u.password);
	assert_string_equal(u.host, "localhost");
	assert_int_equal(u.port, 0);
	assert_string_equal(u.socket, "/var/run/mysqld.sock");
	dburl_free(&u);
	assert_true(dburl_parse("mariadb://root@/agenttest?socket=%2Ftmp%2Fa%20b.sock", &u, &err));
	assert_string_equal(u.host, "localhost");
	assert_string_equal(u.socket, "/tmp/a b.sock");
	dburl_free(&u);
	buf_free(&err);
	(void)state;
}

static void test_decoding_and_variants(void **state)
{
	struct dburl u;
	struct buf err = BUF_INIT;
	assert_true(dburl_parse("mysql://u%3Ax:p%3A%40%2F@[::1]:3306/d%24b", &u, &err));
	assert_string_equal(u.user, "u:x");
	assert_string_equal(u.password, "p:@/");
	assert_string_equal(u.host, "::1");
	assert_int_equal(u.port, 3306);
	assert_string_equal(u.database, "d$b");
	dburl_free(&u);
	assert_true(dburl_parse("mariadb://h/db", &u, &err));
	assert_null(u.user);
	assert_string_equal(u.host, "h");
	dburl_free(&u);
	assert_true(dburl_parse("mariadb://u:@h/db", &u, &err));
	assert_string_equal(u.password, "");
	dburl_free(&u);
	buf_free(&err);
	(void)state;
}

static void test_rejects(void **state)
{
	static const struct { const char *url, *msg; } bad[] = {
		{ "postgresql://u@h/db", "must start with mariadb://" },
		{ "mariadb://u@h", "missing /database" },
		{ "mariadb://u@h/", "database name" },
		{ "mariadb://u@h:0/db", "port" },
		{ "mariadb://u@h:65536/db", "port" },
		{ "mariadb://u@h:12a/db", "port" },
		{ "mariadb://u@h:/db", "port" },
		{ "mariadb://@h/db", "empty user" },
		{ "mariadb://u@h/db?sock=/x", "unknown parameter" },
		{ "mariadb://u@h/db?socket=relative", "absolute path" },
		{ "mariadb://u@h/db?socket=/a&socket=/b", "twice" },
		{ "mariadb://u@h/db?socket=/a&", "trailing" },
		{ "mariadb://u@remote/db?socket=/x", "needs the host 'localhost'" },
		{ "mariadb://u@localhost:3306/db?socket=/x", "not both" },
		{ "mariadb://u@/db", "missing host" },
		{ "mariadb://u%zz@h/db", "percent-encoding" },
		{ "mariadb://u@h/d%00b", "database name" },
		{ "mariadb://u@h b/db", "space" },
		{ "mariadb://u@h/db/x", "database name" },
		{ "mariadb://u@[::1/db", "unterminated" },
		{ "mariadb://u@h!x/db", "invalid character" },
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		struct dburl u;
		struct buf err = BUF_INIT;
		if (dburl_parse(bad[i].url, &u, &err))
			fail_msg("accepted %s", bad[i].url);
		if (strstr(buf_cstr(&err), bad[i].msg) == NULL)
			fail_msg("%s: error '%s' lacks '%s'", bad[i].url, buf_cstr(&err), bad[i].msg);
		assert_null(u.host);
		buf_free(&err);
	}
	(void)state;
}

static void test_password_not_echoed(void **state)
{
	struct dburl u;
	struct buf err = BUF_INIT;
	assert_false(dburl_parse("mariadb://u:topsecret@h:99999/db", &u, &err));
	assert_null(strstr(buf_cstr(&err), "topsecret"));
	buf_free(&err);
	(void)state;
}

static void test_too_long(void **state)
{
	char url[DBURL_MAX + 64];
	struct dburl u;
	struct buf err = BUF_INIT;
	memset(url, 'a', sizeof url - 1);
	url[sizeof url - 1] = '\0';
	memcpy(url, "mariadb://h/", 12);
	assert_false(dburl_parse(url, &u, &err));
	assert_non_null(strstr(buf_cstr(&err), "too long"));
	buf_free(&err);
	(void)state;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tcp_form),
		cmocka_unit_test(test_socket_form),
		cmocka_unit_test(test_decoding_and_variants),
		cmocka_unit_test(test_rejects),
		cmocka_unit_test(test_password_not_echoed),
		cmocka_unit_test(test_too_long),
	};
	return cmocka_run_group_tests_name("dburl", tests, NULL, NULL);
}

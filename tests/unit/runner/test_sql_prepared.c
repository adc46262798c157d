/*
 * test_sql_prepared.c: the project rule "all SQL goes through prepared
 * statements" for the runner. Its C sources (the .c files of evaluator/runner, read from
 * the repository root as tests/run.sh runs) must reach MariaDB only through
 * common/db.h: no text queries (mysql_query, mysql_real_query,
 * mysql_send_query), no escaping of literals into SQL text
 * (mysql_real_escape_string*, the former rdb_quote).
 */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define SRC_DIR "evaluator/runner"

/* Read path whole (NUL-terminated, malloc'd); NULL on error. */
static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return NULL;
	char *s = calloc(1, 1 << 20);
	size_t n = s ? fread(s, 1, (1 << 20) - 1, f) : 0;
	fclose(f);
	(void)n;
	return s;
}

static void test_runner_sql_is_prepared(void **state)
{
	static const char *const banned[] = { "mysql_query(", "mysql_real_query(", "mysql_send_query(",
					      "mysql_real_escape_string", "mysql_escape_string", "rdb_quote(" };
	DIR *d = opendir(SRC_DIR);
	assert_non_null(d);
	struct dirent *de;
	int files = 0;
	while ((de = readdir(d)) != NULL) {
		size_t len = strlen(de->d_name);
		if (len < 3 || strcmp(de->d_name + len - 2, ".c") != 0)
			continue;
		char path[512];
		snprintf(path, sizeof path, "%s/%s", SRC_DIR, de->d_name);
		char *s = slurp(path);
		assert_non_null(s);
		for (size_t i = 0; i < sizeof banned / sizeof banned[0]; i++)
			if (strstr(s, banned[i]))
				fail_msg("%s uses %s: runner SQL must go through common/db.h prepared statements",
					 path, banned[i]);
		free(s);
		files++;
	}
	closedir(d);
	assert_true(files >= 5);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_runner_sql_is_prepared),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

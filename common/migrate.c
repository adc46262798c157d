#include "migrate.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>

#include "parse.h"
#include "xalloc.h"

/* Version number of a valid migration file name, or -1. */
static long migrate_name_version(const char *name)
{
	size_t n = strlen(name), d = 0;
	int64_t v;
	if (n < 4 || strcmp(name + n - 4, ".sql") != 0)
		return -1;
	while (d < n && name[d] >= '0' && name[d] <= '9')
		d++;
	if (d < 3 || d > 9 || name[d] != '_' || d + 1 >= n - 4)
		return -1;
	for (size_t i = d + 1; i < n - 4; i++)
		if (!((name[i] >= 'a' && name[i] <= 'z') || (name[i] >= '0' && name[i] <= '9') || name[i] == '_'))
			return -1;
	if (!parse_int(name, d, 0, 999999999, &v))
		return -1;
	return (long)v;
}

/* Read dir/name into m (sql, len, checksum). */
static bool migrate_read(const char *dir, struct migration *m, struct buf *err)
{
	struct buf path = BUF_INIT, text = BUF_INIT;
	unsigned char sha[crypto_hash_sha256_BYTES];
	bool ok = false;
	buf_printf(&path, "%s/%s", dir, m->name);
	int fd = open(buf_cstr(&path), O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		buf_printf(err, "%s: %s", buf_cstr(&path), strerror(errno));
		goto out;
	}
	for (;;) {
		buf_reserve(&text, 8192);
		ssize_t r = read(fd, text.data + text.len, text.cap - text.len - 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			buf_printf(err, "%s: %s", buf_cstr(&path), strerror(errno));
			goto out;
		}
		if (r == 0)
			break;
		text.len += (size_t)r;
		text.data[text.len] = '\0';
		if (text.len > MIGRATE_MAX_BYTES) {
			buf_printf(err, "%s: larger than %u bytes", buf_cstr(&path), MIGRATE_MAX_BYTES);
			goto out;
		}
	}
	crypto_hash_sha256(sha, (const unsigned char *)buf_cstr(&text), text.len);
	sodium_bin2hex(m->checksum, sizeof m->checksum, sha, sizeof sha);
	m->sql = buf_detach(&text, &m->len);
	ok = true;
out:
	if (fd >= 0)
		close(fd);
	buf_free(&path);
	buf_free(&text);
	return ok;
}

/* qsort comparator by version. */
static int migrate_cmp(const void *a, const void *b)
{
	const struct migration *x = a, *y = b;
	return (x->version > y->version) - (x->version < y->version);
}

bool migrate_scan(const char *dir, struct migration **out, size_t *n, struct buf *err)
{
	struct migration *m = NULL;
	size_t count = 0;
	bool ok = false;
	DIR *d = opendir(dir);
	struct dirent *e;

	if (d == NULL) {
		buf_printf(err, "cannot open the SQL directory %s: %s", dir, strerror(errno));
		goto out;
	}
	while ((e = readdir(d)) != NULL) {
		size_t len = strlen(e->d_name);
		if (len < 4 || strcmp(e->d_name + len - 4, ".sql") != 0)
			continue;
		long v = migrate_name_version(e->d_name);
		if (v < 0) {
			buf_printf(err, "%s/%s: migration names must look like 001_name.sql (digits, '_', a-z0-9_)",
			           dir, e->d_name);
			goto out;
		}
		if (count == MIGRATE_MAX_FILES) {
			buf_printf(err, "%s: more than %d migrations", dir, MIGRATE_MAX_FILES);
			goto out;
		}
		m = xreallocarray(m, count + 1, sizeof *m);
		memset(&m[count], 0, sizeof m[count]);
		m[count].version = v;
		m[count].name = xstrdup(e->d_name);
		count++;
		if (!migrate_read(dir, &m[count - 1], err))
			goto out;
	}
	qsort(m, count, sizeof *m, migrate_cmp);
	for (size_t i = 1; i < count; i++)
		if (m[i].version == m[i - 1].version) {
			buf_printf(err, "%s and %s have the same version number", m[i - 1].name, m[i].name);
			goto out;
		}
	ok = true;
out:
	if (d != NULL)
		closedir(d);
	if (!ok) {
		migrate_free(m, count);
		m = NULL;
		count = 0;
	}
	*out = m;
	*n = count;
	return ok;
}

void migrate_free(struct migration *m, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(m[i].name);
		free(m[i].sql);
	}
	free(m);
}

static const char migrate_table_sql[] =
	"CREATE TABLE IF NOT EXISTS schema_migrations ("
	" version INT UNSIGNED NOT NULL PRIMARY KEY,"
	" name VARCHAR(255) NOT NULL,"
	" checksum CHAR(64) CHARACTER SET ascii NOT NULL,"
	" applied_at TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3)"
	") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci";

struct migrate_ctx {
	struct migration *m;
	size_t            n;
	struct buf       *err;
	bool              bad;
};

/* Row callback: compare one recorded migration with the files. */
static bool migrate_check_row(void *vctx, const struct db_col *c, size_t ncols)
{
	struct migrate_ctx *ctx = vctx;
	for (size_t i = 0; i < ctx->n; i++) {
		struct migration *m = &ctx->m[i];
		if (m->version != c[0].i)
			continue;
		if (strcmp(m->name, c[1].buf) != 0 || strcmp(m->checksum, c[2].buf) != 0) {
			buf_printf(ctx->err, "migration %s was changed after it was applied (recorded as %s with "
			           "sha256 %s, the file now has sha256 %s); never edit an applied migration, add a new one",
			           m->name, c[1].buf, c[2].buf, m->checksum);
			ctx->bad = true;
			return false;
		}
		m->applied = true;
		return true;
	}
	buf_printf(ctx->err, "the database has migration %s (version %lld) but the SQL directory has no such file; "
	           "is this program older than the database?", c[1].buf, c[0].i);
	ctx->bad = true;
	return false;
}

/* Mark applied migrations; false (with err) on a changed or missing file. */
static bool migrate_check(struct db *db, struct migration *m, size_t n, struct buf *err)
{
	char name[256], sum[65];
	struct db_col cols[3] = { DB_COL_INT, DB_COL_TEXT(name), DB_COL_TEXT(sum) };
	struct migrate_ctx ctx = { m, n, err, false };
	enum db_status st = db_exec(db, "SELECT version, name, checksum FROM schema_migrations ORDER BY version",
	                            NULL, 0, cols, 3, migrate_check_row, &ctx, NULL, DB_IDEMPOTENT);
	if (st != DB_OK) {
		buf_printf(err, "reading schema_migrations: %s", db_error(db));
		return false;
	}
	return !ctx.bad;
}

/* Apply one migration in a transaction with its record. */
static bool migrate_one(struct db *db, struct migration *m, struct buf *err)
{
	struct db_arg args[3] = { DB_ARG_INT(m->version), DB_ARG_TEXT(m->name), DB_ARG_TEXT(m->checksum) };
	if (db_begin(db) != DB_OK || db_exec_script(db, m->sql, m->len) != DB_OK ||
	    db_exec(db, "INSERT INTO schema_migrations (version, name, checksum) VALUES (?, ?, ?)",
	            args, 3, NULL, 0, NULL, NULL, NULL, 0) != DB_OK ||
	    db_commit(db) != DB_OK) {
		buf_printf(err, "%s: %s", m->name, db_error(db));
		db_rollback(db);
		return false;
	}
	return true;
}

bool migrate_run(struct db *db, const char *dir, bool dry_run, FILE *progress, size_t *applied, struct buf *err)
{
	struct migration *m = NULL;
	size_t n = 0;
	bool ok = false, locked = false;
	long long got = 0;
	struct db_col lockcol[1] = { DB_COL_INT };
	struct db_arg lockargs[2] = { DB_ARG_TEXT(MIGRATE_LOCK), DB_ARG_INT(MIGRATE_LOCK_WAIT_S) };

	*applied = 0;
	if (!migrate_scan(dir, &m, &n, err))
		goto out;
	if (db_exec(db, "SELECT GET_LOCK(?, ?)", lockargs, 2, lockcol, 1, NULL, NULL, NULL, 0) != DB_OK) {
		buf_printf(err, "cannot take the migration lock: %s", db_error(db));
		goto out;
	}
	got = lockcol[0].is_null ? 0 : lockcol[0].i;
	if (got != 1) {
		buf_printf(err, "another migrator held the lock '%s' for %d s", MIGRATE_LOCK, MIGRATE_LOCK_WAIT_S);
		goto out;
	}
	locked = true;
	if (db_exec_script(db, migrate_table_sql, sizeof migrate_table_sql - 1) != DB_OK) {
		buf_printf(err, "creating schema_migrations: %s", db_error(db));
		goto out;
	}
	if (!migrate_check(db, m, n, err))
		goto out;
	for (size_t i = 0; i < n; i++) {
		if (m[i].applied)
			continue;
		if (!dry_run && !migrate_one(db, &m[i], err))
			goto out;
		if (progress)
			fprintf(progress, "%s %s\n", dry_run ? "pending" : "applied", m[i].name);
		(*applied)++;
	}
	ok = true;
out:
	if (locked)
		db_exec(db, "SELECT RELEASE_LOCK(?)", lockargs, 1, lockcol, 1, NULL, NULL, NULL, 0);
	migrate_free(m, n);
	return ok;
}

char *migrate_default_dir(const char *arg)
{
	char exe[PATH_MAX];
	struct stat st;
	const char *env = getenv("AGENTTEST_SQL_DIR");
	if (arg != NULL && arg[0] != '\0')
		return xstrdup(arg);
	if (env != NULL && env[0] != '\0')
		return xstrdup(env);
	ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (len > 0) {
		exe[len] = '\0';
		char *slash = strrchr(exe, '/');
		if (slash != NULL) {
			struct buf p = BUF_INIT;
			buf_append(&p, exe, (size_t)(slash - exe));
			buf_puts(&p, "/../share/agenttest/sql");
			if (stat(buf_cstr(&p), &st) == 0 && S_ISDIR(st.st_mode))
				return buf_detach(&p, NULL);
			buf_free(&p);
		}
	}
	return xstrdup("sql");
}

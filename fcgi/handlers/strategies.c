/*
 * strategies: POST /strategies/submit, POST /strategies (trusted path,
 * admin), GET /strategies, GET /strategies/{id}, GET /strategies/versions/{id}.
 *
 * A strategy is (owner, name); every distinct code under it is a version.
 * Both are created with INSERT ... ON DUPLICATE KEY UPDATE id =
 * LAST_INSERT_ID(id) against the unique keys (owner, name) and (strategy,
 * code_hash), so concurrent identical submissions converge on one row and
 * nothing is ever deleted. The code lives in the database; STRATEGIES_DIR
 * gets a content-addressed copy `<code_hash>.py`, written to a temporary
 * file and renamed into place (never overwritten with other bytes, because
 * the name is the hash of the bytes).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <json-c/json.h>

#include "common/readfile.h"
#include "evaluator/canon_json.h"
#include "evaluator/hashes.h"
#include "fcgi/handlers/handlers.h"
#include "fcgi/handlers/runs_view.h"

#define ST_CODE_MAX   (256 * 1024)
#define ST_NAME_MAX   200
#define ST_PARAMS_MAX 16384

/* A JSON list being built by row callbacks. */
struct acc {
	size_t     n;
	struct buf b;
};

/* Write code to dir/<hash>.py atomically unless it exists. 0 ok, -1 error (errno). */
static int store_copy(const char *dir, const char *hash, const char *code, size_t len)
{
	char path[PATH_MAX], tmp[PATH_MAX];
	int fd = -1, rc = -1;
	if (snprintf(path, sizeof path, "%s/%s.py", dir, hash) >= (int)sizeof path ||
	    snprintf(tmp, sizeof tmp, "%s/.%s.%ld.tmp", dir, hash, (long)getpid()) >= (int)sizeof tmp) {
		errno = ENAMETOOLONG;
		return -1;
	}
	if (access(path, F_OK) == 0)
		return 0;
	(void)mkdir(dir, 0750);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0640);
	if (fd < 0)
		goto out;
	size_t off = 0;
	while (off < len) {
		ssize_t w = write(fd, code + off, len - off);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			goto out;
		}
		off += (size_t)w;
	}
	if (fsync(fd) != 0 || close(fd) != 0) {
		fd = -1;
		goto out;
	}
	fd = -1;
	if (rename(tmp, path) != 0)
		goto out;
	rc = 0;
out:
	if (fd >= 0)
		close(fd);
	if (rc != 0)
		unlink(tmp);
	return rc;
}

/* What a stored version is made of. */
struct st_new {
	long long   owner_id;
	const char *name, *code, *kind, *params, *path, *source;
	size_t      code_len;
	char        hash[65];
};

/* Insert (or find) the strategy and its version. false after replying. */
static bool st_store(struct fcgi_ctx *c, struct st_new *n, long long *sid, long long *vid, bool *created)
{
	struct db_result res = { 0 };
	struct db_arg sargs[] = { DB_ARG_INT(n->owner_id), DB_ARG_TEXT(n->name) };
	enum db_status st = db_exec(fcgi_db(c),
		"INSERT INTO strategies (owner_id, name) VALUES (?, ?) ON DUPLICATE KEY UPDATE id = LAST_INSERT_ID(id)",
		sargs, 2, NULL, 0, NULL, NULL, &res, 0);
	if (st != DB_OK)
		goto fail;
	*sid = (long long)res.insert_id;
	struct db_arg vargs[] = {
		DB_ARG_INT(*sid), DB_ARG_TEXT(n->hash), DB_ARG_TEXT(n->kind), DB_ARG_TEXTN(n->code, n->code_len),
		n->path ? DB_ARG_TEXT(n->path) : DB_ARG_NULL, DB_ARG_TEXT(n->source), DB_ARG_TEXT(n->params),
	};
	memset(&res, 0, sizeof res);
	st = db_exec(fcgi_db(c),
		"INSERT INTO strategy_versions (strategy_id, code_hash, kind, code, strategy_path, source, params) "
		"VALUES (?, ?, ?, ?, ?, ?, ?) ON DUPLICATE KEY UPDATE id = LAST_INSERT_ID(id)",
		vargs, sizeof vargs / sizeof vargs[0], NULL, 0, NULL, NULL, &res, 0);
	if (st != DB_OK)
		goto fail;
	*vid = (long long)res.insert_id;
	*created = res.affected == 1;
	return true;
fail:
	fcgi_reply_db_error(c, st);
	return false;
}

/* The file name of a registered server path ("" for ""): what the API shows
 * instead of the path, which would tell the server's layout (issue 11). */
static const char *file_name(const char *path)
{
	const char *slash = strrchr(path, '/');
	return slash ? slash + 1 : path;
}

/* Reply with the stored version. */
static void reply_version(struct fcgi_ctx *c, int status, const struct st_new *n, long long sid, long long vid,
			  bool created)
{
	struct buf *b = fcgi_body_buf(c);
	buf_printf(b, "{\"strategy_id\":%lld,\"strategy_version_id\":%lld,\"code_hash\":\"%s\",\"created\":%s,"
		      "\"kind\":\"%s\",\"name\":", sid, vid, n->hash, created ? "true" : "false", n->kind);
	rv_str(b, n->name);
	if (n->path) {
		buf_puts(b, ",\"strategy_file\":");
		rv_str(b, file_name(n->path));
	}
	buf_putc(b, '}');
	fcgi_reply_buf(c, status, "application/json");
}

/* Check, hash, copy and store; fills sid/vid/created. false after replying. */
static bool st_accept(struct fcgi_ctx *c, struct st_new *n, char kind[16], long long *sid, long long *vid,
		      bool *created)
{
	const char *dir = fcgi_config(c, "STRATEGIES_DIR");
	hash_code(n->code, n->code_len, n->hash);
	if (!st_check_code(c, n->code, n->code_len, n->hash, kind))
		return false;
	n->kind = kind;
	if (store_copy(dir && *dir ? dir : "strategies", n->hash, n->code, n->code_len) != 0) {
		fcgi_reply_error(c, 500, "internal", "cannot store the strategy file: %s", strerror(errno));
		return false;
	}
	return st_store(c, n, sid, vid, created);
}

/* Trimmed copy of s in the arena. */
static char *trimmed(struct fcgi_ctx *c, const char *s)
{
	while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r')
		s++;
	size_t n = strlen(s);
	while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\n' || s[n - 1] == '\r'))
		n--;
	return arena_strndup(fcgi_arena(c), s, n);
}

/* POST /strategies/submit {code, name, params?} */
void h_strategies_submit(struct fcgi_ctx *c)
{
	static const char *const allowed[] = { "code", "name", "params", "metadata", NULL };
	json_object *body = fcgi_body(c), *params = NULL;
	const char *code = NULL, *name = NULL;
	long long uid, sid, vid;
	bool admin, created;
	char kind[16], err[256];
	struct buf ptext = BUF_INIT;
	if (!fcgi_json_only(c, body, allowed) ||
	    !fcgi_json_string(c, body, "code", FIELD_REQUIRED, 0, ST_CODE_MAX, &code) ||
	    !fcgi_json_string(c, body, "name", FIELD_REQUIRED, 0, 4 * ST_NAME_MAX, &name) ||
	    !fcgi_json_object(c, body, "params", FIELD_OPTIONAL | FIELD_NULLABLE, &params) ||
	    !rv_caller(c, &uid, &admin))
		goto out;
	if (!*trimmed(c, code)) {
		fcgi_reply_error(c, 400, "missing_field", "code is required");
		goto out;
	}
	name = trimmed(c, name);
	if (!*name || strlen(name) > ST_NAME_MAX) {
		fcgi_reply_error(c, 400, "invalid_field", "name is required (1 to %d bytes)", ST_NAME_MAX);
		goto out;
	}
	if (params ? cj_write(&ptext, params, err, sizeof err) != 0 : (buf_puts(&ptext, "{}"), 0)) {
		fcgi_reply_error(c, 400, "invalid_field", "params: %s", err);
		goto out;
	}
	if (ptext.len > ST_PARAMS_MAX) {
		fcgi_reply_error(c, 400, "invalid_field", "params may take at most %d bytes", ST_PARAMS_MAX);
		goto out;
	}
	struct st_new n = { .owner_id = uid, .name = name, .code = code, .code_len = strlen(code),
			    .params = buf_cstr(&ptext), .source = "submit" };
	if (!st_accept(c, &n, kind, &sid, &vid, &created))
		goto out;
	reply_version(c, 200, &n, sid, vid, created);
out:
	buf_free(&ptext);
}

/* True if real (a resolved path) lies inside one of the colon-separated dirs. */
static bool in_trusted_dirs(const char *dirs, const char *real)
{
	char copy[4096], rdir[PATH_MAX];
	if (!dirs || !*dirs || strlen(dirs) >= sizeof copy)
		return false;
	snprintf(copy, sizeof copy, "%s", dirs);
	for (char *save = NULL, *d = strtok_r(copy, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
		if (!realpath(d, rdir))
			continue;
		size_t n = strlen(rdir);
		if (strncmp(real, rdir, n) == 0 && (real[n] == '/' || (n == 1 && rdir[0] == '/')))
			return true;
	}
	return false;
}

/* Read a regular file of at most max bytes into the arena; NULL on error (errno). */
static char *read_file(struct fcgi_ctx *c, const char *path, size_t max, size_t *len)
{
	char *heap = NULL;
	if (read_file_max(path, max, 1, &heap, len) != 0)
		return NULL;
	char *data = arena_alloc(fcgi_arena(c), *len + 1);
	memcpy(data, heap, *len + 1);
	free(heap);
	return data;
}

bool st_register_path(struct fcgi_ctx *c, const char *path, long long uid, long long *version_id, bool *created)
{
	char real[PATH_MAX], kind[16], name[PATH_MAX];
	long long sid;
	bool made;
	size_t len = 0;
	if (!realpath(path, real)) {
		fcgi_reply_error(c, 404, "not_found", "strategy_path not found");
		return false;
	}
	if (!in_trusted_dirs(fcgi_config(c, "TRUSTED_STRATEGY_DIRS"), real)) {
		fcgi_reply_error(c, 403, "forbidden",
				 "strategy_path is outside the trusted strategy directories (TRUSTED_STRATEGY_DIRS)");
		return false;
	}
	char *code = read_file(c, real, ST_CODE_MAX, &len);
	if (!code) {
		fcgi_reply_error(c, 400, "invalid_field", "strategy_path cannot be read: %s", strerror(errno));
		return false;
	}
	if (memchr(code, '\0', len) || !cj_valid_utf8(code, len)) {
		fcgi_reply_error(c, 400, "invalid_field", "strategy file is not UTF-8 text");
		return false;
	}
	const char *base = strrchr(real, '/');
	base = base ? base + 1 : real;
	snprintf(name, sizeof name, "%s", base);
	char *dot = strrchr(name, '.');
	if (dot && dot != name)
		*dot = '\0';
	if (strlen(name) > ST_NAME_MAX)
		name[ST_NAME_MAX] = '\0';
	struct st_new n = { .owner_id = uid, .name = name, .code = code, .code_len = len, .params = "{}",
			    .path = real, .source = "path" };
	if (!st_accept(c, &n, kind, &sid, version_id, &made))
		return false;
	if (created)
		*created = made;
	return true;
}

/* POST /strategies {strategy_path} (admin) */
void h_strategies_register(struct fcgi_ctx *c)
{
	static const char *const allowed[] = { "strategy_path", "code", "name", NULL };
	json_object *body = fcgi_body(c);
	const char *path = NULL;
	long long uid, vid;
	bool admin, created;
	if (!fcgi_json_only(c, body, allowed) ||
	    !fcgi_json_string(c, body, "strategy_path", FIELD_REQUIRED, 1, 4096, &path) ||
	    !rv_caller(c, &uid, &admin))
		return;
	if (!st_register_path(c, path, uid, &vid, &created))
		return;
	/* reply with the stored row */
	char hash[65] = "", kind[16] = "", name[ST_NAME_MAX * 4 + 1] = "", spath[PATH_MAX] = "";
	struct db_col cols[] = { DB_COL_INT, DB_COL_TEXT(hash), DB_COL_TEXT(kind), DB_COL_TEXT(name), DB_COL_TEXT(spath) };
	struct db_arg arg = DB_ARG_INT(vid);
	enum db_status st = db_exec(fcgi_db(c),
		"SELECT v.strategy_id, v.code_hash, v.kind, s.name, COALESCE(v.strategy_path, '') FROM strategy_versions v "
		"JOIN strategies s ON s.id = v.strategy_id WHERE v.id = ?", &arg, 1, cols, 5, NULL, NULL, NULL,
		DB_IDEMPOTENT);
	if (st != DB_OK) {
		fcgi_reply_db_error(c, st);
		return;
	}
	struct st_new n = { .name = name, .kind = kind, .path = spath };
	snprintf(n.hash, sizeof n.hash, "%s", hash);
	reply_version(c, 200, &n, cols[0].i, vid, created);
}

/* Row callback of GET /strategies. */
static bool list_row(void *ctx, const struct db_col *col, size_t ncol)
{
	struct acc *a = ctx;
	struct buf *b = &a->b;
	size_t *n = &a->n;
	(void)ncol;
	buf_printf(b, "%s{\"id\":%lld,\"name\":", (*n)++ ? "," : "", col[0].i);
	rv_str(b, col[1].buf);
	buf_puts(b, ",\"owner\":");
	rv_str(b, col[2].buf);
	buf_puts(b, ",\"created_at\":");
	rv_str(b, col[3].buf);
	buf_printf(b, ",\"versions\":%lld,\"latest_version_id\":%lld,\"latest_kind\":", col[4].i, col[5].i);
	rv_str(b, col[6].is_null ? NULL : col[6].buf);
	buf_putc(b, '}');
	return true;
}

/* GET /strategies?limit=&offset= */
void h_strategies_list(struct fcgi_ctx *c)
{
	long long uid;
	bool admin;
	int64_t limit, offset;
	if (!rv_caller(c, &uid, &admin) || !fcgi_query_int(c, "limit", 1, 1000, 100, &limit) ||
	    !fcgi_query_int(c, "offset", 0, 1000000000, 0, &offset))
		return;
	char name[ST_NAME_MAX * 4 + 1], owner[130], at[RV_TS_LEN], kind[32];
	struct db_col cols[] = { DB_COL_INT, DB_COL_TEXT(name), DB_COL_TEXT(owner), DB_COL_TEXT(at), DB_COL_INT, DB_COL_INT,
				 DB_COL_TEXT(kind) };
	struct db_arg args[] = { DB_ARG_INT(admin ? 1 : 0), DB_ARG_INT(uid), DB_ARG_INT(limit), DB_ARG_INT(offset) };
	struct acc acc = { 0, BUF_INIT };
	buf_puts(&acc.b, "{\"strategies\":[");
	enum db_status st = db_exec(fcgi_db(c),
		"SELECT s.id, s.name, u.name, " RV_TS("s.created_at") ", COUNT(v.id), COALESCE(MAX(v.id), 0), "
		/* the latest version's kind (kinds have no comma); NULL without versions */
		"SUBSTRING_INDEX(GROUP_CONCAT(v.kind ORDER BY v.id DESC SEPARATOR ','), ',', 1) "
		"FROM strategies s JOIN users u ON u.id = s.owner_id LEFT JOIN strategy_versions v ON v.strategy_id = s.id "
		"WHERE (? = 1 OR s.owner_id = ?) GROUP BY s.id ORDER BY s.id LIMIT ? OFFSET ?",
		args, 4, cols, 7, list_row, &acc, NULL, DB_IDEMPOTENT);
	if (st != DB_OK) {
		buf_free(&acc.b);
		fcgi_reply_db_error(c, st);
		return;
	}
	buf_puts(&acc.b, "]}");
	struct buf *out = fcgi_body_buf(c);
	buf_append(out, acc.b.data, acc.b.len);
	buf_free(&acc.b);
	fcgi_reply_buf(c, 200, "application/json");
}

/* Row callback: one version of GET /strategies/{id}. */
static bool version_row(void *ctx, const struct db_col *col, size_t ncol)
{
	struct acc *a = ctx;
	struct buf *b = &a->b;
	size_t *n = &a->n;
	(void)ncol;
	buf_printf(b, "%s{\"id\":%lld,\"code_hash\":", (*n)++ ? "," : "", col[0].i);
	rv_str(b, col[1].buf);
	buf_puts(b, ",\"kind\":");
	rv_str(b, col[2].buf);
	buf_puts(b, ",\"created_at\":");
	rv_str(b, col[3].buf);
	buf_putc(b, '}');
	return true;
}

/* Row callback: one latest run per dataset of GET /strategies/{id}. */
static bool latest_row(void *ctx, const struct db_col *col, size_t ncol)
{
	struct acc *a = ctx;
	struct buf *b = &a->b;
	size_t *n = &a->n;
	(void)ncol;
	buf_puts(b, (*n)++ ? ",{\"dataset_version\":" : "{\"dataset_version\":");
	rv_str(b, col[0].buf);
	buf_puts(b, ",\"run_id\":");
	rv_str(b, col[1].buf);
	buf_printf(b, ",\"strategy_version_id\":%lld,\"status\":", col[2].i);
	rv_str(b, col[3].buf);
	buf_puts(b, ",\"score\":");
	rv_num(b, col[4].is_null ? NULL : col[4].buf);
	buf_puts(b, ",\"completed_at\":");
	rv_str(b, col[5].is_null ? NULL : col[5].buf);
	buf_putc(b, '}');
	return true;
}

/* GET /strategies/{id} */
void h_strategies_get(struct fcgi_ctx *c)
{
	long long uid;
	bool admin;
	int64_t id;
	const char *ids = fcgi_param(c, "id");
	if (!rv_caller(c, &uid, &admin))
		return;
	char *end;
	id = strtoll(ids, &end, 10);
	if (*end || id <= 0) {
		fcgi_reply_error(c, 404, "not_found", "strategy not found");
		return;
	}
	char name[ST_NAME_MAX * 4 + 1], owner[130], at[RV_TS_LEN];
	struct db_col cols[] = { DB_COL_INT, DB_COL_TEXT(name), DB_COL_TEXT(owner), DB_COL_TEXT(at) };
	struct db_arg arg = DB_ARG_INT(id);
	struct db_result res = { 0 };
	enum db_status st = db_exec(fcgi_db(c),
		"SELECT s.owner_id, s.name, u.name, " RV_TS("s.created_at") " FROM strategies s JOIN users u ON u.id = s.owner_id "
		"WHERE s.id = ?", &arg, 1, cols, 4, NULL, NULL, &res, DB_IDEMPOTENT);
	if (st != DB_OK) {
		fcgi_reply_db_error(c, st);
		return;
	}
	if (res.rows == 0 || (!admin && cols[0].i != uid)) {
		fcgi_reply_error(c, 404, "not_found", "strategy not found");
		return;
	}
	struct acc acc = { 0, BUF_INIT };
	buf_printf(&acc.b, "{\"id\":%lld,\"name\":", (long long)id);
	rv_str(&acc.b, name);
	buf_puts(&acc.b, ",\"owner\":");
	rv_str(&acc.b, owner);
	buf_puts(&acc.b, ",\"created_at\":");
	rv_str(&acc.b, at);
	buf_puts(&acc.b, ",\"versions\":[");
	char hash[65], kind[16], vat[RV_TS_LEN];
	struct db_col vcols[] = { DB_COL_INT, DB_COL_TEXT(hash), DB_COL_TEXT(kind), DB_COL_TEXT(vat) };
	st = db_exec(fcgi_db(c), "SELECT id, code_hash, kind, " RV_TS("created_at") " FROM strategy_versions "
		     "WHERE strategy_id = ? ORDER BY id", &arg, 1, vcols, 4, version_row, &acc, NULL, DB_IDEMPOTENT);
	if (st == DB_OK) {
		buf_puts(&acc.b, "],\"latest_runs\":[");
		acc.n = 0;
		char dsv[130], rid[40], status[16], score[40], cat[RV_TS_LEN];
		struct db_col lcols[] = { DB_COL_TEXT(dsv), DB_COL_TEXT(rid), DB_COL_INT, DB_COL_TEXT(status),
					  DB_COL_TEXT(score), DB_COL_TEXT(cat) };
		st = db_exec(fcgi_db(c),
			"SELECT r.dataset_version, r.id, r.strategy_version_id, r.status, CAST(m.score AS CHAR), "
			RV_TS("r.completed_at") " FROM runs r LEFT JOIN run_metrics m ON m.run_id = r.id "
			"WHERE r.seq IN (SELECT MAX(r2.seq) FROM runs r2 JOIN strategy_versions v ON v.id = r2.strategy_version_id "
			"WHERE v.strategy_id = ? AND r2.verify_of IS NULL GROUP BY r2.dataset_version) ORDER BY r.dataset_version",
			&arg, 1, lcols, 6, latest_row, &acc, NULL, DB_IDEMPOTENT);
	}
	if (st != DB_OK) {
		buf_free(&acc.b);
		fcgi_reply_db_error(c, st);
		return;
	}
	buf_puts(&acc.b, "]}");
	struct buf *out = fcgi_body_buf(c);
	buf_append(out, acc.b.data, acc.b.len);
	buf_free(&acc.b);
	fcgi_reply_buf(c, 200, "application/json");
}

/* GET /strategies/versions/{id} */
void h_strategy_versions_get(struct fcgi_ctx *c)
{
	long long uid;
	bool admin;
	const char *ids = fcgi_param(c, "id");
	char *end;
	if (!rv_caller(c, &uid, &admin))
		return;
	long long id = strtoll(ids, &end, 10);
	if (*end || id <= 0) {
		fcgi_reply_error(c, 404, "not_found", "strategy_version_id not found");
		return;
	}
	char hash[65], kind[16], name[ST_NAME_MAX * 4 + 1], owner[130], at[RV_TS_LEN], params[ST_PARAMS_MAX + 1];
	char src[8], spath[PATH_MAX];
	struct db_col code = { .type = DB_T_TEXT, .buf = arena_alloc(fcgi_arena(c), ST_CODE_MAX + 1), .cap = ST_CODE_MAX + 1 };
	struct db_col cols[] = { DB_COL_INT, DB_COL_INT, DB_COL_TEXT(hash), DB_COL_TEXT(kind), DB_COL_TEXT(name),
				 DB_COL_TEXT(owner), DB_COL_TEXT(at), DB_COL_TEXT(params), code, DB_COL_TEXT(src),
				 DB_COL_TEXT(spath) };
	struct db_arg arg = DB_ARG_INT(id);
	struct db_result res = { 0 };
	enum db_status st = db_exec(fcgi_db(c),
		"SELECT v.strategy_id, s.owner_id, v.code_hash, v.kind, s.name, u.name, " RV_TS("v.created_at") ", "
		"v.params, v.code, v.source, COALESCE(v.strategy_path, '') FROM strategy_versions v "
		"JOIN strategies s ON s.id = v.strategy_id JOIN users u ON u.id = s.owner_id WHERE v.id = ?",
		&arg, 1, cols, 11, NULL, NULL, &res, DB_IDEMPOTENT);
	if (st != DB_OK) {
		fcgi_reply_db_error(c, st);
		return;
	}
	/* another user's version does not exist for the caller, as with
	 * GET /strategies/{id}: its name, params and hash are the owner's */
	if (res.rows == 0 || (!admin && cols[1].i != uid)) {
		fcgi_reply_error(c, 404, "not_found", "strategy_version_id not found");
		return;
	}
	struct buf *b = fcgi_body_buf(c);
	buf_printf(b, "{\"id\":%lld,\"strategy_id\":%lld,\"name\":", id, cols[0].i);
	rv_str(b, name);
	buf_puts(b, ",\"owner\":");
	rv_str(b, owner);
	buf_printf(b, ",\"code_hash\":\"%s\",\"kind\":\"%s\",\"source\":\"%s\",\"created_at\":", hash, kind, src);
	rv_str(b, at);
	buf_puts(b, ",\"params\":");
	rv_raw(b, params);
	buf_puts(b, ",\"strategy_file\":");
	rv_str(b, spath[0] ? file_name(spath) : NULL);
	buf_puts(b, ",\"code\":");
	cj_write_string(b, cols[8].buf, cols[8].len);
	buf_putc(b, '}');
	fcgi_reply_buf(c, 200, "application/json");
}

#include "tokstore.h"

#include <string.h>

#include <sodium.h>

bool tokstore_role_parse(const char *s, enum tokstore_role *out)
{
	if (strcmp(s, "admin") == 0)
		*out = TOKSTORE_ROLE_ADMIN;
	else if (strcmp(s, "user") == 0)
		*out = TOKSTORE_ROLE_USER;
	else
		return false;
	return true;
}

const char *tokstore_role_name(enum tokstore_role r)
{
	return r == TOKSTORE_ROLE_ADMIN ? "admin" : "user";
}

bool tokstore_name_ok(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n > TOKSTORE_NAME_MAX)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '.' || c == '_' || c == '@' || c == '-'))
			return false;
	}
	return true;
}

/* Find or create the user; *user_id on success. */
static enum db_status tokstore_user(struct db *db, const char *name, enum tokstore_role role,
                                    long long *user_id, struct buf *err)
{
	char rolebuf[8];
	struct db_col cols[2] = { DB_COL_INT, DB_COL_TEXT(rolebuf) };
	struct db_arg arg[2] = { DB_ARG_TEXT(name), DB_ARG_TEXT(tokstore_role_name(role)) };
	struct db_result res;
	enum db_status st;

	st = db_exec(db, "INSERT IGNORE INTO users (name, role) VALUES (?, ?)", arg, 2, NULL, 0, NULL, NULL, &res, 0);
	if (st != DB_OK)
		goto fail;
	st = db_exec(db, "SELECT id, role FROM users WHERE name = ?", arg, 1, cols, 2, NULL, NULL, &res, 0);
	if (st != DB_OK)
		goto fail;
	if (res.rows != 1) {
		buf_printf(err, "user %s vanished while creating the token", name);
		return DB_ERROR;
	}
	if (strcmp(rolebuf, tokstore_role_name(role)) != 0) {
		buf_printf(err, "user %s exists with role %s, not %s", name, rolebuf, tokstore_role_name(role));
		return DB_DUPLICATE;
	}
	*user_id = cols[0].i;
	return DB_OK;
fail:
	buf_puts(err, db_error(db));
	return st;
}

enum db_status tokstore_create(struct db *db, const unsigned char key[SECRET_BYTES], const char *name,
                               enum tokstore_role role, char token[TOKEN_TEXT_LEN + 1], long long *id,
                               struct buf *err)
{
	unsigned char hash[TOKEN_HASH_BYTES];
	long long user_id = 0;
	struct db_result res;
	enum db_status st;

	st = tokstore_user(db, name, role, &user_id, err);
	if (st != DB_OK)
		return st;
	token_generate(token);
	token_hash(key, token, TOKEN_TEXT_LEN, hash);
	struct db_arg args[3] = { DB_ARG_INT(user_id), DB_ARG_BLOB(hash, sizeof hash),
	                          DB_ARG_TEXTN(token, TOKEN_PREFIX_LEN) };
	st = db_exec(db, "INSERT INTO api_tokens (user_id, token_hash, prefix) VALUES (?, ?, ?)",
	             args, 3, NULL, 0, NULL, NULL, &res, 0);
	sodium_memzero(hash, sizeof hash);
	if (st != DB_OK) {
		sodium_memzero(token, TOKEN_TEXT_LEN + 1);
		buf_puts(err, db_error(db));
		return st;
	}
	*id = (long long)res.insert_id;
	return DB_OK;
}

enum db_status tokstore_lookup(struct db *db, const unsigned char hash[TOKEN_HASH_BYTES],
                               struct tokstore_identity *who, bool *found)
{
	static const char sql[] =
		"SELECT t.id, u.id, u.name, u.role, t.token_hash,"
		" COALESCE(TIMESTAMPDIFF(SECOND, t.last_used_at, CURRENT_TIMESTAMP(3)), -1)"
		" FROM api_tokens t JOIN users u ON u.id = t.user_id"
		" WHERE t.token_hash = ? AND t.revoked_at IS NULL";
	char name[TOKSTORE_NAME_MAX + 1], role[8];
	unsigned char stored[TOKEN_HASH_BYTES];
	struct db_col cols[6] = { DB_COL_INT, DB_COL_INT, DB_COL_TEXT(name), DB_COL_TEXT(role),
	                          { .type = DB_T_BLOB, .buf = (char *)stored, .cap = sizeof stored },
	                          DB_COL_INT };
	struct db_arg arg[1] = { DB_ARG_BLOB(hash, TOKEN_HASH_BYTES) };
	struct db_result res;

	*found = false;
	enum db_status st = db_exec(db, sql, arg, 1, cols, 6, NULL, NULL, &res, DB_IDEMPOTENT);
	if (st != DB_OK)
		return st;
	if (res.rows != 1 || cols[4].len != TOKEN_HASH_BYTES || !token_hash_equal(stored, hash))
		return DB_OK;
	who->token_id = cols[0].i;
	who->user_id = cols[1].i;
	memcpy(who->name, name, sizeof who->name);
	who->role = strcmp(role, "admin") == 0 ? TOKSTORE_ROLE_ADMIN : TOKSTORE_ROLE_USER;
	who->last_used_age_s = cols[5].i;
	*found = true;
	return DB_OK;
}

enum db_status tokstore_touch(struct db *db, long long token_id)
{
	struct db_arg arg[1] = { DB_ARG_INT(token_id) };
	return db_exec(db, "UPDATE api_tokens SET last_used_at = CURRENT_TIMESTAMP(3) WHERE id = ?",
	               arg, 1, NULL, 0, NULL, NULL, NULL, DB_IDEMPOTENT);
}

enum db_status tokstore_revoke(struct db *db, long long id, bool *found)
{
	struct db_arg arg[1] = { DB_ARG_INT(id) };
	struct db_result res;
	enum db_status st = db_exec(db, "UPDATE api_tokens SET revoked_at = CURRENT_TIMESTAMP(3)"
	                                " WHERE id = ? AND revoked_at IS NULL",
	                            arg, 1, NULL, 0, NULL, NULL, &res, 0);
	*found = st == DB_OK && res.affected == 1;
	return st;
}

struct tokstore_list_ctx {
	void (*fn)(void *ctx, const struct tokstore_row *row);
	void *ctx;
	struct tokstore_row *row;
};

/* Row callback of tokstore_list. */
static bool tokstore_list_row(void *vctx, const struct db_col *c, size_t ncols)
{
	struct tokstore_list_ctx *l = vctx;
	l->row->id = c[0].i;
	l->fn(l->ctx, l->row);
	return true;
}

enum db_status tokstore_list(struct db *db, void (*fn)(void *ctx, const struct tokstore_row *row), void *ctx)
{
	struct tokstore_row row;
	memset(&row, 0, sizeof row);
	struct db_col cols[7] = { DB_COL_INT, DB_COL_TEXT(row.user), DB_COL_TEXT(row.role), DB_COL_TEXT(row.prefix),
	                          DB_COL_TEXT(row.created_at), DB_COL_TEXT(row.last_used_at),
	                          DB_COL_TEXT(row.revoked_at) };
	struct tokstore_list_ctx l = { fn, ctx, &row };
	return db_exec(db, "SELECT t.id, u.name, u.role, t.prefix, t.created_at,"
	                   " COALESCE(t.last_used_at, ''), COALESCE(t.revoked_at, '')"
	                   " FROM api_tokens t JOIN users u ON u.id = t.user_id ORDER BY t.id",
	               NULL, 0, cols, 7, tokstore_list_row, &l, NULL, DB_IDEMPOTENT);
}

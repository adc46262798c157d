/*
 * tokens.c: API tokens over HTTP for the dashboard's settings page, and the
 * users list for admins. The CLI (`agenttest token ...`) stays the operator's
 * tool; these routes let every user manage their own tokens.
 *
 *   GET  /api/tokens              the caller's tokens, newest first
 *        200 {"tokens":[{"id","prefix","label","created_at","last_used_at",
 *                        "revoked_at","current"}]}
 *   POST /api/tokens {label?}     a new token for the caller, same role,
 *        with an optional label (1-64 bytes, sql/006) naming its use
 *        201 {"id","token","prefix","label","user","role"}   (token shown once)
 *        409 conflict when the caller already has TOKENS_MAX_ACTIVE
 *   POST /api/tokens/{id}/revoke  revoke one of the caller's tokens (admins:
 *        anyone's); 404 when there is no such active token the caller may
 *        revoke (others' tokens are not revealed)
 *        200 {"id","revoked":true}
 *   GET  /api/users               (admin) every user with role, creation
 *        time, number of active tokens and last token use
 *        200 {"users":[{"id","name","role","created_at","active_tokens",
 *                       "last_used_at"}]}
 *
 * Times are ISO 8601 UTC text ("2026-11-29T22:39:08.123000Z") or null.
 * Only token hashes are ever stored (common/tokstore.c); the token text
 * exists in this process only while the creation reply is built.
 */
#include <string.h>

#include <sodium.h>

#include "common/parse.h"
#include "common/tokstore.h"
#include "fcgi/app.h"
#include "fcgi/handlers/handlers.h"

#define TOKENS_MAX_ACTIVE 50   /* active tokens per user */
#define TOKENS_LIST_MAX   200  /* rows in a list answer */
#define TOKENS_LABEL_MAX  64   /* bytes of a label (api_tokens.label, VARCHAR(64)) */
#define TS_ISO(col) "DATE_FORMAT(" col ", '%Y-%m-%dT%H:%i:%s.%fZ')"

/* A text column value, or JSON null when SQL NULL. */
static json_object *text_or_null(const struct db_col *col)
{
	return col->is_null ? NULL : json_object_new_string_len(col->buf, (int)col->len);
}

struct token_rows {
	json_object *arr;
	long long    current; /* the caller's own token id, -1 if none */
};

/* Row callback of GET /api/tokens: id, prefix, created, last used, revoked, label. */
static bool token_row(void *ctx, const struct db_col *col, size_t ncol)
{
	struct token_rows *t = ctx;
	(void)ncol;
	json_object *o = json_object_new_object();
	json_object_object_add(o, "id", json_object_new_int64(col[0].i));
	json_object_object_add(o, "prefix", text_or_null(&col[1]));
	json_object_object_add(o, "label", text_or_null(&col[5]));
	json_object_object_add(o, "created_at", text_or_null(&col[2]));
	json_object_object_add(o, "last_used_at", text_or_null(&col[3]));
	json_object_object_add(o, "revoked_at", text_or_null(&col[4]));
	json_object_object_add(o, "current", json_object_new_boolean(col[0].i == t->current));
	json_object_array_add(t->arr, o);
	return true;
}

void h_tokens_list(struct fcgi_ctx *c)
{
	static const char sql[] =
		"SELECT id, prefix, " TS_ISO("created_at") ", " TS_ISO("last_used_at") ", " TS_ISO("revoked_at")
		", label FROM api_tokens WHERE user_id = ? ORDER BY id DESC LIMIT ?";
	long long uid;
	char prefix[24], created[40], used[40], revoked[40], label[TOKENS_LABEL_MAX * 4 + 1];
	if (!fcgi_user_id(c, &uid))
		return;
	struct db_col cols[6] = { DB_COL_INT, DB_COL_TEXT(prefix), DB_COL_TEXT(created), DB_COL_TEXT(used),
	                          DB_COL_TEXT(revoked), DB_COL_TEXT(label) };
	struct db_arg args[2] = { DB_ARG_INT(uid), DB_ARG_INT(TOKENS_LIST_MAX) };
	struct token_rows t = { json_object_new_array(), fcgi_who(c)->token_id };
	enum db_status st = db_exec(fcgi_db(c), sql, args, 2, cols, 6, token_row, &t, NULL, DB_IDEMPOTENT);
	if (st != DB_OK) {
		json_object_put(t.arr);
		fcgi_reply_db_error(c, st);
		return;
	}
	json_object *o = json_object_new_object();
	json_object_object_add(o, "tokens", t.arr);
	fcgi_reply_json(c, 200, o);
}

/* POST /api/tokens: a new token for the caller (see the file comment). */
void h_tokens_create(struct fcgi_ctx *c)
{
	static const char *const allowed[] = { "label", NULL };
	const struct fcgi_identity *who = fcgi_who(c);
	json_object *body = fcgi_body(c);
	char token[TOKEN_TEXT_LEN + 1];
	long long uid, id = 0;
	struct buf err = BUF_INIT;
	const char *label = NULL;
	bool in_tx = false;
	if (body && (!fcgi_json_only(c, body, allowed) ||
	             !fcgi_json_string(c, body, "label", FIELD_OPTIONAL | FIELD_NULLABLE, 1, TOKENS_LABEL_MAX, &label)))
		goto out;
	if (!fcgi_user_id(c, &uid))
		goto out;
	struct db_col ncol = DB_COL_INT;
	struct db_arg arg = DB_ARG_INT(uid);
	enum db_status st = db_exec(fcgi_db(c), "SELECT COUNT(*) FROM api_tokens WHERE user_id = ? AND revoked_at IS NULL",
	                            &arg, 1, &ncol, 1, NULL, NULL, NULL, DB_IDEMPOTENT);
	if (st != DB_OK) {
		fcgi_reply_db_error(c, st);
		goto out;
	}
	if (ncol.i >= TOKENS_MAX_ACTIVE) {
		fcgi_reply_error(c, 409, "conflict", "you already have %d active tokens: revoke one first",
		                 TOKENS_MAX_ACTIVE);
		goto out;
	}
	enum tokstore_role role = who->admin ? TOKSTORE_ROLE_ADMIN : TOKSTORE_ROLE_USER;
	/* the token and its label are one change: no unlabelled token is left
	 * behind (unseen by anyone) when the second statement fails */
	if (label) {
		if ((st = db_begin(fcgi_db(c))) != DB_OK) {
			fcgi_reply_db_error(c, st);
			goto out;
		}
		in_tx = true;
	}
	st = tokstore_create(fcgi_db(c), fcgi_ctx_app(c)->auth.key, who->name, role, token, &id, &err);
	if (st == DB_OK && label) {
		struct db_arg largs[2] = { DB_ARG_TEXT(label), DB_ARG_INT(id) };
		st = db_exec(fcgi_db(c), "UPDATE api_tokens SET label = ? WHERE id = ?", largs, 2, NULL, 0, NULL, NULL,
		             NULL, 0);
		if (st == DB_OK)
			st = db_commit(fcgi_db(c));
		if (st == DB_OK)
			in_tx = false;
	}
	if (st == DB_DUPLICATE) {
		/* the user record's role differs from the caller's: never mint across roles */
		fcgi_reply_error(c, 409, "conflict", "%s", buf_cstr(&err));
		goto out;
	}
	if (st != DB_OK) {
		fcgi_reply_db_error(c, st);
		goto out;
	}
	json_object *o = json_object_new_object();
	json_object_object_add(o, "id", json_object_new_int64(id));
	json_object_object_add(o, "token", json_object_new_string_len(token, TOKEN_TEXT_LEN));
	json_object_object_add(o, "prefix", json_object_new_string_len(token, TOKEN_PREFIX_LEN));
	json_object_object_add(o, "label", label ? json_object_new_string(label) : NULL);
	json_object_object_add(o, "user", json_object_new_string(who->name));
	json_object_object_add(o, "role", json_object_new_string(tokstore_role_name(role)));
	fcgi_reply_json(c, 201, o);
out:
	if (in_tx)
		db_rollback(fcgi_db(c));
	sodium_memzero(token, sizeof token);
	buf_free(&err);
}

void h_tokens_revoke(struct fcgi_ctx *c)
{
	const char *idtext = fcgi_param(c, "id");
	int64_t id;
	long long uid;
	if (!parse_int(idtext, strlen(idtext), 1, INT64_MAX - 1, &id)) {
		fcgi_reply_error(c, 404, "not_found", "token not found");
		return;
	}
	if (!fcgi_user_id(c, &uid))
		return;
	struct db_result res = { 0 };
	enum db_status st;
	if (fcgi_who(c)->admin) {
		bool found = false;
		st = tokstore_revoke(fcgi_db(c), id, &found);
		res.affected = found;
	} else {
		struct db_arg args[2] = { DB_ARG_INT(id), DB_ARG_INT(uid) };
		st = db_exec(fcgi_db(c), "UPDATE api_tokens SET revoked_at = CURRENT_TIMESTAMP(3)"
		                         " WHERE id = ? AND user_id = ? AND revoked_at IS NULL",
		             args, 2, NULL, 0, NULL, NULL, &res, 0);
	}
	if (st != DB_OK) {
		fcgi_reply_db_error(c, st);
		return;
	}
	if (res.affected != 1) {
		fcgi_reply_error(c, 404, "not_found", "no active token %lld of yours", (long long)id);
		return;
	}
	json_object *o = json_object_new_object();
	json_object_object_add(o, "id", json_object_new_int64(id));
	json_object_object_add(o, "revoked", json_object_new_boolean(1));
	fcgi_reply_json(c, 200, o);
}

/* Row callback of GET /api/users. */
static bool user_row(void *ctx, const struct db_col *col, size_t ncol)
{
	json_object *arr = ctx;
	(void)ncol;
	json_object *o = json_object_new_object();
	json_object_object_add(o, "id", json_object_new_int64(col[0].i));
	json_object_object_add(o, "name", text_or_null(&col[1]));
	json_object_object_add(o, "role", text_or_null(&col[2]));
	json_object_object_add(o, "created_at", text_or_null(&col[3]));
	json_object_object_add(o, "active_tokens", json_object_new_int64(col[4].i));
	json_object_object_add(o, "last_used_at", text_or_null(&col[5]));
	json_object_array_add(arr, o);
	return true;
}

void h_users_list(struct fcgi_ctx *c)
{
	static const char sql[] =
		"SELECT u.id, u.name, u.role, " TS_ISO("u.created_at") ","
		" CAST(COALESCE(SUM(t.id IS NOT NULL AND t.revoked_at IS NULL), 0) AS SIGNED),"
		" " TS_ISO("MAX(t.last_used_at)")
		" FROM users u LEFT JOIN api_tokens t ON t.user_id = u.id"
		" GROUP BY u.id, u.name, u.role, u.created_at ORDER BY u.name LIMIT 1000";
	char name[TOKSTORE_NAME_MAX + 1], role[8], created[40], used[40];
	struct db_col cols[6] = { DB_COL_INT, DB_COL_TEXT(name), DB_COL_TEXT(role), DB_COL_TEXT(created), DB_COL_INT,
	                          DB_COL_TEXT(used) };
	json_object *arr = json_object_new_array();
	enum db_status st = db_exec(fcgi_db(c), sql, NULL, 0, cols, 6, user_row, arr, NULL, DB_IDEMPOTENT);
	if (st != DB_OK) {
		json_object_put(arr);
		fcgi_reply_db_error(c, st);
		return;
	}
	json_object *o = json_object_new_object();
	json_object_object_add(o, "users", arr);
	fcgi_reply_json(c, 200, o);
}

/*
 * ctx.c: the handler-facing API of handler.h (accessors, validators,
 * replies) over a struct fcgi_ctx.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common/log.h"
#include "common/parse.h"
#include "common/utf8.h"
#include "fcgi/app.h"

enum http_method fcgi_method(const struct fcgi_ctx *c)
{
	return c->req.method;
}

const char *fcgi_param(const struct fcgi_ctx *c, const char *name)
{
	for (size_t i = 0; i < c->match.nparams; i++)
		if (strcmp(c->match.params[i].name, name) == 0)
			return c->match.params[i].value;
	return NULL;
}

const char *fcgi_query(struct fcgi_ctx *c, const char *name)
{
	if (!req_query_parse(&c->req, &c->app->arena))
		return NULL;
	return req_query_get(&c->req, name);
}

bool fcgi_query_int(struct fcgi_ctx *c, const char *name, int64_t min, int64_t max, int64_t def, int64_t *out)
{
	const char *v = fcgi_query(c, name);
	if (v == NULL) {
		*out = def;
		return true;
	}
	if (!parse_int(v, strlen(v), min, max, out)) {
		fcgi_reply_error(c, 400, "invalid_field", "query parameter '%s' must be an integer from %lld to %lld",
		                 name, (long long)min, (long long)max);
		return false;
	}
	return true;
}

bool fcgi_query_cursor(struct fcgi_ctx *c, enum cursor_kind kind, const char *scope, int64_t def, int64_t *pos,
                       bool *given)
{
	const char *v = fcgi_query(c, "cursor");
	if (given)
		*given = v != NULL;
	if (v == NULL) {
		*pos = def;
		return true;
	}
	enum cursor_err e = cursor_decode(fcgi_server_key(c), kind, scope, v, pos);
	if (e != CURSOR_OK) {
		fcgi_reply_error(c, 400, "bad_cursor", "%s", cursor_strerror(e));
		return false;
	}
	return true;
}

void fcgi_put_cursor(struct fcgi_ctx *c, struct buf *b, enum cursor_kind kind, const char *scope, int64_t pos)
{
	char text[CURSOR_TEXT_LEN + 1];
	if (!cursor_encode(fcgi_server_key(c), kind, scope, pos, text)) {
		/* a bad kind or scope is a bug of the caller, not of the client */
		log_msg(LOG_LVL_ERROR, "cursor_encode_failed", "kind %d, position %lld", (int)kind, (long long)pos);
		buf_puts(b, "null");
		return;
	}
	buf_printf(b, "\"%s\"", text);
}

const char *fcgi_header(const struct fcgi_ctx *c, const char *cgi_name)
{
	return req_env(c->req.envp, cgi_name);
}

json_object *fcgi_body(const struct fcgi_ctx *c)
{
	return c->body;
}

const struct fcgi_identity *fcgi_who(const struct fcgi_ctx *c)
{
	return &c->who;
}

const char *fcgi_request_id(const struct fcgi_ctx *c)
{
	return c->rid;
}

struct db *fcgi_db(struct fcgi_ctx *c)
{
	return c->app->db;
}

struct arena *fcgi_arena(struct fcgi_ctx *c)
{
	return &c->app->arena;
}

const char *fcgi_config(const struct fcgi_ctx *c, const char *key)
{
	return config_get(c->app->cfg, key);
}

const unsigned char *fcgi_server_key(const struct fcgi_ctx *c)
{
	return c->app->auth.key;
}

struct fcgi_app *fcgi_ctx_app(struct fcgi_ctx *c)
{
	return c->app;
}

bool fcgi_user_id(struct fcgi_ctx *c, long long *id)
{
	static const char *const names[2] = { "local", "mantis-admin" };
	if (c->who.user_id >= 0) {
		*id = c->who.user_id;
		return true;
	}
	int k = strcmp(c->who.name, names[0]) == 0 ? 0 : strcmp(c->who.name, names[1]) == 0 ? 1 : -1;
	if (k < 0 || c->app->db == NULL) {
		fcgi_reply_error(c, 503, "unavailable", "the caller has no user record");
		return false;
	}
	if (c->app->builtin_ids[k] <= 0) {
		struct db_col col[1] = { DB_COL_INT };
		struct db_arg arg[1] = { DB_ARG_TEXT(names[k]) };
		struct db_result res;
		enum db_status st = db_exec(c->app->db, "SELECT id FROM users WHERE name = ?", arg, 1, col, 1,
		                            NULL, NULL, &res, DB_IDEMPOTENT);
		if (st != DB_OK || res.rows != 1) {
			fcgi_reply_db_error(c, st == DB_OK ? DB_ERROR : st);
			return false;
		}
		c->app->builtin_ids[k] = col[0].i;
	}
	c->who.user_id = c->app->builtin_ids[k];
	*id = c->who.user_id;
	return true;
}

/* Turn a validator failure into a 400. */
static bool ctx_field(struct fcgi_ctx *c, bool ok, const struct field_error *e)
{
	if (!ok)
		fcgi_reply_error(c, 400, e->code, "%s", e->msg);
	return ok;
}

bool fcgi_json_string(struct fcgi_ctx *c, json_object *obj, const char *field, unsigned flags,
                      size_t min_len, size_t max_len, const char **out)
{
	struct field_error e;
	return ctx_field(c, field_string(obj, field, flags, min_len, max_len, out, &e), &e);
}

bool fcgi_json_int(struct fcgi_ctx *c, json_object *obj, const char *field, unsigned flags,
                   int64_t min, int64_t max, int64_t *out)
{
	struct field_error e;
	return ctx_field(c, field_int(obj, field, flags, min, max, out, &e), &e);
}

bool fcgi_json_number(struct fcgi_ctx *c, json_object *obj, const char *field, unsigned flags,
                      double min, double max, double *out)
{
	struct field_error e;
	return ctx_field(c, field_number(obj, field, flags, min, max, out, &e), &e);
}

bool fcgi_json_bool(struct fcgi_ctx *c, json_object *obj, const char *field, unsigned flags, bool *out)
{
	struct field_error e;
	return ctx_field(c, field_bool(obj, field, flags, out, &e), &e);
}

bool fcgi_json_object(struct fcgi_ctx *c, json_object *obj, const char *field, unsigned flags, json_object **out)
{
	struct field_error e;
	return ctx_field(c, field_object(obj, field, flags, out, &e), &e);
}

bool fcgi_json_array(struct fcgi_ctx *c, json_object *obj, const char *field, unsigned flags,
                     size_t max_items, json_object **out)
{
	struct field_error e;
	return ctx_field(c, field_array(obj, field, flags, max_items, out, &e), &e);
}

bool fcgi_json_only(struct fcgi_ctx *c, json_object *obj, const char *const *allowed)
{
	struct field_error e;
	return ctx_field(c, field_only(obj, allowed, &e), &e);
}

/* Start a reply: false (and a log line) if one was already made. */
static bool ctx_begin(struct fcgi_ctx *c, int status, const char *ctype)
{
	if (c->replied) {
		log_msg(LOG_LVL_ERROR, "double_reply", "handler replied twice (request %s)", c->rid);
		return false;
	}
	c->replied = true;
	c->status = status;
	c->ctype = ctype;
	buf_reset(c->out_body);
	return true;
}

void fcgi_reply_json(struct fcgi_ctx *c, int status, json_object *obj)
{
	size_t len = 0;
	if (!ctx_begin(c, status, "application/json")) {
		json_object_put(obj);
		return;
	}
	const char *s = json_object_to_json_string_length(obj, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE,
	                                                  &len);
	buf_append(c->out_body, s, len);
	c->reply = obj;
}

void fcgi_reply_raw(struct fcgi_ctx *c, int status, const char *content_type, const void *data, size_t len)
{
	if (ctx_begin(c, status, content_type))
		buf_append(c->out_body, data, len);
}

struct buf *fcgi_body_buf(struct fcgi_ctx *c)
{
	return c->out_body;
}

void fcgi_reply_buf(struct fcgi_ctx *c, int status, const char *content_type)
{
	if (c->replied) {
		log_msg(LOG_LVL_ERROR, "double_reply", "handler replied twice (request %s)", c->rid);
		return;
	}
	c->replied = true;
	c->status = status;
	c->ctype = content_type;
}

/*
 * The one error shape {"error","code","detail"}, written by json-c from the
 * formatted message made valid UTF-8 (utf8.c): a character a user sent (a
 * name, an asset) arrives unchanged, an invalid byte as U+FFFD, and a
 * message cut at its 511 bytes never ends in half a character.
 */
void fcgi_reply_error(struct fcgi_ctx *c, int status, const char *code, const char *fmt, ...)
{
	char msg[512], clean[UTF8_CLEAN_CAP(sizeof msg)];
	va_list ap;
	va_start(ap, fmt);
	int want = vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	size_t n = strlen(msg);
	if (want >= (int)sizeof msg)
		n = utf8_uncut_len(msg, n);
	utf8_clean(msg, n, clean, sizeof clean);
	json_object *o = json_object_new_object();
	json_object_object_add(o, "error", json_object_new_string(clean));
	json_object_object_add(o, "code", json_object_new_string(code));
	json_object_object_add(o, "detail", json_object_new_string(clean));
	fcgi_reply_json(c, status, o);
}

void fcgi_reply_db_error(struct fcgi_ctx *c, enum db_status st)
{
	if (st == DB_UNAVAILABLE) {
		fcgi_reply_error(c, 503, "unavailable", "the database is unavailable; retry shortly");
		fcgi_add_header(c, "Retry-After", "1");
		return;
	}
	if (st == DB_DUPLICATE) {
		fcgi_reply_error(c, 409, "conflict", "the resource already exists");
		return;
	}
	if (st == DB_CONFLICT) {
		log_msg(LOG_LVL_WARNING, "db_conflict", "request %s: %s", c->rid,
		        c->app->db ? db_error(c->app->db) : "no database");
		fcgi_reply_error(c, 503, "unavailable", "the request met concurrent work on the same rows; retry it");
		fcgi_add_header(c, "Retry-After", "1");
		c->db_conflict = true;
		return;
	}
	log_msg(LOG_LVL_ERROR, "db_error", "request %s: %s", c->rid,
	        c->app->db ? db_error(c->app->db) : "no database");
	fcgi_reply_error(c, 500, "internal", "internal error (request %s)", c->rid);
}

void fcgi_add_header(struct fcgi_ctx *c, const char *name, const char *value)
{
	/* Refuse header injection outright: a CR or LF would split the response. */
	if (strpbrk(name, "\r\n:") != NULL || strpbrk(value, "\r\n") != NULL) {
		log_msg(LOG_LVL_ERROR, "bad_header", "dropped an unsafe response header (request %s)", c->rid);
		return;
	}
	buf_puts(c->out_hdrs, name);
	buf_puts(c->out_hdrs, ": ");
	buf_puts(c->out_hdrs, value);
	buf_puts(c->out_hdrs, "\r\n");
}

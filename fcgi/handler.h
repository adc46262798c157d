/*
 * handler.h: the API a resource handler is written against.
 *
 * Adding an endpoint:
 *   1. Write fcgi/handlers/<resource>.c with one function per operation,
 *        void h_widgets_get(struct fcgi_ctx *c);
 *      and declare it in fcgi/handlers/handlers.h.
 *   2. Add one line to the table in fcgi/routes.c:
 *        { HTTP_GET, "/api/widgets/{id}", h_widgets_get, ACCESS_USER, BODY_NONE },
 *
 * By the time a handler runs, the pipeline (fcgi/app.c) has matched the
 * route, authenticated the caller and checked the role (401/403), applied
 * the CSRF rule, and for BODY_JSON routes checked the content type (415),
 * the size (413) and parsed the body into a JSON object with a depth limit
 * and no trailing bytes (400). A handler reads its inputs through the
 * accessors below, validates fields with the fcgi_json_* validators (each
 * replies 400 naming the field and returns false), and ends with exactly one
 * fcgi_reply_* call. Anything it allocates for the request comes from
 * fcgi_arena(c), which is cleared after the response; json-c objects given to
 * fcgi_reply_json() are released by the pipeline. A handler that returns
 * without replying produces a 500.
 *
 * Every response gets the security headers, Cache-Control: no-store and
 * X-Request-Id; every error body is {"error": msg, "code": code, "detail": msg}.
 */
#ifndef AGENTTEST_FCGI_HANDLER_H
#define AGENTTEST_FCGI_HANDLER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "common/arena.h"
#include "common/buf.h"
#include "common/cursor.h"
#include "common/db.h"

enum http_method {
	HTTP_GET,
	HTTP_POST,
	HTTP_PUT,
	HTTP_PATCH,
	HTTP_DELETE,
	HTTP__MAX,
	HTTP_HEAD = HTTP__MAX,  /* served by the GET route, body omitted */
	HTTP_OTHER,             /* any other method: 405 */
};

/* Who may call a route. */
enum fcgi_access {
	ACCESS_PUBLIC,             /* no credential needed (GET /health) */
	ACCESS_USER,               /* any authenticated caller */
	ACCESS_ADMIN,              /* callers with the admin role */
	ACCESS_ADMIN_OR_LOOPBACK,  /* admin, or a loopback client without a credential
	                              even when authentication is required (/metrics) */
	ACCESS_PUBLIC_ADMIN_VIEW,  /* public, but an admin (or a loopback client, as for
	                              ACCESS_ADMIN_OR_LOOPBACK) is recognised: who.admin
	                              is set; any other credential, valid or not, counts
	                              as none (GET /health adds admin-only fields) */
};

/* What the request body must be. */
enum fcgi_body {
	BODY_NONE,          /* ignored if sent */
	BODY_JSON,          /* required JSON object (415/413/400 otherwise) */
	BODY_JSON_OPTIONAL, /* JSON object if a body is sent, else fcgi_body() is NULL */
};

struct fcgi_ctx;
typedef void (*fcgi_handler_fn)(struct fcgi_ctx *c);

/* One line of the route table (fcgi/routes.c). */
struct fcgi_route {
	enum http_method method;
	const char      *pattern; /* "/api/agents/{id}/stop": literal segments and {name} parameters */
	fcgi_handler_fn  handler;
	enum fcgi_access access;
	enum fcgi_body   body;
};

/* How the caller was authenticated. */
enum fcgi_auth_via {
	AUTH_VIA_NONE,     /* public route, no credential */
	AUTH_VIA_BEARER,   /* Authorization: Bearer */
	AUTH_VIA_COOKIE,   /* cookie mantis_token */
	AUTH_VIA_QUERY,    /* ?token= */
	AUTH_VIA_LOOPBACK, /* no credential, loopback client (local admin) */
};

/* The caller. For the built-in identities (MANTIS_AUTH_TOKEN, loopback) the
 * database id is resolved on demand by fcgi_user_id(). */
struct fcgi_identity {
	enum fcgi_auth_via via;
	bool               authenticated;
	bool               admin;
	long long          user_id;   /* -1 until resolved for built-in identities */
	long long          token_id;  /* -1 when not a database token */
	char               name[65];
};

/* ---- request ---- */

/* The request method. */
enum http_method fcgi_method(const struct fcgi_ctx *c);
/* The decoded path parameter `name` of the route pattern (never NULL for a
 * name in the pattern). */
const char *fcgi_param(const struct fcgi_ctx *c, const char *name);
/* The decoded query parameter `name` (first occurrence), or NULL. */
const char *fcgi_query(struct fcgi_ctx *c, const char *name);
/*
 * Query parameter `name` as an integer in [min, max] (full-consumption
 * parse); def when absent. On a bad value replies 400 invalid_field and
 * returns false.
 */
bool fcgi_query_int(struct fcgi_ctx *c, const char *name, int64_t min, int64_t max, int64_t def, int64_t *out);
/*
 * Query parameter `cursor`: an opaque cursor of list kind within scope
 * (common/cursor.h), opened into *pos; *pos = def and *given = false when
 * absent (given may be NULL). A malformed, altered or foreign cursor (another list, user or
 * run) replies 400 bad_cursor and returns false.
 */
bool fcgi_query_cursor(struct fcgi_ctx *c, enum cursor_kind kind, const char *scope, int64_t def, int64_t *pos,
                       bool *given);
/* Append to b the sealed cursor of position pos (list kind, scope) as a JSON
 * string (the value of a `next_cursor`). */
void fcgi_put_cursor(struct fcgi_ctx *c, struct buf *b, enum cursor_kind kind, const char *scope, int64_t pos);
/* A request header by its CGI name ("HTTP_IF_NONE_MATCH"), or NULL. */
const char *fcgi_header(const struct fcgi_ctx *c, const char *cgi_name);
/* The parsed JSON body (BODY_JSON: an object; BODY_JSON_OPTIONAL: object or NULL). */
json_object *fcgi_body(const struct fcgi_ctx *c);
/* The caller. */
const struct fcgi_identity *fcgi_who(const struct fcgi_ctx *c);
/* The caller's users.id (resolving built-in identities once per worker);
 * on failure replies 503 and returns false. */
bool fcgi_user_id(struct fcgi_ctx *c, long long *id);
/* The request id (echoed X-Request-Id or generated). */
const char *fcgi_request_id(const struct fcgi_ctx *c);

/* ---- resources ---- */

/* The worker's database connection (see common/db.h); DB_UNAVAILABLE maps
 * to fcgi_reply_db_error(). */
struct db *fcgi_db(struct fcgi_ctx *c);
/* Memory that lives until the response is sent. */
struct arena *fcgi_arena(struct fcgi_ctx *c);
/* Configuration value of any key (see common/config.h). */
const char *fcgi_config(const struct fcgi_ctx *c, const char *key);
/* The server secret (AGENTTEST_SECRET_FILE, SECRET_BYTES bytes): the key of
 * common/secret_store.h. Never log or copy it beyond one call. */
const unsigned char *fcgi_server_key(const struct fcgi_ctx *c);

/* ---- validators (each replies 400 naming the field and returns false) ---- */

enum fcgi_field_flags {
	FIELD_OPTIONAL = 0, /* absent: true, *out untouched (pre-set the default) */
	FIELD_REQUIRED = 1, /* absent: 400 missing_field */
	FIELD_NULLABLE = 2, /* JSON null accepted as absent */
};

/* String field of obj with min..max bytes (valid UTF-8, no NUL). */
bool fcgi_json_string(struct fcgi_ctx *c, json_object *obj, const char *field, unsigned flags,
                      size_t min_len, size_t max_len, const char **out);
/* Integer field in [min, max] (a JSON integer; 2.0 or "2" are rejected).
 * min must be > INT64_MIN and max < INT64_MAX (json-c clamps overflow). */
bool fcgi_json_int(struct fcgi_ctx *c, json_object *obj, const char *field, unsigned flags,
                   int64_t min, int64_t max, int64_t *out);
/* Number field (integer or decimal) in [min, max], finite. */
bool fcgi_json_number(struct fcgi_ctx *c, json_object *obj, const char *field, unsigned flags,
                      double min, double max, double *out);
/* Boolean field. */
bool fcgi_json_bool(struct fcgi_ctx *c, json_object *obj, const char *field, unsigned flags, bool *out);
/* Object field. */
bool fcgi_json_object(struct fcgi_ctx *c, json_object *obj, const char *field, unsigned flags, json_object **out);
/* Array field with at most max_items items. */
bool fcgi_json_array(struct fcgi_ctx *c, json_object *obj, const char *field, unsigned flags,
                     size_t max_items, json_object **out);
/* Reject fields of obj not listed in allowed (NULL-terminated). */
bool fcgi_json_only(struct fcgi_ctx *c, json_object *obj, const char *const *allowed);

/* ---- responses (exactly one per request) ---- */

/* Reply with obj serialised (the pipeline releases obj). */
void fcgi_reply_json(struct fcgi_ctx *c, int status, json_object *obj);
/* Reply with len bytes of data and the given Content-Type. */
void fcgi_reply_raw(struct fcgi_ctx *c, int status, const char *content_type, const void *data, size_t len);
/* The body buffer to fill directly; then fcgi_reply_buf(). */
struct buf *fcgi_body_buf(struct fcgi_ctx *c);
/* Reply with the bytes written to fcgi_body_buf(). */
void fcgi_reply_buf(struct fcgi_ctx *c, int status, const char *content_type);
/* Reply {"error": msg, "code": code, "detail": msg}. */
void fcgi_reply_error(struct fcgi_ctx *c, int status, const char *code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* Reply 503 unavailable or 500 internal (logged) for a failed db_exec. */
void fcgi_reply_db_error(struct fcgi_ctx *c, enum db_status st);
/* Add a response header (name and value must be safe header text). */
void fcgi_add_header(struct fcgi_ctx *c, const char *name, const char *value);

#endif

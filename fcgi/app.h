/*
 * app.h: the private header of the FastCGI application (one sectioned
 * header for the pool's internals; handlers include only handler.h).
 *
 * The request pipeline (app.c) is pure: it takes the FastCGI parameters, a
 * body reader and a response buffer, so the unit tests and the fuzzer drive
 * exactly the code the workers run, without libfcgi or a socket.
 */
#ifndef AGENTTEST_FCGI_APP_H
#define AGENTTEST_FCGI_APP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/arena.h"
#include "common/buf.h"
#include "common/config.h"
#include "common/db.h"
#include "common/secret.h"
#include "common/token.h"
#include "common/tokstore.h"
#include "fcgi/handler.h"

/* ---- limits ---- */
#define REQ_MAX_PARAMS       256     /* FastCGI parameters, headers included */
#define REQ_MAX_PARAM_BYTES  65536   /* their total size */
#define REQ_MAX_PATH         2048
#define REQ_MAX_QUERY        8192
#define REQ_MAX_QUERY_PARAMS 64
#define ROUTE_MAX_SEGMENTS   16
#define ROUTE_MAX_PARAMS     8
#define JSON_MAX_DEPTH       32
#define REQUEST_ID_MAX       64

/* ---- request (request.c) ---- */

struct kv {
	const char *name;
	const char *value;
};

struct fcgi_request {
	char *const     *envp;
	enum http_method method;
	const char      *method_str;
	const char      *path;       /* decoded? no: raw path of REQUEST_URI, without the query */
	size_t           path_len;
	const char      *query;      /* raw query string ("" if none) */
	const char      *remote_addr;
	const char      *host;
	const char      *content_type;
	const char      *authorization;
	const char      *cookie;
	const char      *origin;
	const char      *xrw;        /* X-Requested-With */
	const char      *request_id; /* X-Request-Id as sent */
	bool             https;
	long long        content_length; /* -1 when absent */
	bool             qparsed;
	struct kv       *qs;
	size_t           nqs;
};

enum req_status {
	REQ_OK,
	REQ_TOO_LARGE,   /* too many or too large parameters */
	REQ_BAD,         /* malformed method, URI or length */
};

/* Fill r from the FastCGI parameters envp (NAME=value strings, NULL-ended). */
enum req_status req_parse(struct fcgi_request *r, char *const *envp, const char **why);
/* Decode the query string into r->qs (arena memory); false on bad encoding
 * or too many parameters. */
bool req_query_parse(struct fcgi_request *r, struct arena *a);
/* First value of the query parameter name, or NULL (parse first). */
const char *req_query_get(const struct fcgi_request *r, const char *name);
/* The value of cookie `name` in a Cookie header (quotes removed); false if absent. */
bool req_cookie(const char *header, const char *name, const char **val, size_t *len);
/* Parse "Bearer <token>": 1 and the token, 0 when header is NULL,
 * -1 for another scheme or an empty token. */
int req_bearer(const char *header, const char **tok, size_t *len);
/* A FastCGI parameter by name, or NULL. */
const char *req_env(char *const *envp, const char *name);
/* Method name -> enum. */
enum http_method req_method(const char *s);
/* Enum -> method name. */
const char *req_method_name(enum http_method m);
/* True if s is a valid client request id: [A-Za-z0-9._-]{1,64}. */
bool req_id_valid(const char *s);
/* True if the content type is JSON: application/json or application/<x>+json, any parameters. */
bool req_is_json_type(const char *ct);

/* ---- router (router.c) ---- */

struct router;

struct route_match {
	const struct fcgi_route *route;
	size_t                   index;              /* in the table */
	struct kv                params[ROUTE_MAX_PARAMS];
	size_t                   nparams;
	unsigned                 allow;              /* bit per method, for 405 */
};

enum router_status {
	ROUTER_FOUND,
	ROUTER_NOT_FOUND,
	ROUTER_BAD_METHOD, /* path known, method not: m->allow set */
	ROUTER_BAD_PATH,   /* malformed path (bad escape, "." or ".." segment, too long) */
};

/* Compile a route table; NULL with a message on an invalid pattern or a
 * duplicate (method, pattern). */
struct router *router_new(const struct fcgi_route *routes, size_t n, struct buf *err);
/* Match method + path (raw, percent-encoded); parameter values are decoded into arena memory. */
enum router_status router_match(const struct router *r, enum http_method m, const char *path, size_t len,
                                struct arena *a, struct route_match *out);
/* Write "GET, POST" for an allow mask into b. */
void router_allow_header(unsigned allow, struct buf *b);
/* Number of routes. */
size_t router_count(const struct router *r);
void router_free(struct router *r);

/* ---- JSON bodies and validators (json.c) ---- */

enum body_status {
	BODY_OK,
	BODY_EMPTY,
	BODY_MALFORMED,
	BODY_TOO_DEEP,
	BODY_TRAILING,
	BODY_NOT_OBJECT,
};

/* Parse len bytes as one JSON object with depth <= JSON_MAX_DEPTH, strict
 * syntax, valid UTF-8 and nothing but whitespace after it. */
enum body_status body_parse(const char *s, size_t len, json_object **out, char *msg, size_t msglen);

/* A validation failure: code is missing_field or invalid_field. */
struct field_error {
	const char *code;
	char        msg[200];
};

bool field_string(json_object *obj, const char *field, unsigned flags, size_t min_len, size_t max_len,
                  const char **out, struct field_error *e);
bool field_int(json_object *obj, const char *field, unsigned flags, int64_t min, int64_t max,
               int64_t *out, struct field_error *e);
bool field_number(json_object *obj, const char *field, unsigned flags, double min, double max,
                  double *out, struct field_error *e);
bool field_bool(json_object *obj, const char *field, unsigned flags, bool *out, struct field_error *e);
bool field_object(json_object *obj, const char *field, unsigned flags, json_object **out, struct field_error *e);
bool field_array(json_object *obj, const char *field, unsigned flags, size_t max_items, json_object **out,
                 struct field_error *e);
bool field_only(json_object *obj, const char *const *allowed, struct field_error *e);

/* ---- authentication (auth.c) ---- */

struct auth_config {
	const char   *hosts;         /* AGENTTEST_ALLOWED_HOSTS (NULL: HOSTS_DEFAULT) */
	bool          required;      /* MANTIS_AUTH_TOKEN set or AGENTTEST_AUTH=required */
	bool          have_shared;   /* MANTIS_AUTH_TOKEN set */
	unsigned char shared_hash[TOKEN_HASH_BYTES];
	unsigned char key[SECRET_BYTES];
};

/* Look a token hash up (the database in the workers, a table in tests). */
typedef enum db_status (*auth_lookup_fn)(void *ctx, const unsigned char hash[TOKEN_HASH_BYTES],
                                         struct tokstore_identity *who, bool *found);

enum auth_status {
	AUTH_OK,
	AUTH_UNAUTHORIZED, /* 401 */
	AUTH_FORBIDDEN,    /* 403: authenticated, role too low */
	AUTH_UNAVAILABLE,  /* 503: token store down */
};

/* Prepare cfg: copy the key, hash MANTIS_AUTH_TOKEN (may be NULL). */
void auth_setup(struct auth_config *cfg, const unsigned char key[SECRET_BYTES], const char *shared, bool required);
/* The Host names answered by default: the loopback names. */
#define HOSTS_DEFAULT "localhost,127.0.0.1,[::1]"
/* True if the Host header value host (name, optional :port) names one of
 * the comma- or space-separated names of list (NULL: HOSTS_DEFAULT),
 * case-insensitively; false for NULL or a malformed value (hosts.c). */
bool hosts_allowed(const char *list, const char *host);
/* May a request authenticated by ?token= set the sign-in cookie? Only
 * without a mantis_token cookie and with Sec-Fetch-Site (fetch_site, may be
 * NULL) "same-origin" or "none" (login CSRF: a link on another site). */
bool auth_query_cookie_ok(const struct fcgi_request *r, const char *fetch_site);
/* True for REMOTE_ADDR exactly 127.0.0.1 or ::1. */
bool auth_is_loopback(const char *remote_addr);
/*
 * Decide who the caller is and whether they may use a route with `access`.
 * Credentials: Bearer, else cookie mantis_token, else ?token= (r's query
 * must be parsed). A presented credential that is not valid is 401 even
 * from loopback. Without one: public routes pass; loopback clients are the
 * local admin unless auth is required (ADMIN_OR_LOOPBACK routes admit them
 * anyway); everyone else gets 401. why receives the message for errors.
 */
enum auth_status auth_check(const struct auth_config *cfg, const struct fcgi_request *r, enum fcgi_access access,
                            auth_lookup_fn lookup, void *lookup_ctx, struct fcgi_identity *who,
                            const char **why);
/*
 * The CSRF rule (spec/mantis.md §5.2) for state-changing methods of callers
 * authenticated by cookie or by the loopback rule: an Origin must equal
 * http(s)://<Host>; without Origin, X-Requested-With: XMLHttpRequest or a
 * JSON content type is required. True if the request may proceed.
 */
bool auth_csrf_ok(const struct fcgi_request *r, const struct fcgi_identity *who);
/* True if v can be a cookie value unquoted (RFC 6265 cookie-octets). */
bool auth_cookie_safe(const char *v, size_t n);

/* ---- the /metrics counters (metrics.c): prefix prom_, so no second
 * `struct metrics` next to the backtest results of evaluator/metrics.h ---- */

#define PROM_NSTATUS 22
#define PROM_NBUCKETS 14

struct prom;

/* Map a region shared by every process forked afterwards, sized for nroutes. */
struct prom *prom_new(size_t nroutes);
/* Count one request: route index (nroutes = unmatched), status, duration. */
void prom_request(struct prom *m, size_t route, int status, uint64_t duration_us);
void prom_worker_restart(struct prom *m);
void prom_db_reconnect(struct prom *m);
void prom_set_workers(struct prom *m, long n);
/* Prometheus text exposition into b. */
void prom_render(const struct prom *m, const struct fcgi_route *routes, size_t nroutes, struct buf *b);
void prom_free(struct prom *m);

/* ---- the application (app.c) ---- */

struct fcgi_app {
	const struct config     *cfg;
	const struct fcgi_route *routes;
	size_t                   nroutes;
	struct router           *router;
	struct prom          *metrics;
	struct auth_config       auth;
	struct db               *db;         /* this worker's connection (NULL in tests) */
	auth_lookup_fn           lookup;     /* token store */
	void                    *lookup_ctx;
	char                     rid_prefix[16];
	uint64_t                 rid_counter;
	long long                builtin_ids[2]; /* users.id of 'local' and 'mantis-admin', 0 unknown */
	int                      health_db;      /* cached: 1 ok, 0 down, -1 never checked */
	long long                health_at_ms;
	struct arena             arena;
	struct buf               log;
	struct buf               in_body;   /* request body, reused */
	struct buf               out_body;  /* response body, reused */
	struct buf               out_hdrs;  /* extra response headers, reused */
};

/* The state of one request (handlers see it only through handler.h). */
struct fcgi_ctx {
	struct fcgi_app     *app;
	struct fcgi_request  req;
	struct route_match   match;
	struct fcgi_identity who;
	json_object         *body;       /* parsed request body (released after the reply) */
	json_object         *reply;      /* object given to fcgi_reply_json */
	struct buf          *out_body;   /* response body */
	struct buf          *out_hdrs;   /* extra response headers */
	const char          *ctype;
	int                  status;
	bool                 replied;
	bool                 db_conflict; /* the reply is a DB_CONFLICT refusal (app_dispatch may run it again) */
	char                 rid[REQUEST_ID_MAX + 1];
};

/* The application of a context (for built-in handlers: health, metrics). */
struct fcgi_app *fcgi_ctx_app(struct fcgi_ctx *c);
/* Database reachability, checked at most once per second per worker. */
bool app_db_healthy(struct fcgi_app *app);

/* Reads up to n body bytes; returns bytes read, 0 at the end, -1 on error. */
typedef ssize_t (*body_read_fn)(void *io, char *buf, size_t n);

/* One request/response exchange. */
struct fcgi_exchange {
	char *const *envp;
	body_read_fn read;
	void        *io;
	struct buf  *out;        /* the complete FastCGI stdout: headers + body */
	int          status;     /* after app_handle */
	bool         drained;    /* false: the body was not read to the end */
};

/* Initialise the parts of app that do not depend on the process. */
bool app_init(struct fcgi_app *app, const struct config *cfg, const struct fcgi_route *routes, size_t nroutes,
              struct prom *metrics, const unsigned char key[SECRET_BYTES], struct buf *err);
/* Run one request through the pipeline; writes the response into x->out. */
void app_handle(struct fcgi_app *app, struct fcgi_exchange *x);
/* Release what app_init and the requests allocated. */
void app_free(struct fcgi_app *app);
/* The database-backed token lookup (ctx is the struct db). */
enum db_status app_db_lookup(void *ctx, const unsigned char hash[TOKEN_HASH_BYTES],
                             struct tokstore_identity *who, bool *found);
/* Monotonic milliseconds. */
long long app_now_ms(void);

/* ---- the route table (routes.c) ---- */
extern const struct fcgi_route fcgi_routes[];
extern const size_t fcgi_nroutes;

/* ---- pool (pool.c, worker.c, sock.c) ---- */

struct pool_opts {
	const char *config_path;
	const char *socket;  /* overrides AGENTTEST_FCGI_SOCKET */
	long        workers; /* 0: from the configuration */
};

/* Open the listening socket: an absolute unix path (mode 0660, a stale socket
 * file is replaced) or HOST:PORT. Returns the fd or -1 with a message. */
int sock_listen(const char *spec, struct buf *err);
/* Run the master until SIGTERM/SIGINT; returns the exit status. */
int pool_run(const struct pool_opts *o);
/* A worker's life: accept and serve until told to stop; never returns. */
void worker_main(int listen_fd, struct config *cfg, struct prom *m, const unsigned char key[SECRET_BYTES],
                 int slot) __attribute__((noreturn));

#endif

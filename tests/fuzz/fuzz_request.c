/*
 * fuzz_request: libFuzzer driver over the whole request pipeline
 * (app_handle): FastCGI parameter parsing, route matching and path
 * decoding, query strings, cookies, the Authorization header, token
 * parsing and hashing, CSRF, body limits and JSON bodies, validators and
 * response building.
 *
 * Input: line 1 the method, line 2 the request URI, then NAME=value lines
 * (FastCGI parameters such as HTTP_COOKIE or CONTENT_TYPE) up to an empty
 * line, then the body. The first byte's low bit picks the application:
 * automatic (loopback) authentication or a configured MANTIS_AUTH_TOKEN.
 * The token store is a fixed table, so no database is needed.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "common/log.h"
#include "fcgi/app.h"
#include "fcgi/handlers/handlers.h"

#define FUZZ_MAX_PARAMS 64

static const char fuzz_token[] = "at_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
static unsigned char fuzz_key[SECRET_BYTES];

/* A handler that reads every kind of input a real handler reads. */
static void fuzz_h_item(struct fcgi_ctx *c)
{
	const char *name = NULL;
	int64_t n = 1, tail = 0;
	double x = 0;
	bool flag = false;
	json_object *o = NULL, *arr = NULL;
	static const char *const allowed[] = { "name", "n", "x", "flag", "o", "arr", NULL };
	if (!fcgi_query_int(c, "tail", 1, 5000, 200, &tail))
		return;
	if (fcgi_body(c) != NULL &&
	    (!fcgi_json_only(c, fcgi_body(c), allowed) ||
	     !fcgi_json_string(c, fcgi_body(c), "name", FIELD_OPTIONAL, 0, 64, &name) ||
	     !fcgi_json_int(c, fcgi_body(c), "n", FIELD_OPTIONAL | FIELD_NULLABLE, -100, 100, &n) ||
	     !fcgi_json_number(c, fcgi_body(c), "x", FIELD_OPTIONAL, -1e9, 1e9, &x) ||
	     !fcgi_json_bool(c, fcgi_body(c), "flag", FIELD_OPTIONAL, &flag) ||
	     !fcgi_json_object(c, fcgi_body(c), "o", FIELD_OPTIONAL, &o) ||
	     !fcgi_json_array(c, fcgi_body(c), "arr", FIELD_OPTIONAL, 16, &arr)))
		return;
	json_object *r = json_object_new_object();
	const char *id = fcgi_param(c, "id"); /* NULL on /api/items/import */
	json_object_object_add(r, "id", id ? json_object_new_string(id) : NULL);
	json_object_object_add(r, "q", fcgi_query(c, "q") ? json_object_new_string(fcgi_query(c, "q")) : NULL);
	json_object_object_add(r, "who", json_object_new_string(fcgi_who(c)->name));
	json_object_object_add(r, "name", name ? json_object_new_string(name) : NULL);
	json_object_object_add(r, "n", json_object_new_int64(n));
	fcgi_add_header(c, "X-Fuzz", fcgi_header(c, "HTTP_X_FUZZ") ? fcgi_header(c, "HTTP_X_FUZZ") : "-");
	fcgi_reply_json(c, 200, r);
}

static const struct fcgi_route fuzz_routes[] = {
	{ HTTP_GET, "/health", h_health, ACCESS_PUBLIC, BODY_NONE },
	{ HTTP_GET, "/metrics", h_metrics, ACCESS_ADMIN_OR_LOOPBACK, BODY_NONE },
	{ HTTP_GET, "/api/items/{id}", fuzz_h_item, ACCESS_USER, BODY_NONE },
	{ HTTP_POST, "/api/items/{id}", fuzz_h_item, ACCESS_USER, BODY_JSON },
	{ HTTP_PUT, "/api/items/{id}/x/{sub}", fuzz_h_item, ACCESS_ADMIN, BODY_JSON_OPTIONAL },
	{ HTTP_DELETE, "/api/items/{id}", fuzz_h_item, ACCESS_ADMIN, BODY_NONE },
	{ HTTP_POST, "/api/items/import", fuzz_h_item, ACCESS_USER, BODY_JSON },
};
#define FUZZ_NROUTES (sizeof fuzz_routes / sizeof fuzz_routes[0])

static struct config fuzz_cfg[2];
static struct fcgi_app fuzz_app[2];
static struct prom *fuzz_metrics;

/* The token store: fuzz_token is an admin token. */
static enum db_status fuzz_lookup(void *ctx, const unsigned char hash[TOKEN_HASH_BYTES],
                                  struct tokstore_identity *who, bool *found)
{
	unsigned char h[TOKEN_HASH_BYTES];
	(void)ctx;
	token_hash(fuzz_key, fuzz_token, sizeof fuzz_token - 1, h);
	*found = token_hash_equal(h, hash);
	if (*found) {
		memset(who, 0, sizeof *who);
		who->user_id = 1;
		who->token_id = 1;
		memcpy(who->name, "fuzz", 5);
		who->role = TOKSTORE_ROLE_ADMIN;
		who->last_used_age_s = -1;
	}
	return DB_OK;
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct buf err = BUF_INIT;
	(void)argc;
	(void)argv;
	if (sodium_init() < 0)
		abort();
	memset(fuzz_key, 7, sizeof fuzz_key);
	log_set_level(LOG_LVL_ERROR);
	unsetenv("AGENTTEST_CONFIG");
	setenv("AGENTTEST_BODY_LIMIT", "4096", 1);
	fuzz_metrics = prom_new(FUZZ_NROUTES);
	for (int i = 0; i < 2; i++) {
		if (i == 1)
			setenv("MANTIS_AUTH_TOKEN", "Correct-Horse-Battery-42", 1);
		if (!config_load(&fuzz_cfg[i], "/dev/null", &err) ||
		    !app_init(&fuzz_app[i], &fuzz_cfg[i], fuzz_routes, FUZZ_NROUTES, fuzz_metrics, fuzz_key, &err))
			abort();
		fuzz_app[i].lookup = fuzz_lookup;
	}
	buf_free(&err);
	return 0;
}

struct fuzz_body {
	const uint8_t *p;
	size_t         left;
};

/* body_read_fn over the rest of the input, in small pieces. */
static ssize_t fuzz_read(void *io, char *buf, size_t n)
{
	struct fuzz_body *b = io;
	if (n > b->left)
		n = b->left;
	if (n > 1000)
		n = 1000;
	memcpy(buf, b->p, n);
	b->p += n;
	b->left -= n;
	return (ssize_t)n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *copy, *envp[FUZZ_MAX_PARAMS + 3], *p, *end;
	char method[64 + 16], uri[4096 + 16];
	struct buf out = BUF_INIT;
	size_t n = 0;

	if (size < 1)
		return 0;
	struct fcgi_app *app = &fuzz_app[data[0] & 1];
	copy = malloc(size);
	memcpy(copy, data + 1, size - 1);
	copy[size - 1] = '\0';
	p = copy;
	end = copy + size - 1;
	/* method and URI lines */
	char *nl = memchr(p, '\n', (size_t)(end - p));
	if (nl == NULL || nl - p > 64)
		goto out;
	*nl = '\0';
	snprintf(method, sizeof method, "REQUEST_METHOD=%s", p);
	envp[n++] = method;
	p = nl + 1;
	nl = memchr(p, '\n', (size_t)(end - p));
	if (nl == NULL || nl - p > 4096)
		goto out;
	*nl = '\0';
	snprintf(uri, sizeof uri, "REQUEST_URI=%s", p);
	envp[n++] = uri;
	p = nl + 1;
	/* parameters up to an empty line */
	while (p < end && n < FUZZ_MAX_PARAMS) {
		nl = memchr(p, '\n', (size_t)(end - p));
		if (nl == NULL)
			break;
		*nl = '\0';
		if (nl == p) {
			p = nl + 1;
			break;
		}
		envp[n++] = p;
		p = nl + 1;
	}
	envp[n] = NULL;
	struct fuzz_body body = { (const uint8_t *)p, (size_t)(end - p) };
	struct fcgi_exchange x = { .envp = envp, .read = fuzz_read, .io = &body, .out = &out };
	app_handle(app, &x);
	if (x.status < 200 || x.status > 599 || out.len == 0)
		abort();
	/* the header block is always terminated and never contains a bare LF */
	const char *sep = strstr(buf_cstr(&out), "\r\n\r\n");
	if (sep == NULL)
		abort();
	for (const char *h = buf_cstr(&out); h < sep; h++)
		if (*h == '\n' && h[-1] != '\r')
			abort();
out:
	buf_free(&out);
	free(copy);
	return 0;
}

/*
 * auth.c: who is calling, and may they.
 *
 * Rules (MANTIS §5.1/§5.2, with the holes closed):
 *  - Credentials are read from, in order, Authorization: Bearer, the cookie
 *    mantis_token, and the query parameter token. The first one present is
 *    the one judged; a presented credential that is not valid is 401 even
 *    from a loopback client (a wrong token is never silently upgraded).
 *  - A credential is valid if it equals MANTIS_AUTH_TOKEN (the shared admin
 *    token) or is an unrevoked API token. Both checks hash the presented text
 *    with the server key and compare 32-byte hashes with crypto_verify_32, so
 *    neither the length nor the content of a secret leaks through timing.
 *  - ACCESS_PUBLIC_ADMIN_VIEW (GET /health) is public: it is judged as
 *    ACCESS_ADMIN_OR_LOOPBACK, and any refusal (bad token, user role, token
 *    store down) turns into an anonymous caller instead of an error.
 *  - Without a credential: public routes pass; if authentication is required
 *    (MANTIS_AUTH_TOKEN set or AGENTTEST_AUTH=required) the answer is 401;
 *    otherwise a loopback client (REMOTE_ADDR exactly 127.0.0.1 or ::1, as
 *    nginx passes it; 127.0.0.2 is not loopback for this rule) is the local
 *    admin, and anyone else gets 401 explaining why. The loopback rule needs
 *    a Host header naming one of the allowed hosts (hosts.c: a rebound
 *    domain reaches 127.0.0.1 too).
 *  - CSRF: state-changing requests that rely on ambient authority (cookie,
 *    loopback) need a same-origin Origin, or X-Requested-With:
 *    XMLHttpRequest, or a JSON content type. Bearer and ?token= requests
 *    carry their credential explicitly and are exempt.
 *  - Login CSRF: ?token= authenticates its own request, but it becomes the
 *    sign-in cookie only when no mantis_token cookie exists yet and the
 *    browser says the request was not started by another site
 *    (Sec-Fetch-Site: same-origin, or none for an address the user typed
 *    or bookmarked); a link on another site cannot sign the victim in.
 */
#include <stdio.h>
#include <string.h>

#include <sodium.h>

#include "common/parse.h"
#include "fcgi/app.h"

void auth_setup(struct auth_config *cfg, const unsigned char key[SECRET_BYTES], const char *shared, bool required)
{
	memset(cfg, 0, sizeof *cfg);
	memcpy(cfg->key, key, SECRET_BYTES);
	cfg->required = required || shared != NULL;
	if (shared != NULL) {
		cfg->have_shared = true;
		token_hash(cfg->key, shared, strlen(shared), cfg->shared_hash);
	}
}

bool auth_is_loopback(const char *remote_addr)
{
	return remote_addr != NULL && (strcmp(remote_addr, "127.0.0.1") == 0 || strcmp(remote_addr, "::1") == 0);
}

/* Find the credential; returns its source (AUTH_VIA_NONE if none) and sets
 * *bad when the Authorization header is present but not a usable Bearer. */
static enum fcgi_auth_via auth_find(const struct fcgi_request *r, const char **tok, size_t *len, bool *bad)
{
	const char *v;
	*bad = false;
	int b = req_bearer(r->authorization, tok, len);
	if (b == 1)
		return AUTH_VIA_BEARER;
	if (b < 0) {
		*bad = true;
		return AUTH_VIA_BEARER;
	}
	if (req_cookie(r->cookie, "mantis_token", tok, len) && *len > 0)
		return AUTH_VIA_COOKIE;
	v = req_query_get(r, "token");
	if (v != NULL && v[0] != '\0') {
		*tok = v;
		*len = strlen(v);
		return AUTH_VIA_QUERY;
	}
	return AUTH_VIA_NONE;
}

/* Validate a presented credential; AUTH_OK fills who. */
static enum auth_status auth_verify(const struct auth_config *cfg, const char *tok, size_t len,
                                    auth_lookup_fn lookup, void *lookup_ctx, struct fcgi_identity *who,
                                    const char **why)
{
	unsigned char h[TOKEN_HASH_BYTES];
	struct tokstore_identity id;
	bool found = false;

	*why = "invalid or revoked token";
	if (len == 0 || len > TOKEN_MAX_PRESENTED)
		return AUTH_UNAUTHORIZED;
	token_hash(cfg->key, tok, len, h);
	if (cfg->have_shared && token_hash_equal(h, cfg->shared_hash)) {
		who->admin = true;
		who->user_id = -1;
		who->token_id = -1;
		snprintf(who->name, sizeof who->name, "mantis-admin");
		return AUTH_OK;
	}
	if (!token_well_formed(tok, len) || lookup == NULL)
		return AUTH_UNAUTHORIZED;
	enum db_status st = lookup(lookup_ctx, h, &id, &found);
	sodium_memzero(h, sizeof h);
	if (st != DB_OK) {
		*why = "the token store is unavailable";
		return AUTH_UNAVAILABLE;
	}
	if (!found)
		return AUTH_UNAUTHORIZED;
	who->admin = id.role == TOKSTORE_ROLE_ADMIN;
	who->user_id = id.user_id;
	who->token_id = id.token_id;
	memcpy(who->name, id.name, sizeof who->name);
	return AUTH_OK;
}

enum auth_status auth_check(const struct auth_config *cfg, const struct fcgi_request *r, enum fcgi_access access,
                            auth_lookup_fn lookup, void *lookup_ctx, struct fcgi_identity *who,
                            const char **why)
{
	const char *tok = NULL;
	size_t len = 0;
	bool bad;

	memset(who, 0, sizeof *who);
	who->user_id = -1;
	who->token_id = -1;
	if (access == ACCESS_PUBLIC)
		return AUTH_OK; /* credentials are not even looked at */
	if (access == ACCESS_PUBLIC_ADMIN_VIEW) {
		if (auth_check(cfg, r, ACCESS_ADMIN_OR_LOOPBACK, lookup, lookup_ctx, who, why) != AUTH_OK) {
			memset(who, 0, sizeof *who); /* anonymous, as on ACCESS_PUBLIC */
			who->user_id = -1;
			who->token_id = -1;
		}
		return AUTH_OK;
	}
	who->via = auth_find(r, &tok, &len, &bad);
	if (bad) {
		*why = "unsupported Authorization header (use 'Bearer <token>')";
		return AUTH_UNAUTHORIZED;
	}
	if (who->via != AUTH_VIA_NONE) {
		enum auth_status st = auth_verify(cfg, tok, len, lookup, lookup_ctx, who, why);
		if (st != AUTH_OK)
			return st;
		who->authenticated = true;
	} else if (auth_is_loopback(r->remote_addr) && hosts_allowed(cfg->hosts, r->host) &&
	           (!cfg->required || access == ACCESS_ADMIN_OR_LOOPBACK)) {
		who->via = AUTH_VIA_LOOPBACK;
		who->authenticated = true;
		who->admin = true;
		snprintf(who->name, sizeof who->name, "local");
	} else if (cfg->required) {
		*why = "authentication required: send 'Authorization: Bearer <token>'";
		return AUTH_UNAUTHORIZED;
	} else {
		*why = "no token configured: only loopback clients are admitted without a token "
		       "(create one with 'agenttest token create')";
		return AUTH_UNAUTHORIZED;
	}
	if ((access == ACCESS_ADMIN || access == ACCESS_ADMIN_OR_LOOPBACK) && !who->admin) {
		*why = "this endpoint needs the admin role";
		return AUTH_FORBIDDEN;
	}
	return AUTH_OK;
}

bool auth_csrf_ok(const struct fcgi_request *r, const struct fcgi_identity *who)
{
	if (r->method == HTTP_GET || r->method == HTTP_HEAD)
		return true;
	if (who->via != AUTH_VIA_COOKIE && who->via != AUTH_VIA_LOOPBACK)
		return true;
	if (r->origin != NULL) {
		const char *o = r->origin;
		size_t skip;
		if (r->host == NULL || r->host[0] == '\0')
			return false;
		if (strncmp(o, "http://", 7) == 0)
			skip = 7;
		else if (strncmp(o, "https://", 8) == 0)
			skip = 8;
		else
			return false;
		return parse_ieq(o + skip, strlen(o + skip), r->host);
	}
	if (r->xrw != NULL && parse_ieq(r->xrw, strlen(r->xrw), "XMLHttpRequest"))
		return true;
	return req_is_json_type(r->content_type);
}

bool auth_query_cookie_ok(const struct fcgi_request *r, const char *fetch_site)
{
	const char *v;
	size_t n;
	if (req_cookie(r->cookie, "mantis_token", &v, &n))
		return false;
	return fetch_site != NULL && (strcmp(fetch_site, "same-origin") == 0 || strcmp(fetch_site, "none") == 0);
}

bool auth_cookie_safe(const char *v, size_t n)
{
	if (n == 0)
		return false;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)v[i];
		if (c < 0x21 || c > 0x7e || c == '"' || c == ',' || c == ';' || c == '\\')
			return false;
	}
	return true;
}

/*
 * The CoinGlass API key, the original's routes (spec/mantis.md §5.3) with
 * the key encrypted at rest instead of a plaintext file:
 *
 *   GET    /api/coinglass-key   any user: {set, masked} (masked null when unset)
 *   POST   /api/coinglass-key   admin, {key}: 1..256 of [A-Za-z0-9._-] (the
 *          original's rule) -> {set: true, masked}
 *   DELETE /api/coinglass-key   admin -> {set: false}
 *
 * One server-wide key: the secret store's admin default (owner 0, kind
 * "coinglass", common/secret_store.h). The key itself is never returned
 * nor logged; the mask shows its first 4 and last 4 characters at most.
 */
#include <string.h>

#include <sodium.h>

#include "fcgi/handlers/handlers.h"
#include "secret_store.h"

/* The original's key rule: alphanumerics, '-', '_', '.'. */
bool cgk_valid(const char *k)
{
	size_t n = strlen(k);
	if (n == 0 || n > CGK_MAX)
		return false;
	for (size_t i = 0; i < n; i++) {
		char ch = k[i];
		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '-' ||
		      ch == '_' || ch == '.'))
			return false;
	}
	return true;
}

/* Reply {set, masked} for the stored key (read and wiped here). */
static void cgk_reply_state(struct fcgi_ctx *c, int status)
{
	struct buf plain = BUF_INIT, err = BUF_INIT, mask = BUF_INIT;
	int got = secret_store_get(fcgi_db(c), fcgi_server_key(c), 0, "coinglass", &plain, &err);
	if (got > 0)
		secret_store_mask(buf_cstr(&plain), &mask);
	if (plain.data)
		sodium_memzero(plain.data, plain.cap);
	buf_free(&plain);
	if (got < 0)
		fcgi_reply_error(c, 500, "internal", "%s", buf_cstr(&err));
	else {
		json_object *o = json_object_new_object();
		json_object_object_add(o, "set", json_object_new_boolean(got > 0));
		json_object_object_add(o, "masked", got > 0 ? json_object_new_string(buf_cstr(&mask)) : NULL);
		fcgi_reply_json(c, status, o);
	}
	buf_free(&err);
	buf_free(&mask);
}

void h_coinglass_key_get(struct fcgi_ctx *c)
{
	cgk_reply_state(c, 200);
}

void h_coinglass_key_set(struct fcgi_ctx *c)
{
	static const char *const allowed[] = { "key", NULL };
	json_object *body = fcgi_body(c);
	const char *key = NULL;
	struct buf err = BUF_INIT;
	if (!fcgi_json_only(c, body, allowed) || !fcgi_json_string(c, body, "key", FIELD_REQUIRED, 1, CGK_MAX, &key))
		return;
	if (!cgk_valid(key)) {
		fcgi_reply_error(c, 400, "invalid_field", "key: 1 to %d letters, digits, '-', '_' or '.'", CGK_MAX);
		return;
	}
	if (!secret_store_put(fcgi_db(c), fcgi_server_key(c), 0, "coinglass", key, &err))
		fcgi_reply_error(c, 503, "unavailable", "%s", buf_cstr(&err));
	else
		cgk_reply_state(c, 200);
	buf_free(&err);
}

void h_coinglass_key_delete(struct fcgi_ctx *c)
{
	struct buf err = BUF_INIT;
	if (secret_store_delete(fcgi_db(c), 0, "coinglass", &err) < 0)
		fcgi_reply_error(c, 503, "unavailable", "%s", buf_cstr(&err));
	else {
		json_object *o = json_object_new_object();
		json_object_object_add(o, "set", json_object_new_boolean(0));
		fcgi_reply_json(c, 200, o);
	}
	buf_free(&err);
}

/*
 * The Anthropic API key of LLM agents, the original's routes
 * (spec/mantis.md §5.3) with the key encrypted at rest in the secret store
 * (common/secret_store.h, kind "anthropic") instead of a plaintext file,
 * and one key per owner with an admin-set default:
 *
 *   GET    /api/anthropic-key  any user: {set, masked, source} for the key
 *          the caller's agents would use: their own ("own"), else the
 *          admin default ("default"); {set: false, masked: null,
 *          source: null} when neither exists
 *   POST   /api/anthropic-key  {key, default?}: the caller's own key; with
 *          default: true (admins only) the default. The original's rule:
 *          "sk-ant-" then only letters, digits, '-', '_', at most 256 bytes
 *   DELETE /api/anthropic-key[?default=1]  the caller's own key (the
 *          default with default=1, admins only); replies the state after
 *
 * The key is never returned nor logged; the mask is the original's: the
 * first 8 characters, "...", the last 4 ("***" for a key of 15 or fewer).
 */
#include <string.h>

#include <sodium.h>

#include "fcgi/handlers/handlers.h"
#include "secret_store.h"

#define AK_MAX    256
#define AK_PREFIX "sk-ant-"

/* The original's key rule. */
static bool ak_valid(const char *k)
{
	size_t n = strlen(k), p = strlen(AK_PREFIX);
	if (n <= p || n > AK_MAX || strncmp(k, AK_PREFIX, p) != 0)
		return false;
	for (size_t i = p; i < n; i++) {
		char ch = k[i];
		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '-' ||
		      ch == '_'))
			return false;
	}
	return true;
}

/* The original's mask of a key. */
static void ak_mask(const char *k, struct buf *out)
{
	size_t n = strlen(k);
	if (n <= strlen(AK_PREFIX) + 4 + 3 + 1) {
		buf_puts(out, "***");
		return;
	}
	buf_append(out, k, 8);
	buf_puts(out, "...");
	buf_append(out, k + n - 4, 4);
}

/* Look the key up for owner; 1 found (mask filled), 0 none, -1 error. */
static int ak_lookup(struct fcgi_ctx *c, uint64_t owner, struct buf *mask, struct buf *err)
{
	struct buf plain = BUF_INIT;
	int got = secret_store_get(fcgi_db(c), fcgi_server_key(c), owner, "anthropic", &plain, err);
	if (got > 0)
		ak_mask(buf_cstr(&plain), mask);
	if (plain.data)
		sodium_memzero(plain.data, plain.cap);
	buf_free(&plain);
	return got;
}

/* Reply the caller's effective key state. */
static void ak_reply_state(struct fcgi_ctx *c, uint64_t owner)
{
	struct buf mask = BUF_INIT, err = BUF_INIT;
	const char *source = "own";
	int got = owner ? ak_lookup(c, owner, &mask, &err) : 0;
	if (got == 0) {
		source = "default";
		got = ak_lookup(c, 0, &mask, &err);
	}
	if (got < 0) {
		fcgi_reply_error(c, 503, "unavailable", "%s", buf_cstr(&err));
	} else {
		json_object *o = json_object_new_object();
		json_object_object_add(o, "set", json_object_new_boolean(got > 0));
		json_object_object_add(o, "masked", got > 0 ? json_object_new_string(buf_cstr(&mask)) : NULL);
		json_object_object_add(o, "source", got > 0 ? json_object_new_string(source) : NULL);
		fcgi_reply_json(c, 200, o);
	}
	buf_free(&mask);
	buf_free(&err);
}

/* The caller's owner id (users.id); false after replying. */
static bool ak_owner(struct fcgi_ctx *c, uint64_t *owner)
{
	long long id;
	if (!fcgi_user_id(c, &id))
		return false;
	*owner = (uint64_t)id;
	return true;
}

void h_anthropic_key_get(struct fcgi_ctx *c)
{
	uint64_t owner;
	if (ak_owner(c, &owner))
		ak_reply_state(c, owner);
}

void h_anthropic_key_set(struct fcgi_ctx *c)
{
	static const char *const allowed[] = { "key", "default", NULL };
	json_object *body = fcgi_body(c);
	const char *key = NULL;
	bool def = false;
	uint64_t owner;
	struct buf err = BUF_INIT;
	if (!fcgi_json_only(c, body, allowed) || !fcgi_json_string(c, body, "key", FIELD_REQUIRED, 1, AK_MAX, &key) ||
	    !fcgi_json_bool(c, body, "default", FIELD_OPTIONAL, &def))
		return;
	if (!ak_valid(key)) {
		fcgi_reply_error(c, 400, "invalid_field", "key: \"%s\" then letters, digits, '-' or '_', at most %d bytes",
			AK_PREFIX, AK_MAX);
		return;
	}
	if (def && !fcgi_who(c)->admin) {
		fcgi_reply_error(c, 403, "forbidden", "only admins set the default key");
		return;
	}
	if (!ak_owner(c, &owner))
		return;
	if (!secret_store_put(fcgi_db(c), fcgi_server_key(c), def ? 0 : owner, "anthropic", key, &err))
		fcgi_reply_error(c, 503, "unavailable", "%s", buf_cstr(&err));
	else
		ak_reply_state(c, def ? 0 : owner);
	buf_free(&err);
}

void h_anthropic_key_delete(struct fcgi_ctx *c)
{
	const char *q = fcgi_query(c, "default");
	bool def = q && strcmp(q, "1") == 0;
	uint64_t owner;
	struct buf err = BUF_INIT;
	if (q && !def && strcmp(q, "0") != 0) {
		fcgi_reply_error(c, 400, "invalid_field", "default: 0 or 1");
		return;
	}
	if (def && !fcgi_who(c)->admin) {
		fcgi_reply_error(c, 403, "forbidden", "only admins delete the default key");
		return;
	}
	if (!ak_owner(c, &owner))
		return;
	if (secret_store_delete(fcgi_db(c), def ? 0 : owner, "anthropic", &err) < 0)
		fcgi_reply_error(c, 503, "unavailable", "%s", buf_cstr(&err));
	else
		ak_reply_state(c, owner);
	buf_free(&err);
}

/*
 * session.c: POST /api/logout — sign a browser out.
 *
 * The dashboard's credential is the HttpOnly cookie mantis_token, which page
 * scripts cannot read or clear; this route answers with a Set-Cookie that
 * expires it (Max-Age=0, the same Path, SameSite and, over HTTPS, Secure
 * attributes as when the pipeline set it), and 200 {"ok": true}.
 *
 * The route is public, so that a cookie whose token was revoked (every other
 * route answers 401) can still be cleared. Because the request acts on the
 * browser's ambient cookie, the CSRF rule applies to every caller whatever
 * it presents: a same-origin Origin, or X-Requested-With: XMLHttpRequest, or
 * a JSON content type (otherwise 403 csrf_rejected). Tokens themselves are
 * not revoked here: that is POST /api/tokens/{id}/revoke.
 */
#include "fcgi/app.h"
#include "fcgi/handlers/handlers.h"

/* POST /api/logout: expire the mantis_token cookie (CSRF-checked). */
void h_logout(struct fcgi_ctx *c)
{
	const struct fcgi_identity ambient = { .via = AUTH_VIA_COOKIE, .user_id = -1, .token_id = -1 };
	if (!auth_csrf_ok(&c->req, &ambient)) {
		fcgi_reply_error(c, 403, "csrf_rejected", "cross-site request refused: send a same-origin Origin, "
		                 "X-Requested-With: XMLHttpRequest or a JSON body");
		return;
	}
	fcgi_add_header(c, "Set-Cookie", c->req.https ? "mantis_token=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0; Secure"
	                                              : "mantis_token=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0");
	json_object *o = json_object_new_object();
	json_object_object_add(o, "ok", json_object_new_boolean(1));
	fcgi_reply_json(c, 200, o);
}

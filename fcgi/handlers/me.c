/*
 * me.c: GET /api/me — who the caller is, for the dashboard's header and
 * settings page (and for scripts that want to check their token).
 *
 * 200 {"user": name, "user_id": id, "role": "admin"|"user",
 *      "auth": "bearer"|"cookie"|"query"|"loopback",
 *      "shared_token": bool (the caller presented MANTIS_AUTH_TOKEN),
 *      "token_id": id of the caller's database token, or null}
 */
#include <string.h>

#include "fcgi/handlers/handlers.h"

/* Name of an authentication path as the API shows it. */
static const char *via_name(enum fcgi_auth_via v)
{
	switch (v) {
	case AUTH_VIA_BEARER:
		return "bearer";
	case AUTH_VIA_COOKIE:
		return "cookie";
	case AUTH_VIA_QUERY:
		return "query";
	case AUTH_VIA_LOOPBACK:
		return "loopback";
	case AUTH_VIA_NONE:
		break;
	}
	return "none";
}

void h_me(struct fcgi_ctx *c)
{
	const struct fcgi_identity *who = fcgi_who(c);
	long long uid;
	if (!fcgi_user_id(c, &uid))
		return;
	json_object *o = json_object_new_object();
	json_object_object_add(o, "user", json_object_new_string(who->name));
	json_object_object_add(o, "user_id", json_object_new_int64(uid));
	json_object_object_add(o, "role", json_object_new_string(who->admin ? "admin" : "user"));
	json_object_object_add(o, "auth", json_object_new_string(via_name(who->via)));
	json_object_object_add(o, "shared_token",
	                       json_object_new_boolean(who->via != AUTH_VIA_LOOPBACK && who->token_id < 0));
	json_object_object_add(o, "token_id", who->token_id >= 0 ? json_object_new_int64(who->token_id) : NULL);
	fcgi_reply_json(c, 200, o);
}

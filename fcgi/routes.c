/*
 * routes.c: the route table. One line per endpoint: method, path pattern
 * ({name} segments are parameters), handler, who may call it, and what the
 * body must be. See fcgi/handler.h ("Adding an endpoint").
 */
#include "fcgi/app.h"
#include "fcgi/handlers/handlers.h"

const struct fcgi_route fcgi_routes[] = {
	{ HTTP_GET, "/health", h_health, ACCESS_PUBLIC, BODY_NONE },
	{ HTTP_GET, "/metrics", h_metrics, ACCESS_ADMIN_OR_LOOPBACK, BODY_NONE },
	/* identity, own API tokens, users (dashboard settings) */
	{ HTTP_GET, "/api/me", h_me, ACCESS_USER, BODY_NONE },
	{ HTTP_GET, "/api/tokens", h_tokens_list, ACCESS_USER, BODY_NONE },
	{ HTTP_POST, "/api/tokens", h_tokens_create, ACCESS_USER, BODY_JSON_OPTIONAL },
	{ HTTP_POST, "/api/tokens/{id}/revoke", h_tokens_revoke, ACCESS_USER, BODY_JSON_OPTIONAL },
	{ HTTP_GET, "/api/users", h_users_list, ACCESS_ADMIN, BODY_NONE },
};

const size_t fcgi_nroutes = sizeof fcgi_routes / sizeof fcgi_routes[0];

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
	{ HTTP_POST, "/api/logout", h_logout, ACCESS_PUBLIC, BODY_NONE },
	/* strategies, runs, leaderboard, defaults, datasets (issue 5) */
	{ HTTP_POST, "/strategies/submit", h_strategies_submit, ACCESS_USER, BODY_JSON },
	{ HTTP_POST, "/strategies", h_strategies_register, ACCESS_ADMIN, BODY_JSON },
	{ HTTP_GET, "/strategies", h_strategies_list, ACCESS_USER, BODY_NONE },
	{ HTTP_GET, "/strategies/versions/{id}", h_strategy_versions_get, ACCESS_USER, BODY_NONE },
	{ HTTP_GET, "/strategies/{id}", h_strategies_get, ACCESS_USER, BODY_NONE },
	{ HTTP_POST, "/runs", h_runs_create, ACCESS_USER, BODY_JSON },
	{ HTTP_GET, "/runs", h_runs_list, ACCESS_USER, BODY_NONE },
	{ HTTP_GET, "/runs/{id}", h_runs_get, ACCESS_USER, BODY_NONE },
	{ HTTP_POST, "/runs/{id}/cancel", h_runs_cancel, ACCESS_USER, BODY_JSON_OPTIONAL },
	{ HTTP_GET, "/runs/{id}/equity", h_runs_equity, ACCESS_USER, BODY_NONE },
	{ HTTP_POST, "/runs/{id}/verify", h_runs_verify, ACCESS_USER, BODY_JSON_OPTIONAL },
	{ HTTP_GET, "/leaderboard", h_leaderboard, ACCESS_USER, BODY_NONE },
	{ HTTP_POST, "/defaults/promote", h_defaults_promote, ACCESS_ADMIN, BODY_JSON },
	{ HTTP_GET, "/defaults", h_defaults_get, ACCESS_USER, BODY_NONE },
	{ HTTP_GET, "/datasets", h_datasets_list, ACCESS_USER, BODY_NONE },
	{ HTTP_GET, "/datasets/{version}", h_datasets_get, ACCESS_USER, BODY_NONE },
	/* market data (issue 13) */
	{ HTTP_GET, "/api/data-cache", h_data_cache_get, ACCESS_USER, BODY_NONE },
	{ HTTP_GET, "/api/challenges", h_challenges_list, ACCESS_USER, BODY_NONE },
	{ HTTP_GET, "/api/challenges/{name}/leaderboard", h_challenges_leaderboard, ACCESS_USER, BODY_NONE },
	{ HTTP_POST, "/api/evaluations", h_evaluations_create, ACCESS_USER, BODY_JSON },
	{ HTTP_GET, "/api/evaluations", h_evaluations_list, ACCESS_USER, BODY_NONE },
	{ HTTP_GET, "/api/evaluations/{id}", h_evaluations_get, ACCESS_USER, BODY_NONE },
	{ HTTP_POST, "/api/evaluations/{id}/cancel", h_evaluations_cancel, ACCESS_USER, BODY_JSON_OPTIONAL },
};

const size_t fcgi_nroutes = sizeof fcgi_routes / sizeof fcgi_routes[0];

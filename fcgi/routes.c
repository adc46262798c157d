/*
 * routes.c: the route table. One line per endpoint: method, path pattern
 * ({name} segments are parameters), handler, who may call it, and what the
 * body must be. See fcgi/handler.h ("Adding an endpoint").
 */
#include "fcgi/app.h"
#include "fcgi/handlers/handlers.h"

const struct fcgi_route fcgi_routes[] = {
	{ HTTP_GET, "/health", h_health, ACCESS_PUBLIC_ADMIN_VIEW, BODY_NONE },
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
	{ HTTP_GET, "/runs/{id}/trades", h_runs_trades, ACCESS_USER, BODY_NONE },
	{ HTTP_POST, "/runs/{id}/verify", h_runs_verify, ACCESS_USER, BODY_JSON_OPTIONAL },
	{ HTTP_GET, "/leaderboard", h_leaderboard, ACCESS_USER, BODY_NONE },
	{ HTTP_POST, "/defaults/promote", h_defaults_promote, ACCESS_ADMIN, BODY_JSON },
	{ HTTP_GET, "/defaults", h_defaults_get, ACCESS_USER, BODY_NONE },
	{ HTTP_GET, "/defaults/paper", h_defaults_paper, ACCESS_USER, BODY_NONE },   /* issue 18: paper trading */
	/* issue 18: the default-strategy updater */
	{ HTTP_PUT, "/defaults/rules", h_defaults_rules_put, ACCESS_ADMIN, BODY_JSON },
	{ HTTP_GET, "/defaults/rules", h_defaults_rules_get, ACCESS_USER, BODY_NONE },
	{ HTTP_POST, "/defaults/candidates", h_defaults_candidates_post, ACCESS_ADMIN, BODY_JSON },
	{ HTTP_GET, "/defaults/candidates", h_defaults_candidates_get, ACCESS_USER, BODY_NONE },
	{ HTTP_GET, "/defaults/proposals", h_defaults_proposals_get, ACCESS_USER, BODY_NONE },
	{ HTTP_POST, "/defaults/proposals/{id}/approve", h_defaults_proposal_approve, ACCESS_ADMIN, BODY_JSON_OPTIONAL },
	{ HTTP_POST, "/defaults/proposals/{id}/reject", h_defaults_proposal_reject, ACCESS_ADMIN, BODY_JSON_OPTIONAL },
	{ HTTP_GET, "/datasets", h_datasets_list, ACCESS_USER, BODY_NONE },
	{ HTTP_GET, "/datasets/{version}", h_datasets_get, ACCESS_USER, BODY_NONE },
	/* market data (issue 13) */
	{ HTTP_GET, "/api/data-cache", h_data_cache_get, ACCESS_USER, BODY_NONE },
	{ HTTP_POST, "/api/data-cache/prefetch", h_data_cache_prefetch, ACCESS_ADMIN, BODY_JSON_OPTIONAL },
	{ HTTP_GET, "/api/data-cache/status", h_data_cache_status, ACCESS_USER, BODY_NONE },
	{ HTTP_POST, "/api/data-cache/delete", h_data_cache_delete, ACCESS_ADMIN, BODY_JSON_OPTIONAL },
	{ HTTP_GET, "/api/coinglass-key", h_coinglass_key_get, ACCESS_USER, BODY_NONE },
	{ HTTP_POST, "/api/coinglass-key", h_coinglass_key_set, ACCESS_ADMIN, BODY_JSON },
	{ HTTP_DELETE, "/api/coinglass-key", h_coinglass_key_delete, ACCESS_ADMIN, BODY_NONE },
	/* issue 16: the Anthropic key of LLM agents, per owner with an admin default */
	{ HTTP_GET, "/api/anthropic-key", h_anthropic_key_get, ACCESS_USER, BODY_NONE },
	{ HTTP_POST, "/api/anthropic-key", h_anthropic_key_set, ACCESS_USER, BODY_JSON },
	{ HTTP_DELETE, "/api/anthropic-key", h_anthropic_key_delete, ACCESS_USER, BODY_NONE },
	{ HTTP_GET, "/api/challenges", h_challenges_list, ACCESS_USER, BODY_NONE },
	{ HTTP_GET, "/api/challenges/{name}/leaderboard", h_challenges_leaderboard, ACCESS_USER, BODY_NONE },
	{ HTTP_POST, "/api/evaluations", h_evaluations_create, ACCESS_USER, BODY_JSON },
	{ HTTP_GET, "/api/evaluations", h_evaluations_list, ACCESS_USER, BODY_NONE },
	{ HTTP_GET, "/api/evaluations/{id}", h_evaluations_get, ACCESS_USER, BODY_NONE },
	{ HTTP_POST, "/api/evaluations/{id}/cancel", h_evaluations_cancel, ACCESS_USER, BODY_JSON_OPTIONAL },
	/* research agents (issue 15, docs/agents.md) */
	{ HTTP_POST, "/api/agents", h_agents_create, ACCESS_USER, BODY_JSON },
	{ HTTP_GET, "/api/agents", h_agents_list, ACCESS_USER, BODY_NONE },
	{ HTTP_GET, "/api/agents/{id}", h_agents_get, ACCESS_USER, BODY_NONE },
	{ HTTP_POST, "/api/agents/{id}/stop", h_agents_stop, ACCESS_USER, BODY_JSON_OPTIONAL },
	{ HTTP_POST, "/api/agents/{id}/pause", h_agents_pause, ACCESS_USER, BODY_JSON_OPTIONAL },
	{ HTTP_POST, "/api/agents/{id}/resume", h_agents_resume, ACCESS_USER, BODY_JSON_OPTIONAL },
	{ HTTP_POST, "/api/agents/{id}/delete", h_agents_delete, ACCESS_USER, BODY_JSON_OPTIONAL },
	{ HTTP_POST, "/api/agents/{id}/message", h_agents_message, ACCESS_USER, BODY_JSON },
	{ HTTP_GET, "/api/agents/{id}/inbox", h_agents_inbox_get, ACCESS_USER, BODY_NONE },
	{ HTTP_POST, "/api/agents/{id}/inbox", h_agents_inbox_post, ACCESS_USER, BODY_JSON },
	{ HTTP_GET, "/api/agents/{id}/chat", h_agents_chat, ACCESS_USER, BODY_NONE },
	/* issue 16: ask the model about the agent (agents_ask.c) */
	{ HTTP_POST, "/api/agents/{id}/ask", h_agents_ask, ACCESS_USER, BODY_JSON },
	{ HTTP_GET, "/api/agents/{id}/goal", h_agents_goal_get, ACCESS_USER, BODY_NONE },
	{ HTTP_POST, "/api/agents/{id}/goal", h_agents_goal_post, ACCESS_USER, BODY_JSON },
	{ HTTP_GET, "/api/agents/{id}/notes", h_agents_notes, ACCESS_USER, BODY_NONE },
	{ HTTP_GET, "/api/agents/{id}/state", h_agents_state, ACCESS_USER, BODY_NONE },
	{ HTTP_GET, "/api/agents/{id}/stdout", h_agents_stdout, ACCESS_USER, BODY_NONE },
	{ HTTP_GET, "/api/agents/{id}/iterations", h_agents_iterations, ACCESS_USER, BODY_NONE },
	{ HTTP_GET, "/api/agents/{id}/iterations/{n}/features", h_agents_features, ACCESS_USER, BODY_NONE },
	{ HTTP_GET, "/api/agents/{id}/iterations/{n}/metrics", h_agents_iter_metrics, ACCESS_USER, BODY_NONE },
	{ HTTP_GET, "/api/agents/{id}/code/{n}", h_agents_code, ACCESS_USER, BODY_NONE },
	{ HTTP_GET, "/api/agents/{id}/events", h_agents_events, ACCESS_USER, BODY_NONE },
	{ HTTP_POST, "/api/agents/{id}/clone", h_agents_clone, ACCESS_USER, BODY_JSON_OPTIONAL },
	{ HTTP_GET, "/api/agents/{id}/export", h_agents_export, ACCESS_USER, BODY_NONE },
	{ HTTP_POST, "/api/agents/import", h_agents_import, ACCESS_USER, BODY_JSON },
};

const size_t fcgi_nroutes = sizeof fcgi_routes / sizeof fcgi_routes[0];

/*
 * handlers.h: every resource handler, one file per resource under
 * fcgi/handlers/. See fcgi/handler.h for the API and fcgi/routes.c for the
 * table that binds them to methods and paths.
 */
#ifndef AGENTTEST_FCGI_HANDLERS_H
#define AGENTTEST_FCGI_HANDLERS_H

#include "fcgi/handler.h"

/* health.c */
void h_health(struct fcgi_ctx *c);

/* metrics.c */
void h_metrics(struct fcgi_ctx *c);

/* me.c, tokens.c (dashboard: identity, own tokens, users for admins) */
void h_me(struct fcgi_ctx *c);
void h_tokens_list(struct fcgi_ctx *c);
void h_tokens_create(struct fcgi_ctx *c);
void h_tokens_revoke(struct fcgi_ctx *c);
void h_users_list(struct fcgi_ctx *c);

/* session.c (dashboard sign-out) */
void h_logout(struct fcgi_ctx *c);

/* strategies.c, runs.c, leaderboard.c, defaults.c, datasets.c (issue 5) */
void h_strategies_submit(struct fcgi_ctx *c);
void h_strategies_register(struct fcgi_ctx *c);
void h_strategies_list(struct fcgi_ctx *c);
void h_strategies_get(struct fcgi_ctx *c);
void h_strategy_versions_get(struct fcgi_ctx *c);
void h_runs_create(struct fcgi_ctx *c);
void h_runs_list(struct fcgi_ctx *c);
void h_runs_get(struct fcgi_ctx *c);
void h_runs_cancel(struct fcgi_ctx *c);
void h_runs_equity(struct fcgi_ctx *c);
void h_runs_verify(struct fcgi_ctx *c);
void h_leaderboard(struct fcgi_ctx *c);
void h_defaults_promote(struct fcgi_ctx *c);
void h_defaults_get(struct fcgi_ctx *c);
void h_datasets_list(struct fcgi_ctx *c);
void h_datasets_get(struct fcgi_ctx *c);

/* data_cache.c (issue 13: market data) */
void h_data_cache_get(struct fcgi_ctx *c);

/* challenges.c, evaluations.c (issue 6: MANTIS challenges) */
void h_challenges_list(struct fcgi_ctx *c);
void h_challenges_leaderboard(struct fcgi_ctx *c);
void h_evaluations_create(struct fcgi_ctx *c);
void h_evaluations_get(struct fcgi_ctx *c);
void h_evaluations_list(struct fcgi_ctx *c);
void h_evaluations_cancel(struct fcgi_ctx *c);

#endif

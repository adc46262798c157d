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
/* run_trades.c (issue 17): a positions run's fills and per-bar positions */
void h_runs_trades(struct fcgi_ctx *c);
void h_leaderboard(struct fcgi_ctx *c);
void h_defaults_promote(struct fcgi_ctx *c);
void h_defaults_get(struct fcgi_ctx *c);
/* paper.c (issue 18): the paper account of a label's default */
void h_defaults_paper(struct fcgi_ctx *c);
/* the default-strategy updater (updater.c, issue 18) */
void h_defaults_rules_put(struct fcgi_ctx *c);
void h_defaults_rules_get(struct fcgi_ctx *c);
void h_defaults_candidates_post(struct fcgi_ctx *c);
void h_defaults_candidates_get(struct fcgi_ctx *c);
void h_defaults_proposals_get(struct fcgi_ctx *c);
void h_defaults_proposal_approve(struct fcgi_ctx *c);
void h_defaults_proposal_reject(struct fcgi_ctx *c);
void h_datasets_list(struct fcgi_ctx *c);
void h_datasets_get(struct fcgi_ctx *c);

/* data_cache.c (issue 13: market data) */
void h_data_cache_get(struct fcgi_ctx *c);
/* data_cache_jobs.c: prefetch job, its status, delete (issue 13) */
void h_data_cache_prefetch(struct fcgi_ctx *c);
void h_data_cache_status(struct fcgi_ctx *c);
void h_data_cache_delete(struct fcgi_ctx *c);
/* coinglass_key.c: the CoinGlass key in the secret store (issue 13) */
void h_coinglass_key_get(struct fcgi_ctx *c);
void h_coinglass_key_set(struct fcgi_ctx *c);
void h_coinglass_key_delete(struct fcgi_ctx *c);
/* The original's CoinGlass key rule (1..256 of [A-Za-z0-9._-]), shared with
 * the prefetch body's coinglass_key. */
#define CGK_MAX 256
bool cgk_valid(const char *k);

/* anthropic_key.c: the Anthropic key of LLM agents in the secret store (issue 16) */
void h_anthropic_key_get(struct fcgi_ctx *c);
void h_anthropic_key_set(struct fcgi_ctx *c);
void h_anthropic_key_delete(struct fcgi_ctx *c);

/* challenges.c, evaluations.c (issue 6: MANTIS challenges) */
void h_challenges_list(struct fcgi_ctx *c);
void h_challenges_leaderboard(struct fcgi_ctx *c);
/* Whether the dataset `version` stored at `path` carries the extra field the
 * challenge needs (FUNDING-XSEC: funding_1h; none needed: true). When not,
 * replies 400 dataset_lacks_field naming the field and returns false. */
struct ch_def;
bool ch_dataset_fits(struct fcgi_ctx *c, const struct ch_def *def, const char *version, const char *path);
void h_evaluations_create(struct fcgi_ctx *c);
void h_evaluations_get(struct fcgi_ctx *c);
void h_evaluations_list(struct fcgi_ctx *c);
void h_evaluations_cancel(struct fcgi_ctx *c);

/* agents*.c (issue 15: research agents) */
void h_agents_create(struct fcgi_ctx *c);
void h_agents_list(struct fcgi_ctx *c);
void h_agents_get(struct fcgi_ctx *c);
void h_agents_stop(struct fcgi_ctx *c);
void h_agents_pause(struct fcgi_ctx *c);
void h_agents_resume(struct fcgi_ctx *c);
void h_agents_delete(struct fcgi_ctx *c);
void h_agents_message(struct fcgi_ctx *c);
void h_agents_inbox_get(struct fcgi_ctx *c);
void h_agents_inbox_post(struct fcgi_ctx *c);
void h_agents_chat(struct fcgi_ctx *c);
/* POST /api/agents/{id}/ask: the model answers about the agent; both land in the chat (agents_ask.c). */
void h_agents_ask(struct fcgi_ctx *c);
void h_agents_goal_get(struct fcgi_ctx *c);
void h_agents_goal_post(struct fcgi_ctx *c);
void h_agents_notes(struct fcgi_ctx *c);
void h_agents_state(struct fcgi_ctx *c);
void h_agents_stdout(struct fcgi_ctx *c);
void h_agents_iterations(struct fcgi_ctx *c);
void h_agents_features(struct fcgi_ctx *c);
void h_agents_iter_metrics(struct fcgi_ctx *c);
void h_agents_code(struct fcgi_ctx *c);
void h_agents_events(struct fcgi_ctx *c);
void h_agents_clone(struct fcgi_ctx *c);
void h_agents_export(struct fcgi_ctx *c);
void h_agents_import(struct fcgi_ctx *c);

#endif

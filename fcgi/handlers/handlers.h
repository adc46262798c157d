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

#endif

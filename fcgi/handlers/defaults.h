/* defaults: what defaults.c shares with the updater's endpoints (updater.c). */
#ifndef AGENTTEST_FCGI_DEFAULTS_H
#define AGENTTEST_FCGI_DEFAULTS_H

#include "db.h"
#include "fcgi/handler.h"

/*
 * The best completed, audit-passed run (an eligible run_metrics row) of
 * strategy version vid on dataset version dsv, or on any version a
 * prefetch of the window label dsv stored, into rid (empty: none).
 */
enum db_status defaults_qualifying_run(struct fcgi_ctx *c, long long vid, const char *dsv, char rid[40]);

#endif

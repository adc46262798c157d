/*
 * fetch_register.h: `agenttest data fetch` registers the version it stored
 * in the database (fetch_register.c), the way the prefetch job does.
 */
#ifndef AGENTTEST_CLI_FETCH_REGISTER_H
#define AGENTTEST_CLI_FETCH_REGISTER_H

#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "evaluator/runner/market/market.h"

/* What fetch_register did. */
struct fetch_reg {
	bool registered;   /* the version is in `datasets` and the window's label points at it */
	int  retired;      /* older versions retired by MANTIS_DATA_KEEP_VERSIONS */
};

/*
 * With DATABASE_URL configured (file or environment): register v, a
 * version of `window` stored under data_dir (its assets are the keys of
 * v->quality), with mk_register in one transaction, then apply retention
 * (MANTIS_DATA_KEEP_VERSIONS, default 3). Without DATABASE_URL: nothing
 * (out->registered false). Returns CLI_OK, or the exit status after the
 * error line on stderr: CLI_INTERNAL when the database is out of reach or
 * fails, CLI_FAILED (code conflict) when the label is registered with
 * another hash. The stored version stays on disk either way.
 */
int fetch_register(const struct config *cfg, const char *data_dir, const char *window, const struct mk_version *v,
		   int64_t interval_ms, struct fetch_reg *out);

#endif

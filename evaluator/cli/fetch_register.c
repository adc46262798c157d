/*
 * fetch_register: the registration step of `agenttest data fetch`
 * (contract in fetch_register.h); the SQL is market/register.c's, shared
 * with the prefetch job.
 */
#include "evaluator/cli/fetch_register.h"

#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "db.h"
#include "evaluator/cli/commands.h"
#include "evaluator/runner/market/register.h"
#include "evaluator/synth.h"

#define FR_KEEP_DEFAULT 3

/* MANTIS_DATA_KEEP_VERSIONS of cfg in 1..1000, else the default. */
static long fr_keep(const struct config *cfg)
{
	const char *s = config_get(cfg, "MANTIS_DATA_KEEP_VERSIONS");
	char *end;
	long v = s ? strtol(s, &end, 10) : 0;
	return s && *s && !*end && v >= 1 && v <= 1000 ? v : FR_KEEP_DEFAULT;
}

int fetch_register(const struct config *cfg, const char *data_dir, const char *window, const struct mk_version *v,
		   int64_t interval_ms, struct fetch_reg *out)
{
	memset(out, 0, sizeof *out);
	if (!config_get(cfg, "DATABASE_URL"))
		return CLI_OK;
	const char *names[SYNTH_N_ASSETS];
	size_t n = 0;
	json_object_object_foreach(v->quality, asset, report) {
		(void)report;
		if (n < SYNTH_N_ASSETS)
			names[n++] = asset;
	}
	struct db *db = db_new(&cfg->db);
	struct buf err = BUF_INIT;
	char have[65];
	int rc = CLI_OK, reg = -1;
	if (db_connect(db) != DB_OK || db_begin(db) != DB_OK)
		buf_printf(&err, "database: %s", db_error(db));
	else if ((reg = mk_register(db, window, v, names, n, interval_ms, have, &err)) < 0 || db_commit(db) != DB_OK) {
		if (reg >= 0)
			buf_printf(&err, "database: %s", db_error(db));
		reg = -1;
		db_rollback(db);
	}
	if (reg < 0)
		rc = cli_error(CLI_INTERNAL, "unavailable", "version %s is stored at %s but not registered: %s", v->label,
			       v->path, buf_cstr(&err));
	else if (reg == 0)
		rc = cli_error(CLI_FAILED, "conflict",
			       "dataset version %s is already registered with another hash (%.16s...); this fetch "
			       "stored %.16s... at %s and left the registration alone",
			       v->label, have, v->hash, v->path);
	else {
		out->registered = true;
		out->retired = mk_retain(db, data_dir, window, v->hash, fr_keep(cfg));
	}
	buf_free(&err);
	db_free(db);
	return rc;
}

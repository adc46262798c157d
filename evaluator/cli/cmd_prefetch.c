/*
 * `agenttest data prefetch`: queue market-data prefetch jobs in the
 * database, the same rows POST /api/data-cache/prefetch writes (table
 * data_prefetches, sql/013), for the runner to execute. The systemd timer
 * (systemd/agenttest-prefetch.timer) runs it to refresh the configured
 * windows.
 *
 *   agenttest data prefetch [--days-back N[,N...]] [--assets A,B|all] [--config FILE]
 *
 * The windows are --days-back, else MANTIS_PREFETCH_WINDOWS (default "60"),
 * each 60..365. The jobs belong to the built-in admin user `local`. One JSON
 * line per window: {days_back, window, status: "started", id} or
 * {days_back, window, status: "already_running", id} (a prefetch of the
 * window is queued or running: nothing is added, exit 0). Errors are
 * {"error","code","detail"} on stderr.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>
#include <sodium.h>

#include "config.h"
#include "db.h"
#include "evaluator/cli/commands.h"
#include "evaluator/dataset.h"
#include "evaluator/runner/runner.h"
#include "evaluator/synth.h"

#define PF_DAYS_MIN 60
#define PF_DAYS_MAX 365
#define PF_WINDOWS_MAX 8

/* A random UUID4 in out (37 bytes). */
static void pf_uuid4(char out[37])
{
	unsigned char b[16];
	randombytes_buf(b, sizeof b);
	b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);
	b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
	snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		 b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
}

/* Parse "60,90" into days (at most PF_WINDOWS_MAX, each in range); the count, or -1. */
static int pf_parse_windows(const char *s, long days[PF_WINDOWS_MAX])
{
	int n = 0;
	const char *p = s;
	while (*p) {
		char *end;
		long v = strtol(p, &end, 10);
		if (end == p || v < PF_DAYS_MIN || v > PF_DAYS_MAX || n == PF_WINDOWS_MAX || (*end && *end != ','))
			return -1;
		days[n++] = v;
		p = *end ? end + 1 : end;
	}
	return n > 0 ? n : -1;
}

/* The JSON array of asset names from "all" or "A,B"; NULL (after an error line) if invalid. */
static json_object *pf_assets(const char *arg, size_t *n)
{
	json_object *a = json_object_new_array();
	*n = 0;
	if (strcmp(arg, "all") == 0) {
		for (; *n < SYNTH_N_ASSETS; (*n)++)
			json_object_array_add(a, json_object_new_string(synth_assets[*n]));
		return a;
	}
	char *copy = strdup(arg), *sv = NULL;
	for (char *t = copy ? strtok_r(copy, ",", &sv) : NULL; t; t = strtok_r(NULL, ",", &sv)) {
		bool dup = false;
		for (size_t i = 0; i < *n; i++)
			dup |= strcmp(json_object_get_string(json_object_array_get_idx(a, i)), t) == 0;
		if (*n == SYNTH_N_ASSETS || dup || !ds_valid_asset(t) || synth_asset_index(t) < 0) {
			cli_error(CLI_USAGE, "invalid_field", "--assets: '%s' is not one of the %d MANTIS assets (or listed twice)",
				  t, SYNTH_N_ASSETS);
			free(copy);
			json_object_put(a);
			return NULL;
		}
		json_object_array_add(a, json_object_new_string(t));
		(*n)++;
	}
	free(copy);
	if (*n == 0) {
		json_object_put(a);
		cli_error(CLI_USAGE, "invalid_field", "--assets: give at least one asset");
		return NULL;
	}
	return a;
}

/* Queue one window; prints its line. CLI_OK or an error status. */
static int pf_queue(struct db *db, long long owner, long days, const char *assets, size_t n)
{
	char id[37], window[32], active[37] = "";
	snprintf(window, sizeof window, "binance-1m-%ldd", days);
	pf_uuid4(id);
	struct db_arg a[] = { DB_ARG_TEXT(id), DB_ARG_INT(owner), DB_ARG_TEXT(window), DB_ARG_INT(days),
			      DB_ARG_TEXT(assets), DB_ARG_INT((long long)n) };
	enum db_status st = db_exec(db, "INSERT INTO data_prefetches (id, owner_id, window_label, days_back, assets, "
				    "total_assets) VALUES (?, ?, ?, ?, ?, ?)", a, 6, NULL, 0, NULL, NULL, NULL, 0);
	if (st == DB_DUPLICATE) {
		struct db_col c[] = { DB_COL_TEXT(active) };
		struct db_arg w[] = { DB_ARG_TEXT(window) };
		if (db_exec(db, "SELECT id FROM data_prefetches WHERE active_window = ?", w, 1, c, 1, NULL, NULL, NULL,
			    DB_IDEMPOTENT) != DB_OK)
			active[0] = '\0';
		printf("{\"days_back\":%ld,\"window\":\"%s\",\"status\":\"already_running\",\"id\":\"%s\"}\n", days,
		       window, active);
		return CLI_OK;
	}
	if (st != DB_OK)
		return cli_error(CLI_INTERNAL, "unavailable", "database: %s", db_error(db));
	printf("{\"days_back\":%ld,\"window\":\"%s\",\"status\":\"started\",\"id\":\"%s\"}\n", days, window, id);
	return CLI_OK;
}

int cmd_data_prefetch(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "days-back", required_argument, NULL, 'd' }, { "assets", required_argument, NULL, 'a' },
		{ "config", required_argument, NULL, 'c' }, { NULL, 0, NULL, 0 },
	};
	const char *days_arg = NULL, *assets_arg = "all", *cfg_path = NULL;
	struct config cfg;
	struct buf err = BUF_INIT;
	long days[PF_WINDOWS_MAX];
	int rc = CLI_OK;
	optind = 1;
	for (int c; (c = getopt_long(argc, argv, "", opts, NULL)) != -1;) {
		switch (c) {
		case 'd': days_arg = optarg; break;
		case 'a': assets_arg = optarg; break;
		case 'c': cfg_path = optarg; break;
		default:
			return cli_error(CLI_USAGE, "bad_request", "usage: agenttest data prefetch [--days-back N[,N...]] "
					 "[--assets A,B|all] [--config FILE]");
		}
	}
	if (optind != argc)
		return cli_error(CLI_USAGE, "bad_request", "unexpected argument '%s'", argv[optind]);
	if (sodium_init() < 0)
		return cli_error(CLI_INTERNAL, "internal", "libsodium failed to initialise");
	if (!config_load(&cfg, cfg_path, &err)) {
		rc = cli_error(CLI_FAILED, "invalid_config", "%s", buf_cstr(&err));
		buf_free(&err);
		return rc;
	}
	if (!days_arg)
		days_arg = config_get(&cfg, "MANTIS_PREFETCH_WINDOWS");
	int nw = pf_parse_windows(days_arg && *days_arg ? days_arg : "60", days);
	size_t na = 0;
	json_object *assets = nw < 0 ? NULL : pf_assets(assets_arg, &na);
	struct db *db = NULL;
	if (nw < 0) {
		rc = cli_error(CLI_USAGE, "invalid_field", "windows: 1 to %d of %d..%d days, comma-separated",
			       PF_WINDOWS_MAX, PF_DAYS_MIN, PF_DAYS_MAX);
		goto out;
	}
	if (!assets) {
		rc = CLI_USAGE;
		goto out;
	}
	db = db_new(&cfg.db);
	struct db_col owner = DB_COL_INT;
	struct db_result res = { 0 };
	if (db_exec(db, "SELECT id FROM users WHERE name = 'local'", NULL, 0, &owner, 1, NULL, NULL, &res,
		    DB_IDEMPOTENT) != DB_OK || res.rows != 1) {
		rc = cli_error(CLI_INTERNAL, "unavailable", "database: %s",
			       res.rows == 0 && !db_errno(db) ? "no built-in user 'local' (run the migrations)" : db_error(db));
		goto out;
	}
	const char *text = json_object_to_json_string_ext(assets, JSON_C_TO_STRING_PLAIN);
	for (int i = 0; i < nw && rc == CLI_OK; i++)
		rc = pf_queue(db, owner.i, days[i], text, na);
	if (rc == CLI_OK)
		notify_all(config_get(&cfg, "RUNNER_NOTIFY_DIR"), "q");
out:
	json_object_put(assets);
	db_free(db);
	config_free(&cfg);
	buf_free(&err);
	return rc;
}

/*
 * agenttest dataset: the registry of dataset versions in the database.
 *
 *   agenttest dataset register DIR [--version LABEL] [--config FILE]
 *   agenttest dataset list [--config FILE]
 *
 * `register` opens DIR with every hash verified (ds_open_any: our layout or
 * the original's prices.csv) and records (label, hash, path, assets,
 * interval, bars) so runs can name the version. A label is immutable: the
 * same label with the same hash is accepted again (the path is refreshed, so
 * a moved directory can be re-registered); the same label with a different
 * hash is refused with `conflict`. The label is the manifest's, or --version
 * (required for a prices.csv directory, which has none).
 */
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "common/config.h"
#include "common/db.h"
#include "evaluator/cli/commands.h"
#include "evaluator/dataset.h"

int cmd_dataset(int argc, char **argv);

/* Print the usage of `agenttest dataset` on out. */
static void dataset_usage(FILE *out)
{
	fprintf(out, "usage: agenttest dataset register DIR [--version LABEL] [--config FILE]\n"
		     "       agenttest dataset list [--config FILE]\n"
		     "  register verifies every hash of DIR and records the version in the database;\n"
		     "  a label already registered with another hash is refused (exit 1, code conflict).\n");
}

/* JSON array text of the dataset's asset names into b. */
static void assets_json(const struct dataset *ds, struct buf *b)
{
	json_object *a = json_object_new_array();
	for (size_t i = 0; i < ds_asset_count(ds); i++)
		json_object_array_add(a, json_object_new_string(ds_asset_name(ds, i)));
	buf_puts(b, json_object_to_json_string_ext(a, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(a);
}

/* Look up the hash registered for label into hash[65]; 1 found, 0 not, -1 error. */
static int registered_hash(struct db *db, const char *label, char hash[65])
{
	char h[65] = "";
	struct db_col cols[] = { DB_COL_TEXT(h) };
	struct db_arg args[] = { DB_ARG_TEXT(label) };
	struct db_result res = { 0 };
	bool found = false;
	if (db_exec(db, "SELECT dataset_hash FROM datasets WHERE version = ?", args, 1, cols, 1, NULL, NULL,
		    &res, DB_IDEMPOTENT) != DB_OK)
		return -1;
	if (res.rows > 0) {
		snprintf(hash, 65, "%s", h);
		found = true;
	}
	return found ? 1 : 0;
}

/* dataset register DIR. */
static int dataset_register(struct db *db, const char *dir, const char *label)
{
	enum ds_err e;
	char msg[512], real[PATH_MAX], have[65];
	struct buf assets = BUF_INIT;
	struct dataset *ds = NULL;
	int rc = CLI_OK;
	if (!realpath(dir, real))
		return cli_error(CLI_FAILED, "not_found", "dataset directory '%s' not found", dir);
	ds = ds_open_any(real, 1, NULL, &e, msg, sizeof msg);
	if (!ds)
		return cli_error(CLI_FAILED, ds_errcode(e), "%s: %s", real, msg);
	if (!label || !*label)
		label = ds_version(ds);
	if (!label || !*label || !ds_valid_label(label)) {
		rc = cli_error(CLI_USAGE, "invalid_field", "a valid version label is needed (--version LABEL)");
		goto out;
	}
	int known = registered_hash(db, label, have);
	if (known < 0) {
		rc = cli_error(CLI_INTERNAL, "unavailable", "database: %s", db_error(db));
		goto out;
	}
	if (known && strcmp(have, ds_hash(ds)) != 0) {
		rc = cli_error(CLI_FAILED, "conflict",
			       "dataset version '%s' is already registered with hash %s; this directory has %s "
			       "(a version label is immutable: use a new label)", label, have, ds_hash(ds));
		goto out;
	}
	assets_json(ds, &assets);
	const int64_t *ts = ds_timestamps(ds);
	size_t bars = ds_bars(ds);
	struct db_arg args[] = {
		DB_ARG_TEXT(label), DB_ARG_TEXT(ds_hash(ds)), DB_ARG_TEXT(real), DB_ARG_TEXT(buf_cstr(&assets)),
		DB_ARG_INT(ds_interval_ms(ds)), DB_ARG_INT((long long)bars), DB_ARG_INT(ts[0]),
		DB_ARG_INT(ts[bars - 1]),
	};
	/* The UNIQUE key decides a race: the hash condition keeps a concurrent
	 * registration of another hash from being overwritten. */
	struct db_result res = { 0 };
	enum db_status st = db_exec(db,
		"INSERT INTO datasets (version, dataset_hash, path, assets, interval_ms, bars, first_ts, last_ts) "
		"VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON DUPLICATE KEY UPDATE "
		"path = IF(dataset_hash = VALUES(dataset_hash), VALUES(path), path)",
		args, sizeof args / sizeof args[0], NULL, 0, NULL, NULL, &res, 0);
	if (st != DB_OK) {
		rc = cli_error(CLI_INTERNAL, "unavailable", "database: %s", db_error(db));
		goto out;
	}
	if (registered_hash(db, label, have) != 1 || strcmp(have, ds_hash(ds)) != 0) {
		rc = cli_error(CLI_FAILED, "conflict", "dataset version '%s' was registered concurrently with another hash", label);
		goto out;
	}
	printf("{\"version\":\"%s\",\"dataset_hash\":\"%s\",\"path\":", label, ds_hash(ds));
	json_object *p = json_object_new_string(real);
	printf("%s", json_object_to_json_string_ext(p, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(p);
	printf(",\"bars\":%zu,\"created\":%s}\n", bars, known ? "false" : "true");
out:
	buf_free(&assets);
	ds_close(ds);
	return rc;
}

/* Print one registered dataset as a JSON line. */
static bool dataset_print(void *ctx, const struct db_col *c, size_t n)
{
	(void)ctx;
	(void)n;
	printf("{\"version\":\"%s\",\"dataset_hash\":\"%s\",\"bars\":%lld,\"interval_ms\":%lld,\"assets\":%s}\n",
	       c[0].buf, c[1].buf, c[2].i, c[3].i, c[4].buf);
	return true;
}

/* dataset list. */
static int dataset_list(struct db *db)
{
	static char version[130], hash[65], assets[65536];
	struct db_col cols[] = { DB_COL_TEXT(version), DB_COL_TEXT(hash), DB_COL_INT, DB_COL_INT, DB_COL_TEXT(assets) };
	if (db_exec(db, "SELECT version, dataset_hash, bars, interval_ms, assets FROM datasets ORDER BY version",
		    NULL, 0, cols, 5, dataset_print, NULL, NULL, DB_IDEMPOTENT) != DB_OK)
		return cli_error(CLI_INTERNAL, "unavailable", "database: %s", db_error(db));
	return CLI_OK;
}

int cmd_dataset(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "version", required_argument, NULL, 'v' }, { "config", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' }, { NULL, 0, NULL, 0 },
	};
	const char *label = NULL, *cfg_path = NULL;
	struct config cfg;
	struct buf err = BUF_INIT;
	struct db *db = NULL;
	int c, rc;
	if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "help") == 0) {
		dataset_usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? CLI_USAGE : CLI_OK;
	}
	const char *sub = argv[1];
	if (strcmp(sub, "register") != 0 && strcmp(sub, "list") != 0)
		return cli_error(CLI_USAGE, "bad_request", "unknown 'dataset' subcommand '%s'", sub);
	optind = 1;
	while ((c = getopt_long(argc - 1, argv + 1, "", opts, NULL)) != -1) {
		switch (c) {
		case 'v': label = optarg; break;
		case 'c': cfg_path = optarg; break;
		case 'h': dataset_usage(stdout); return CLI_OK;
		default: dataset_usage(stderr); return CLI_USAGE;
		}
	}
	const char *dir = optind < argc - 1 ? argv[1 + optind++] : NULL;
	if (optind < argc - 1)
		return cli_error(CLI_USAGE, "bad_request", "unexpected argument '%s'", argv[1 + optind]);
	if (strcmp(sub, "register") == 0 && !dir)
		return cli_error(CLI_USAGE, "missing_field", "dataset register needs a directory");
	if (!config_load(&cfg, cfg_path, &err)) {
		rc = cli_error(CLI_FAILED, "bad_request", "configuration: %s", buf_cstr(&err));
		buf_free(&err);
		return rc;
	}
	db = db_new(&cfg.db);
	if (db_connect(db) != DB_OK) {
		rc = cli_error(CLI_INTERNAL, "unavailable", "cannot connect to the database: %s", db_error(db));
		goto out;
	}
	rc = strcmp(sub, "register") == 0 ? dataset_register(db, dir, label) : dataset_list(db);
out:
	db_free(db);
	config_free(&cfg);
	buf_free(&err);
	return rc;
}

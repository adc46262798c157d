/*
 * agenttest data: create and check dataset directories (no database).
 *
 *   agenttest data synth  --out DIR --version LABEL [--days 60] [--seed 1]
 *                         [--assets all|BTC,ETH,...] [--start 2024-01-01]
 *                         [--planted-kappa 0.25]
 *   agenttest data import --format prices-csv|binance-klines --out DIR
 *                         --version LABEL [--asset NAME] FILE...
 *   agenttest data verify DIR
 *   agenttest data info   DIR
 *
 * Results are one JSON object on stdout; errors are {"error","code","detail"}
 * on stderr with exit 1 (bad input, failed check) or 2 (usage).
 */
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <json-c/json.h>

#include "evaluator/cli/commands.h"
#include "evaluator/dataset.h"
#include "evaluator/import.h"
#include "evaluator/synth.h"

int cmd_data(int argc, char **argv);

#define JSON_FLAGS (JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)

/* Print the usage of `agenttest data` on out. */
static void data_usage(FILE *out)
{
	fprintf(out,
		"usage: agenttest data synth --out DIR --version LABEL [--days 60] [--seed 1]\n"
		"                            [--assets all|BTC,ETH,...] [--start 2024-01-01] [--planted-kappa 0.25]\n"
		"       agenttest data import --format prices-csv|binance-klines --out DIR --version LABEL\n"
		"                            [--asset NAME] FILE...\n"
		"       agenttest data fetch --days-back N [--assets A,B] [--interval 1m] [--data-dir DIR]\n"
		"                            [--refresh] [--no-pace]   Binance candles (docs/market-data.md)\n"
		"       agenttest data prefetch [--days-back N[,N...]] [--assets A,B|all]\n"
		"                            queue prefetch jobs for the runner (MANTIS_PREFETCH_WINDOWS)\n"
		"       agenttest data verify DIR   recompute every hash (exit 0 ok, 1 mismatch)\n"
		"       agenttest data info DIR     the manifest and the hash check as JSON\n"
		"See docs/datasets.md for the format and the synthetic market's model.\n");
}

/* Print o on stdout (one line) and release it. */
static void print_json(json_object *o)
{
	printf("%s\n", json_object_to_json_string_ext(o, JSON_FLAGS));
	json_object_put(o);
}

/* The result object of a successful synth or import. */
static int print_created(const char *dir, const char *hash, double seconds)
{
	enum ds_err err;
	char msg[512];
	struct dataset *ds = ds_open(dir, 0, &err, msg, sizeof msg);
	if (!ds)
		return cli_error(CLI_INTERNAL, ds_errcode(err), "reopening the new dataset %s: %s", dir, msg);
	json_object *o = json_object_new_object(), *a = json_object_new_array();
	json_object_object_add(o, "path", json_object_new_string(dir));
	json_object_object_add(o, "version", json_object_new_string(ds_version(ds)));
	json_object_object_add(o, "dataset_hash", json_object_new_string(hash));
	for (size_t i = 0; i < ds_asset_count(ds); i++)
		json_object_array_add(a, json_object_new_string(ds_asset_name(ds, i)));
	json_object_object_add(o, "assets", a);
	json_object_object_add(o, "interval_ms", json_object_new_int64(ds_interval_ms(ds)));
	json_object_object_add(o, "bars", json_object_new_int64((int64_t)ds_bars(ds)));
	json_object_object_add(o, "first_timestamp_ms", json_object_new_int64(ds_timestamps(ds)[0]));
	json_object_object_add(o, "seconds", json_object_new_double(seconds));
	ds_close(ds);
	print_json(o);
	return CLI_OK;
}

/* Monotonic seconds. */
static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Parse a full unsigned decimal in [lo, hi]; 0 ok. */
static int parse_u64(const char *s, uint64_t lo, uint64_t hi, uint64_t *out)
{
	char *end;
	if (!s || *s < '0' || *s > '9')
		return -1;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || *end || v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}

/* Split "BTC,ETH" into names (pointers into a copy in *store); "all" → 0 names. */
static int parse_assets(const char *s, char **store, const char **names, size_t *n)
{
	*n = 0;
	if (!s || strcmp(s, "all") == 0)
		return 0;
	*store = strdup(s);
	if (!*store)
		return -1;
	for (char *save = NULL, *t = strtok_r(*store, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		if (*n == SYNTH_N_ASSETS)
			return -1;
		names[(*n)++] = t;
	}
	return *n ? 0 : -1;
}

static const struct option synth_opts[] = {
	{ "out", required_argument, NULL, 'o' },
	{ "version", required_argument, NULL, 'v' },
	{ "days", required_argument, NULL, 'd' },
	{ "seed", required_argument, NULL, 's' },
	{ "assets", required_argument, NULL, 'a' },
	{ "start", required_argument, NULL, 't' },
	{ "planted-kappa", required_argument, NULL, 'k' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* data synth. */
static int data_synth(int argc, char **argv)
{
	const char *out = NULL, *version = NULL, *assets = NULL, *start = "2024-01-01";
	struct synth_config c = { .seed = 1, .days = 60, .kappa = SYNTH_ETH_KAPPA };
	const char *names[SYNTH_N_ASSETS];
	char *store = NULL, hash[65];
	uint64_t v;
	int opt, rc;
	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":", synth_opts, NULL)) != -1) {
		switch (opt) {
		case 'o': out = optarg; break;
		case 'v': version = optarg; break;
		case 'a': assets = optarg; break;
		case 't': start = optarg; break;
		case 'd':
			if (parse_u64(optarg, 1, SYNTH_MAX_DAYS, &v))
				return cli_error(CLI_USAGE, "invalid_field", "--days must be an integer 1..%d", SYNTH_MAX_DAYS);
			c.days = (unsigned)v;
			break;
		case 's':
			if (parse_u64(optarg, 0, INT64_MAX, &v))
				return cli_error(CLI_USAGE, "invalid_field", "--seed must be an integer 0..2^63-1");
			c.seed = v;
			break;
		case 'k': {
			char *end;
			errno = 0;
			c.kappa = strtod(optarg, &end);
			if (errno || *end || !(c.kappa >= 0.0 && c.kappa < 0.9))
				return cli_error(CLI_USAGE, "invalid_field", "--planted-kappa must be a number in [0, 0.9)");
			break;
		}
		case 'h': data_usage(stdout); return CLI_OK;
		default:
			return cli_error(CLI_USAGE, "bad_request", "data synth: unknown option or missing value near '%s' (see --help)",
					 argv[optind - 1]);
		}
	}
	if (optind != argc)
		return cli_error(CLI_USAGE, "bad_request", "data synth: unexpected argument '%s'", argv[optind]);
	if (!out || !version)
		return cli_error(CLI_USAGE, "missing_field", "data synth needs --out DIR and --version LABEL");
	if (ds_parse_time(start, &c.start_ms) != 0)
		return cli_error(CLI_USAGE, "invalid_field", "--start '%s' is not an ISO-8601 date or date-time", start);
	if (parse_assets(assets, &store, names, &c.n_assets) != 0) {
		free(store);
		return cli_error(CLI_USAGE, "invalid_field", "--assets must be 'all' or a comma-separated list of up to %d names",
				 SYNTH_N_ASSETS);
	}
	c.assets = names;
	struct ds_error e = { 0 };
	double t0 = now_s();
	enum ds_err err = synth_write(out, version, &c, hash, &e);
	free(store);
	if (err != DS_OK)
		return cli_error(CLI_FAILED, ds_errcode(err), "%s", e.msg);
	rc = print_created(out, hash, now_s() - t0);
	return rc;
}

static const struct option import_opts[] = {
	{ "format", required_argument, NULL, 'f' },
	{ "out", required_argument, NULL, 'o' },
	{ "version", required_argument, NULL, 'v' },
	{ "asset", required_argument, NULL, 'a' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* data import. */
static int data_import(int argc, char **argv)
{
	const char *out = NULL, *version = NULL, *asset = NULL, *format = NULL;
	char hash[65];
	int opt;
	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":", import_opts, NULL)) != -1) {
		switch (opt) {
		case 'f': format = optarg; break;
		case 'o': out = optarg; break;
		case 'v': version = optarg; break;
		case 'a': asset = optarg; break;
		case 'h': data_usage(stdout); return CLI_OK;
		default:
			return cli_error(CLI_USAGE, "bad_request", "data import: unknown option or missing value near '%s' (see --help)",
					 argv[optind - 1]);
		}
	}
	if (!format || !out || !version)
		return cli_error(CLI_USAGE, "missing_field", "data import needs --format, --out DIR and --version LABEL");
	int fmt = import_format_parse(format);
	if (fmt < 0)
		return cli_error(CLI_USAGE, "invalid_field", "--format must be prices-csv or binance-klines, not '%s'", format);
	if (optind == argc)
		return cli_error(CLI_USAGE, "missing_field", "data import needs at least one input FILE");
	struct ds_error e = { 0 };
	double t0 = now_s();
	enum ds_err err = import_files((enum import_format)fmt, out, version, asset, (size_t)(argc - optind),
				       (const char *const *)(argv + optind), hash, &e);
	if (err != DS_OK) {
		if (e.line > 0) {
			/* the error object also carries the line, machine-readably */
			json_object *o = json_object_new_object();
			json_object_object_add(o, "error", json_object_new_string(e.msg));
			json_object_object_add(o, "code", json_object_new_string(ds_errcode(err)));
			json_object_object_add(o, "detail", json_object_new_string(e.msg));
			json_object_object_add(o, "line", json_object_new_int64(e.line));
			fprintf(stderr, "%s\n", json_object_to_json_string_ext(o, JSON_FLAGS));
			json_object_put(o);
			return CLI_FAILED;
		}
		return cli_error(CLI_FAILED, ds_errcode(err), "%s", e.msg);
	}
	return print_created(out, hash, now_s() - t0);
}

/* data verify DIR / data info DIR: the check result as an object. */
static json_object *check(const char *dir, int *ok, char *hash)
{
	enum ds_err err;
	char msg[1024];
	json_object *o = json_object_new_object();
	struct dataset *ds = ds_open_any(dir, 1, NULL, &err, msg, sizeof msg);
	*ok = ds != NULL;
	json_object_object_add(o, "ok", json_object_new_boolean(*ok));
	if (ds) {
		size_t files = ds_field_count(ds) * ds_asset_count(ds) + 1;
		json_object_object_add(o, "dataset_hash", json_object_new_string(ds_hash(ds)));
		json_object_object_add(o, "files_checked", json_object_new_int64((int64_t)files));
		snprintf(hash, 65, "%s", ds_hash(ds));
		ds_close(ds);
	} else {
		json_object_object_add(o, "code", json_object_new_string(ds_errcode(err)));
		char full[2200];
		snprintf(full, sizeof full, "%s: %s", dir, msg);
		json_object_object_add(o, "error", json_object_new_string(full));
	}
	return o;
}

/* data verify DIR. */
static int data_verify(const char *dir)
{
	int ok;
	char hash[65] = "";
	json_object *o = check(dir, &ok, hash);
	json_object_object_add(o, "path", json_object_new_string(dir));
	if (!ok) {
		json_object *c = json_object_object_get(o, "code"), *m = json_object_object_get(o, "error");
		cli_error(CLI_FAILED, json_object_get_string(c), "%s", json_object_get_string(m));
	}
	print_json(o);
	return ok ? CLI_OK : CLI_FAILED;
}

/* data info DIR: the manifest as stored (or as derived for prices.csv) plus the check. */
static int data_info(const char *dir)
{
	int ok;
	char hash[65] = "", path[4096];
	json_object *o = json_object_new_object(), *manifest = NULL;
	struct stat st;
	json_object *chk = check(dir, &ok, hash);
	int n = snprintf(path, sizeof path, "%s/manifest.json", dir);
	if (n > 0 && (size_t)n < sizeof path && stat(path, &st) == 0 && S_ISREG(st.st_mode) &&
	    (uintmax_t)st.st_size <= DS_MAX_MANIFEST)
		manifest = json_object_from_file(path); /* display only; validated by the check */
	if (!manifest && ok) {
		enum ds_err err;
		struct dataset *ds = ds_open_any(dir, 0, NULL, &err, NULL, 0);
		if (ds) {
			manifest = json_tokener_parse(ds_manifest_json(ds));
			ds_close(ds);
		}
	}
	if (!manifest && !ok) {
		json_object *c = json_object_object_get(chk, "code"), *m = json_object_object_get(chk, "error");
		int rc = cli_error(CLI_FAILED, json_object_get_string(c), "%s", json_object_get_string(m));
		json_object_put(chk);
		json_object_put(o);
		return rc;
	}
	json_object_object_add(o, "path", json_object_new_string(dir));
	json_object_object_add(o, "manifest", manifest);
	json_object_object_add(o, "check", chk);
	print_json(o);
	return ok ? CLI_OK : CLI_FAILED;
}

int cmd_data(int argc, char **argv)
{
	if (argc < 2)
		return cli_error(CLI_USAGE, "bad_request", "usage: agenttest data synth|import|fetch|prefetch|verify|info ... (see 'agenttest data --help')");
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "help") == 0) {
		data_usage(stdout);
		return CLI_OK;
	}
	const char *sub = argv[1];
	if (strcmp(sub, "synth") == 0)
		return data_synth(argc - 1, argv + 1);
	if (strcmp(sub, "import") == 0)
		return data_import(argc - 1, argv + 1);
	if (strcmp(sub, "fetch") == 0)
		return cmd_data_fetch(argc - 1, argv + 1);
	if (strcmp(sub, "prefetch") == 0)
		return cmd_data_prefetch(argc - 1, argv + 1);
	if (strcmp(sub, "verify") == 0 || strcmp(sub, "info") == 0) {
		if (argc != 3 || argv[2][0] == '-')
			return cli_error(CLI_USAGE, "bad_request", "usage: agenttest data %s DIR", sub);
		return strcmp(sub, "verify") == 0 ? data_verify(argv[2]) : data_info(argv[2]);
	}
	return cli_error(CLI_USAGE, "bad_request", "unknown 'data' subcommand '%s' (synth, import, fetch, prefetch, verify, info)", sub);
}

/*
 * `agenttest data fetch`: Binance candles → a new dataset version of a
 * window under the data directory (evaluator/runner/market/market.h does
 * the work; this file parses options, draws the progress bar and prints).
 *
 *   agenttest data fetch --days-back N [--assets A,B|all] [--interval 1m]
 *       [--data-dir DIR] [--window LABEL] [--refresh] [--parallel N]
 *       [--no-pace] [--timeout-ms MS] [--backoff-ms MS] [--rate-wait-ms MS]
 *       [--coinglass]
 *
 * --coinglass: the version also holds the CoinGlass fields (market.h,
 * mk_cg_fetch_grid, cached under <data dir>/coinglass-cache), with the key
 * from the environment (COINGLASS_API_KEY) or else the one the admin
 * stored (secret store, owner 0: DATABASE_URL and AGENTTEST_SECRET_FILE of
 * the configuration), from COINGLASS_API_URL. The key goes only into the
 * CG-API-KEY header; it is wiped after use and never printed.
 *
 * The base URL is BINANCE_API_URL (configuration or environment), else the
 * first endpoint of BINANCE_API_URLS (or the original's list) that answers
 * its ping; none answering fails the fetch (fetch_failed, naming each one); the data directory is --data-dir, else
 * MANTIS_DATA_DIR. Output: one JSON object {window, version, dataset_hash,
 * path, bars, first_timestamp_ms, last_timestamp_ms, assets, rows_added?,
 * registered, retired?, quality, seconds}; errors {"error","code","detail"}
 * on stderr, exit 1 (3: the database).
 *
 * Registration (fetch_register.h): with DATABASE_URL configured the new
 * version is registered in `datasets` and the window's label moved to it
 * by the same code as the prefetch job (market/register.h), then retention
 * applies; "registered": true. Without DATABASE_URL the version is only
 * stored ("registered": false, and "notice" says how to register it). A configured database that fails is an error (exit 3), the stored
 * version staying on disk.
 */
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include <sodium.h>

#include "config.h"
#include "db.h"
#include "secret.h"
#include "secret_store.h"
#include "evaluator/cli/commands.h"
#include "evaluator/cli/fetch_register.h"
#include "evaluator/runner/market/market.h"
#include "evaluator/synth.h"

/* Wall clock in ms. */
static int64_t fetch_now_ms(void)
{
	struct timeval tv;
	gettimeofday(&tv, NULL);
	return (int64_t)tv.tv_sec * 1000 + tv.tv_usec / 1000;
}

/* Progress bar on a terminal (stderr): assets done and rows fetched. */
static void fetch_progress(void *ud, size_t done, size_t n, size_t rows)
{
	if (!*(int *)ud)
		return;
	int w = 30, fill = n ? (int)(done * (size_t)w / n) : 0;
	fprintf(stderr, "\r[%.*s%*s] %zu/%zu assets, %zu candles", fill, "##############################",
		w - fill, "", done, n, rows);
	fflush(stderr);
}

/* Parse a positive long in [lo, hi]; -1 if not. */
static long fetch_long(const char *s, long lo, long hi)
{
	char *end;
	long v = strtol(s, &end, 10);
	return (*s && !*end && v >= lo && v <= hi) ? v : -1;
}

static const struct option fetch_opts[] = {
	{ "days-back", required_argument, NULL, 'd' },  { "assets", required_argument, NULL, 'a' },
	{ "interval", required_argument, NULL, 'i' },   { "data-dir", required_argument, NULL, 'D' },
	{ "window", required_argument, NULL, 'w' },     { "refresh", no_argument, NULL, 'r' },
	{ "parallel", required_argument, NULL, 'p' },   { "no-pace", no_argument, NULL, 'n' },
	{ "timeout-ms", required_argument, NULL, 't' }, { "backoff-ms", required_argument, NULL, 'b' },
	{ "rate-wait-ms", required_argument, NULL, 'R' }, { "coinglass", no_argument, NULL, 'C' },
	{ NULL, 0, NULL, 0 },
};

/* The CoinGlass key into key: COINGLASS_API_KEY, else the admin's in the
 * secret store. 1 found, 0 none, -1 with err filled. */
static int fetch_cg_key(const struct config *cfg, struct buf *key, struct buf *err)
{
	const char *env = getenv("COINGLASS_API_KEY");
	if (env && *env) {
		buf_puts(key, env);
		return 1;
	}
	unsigned char sk[SECRET_BYTES];
	int got = -1;
	struct db *db = db_new(&cfg->db);
	if (db_connect(db) != DB_OK)
		buf_printf(err, "no COINGLASS_API_KEY, and the secret store is out of reach: %s", db_error(db));
	else if (!secret_load(cfg->secret_file, false, sk, err))
		buf_puts(err, " (reading the stored CoinGlass key)");
	else
		got = secret_store_get(db, sk, 0, "coinglass", key, err);
	sodium_memzero(sk, sizeof sk);
	db_free(db);
	return got;
}

/* Print the version object. */
static void fetch_print(const char *window, const struct mk_version *v, size_t n_assets, long added,
			int coinglass, const struct fetch_reg *reg, double secs)
{
	json_object *o = json_object_new_object();
	json_object_object_add(o, "window", json_object_new_string(window));
	json_object_object_add(o, "version", json_object_new_string(v->label));
	json_object_object_add(o, "dataset_hash", json_object_new_string(v->hash));
	json_object_object_add(o, "path", json_object_new_string(v->path));
	json_object_object_add(o, "bars", json_object_new_int64((int64_t)v->bars));
	json_object_object_add(o, "first_timestamp_ms", json_object_new_int64(v->first_ms));
	json_object_object_add(o, "last_timestamp_ms", json_object_new_int64(v->last_ms));
	json_object_object_add(o, "assets", json_object_new_int64((int64_t)n_assets));
	json_object_object_add(o, "coinglass", json_object_new_boolean(coinglass));
	if (added >= 0)
		json_object_object_add(o, "rows_added", json_object_new_int64(added));
	json_object_object_add(o, "registered", json_object_new_boolean(reg->registered));
	if (reg->registered)
		json_object_object_add(o, "retired", json_object_new_int(reg->retired));
	else if (v->path[0]) {
		char note[5200];
		snprintf(note, sizeof note, "no DATABASE_URL configured: the version is stored but not registered, so "
			 "runs and evaluations cannot pin it yet (agenttest dataset register %s)", v->path);
		json_object_object_add(o, "notice", json_object_new_string(note));
	}
	json_object_object_add(o, "quality", v->quality ? json_object_get(v->quality) : NULL);
	json_object_object_add(o, "seconds", json_object_new_double(secs));
	puts(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
	json_object_put(o);
}

int cmd_data_fetch(int argc, char **argv)
{
	struct mk_request r;
	mk_request_defaults(&r);
	long days = -1;
	int refresh = 0, tty = isatty(2), coinglass = 0;
	const char *assets_arg = "all", *data_dir = NULL, *window = NULL;
	char base[1024], win[96], err[600];
	optind = 1;
	for (int c; (c = getopt_long(argc, argv, "", fetch_opts, NULL)) != -1;) {
		long v = 0;
		switch (c) {
		case 'd': days = fetch_long(optarg, 1, 3650); if (days < 0) goto bad; break;
		case 'a': assets_arg = optarg; break;
		case 'i': r.interval = optarg; break;
		case 'D': data_dir = optarg; break;
		case 'w': window = optarg; break;
		case 'r': refresh = 1; break;
		case 'p': if ((v = fetch_long(optarg, 1, 8)) < 0) goto bad; r.parallel = (int)v; break;
		case 'n': r.pace_ms = 0; break;
		case 't': if ((v = fetch_long(optarg, 1, 600000)) < 0) goto bad; r.timeout_ms = v; break;
		case 'b': if ((v = fetch_long(optarg, 0, 600000)) < 0) goto bad; r.backoff_ms = v; break;
		case 'R': if ((v = fetch_long(optarg, 0, 600000)) < 0) goto bad; r.rate_wait_ms = v; break;
		case 'C': coinglass = 1; break;
		default: goto bad;
		}
	}
	if (optind != argc || (days < 0 && !refresh) || mk_interval_ms(r.interval) < 0)
		goto bad;
	struct config cfg;
	struct buf cerr = BUF_INIT;
	if (!config_load(&cfg, NULL, &cerr)) {
		int rc = cli_error(CLI_FAILED, "invalid_config", "%s", buf_cstr(&cerr));
		buf_free(&cerr);
		return rc;
	}
	if (!data_dir)
		data_dir = config_get(&cfg, "MANTIS_DATA_DIR");
	int us = 0;
	if (!data_dir || !*data_dir) {
		config_free(&cfg);
		return cli_error(CLI_USAGE, "missing_field", "no data directory: give --data-dir or set MANTIS_DATA_DIR");
	}
	if (!window) {
		snprintf(win, sizeof win, "binance-%s-%ldd", r.interval, days);
		window = win;
	}
	const char *names[SYNTH_N_ASSETS + 1];
	char *store = NULL;
	size_t n = 0;
	if (strcmp(assets_arg, "all") == 0) {
		for (n = 0; n < SYNTH_N_ASSETS; n++)
			names[n] = synth_assets[n];
	} else {
		store = strdup(assets_arg);
		for (char *sv = NULL, *t = strtok_r(store, ",", &sv); t; t = strtok_r(NULL, ",", &sv)) {
			if (n == SYNTH_N_ASSETS || !ds_valid_asset(t)) {
				free(store);
				config_free(&cfg);
				return cli_error(CLI_USAGE, "invalid_field", "--assets: at most %d valid names", SYNTH_N_ASSETS);
			}
			names[n++] = t;
		}
	}
	struct buf cgkey = BUF_INIT;
	struct mk_cg_request cg;
	char cgcache[4352];
	mk_cg_request_defaults(&cg);
	if (coinglass) {
		int got = fetch_cg_key(&cfg, &cgkey, &cerr);
		if (got <= 0) {
			int e = got == 0 ? cli_error(CLI_USAGE, "missing_field", "--coinglass: no CoinGlass key (set "
						     "COINGLASS_API_KEY or store one with POST /api/coinglass-key)")
					 : cli_error(CLI_FAILED, "invalid_config", "%s", buf_cstr(&cerr));
			buf_free(&cerr);
			buf_free(&cgkey);
			free(store);
			config_free(&cfg);
			return e;
		}
		const char *cgurl = config_get(&cfg, "COINGLASS_API_URL");
		cg.base_url = cgurl && *cgurl ? cgurl : "https://open-api-v4.coinglass.com";
		cg.api_key = buf_cstr(&cgkey);
		snprintf(cgcache, sizeof cgcache, "%s/coinglass-cache", data_dir);
		cg.cache_dir = cgcache;
		cg.timeout_ms = r.timeout_ms;
		cg.backoff_ms = r.backoff_ms;
		if (r.pace_ms == 0)
			cg.pace_ms = 0;
	}
	buf_free(&cerr);
	/* after the local checks: the ping-and-fallback may go to the network */
	if (mk_base_url(config_get(&cfg, "BINANCE_API_URL"), config_get(&cfg, "BINANCE_API_URLS"), base, sizeof base, &us,
			err, sizeof err) != 0) {
		if (cgkey.data)
			sodium_memzero(cgkey.data, cgkey.cap);
		buf_free(&cgkey);
		free(store);
		config_free(&cfg);
		return cli_error(CLI_FAILED, mk_errcode(MK_ERR_HTTP), "%s", err);
	}
	if (us && r.pace_ms > 0)
		r.pace_ms = 200;
	r.base_url = base;
	r.progress = fetch_progress;
	r.ud = &tty;
	r.now_ms = fetch_now_ms();
	int64_t ival = mk_interval_ms(r.interval);
	r.end_ms = (r.now_ms / ival) * ival - ival; /* the last closed candle's open time (refresh) */
	struct mk_version v = { 0 };
	enum mk_err rc;
	long added = -1;
	int64_t t0 = fetch_now_ms();
	if (refresh) {
		size_t k = 0;
		rc = mk_refresh(data_dir, window, &r, 10, coinglass ? &cg : NULL, &v, &k, err, sizeof err);
		added = (long)k;
		n = r.n_assets;
	} else {
		r.assets = names;
		r.n_assets = n;
		struct kl_series *s = calloc(n, sizeof *s);
		int64_t first = 0, last = 0;
		/* the window ends at the last bar served and starts days_back days before it (market.h) */
		rc = s ? mk_fetch_window(&r, days, s, &first, &last, err, sizeof err) : MK_ERR_STORE;
		if (rc == MK_OK) {
			char src[256];
			snprintf(src, sizeof src,
				 "{\"kind\":\"binance-klines\",\"interval\":\"%s\",\"days_back\":%ld,\"coinglass\":%s}",
				 r.interval, days, coinglass ? "true" : "false");
			double *cols = NULL;
			if (coinglass) {
				cg.assets = names;
				cg.n_assets = n;
				rc = mk_cg_fetch_grid(&cg, first, last, ival, &cols, err, sizeof err);
			}
			if (rc == MK_OK)
				rc = mk_store(data_dir, window, names, n, s, first, last, ival, cols, src, &v, err,
					      sizeof err);
			free(cols);
		}
		for (size_t i = 0; s && i < n; i++)
			kl_series_free(&s[i]);
		free(s);
	}
	if (tty)
		fputc('\n', stderr);
	int out;
	struct fetch_reg reg = { 0 };
	if (rc != MK_OK)
		out = cli_error(CLI_FAILED, mk_errcode(rc), "%s", err);
	else if (added == 0 && !v.path[0]) {   /* a refresh with nothing new: the current version stays */
		snprintf(v.label, sizeof v.label, "%s (unchanged)", window);
		fetch_print(window, &v, n, added, coinglass, &reg, (double)(fetch_now_ms() - t0) / 1000.0);
		out = CLI_OK;
	} else if ((out = fetch_register(&cfg, data_dir, window, &v, ival, &reg)) == CLI_OK) {
		fetch_print(window, &v, n, added, coinglass, &reg, (double)(fetch_now_ms() - t0) / 1000.0);
	}
	json_object_put(v.quality);
	if (cgkey.data)
		sodium_memzero(cgkey.data, cgkey.cap);
	buf_free(&cgkey);
	free(store);
	config_free(&cfg);
	return out;
bad:
	return cli_error(CLI_USAGE, "bad_request",
			 "usage: agenttest data fetch --days-back N [--assets A,B|all] [--interval 1m] [--data-dir DIR] "
			 "[--window LABEL] [--refresh] [--parallel N] [--no-pace] [--timeout-ms MS] [--backoff-ms MS] "
			 "[--rate-wait-ms MS] [--coinglass]");
}

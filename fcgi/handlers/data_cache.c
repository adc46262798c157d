/*
 * GET /api/data-cache: what `agenttest data fetch` has stored for each
 * MANTIS window (60, 90, 120, 180, 365 days), in the original's shape
 * (spec/mantis.md §5.3) plus our version label and dataset hash.
 *
 * Reads only files under MANTIS_DATA_DIR (docs/market-data.md): the label
 * symlink binance-1m-<D>d, the manifest of the version it points at and
 * that version's quality report; coinglass_key_set says whether a
 * CoinGlass key is stored (POST /api/coinglass-key); has_coinglass says
 * whether the version holds the CoinGlass fields (a prefetch with the key
 * set stores them for every asset of the version, or fails), so
 * coinglass_assets is then the version's asset count.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <json-c/json.h>

#include "fcgi/handlers/handlers.h"
#include "readfile.h"

#define DC_MAX_JSON ((size_t)4 << 20)
#define DC_EXPECTED_ASSETS 29 /* the MANTIS breakout assets */

/* Parse a JSON file (at most DC_MAX_JSON bytes); NULL if absent or bad. */
static json_object *dc_read_json(const char *path)
{
	char *text = NULL;
	size_t len = 0;
	if (read_file_max(path, DC_MAX_JSON, 0, &text, &len) != 0)
		return NULL;
	json_object *o = json_tokener_parse(text);
	free(text);
	return o;
}

/* Integer member (0 when missing). */
static int64_t dc_int(json_object *o, const char *k)
{
	json_object *v;
	return json_object_object_get_ex(o, k, &v) ? json_object_get_int64(v) : 0;
}

/* The status object of one window; key_set: a CoinGlass key is stored. */
static json_object *dc_window(const char *dir, int days, bool key_set)
{
	char lnk[4200], mpath[4300], qpath[4400];
	struct stat st;
	snprintf(lnk, sizeof lnk, "%s/binance-1m-%dd", dir, days);
	snprintf(mpath, sizeof mpath, "%s/manifest.json", lnk);
	json_object *out = json_object_new_object(), *man = NULL, *qual = NULL, *v;
	if (lstat(lnk, &st) != 0 || !(man = dc_read_json(mpath)) ||
	    !json_object_object_get_ex(man, "dataset_hash", &v)) {
		json_object_object_add(out, "cached", json_object_new_boolean(0));
		json_object_put(man);
		return out;
	}
	const char *hash = json_object_get_string(v);
	snprintf(qpath, sizeof qpath, "%s/versions/%s.quality.json", dir, hash);
	qual = dc_read_json(qpath);
	json_object *per = json_object_new_object(), *assets = NULL;
	json_object_object_get_ex(man, "assets", &assets);
	size_t n = assets ? json_object_array_length(assets) : 0;
	int64_t rows = 0, expected = 0;
	for (size_t i = 0; i < n; i++) {
		const char *a = json_object_get_string(json_object_array_get_idx(assets, i));
		json_object *q = NULL, *pa = json_object_new_object();
		if (qual)
			json_object_object_get_ex(qual, a, &q);
		int64_t r = dc_int(q, "rows"), e = q ? dc_int(q, "expected") : dc_int(man, "bars");
		rows += r;
		expected += e;
		json_object_object_add(pa, "rows", json_object_new_int64(r));
		json_object_object_add(pa, "expected", json_object_new_int64(e));
		json_object_object_add(pa, "pct", json_object_new_double(e ? 100.0 * (double)r / (double)e : 0.0));
		json_object_object_add(per, a, pa);
	}
	/* the window as asked: all 29 assets over days x 1440 minutes */
	int64_t want = (int64_t)DC_EXPECTED_ASSETS * days * 1440;
	double row_pct = want ? 100.0 * (double)rows / (double)want : 0.0;
	json_object_object_add(out, "cached", json_object_new_boolean(1));
	json_object_object_add(out, "assets", json_object_new_int64((int64_t)n));
	json_object_object_add(out, "expected_assets", json_object_new_int(DC_EXPECTED_ASSETS));
	json_object *fields = NULL;
	bool has_cg = false;
	json_object_object_get_ex(man, "fields", &fields);
	for (size_t i = 0; fields && i < json_object_array_length(fields); i++)
		has_cg |= strcmp(json_object_get_string(json_object_array_get_idx(fields, i)), "funding_1h") == 0;
	json_object_object_add(out, "has_coinglass", json_object_new_boolean(has_cg));
	json_object_object_add(out, "coinglass_assets", json_object_new_int64(has_cg ? (int64_t)n : 0));
	json_object_object_add(out, "coinglass_key_set", json_object_new_boolean(key_set));
	json_object_object_add(out, "age_hours",
			       json_object_new_double((double)(time(NULL) - st.st_mtime) / 3600.0));
	json_object_object_add(out, "source", json_object_new_string("binance"));
	json_object_object_add(out, "row_pct", json_object_new_double(row_pct));
	json_object_object_add(out, "complete", json_object_new_boolean(row_pct >= 90.0));
	json_object_object_add(out, "per_asset", per);
	json_object_object_get_ex(man, "version", &v);
	json_object_object_add(out, "version", json_object_get(v));
	json_object_object_add(out, "dataset_hash", json_object_new_string(hash));
	json_object_put(man);
	json_object_put(qual);
	return out;
}

void h_data_cache_get(struct fcgi_ctx *c)
{
	static const int windows[] = { 60, 90, 120, 180, 365 };
	const char *dir = fcgi_config(c, "MANTIS_DATA_DIR");
	struct db_col n = DB_COL_INT;
	enum db_status st = db_exec(fcgi_db(c), "SELECT COUNT(*) FROM secrets WHERE owner_id = 0 AND kind = 'coinglass'",
				    NULL, 0, &n, 1, NULL, NULL, NULL, DB_IDEMPOTENT);
	if (st != DB_OK) {
		fcgi_reply_db_error(c, st);
		return;
	}
	json_object *o = json_object_new_object();
	for (size_t i = 0; i < sizeof windows / sizeof windows[0]; i++) {
		char k[8];
		snprintf(k, sizeof k, "%d", windows[i]);
		json_object *w;
		if (dir && *dir)
			w = dc_window(dir, windows[i], n.i > 0);
		else {
			w = json_object_new_object();
			json_object_object_add(w, "cached", json_object_new_boolean(0));
		}
		json_object_object_add(o, k, w);
	}
	fcgi_reply_json(c, 200, o);
}

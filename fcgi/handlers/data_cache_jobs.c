/*
 * data-cache writes and the prefetch status, in the original MANTIS shapes
 * (spec/mantis.md §4.2, §5.3) with its defects fixed:
 *
 *   POST /api/data-cache/prefetch {days_back?: 60..365 (60), assets?: [..],
 *        coinglass_key?} admin. The key (the original's rule, as
 *        /api/coinglass-key) is sealed for this job into the row (sql/020,
 *        secret_store_seal_job) and used by it; as the original does, it
 *        also becomes the server's stored key when none is stored.
 *        Queues a prefetch job (table data_prefetches, sql/013) for
 *        the window binance-1m-<days_back>d and wakes the runners:
 *        202 {status:"started", days_back, window, id}. A prefetch of the
 *        same window already queued or running: 409 {status:"already_running",
 *        days_back, window, id, error, code:"conflict", detail}. The guard is
 *        the UNIQUE key on data_prefetches.active_window, so it holds across
 *        every pool worker and host (the original kept it in one process).
 *   GET  /api/data-cache/status[?days_back=N]
 *        the newest prefetch (of that window): {running, progress, step,
 *        total_steps, error, finished_at} plus ours (id, status, window,
 *        days_back, assets_done, total_assets, rows_fetched, error_code,
 *        dataset_version, dataset_hash, queued_at, started_at, attempts). Durable in
 *        MariaDB: any worker answers the same.
 *   POST /api/data-cache/delete {days_back?: 60..365 (60)}
 *        admin. 409 while a prefetch of the window is queued or running, and
 *        409 when the window's current version is still referenced by a run
 *        or an evaluation (nothing is deleted then). Otherwise removes the
 *        label binance-1m-<D>d and every version of the window that no run or
 *        evaluation references (datasets row, directory, quality report);
 *        referenced older versions are kept and listed:
 *        200 {status:"deleted", days_back, window, deleted:[..], kept:[..]}.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <json-c/json.h>
#include <sodium.h>

#include "evaluator/dataset.h"
#include "evaluator/synth.h"
#include "fcgi/handlers/handlers.h"
#include "fcgi/handlers/runs_view.h"
#include "dsretire.h"
#include "log.h"
#include "readfile.h"
#include "secret_store.h"

#define DCJ_DAYS_MIN 60
#define DCJ_DAYS_MAX 365
#define DCJ_DAYS_DEFAULT 60
#define DCJ_MANIFEST_MAX ((size_t)1 << 20)

/* "binance-1m-<days>d" into out. */
static void dcj_window(char out[32], long long days)
{
	snprintf(out, 32, "binance-1m-%lldd", days);
}

/* The asset list of a prefetch body as a JSON array text (default: all 29). false after a 400 reply. */
static bool dcj_assets(struct fcgi_ctx *c, json_object *body, struct buf *out, size_t *n)
{
	json_object *arr = NULL;
	if (!fcgi_json_array(c, body, "assets", FIELD_OPTIONAL, SYNTH_N_ASSETS, &arr))
		return false;
	json_object *list = json_object_new_array();
	*n = arr ? json_object_array_length(arr) : SYNTH_N_ASSETS;
	if (*n == 0) {
		json_object_put(list);
		fcgi_reply_error(c, 400, "invalid_field", "assets: give at least one asset, or leave it out for all %d",
				 SYNTH_N_ASSETS);
		return false;
	}
	for (size_t i = 0; i < *n; i++) {
		const char *s = synth_assets[i];
		if (arr) {
			json_object *v = json_object_array_get_idx(arr, i);
			s = json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
			if (!s || !ds_valid_asset(s) || synth_asset_index(s) < 0) {
				json_object_put(list);
				fcgi_reply_error(c, 400, "invalid_field", "assets[%zu]: not one of the %d MANTIS assets", i,
						 SYNTH_N_ASSETS);
				return false;
			}
			for (size_t k = 0; k < i; k++)
				if (strcmp(json_object_get_string(json_object_array_get_idx(list, k)), s) == 0) {
					json_object_put(list);
					fcgi_reply_error(c, 400, "invalid_field", "assets[%zu]: %s is listed twice", i, s);
					return false;
				}
		}
		json_object_array_add(list, json_object_new_string(s));
	}
	buf_puts(out, json_object_to_json_string_ext(list, JSON_C_TO_STRING_PLAIN));
	json_object_put(list);
	return true;
}

/* The id of the queued or running prefetch of window into id ("" if none). */
static enum db_status dcj_active(struct db *db, const char *window, char id[37])
{
	struct db_col col[] = { { .type = DB_T_TEXT, .buf = id, .cap = 37 } };
	struct db_arg a[] = { DB_ARG_TEXT(window) };
	struct db_result res = { 0 };
	id[0] = '\0';
	return db_exec(db, "SELECT id FROM data_prefetches WHERE active_window = ?", a, 1, col, 1, NULL, NULL, &res,
		       DB_IDEMPOTENT);
}

/* The 409 of a window with a prefetch queued or running. */
static void dcj_reply_running(struct fcgi_ctx *c, long long days, const char *window, const char *id)
{
	json_object *o = json_object_new_object();
	json_object_object_add(o, "status", json_object_new_string("already_running"));
	json_object_object_add(o, "days_back", json_object_new_int64(days));
	json_object_object_add(o, "window", json_object_new_string(window));
	json_object_object_add(o, "id", *id ? json_object_new_string(id) : NULL);
	char msg[160];
	snprintf(msg, sizeof msg, "a prefetch of %s is already queued or running", window);
	json_object_object_add(o, "error", json_object_new_string(msg));
	json_object_object_add(o, "code", json_object_new_string("conflict"));
	json_object_object_add(o, "detail", json_object_new_string(msg));
	fcgi_reply_json(c, 409, o);
}

/*
 * The body's coinglass_key (optional) into *key and sealed for job id into
 * nonce/ct (*ctlen 0 and *key NULL without one), checked with the
 * original's rule as POST /api/coinglass-key. false after replying 400/500.
 */
static bool dcj_body_key(struct fcgi_ctx *c, json_object *body, const char *id, const char **key,
			 unsigned char nonce[SECRET_STORE_NONCE_BYTES], unsigned char *ct, size_t *ctlen)
{
	*ctlen = 0;
	*key = NULL;
	if (!body)
		return true;
	if (!fcgi_json_string(c, body, "coinglass_key", FIELD_OPTIONAL, 1, CGK_MAX, key))
		return false;
	if (!*key)
		return true;
	if (!cgk_valid(*key)) {
		fcgi_reply_error(c, 400, "invalid_field", "coinglass_key: 1 to %d letters, digits, '-', '_' or '.'",
				 CGK_MAX);
		return false;
	}
	if (!secret_store_seal_job(fcgi_server_key(c), id, "coinglass", *key, strlen(*key), nonce, ct)) {
		fcgi_reply_error(c, 500, "internal", "cannot seal the CoinGlass key");
		return false;
	}
	*ctlen = strlen(*key) + SECRET_STORE_TAG_BYTES;
	return true;
}

/* As the original: the body's key becomes the server's stored key (secret
 * store, owner 0) when none is stored. Best effort after the job is queued
 * (the job has its own sealed copy): a failure is logged, without the key. */
static void dcj_keep_key(struct fcgi_ctx *c, const char *key)
{
	struct buf have = BUF_INIT, err = BUF_INIT;
	int got = secret_store_get(fcgi_db(c), fcgi_server_key(c), 0, "coinglass", &have, &err);
	if (got < 0 || (got == 0 && !secret_store_put(fcgi_db(c), fcgi_server_key(c), 0, "coinglass", key, &err)))
		log_msg(LOG_LVL_WARNING, "coinglass_key_not_stored", "%s", buf_cstr(&err));
	if (have.data)
		sodium_memzero(have.data, have.cap);
	buf_free(&have);
	buf_free(&err);
}

void h_data_cache_prefetch(struct fcgi_ctx *c)
{
	static const char *const allowed[] = { "days_back", "assets", "coinglass_key", NULL };
	json_object *body = fcgi_body(c);
	int64_t days = DCJ_DAYS_DEFAULT;
	struct buf assets = BUF_INIT;
	size_t n = 0, ctlen = 0;
	long long uid = 0;
	char window[32], id[37];
	unsigned char nonce[SECRET_STORE_NONCE_BYTES], ct[CGK_MAX + SECRET_STORE_TAG_BYTES];
	if (body && !fcgi_json_only(c, body, allowed))
		return;
	if (body && !fcgi_json_int(c, body, "days_back", FIELD_OPTIONAL, DCJ_DAYS_MIN, DCJ_DAYS_MAX, &days))
		return;
	if (!dcj_assets(c, body, &assets, &n))
		goto out;
	if (!fcgi_user_id(c, &uid))
		goto out;
	dcj_window(window, days);
	rv_uuid(id);
	const char *key = NULL;
	if (!dcj_body_key(c, body, id, &key, nonce, ct, &ctlen))
		goto out;
	struct db_arg a[] = { DB_ARG_TEXT(id), DB_ARG_INT(uid), DB_ARG_TEXT(window), DB_ARG_INT(days),
			      DB_ARG_TEXT(buf_cstr(&assets)), DB_ARG_INT((long long)n),
			      ctlen ? DB_ARG_BLOB(nonce, sizeof nonce) : DB_ARG_NULL,
			      ctlen ? DB_ARG_BLOB(ct, ctlen) : DB_ARG_NULL };
	enum db_status st = db_exec(fcgi_db(c), "INSERT INTO data_prefetches (id, owner_id, window_label, days_back, "
				    "assets, total_assets, coinglass_nonce, coinglass_sealed) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
				    a, 8, NULL, 0, NULL, NULL, NULL, 0);
	if (st == DB_DUPLICATE) {
		char active[37] = "";
		if (dcj_active(fcgi_db(c), window, active) != DB_OK)
			active[0] = '\0';
		dcj_reply_running(c, days, window, active);
		goto out;
	}
	if (st != DB_OK) {
		fcgi_reply_db_error(c, st);
		goto out;
	}
	if (key)
		dcj_keep_key(c, key);
	rv_notify(c, "q");
	json_object *o = json_object_new_object();
	json_object_object_add(o, "status", json_object_new_string("started"));
	json_object_object_add(o, "days_back", json_object_new_int64(days));
	json_object_object_add(o, "window", json_object_new_string(window));
	json_object_object_add(o, "id", json_object_new_string(id));
	json_object_object_add(o, "assets", json_object_new_int64((int64_t)n));
	fcgi_reply_json(c, 202, o);
out:
	sodium_memzero(ct, sizeof ct);
	buf_free(&assets);
}

/* Column text, or JSON null when NULL. */
static json_object *dcj_text(const struct db_col *col)
{
	return col->is_null ? NULL : json_object_new_string(col->buf);
}

void h_data_cache_status(struct fcgi_ctx *c)
{
	int64_t days = 0;
	char id[37], status[16], window[65], step[161], code[33], msg[4097], ver[65], hash[65], fin[40], qd[32], sd[32];
	if (!fcgi_query_int(c, "days_back", DCJ_DAYS_MIN, DCJ_DAYS_MAX, 0, &days))
		return;
	char wsel[32] = "";
	if (days)
		dcj_window(wsel, days);
	struct db_col col[] = { DB_COL_TEXT(id), DB_COL_TEXT(status), DB_COL_TEXT(window), DB_COL_INT, DB_COL_INT,
				DB_COL_INT, DB_COL_INT, DB_COL_TEXT(step), DB_COL_TEXT(code), DB_COL_TEXT(msg),
				DB_COL_TEXT(ver), DB_COL_TEXT(hash), DB_COL_TEXT(fin), DB_COL_TEXT(qd), DB_COL_TEXT(sd),
				DB_COL_INT };
	struct db_arg a[] = { DB_ARG_TEXT(wsel), DB_ARG_TEXT(wsel) };
	struct db_result res = { 0 };
	enum db_status st = db_exec(fcgi_db(c),
		"SELECT id, status, window_label, days_back, assets_done, total_assets, rows_fetched, step, error_code, "
		"error_message, dataset_version, dataset_hash, CAST(UNIX_TIMESTAMP(completed_at) AS CHAR), "
		"DATE_FORMAT(queued_at, '%Y-%m-%dT%H:%i:%s.%fZ'), DATE_FORMAT(started_at, '%Y-%m-%dT%H:%i:%s.%fZ'), "
		"attempts FROM data_prefetches WHERE ? = '' OR window_label = ? ORDER BY seq DESC LIMIT 1",
		a, 2, col, sizeof col / sizeof col[0], NULL, NULL, &res, DB_IDEMPOTENT);
	if (st != DB_OK) {
		fcgi_reply_db_error(c, st);
		return;
	}
	json_object *o = json_object_new_object();
	if (res.rows == 0) {
		json_object_object_add(o, "running", json_object_new_boolean(0));
		json_object_object_add(o, "progress", json_object_new_int(0));
		json_object_object_add(o, "step", NULL);
		json_object_object_add(o, "total_steps", json_object_new_int(0));
		json_object_object_add(o, "error", NULL);
		json_object_object_add(o, "finished_at", NULL);
		json_object_object_add(o, "status", NULL);
		fcgi_reply_json(c, 200, o);
		return;
	}
	bool running = strcmp(status, "queued") == 0 || strcmp(status, "running") == 0;
	json_object_object_add(o, "running", json_object_new_boolean(running));
	json_object_object_add(o, "progress", json_object_new_int64(col[4].i));
	json_object_object_add(o, "step", col[7].is_null ? json_object_new_string(status) : dcj_text(&col[7]));
	json_object_object_add(o, "total_steps", json_object_new_int64(col[5].i));
	json_object_object_add(o, "error", dcj_text(&col[9]));
	json_object_object_add(o, "finished_at", col[12].is_null ? NULL : json_object_new_double(atof(fin)));
	json_object_object_add(o, "id", json_object_new_string(id));
	json_object_object_add(o, "status", json_object_new_string(status));
	json_object_object_add(o, "window", json_object_new_string(window));
	json_object_object_add(o, "days_back", json_object_new_int64(col[3].i));
	json_object_object_add(o, "assets_done", json_object_new_int64(col[4].i));
	json_object_object_add(o, "total_assets", json_object_new_int64(col[5].i));
	json_object_object_add(o, "rows_fetched", json_object_new_int64(col[6].i));
	json_object_object_add(o, "error_code", dcj_text(&col[8]));
	json_object_object_add(o, "dataset_version", dcj_text(&col[10]));
	json_object_object_add(o, "dataset_hash", dcj_text(&col[11]));
	json_object_object_add(o, "queued_at", dcj_text(&col[13]));
	json_object_object_add(o, "started_at", dcj_text(&col[14]));
	json_object_object_add(o, "attempts", json_object_new_int64(col[15].i));
	fcgi_reply_json(c, 200, o);
}

/* The manifest version label of data_dir/versions/<hash> into label; false if unreadable. */
static bool dcj_manifest_label(const char *data_dir, const char *hash, char *label, size_t len)
{
	char path[4400], *text = NULL;
	size_t n = 0;
	snprintf(path, sizeof path, "%s/versions/%s/manifest.json", data_dir, hash);
	if (read_file_max(path, DCJ_MANIFEST_MAX, 0, &text, &n) != 0)
		return false;
	json_object *m = json_tokener_parse(text), *v = NULL;
	free(text);
	bool ok = m && json_object_object_get_ex(m, "version", &v) && json_object_is_type(v, json_type_string);
	if (ok)
		snprintf(label, len, "%s", json_object_get_string(v));
	json_object_put(m);
	return ok;
}

/* Where the label of window points: the hash into hash ("" if no label). */
static void dcj_label_target(const char *data_dir, const char *window, char hash[65])
{
	char lnk[4400], target[256];
	snprintf(lnk, sizeof lnk, "%s/%s", data_dir, window);
	ssize_t n = readlink(lnk, target, sizeof target - 1);
	hash[0] = '\0';
	if (n <= 0)
		return;
	target[n] = '\0';
	const char *h = strncmp(target, "versions/", 9) == 0 ? target + 9 : "";
	if (dsretire_is_hash(h))
		memcpy(hash, h, 65);
}

/* One registered version of a window (rows of datasets). */
struct dcj_row {
	long long id;
	char      version[65];
	char      hash[65];
};

/* Collect into rows (up to max) the registered versions whose label starts with prefix. */
struct dcj_rows {
	struct dcj_row *row;
	size_t          n, max;
};

/* Row callback of dcj_registered. */
static bool dcj_collect(void *ctx, const struct db_col *c, size_t ncols)
{
	struct dcj_rows *r = ctx;
	(void)ncols;
	if (r->n == r->max)
		return false;
	r->row[r->n].id = c[0].i;
	snprintf(r->row[r->n].version, sizeof r->row[r->n].version, "%s", c[1].buf);
	snprintf(r->row[r->n].hash, sizeof r->row[r->n].hash, "%s", c[2].buf);
	r->n++;
	return true;
}

/* The registered versions of the window (label prefix "<window>-"). */
static enum db_status dcj_registered(struct db *db, const char *prefix, struct dcj_rows *rows)
{
	char version[65], hash[65], like[48];
	snprintf(like, sizeof like, "%s%%", prefix);   /* the prefix has no LIKE metacharacter but '-' */
	struct db_col c[] = { DB_COL_INT, DB_COL_TEXT(version), DB_COL_TEXT(hash) };
	struct db_arg a[] = { DB_ARG_TEXT(like) };
	return db_exec(db, "SELECT id, version, dataset_hash FROM datasets WHERE version LIKE ? ORDER BY id", a, 1, c,
		       3, dcj_collect, rows, NULL, DB_IDEMPOTENT);
}

/*
 * Delete the window's versions: unregister each registered one that nothing
 * pins, then remove the directories written for this window (manifest label
 * "<window>-...") that no datasets row of any window still uses. Labels go
 * to deleted or kept. false on a database error, or with the directory and
 * the reason in failed when a directory cannot be removed.
 */
static bool dcj_delete_versions(struct db *db, const char *dir, const char *prefix, json_object *deleted,
				json_object *kept, char *failed, size_t failed_len)
{
	struct dcj_row row[256];
	struct dcj_rows rows = { row, 0, sizeof row / sizeof row[0] };
	char vdir[4400];
	if (dcj_registered(db, prefix, &rows) != DB_OK)
		return false;
	for (size_t i = 0; i < rows.n; i++) {
		int r = dsretire_unregister(db, row[i].id);
		if (r < 0)
			return false;
		json_object_array_add(r ? deleted : kept, json_object_new_string(row[i].version));
	}
	snprintf(vdir, sizeof vdir, "%s/versions", dir);
	DIR *d = opendir(vdir);
	struct dirent *e;
	bool ok = true;
	while (ok && d && (e = readdir(d))) {
		char label[160];
		if (!dsretire_is_hash(e->d_name) || !dcj_manifest_label(dir, e->d_name, label, sizeof label) ||
		    strncmp(label, prefix, strlen(prefix)) != 0)
			continue;
		int r = dsretire_hash_in_use(db, e->d_name);
		if (r < 0)
			ok = false;
		else if (r == 0) {
			bool listed = false;
			for (size_t i = 0; i < json_object_array_length(deleted); i++)
				listed |= strcmp(json_object_get_string(json_object_array_get_idx(deleted, i)), label) == 0;
			if (dsretire_remove_files(dir, e->d_name) != 0) {
				/* unregistered but still on disk: a repeated delete finds it again */
				/* the operator's log has the path; the answer names the
				 * directory inside MANTIS_DATA_DIR only (issue 11) */
				int err = errno;
				log_msg(LOG_LVL_ERROR, "data_cache_delete_failed", "%s/versions/%s: %s", dir, e->d_name,
					strerror(err));
				snprintf(failed, failed_len, "versions/%s: %s", e->d_name, strerror(err));
				ok = false;
			} else if (!listed)
				json_object_array_add(deleted, json_object_new_string(label));
		}
	}
	if (d)
		closedir(d);
	return ok;
}

void h_data_cache_delete(struct fcgi_ctx *c)
{
	static const char *const allowed[] = { "days_back", NULL };
	json_object *body = fcgi_body(c);
	int64_t days = DCJ_DAYS_DEFAULT;
	char window[32], active[37], current[65], prefix[40];
	const char *dir = fcgi_config(c, "MANTIS_DATA_DIR");
	struct db *db = fcgi_db(c);
	if (body && !fcgi_json_only(c, body, allowed))
		return;
	if (body && !fcgi_json_int(c, body, "days_back", FIELD_OPTIONAL, DCJ_DAYS_MIN, DCJ_DAYS_MAX, &days))
		return;
	dcj_window(window, days);
	enum db_status st = dcj_active(db, window, active);
	if (st != DB_OK) {
		fcgi_reply_db_error(c, st);
		return;
	}
	if (active[0]) {
		dcj_reply_running(c, days, window, active);
		return;
	}
	if (!dir || !*dir) {
		fcgi_reply_error(c, 404, "not_found", "MANTIS_DATA_DIR is not set: no market data is stored");
		return;
	}
	dcj_label_target(dir, window, current);
	if (current[0]) {
		int r = dsretire_hash_pinned(db, current);
		if (r < 0) {
			fcgi_reply_db_error(c, DB_ERROR);
			return;
		}
		if (r > 0) {
			fcgi_reply_error(c, 409, "conflict", "the current version of %s (%.16s...) is pinned by a run, an "
					 "evaluation, an agent or an active paper account; it cannot be deleted", window, current);
			return;
		}
	}
	char lnk[4400];
	struct db_arg la[] = { DB_ARG_TEXT(window) };
	st = db_exec(db, "DELETE FROM dataset_labels WHERE label = ?", la, 1, NULL, 0, NULL, NULL, NULL, 0);
	if (st != DB_OK) {
		fcgi_reply_db_error(c, st);
		return;
	}
	snprintf(lnk, sizeof lnk, "%s/%s", dir, window);
	unlink(lnk);
	snprintf(prefix, sizeof prefix, "%s-", window);
	json_object *deleted = json_object_new_array(), *kept = json_object_new_array();
	char failed[4600] = "";
	if (!dcj_delete_versions(db, dir, prefix, deleted, kept, failed, sizeof failed)) {
		json_object_put(deleted);
		json_object_put(kept);
		if (failed[0])
			fcgi_reply_error(c, 500, "internal", "cannot remove %s of MANTIS_DATA_DIR (the pool needs write "
					 "access to it; repeat the delete after fixing it)", failed);
		else
			fcgi_reply_db_error(c, DB_ERROR);
		return;
	}
	json_object *o = json_object_new_object();
	json_object_object_add(o, "status", json_object_new_string("deleted"));
	json_object_object_add(o, "days_back", json_object_new_int64(days));
	json_object_object_add(o, "window", json_object_new_string(window));
	json_object_object_add(o, "deleted", deleted);
	json_object_object_add(o, "kept", kept);
	fcgi_reply_json(c, 200, o);
}

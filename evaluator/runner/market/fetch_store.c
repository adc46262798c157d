/*
 * fetch_store: fetched series → immutable dataset versions, the moving
 * window label, refresh (contract in market.h).
 *
 * Layout under data_dir (MANTIS_DATA_DIR):
 *   versions/<dataset hash>/              one dataset (docs/datasets.md format)
 *   versions/<dataset hash>.quality.json  its quality report
 *   versions/<dataset hash>.midstate      its files' SHA-256 midstates (midstate.h)
 *   <window>  ->  versions/<dataset hash>  the moving label (symlink)
 * A version is written by ds_writer into a hidden staging name, then
 * renamed to its hash with RENAME_NOREPLACE (the same bytes fetched twice
 * give the same directory, kept once); the label is a new symlink renamed
 * over the old one. versions/<hash>.midstate (midstate.h) keeps each file's
 * SHA-256 midstate, so a refresh copies the stored prefix of every column
 * in the kernel and hashes only the new bars (dataset_extend.h): same
 * bytes, same hashes as writing everything again. A crash at any point leaves only hidden staging
 * entries, never a half version or a label pointing at one.
 */
#include "evaluator/runner/market/market.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "evaluator/dataset.h"
#include "evaluator/dataset_extend.h"
#include "evaluator/runner/market/midstate.h"
#include "xalloc.h"

/*
 * What a refresh keeps of the stored version (midstate.h): its directory,
 * its bar count, and per file the SHA-256 midstate (NULL: write it the
 * plain way). ts: the timestamps' state; col[a*5+f]: asset a's OHLCV field
 * f; an asset whose new candles fall inside the old grid (a gap at its end
 * filled) has NULLs, since its stored prefix is not the new one.
 */
struct mk_prefix {
	char    dir[4352];
	size_t  bars;
	const crypto_hash_sha256_state  *ts;
	const crypto_hash_sha256_state **col;
};

/* Open file `name` of the prefix's directory read-only; -1 if it cannot. */
static int mk_prefix_open(const struct mk_prefix *p, const char *name)
{
	char path[4608];
	snprintf(path, sizeof path, "%s/%s", p->dir, name);
	return open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
}

/* Remove a flat directory (a staging dataset) and its files. */
static void mk_rmdir_flat(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	while (d && (e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			unlinkat(dirfd(d), e->d_name, 0);
	if (d)
		closedir(d);
	rmdir(dir);
}

/*
 * Make a directory of the data directory writable by its group, setgid so
 * what is created in it keeps the group: the runner (root under systemd)
 * writes the versions, the pool (user agenttest, group agenttest) deletes
 * them (POST /api/data-cache/delete). Adds group rwx and setgid to the
 * mode the umask gave, nothing for others. Best effort: a directory of
 * another owner is left as it is (docs/deployment.md, "Market data").
 */
static void mk_share_dir(const char *path)
{
	struct stat st;
	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == geteuid())
		(void)chmod(path, (st.st_mode & 07777) | S_IRWXG | S_ISGID);
}

/* "window-YYYYMMDDTHHMMZ" of the last bar. */
static void mk_label(char *out, size_t len, const char *window, int64_t last_ms)
{
	time_t t = (time_t)(last_ms / 1000);
	struct tm tm;
	gmtime_r(&t, &tm);
	snprintf(out, len, "%s-%04d%02d%02dT%02d%02dZ", window, tm.tm_year + 1900, tm.tm_mon + 1,
		 tm.tm_mday, tm.tm_hour, tm.tm_min);
}

/* One file: the stored prefix (pre, name, mid) when there is one and it
 * opens, else everything; via the writer's ts or column put. */
static enum ds_err mk_put(struct ds_writer *w, const struct mk_prefix *pre, const char *name,
			  const crypto_hash_sha256_state *mid, size_t a, size_t f, const int64_t *ts, const double *col,
			  struct ds_error *e)
{
	int fd = pre && mid ? mk_prefix_open(pre, name) : -1;
	size_t keep = fd >= 0 ? pre->bars : 0;
	enum ds_err rc = ts ? ds_writer_put_ts_extend(w, fd, keep, mid, ts, e)
			    : ds_writer_put_extend(w, a, f, fd, keep, mid, col, e);
	if (fd >= 0)
		close(fd);
	return rc;
}

/* Write the dataset (grid + columns) to `dir` (must not exist), with the
 * stored prefix pre (NULL: none); the files' midstates into *mid (*n_mid
 * of them, caller frees; NULL if they could not be had). */
static enum mk_err mk_write(const char *dir, const char *label, const char *const *assets, size_t n,
			    const struct kl_series *s, int64_t first_ms, int64_t last_ms, int64_t ival,
			    const double *cg, const char *source_json, const struct mk_prefix *pre,
			    struct mk_version *v, crypto_hash_sha256_state **mid, size_t *n_mid, char *err,
			    size_t errlen)
{
	size_t T = (size_t)((last_ms - first_ms) / ival) + 1;
	const char *fields[5 + MK_CG_FIELDS] = { "open", "high", "low", "close", "volume" };
	for (size_t f = 0; f < MK_CG_FIELDS; f++)
		fields[5 + f] = mk_cg_fields[f];
	struct ds_layout l = { .version = label, .n_assets = n, .assets = assets, .interval_ms = ival,
			       .bars = T, .source_json = source_json, .n_fields = cg ? 5 + MK_CG_FIELDS : 0,
			       .fields = cg ? fields : NULL };
	struct ds_error e = { 0 };
	enum mk_err rc = MK_OK;
	int64_t *ts = xcalloc(T, sizeof *ts);
	double *buf = xcalloc(xmul(T, 5), sizeof *buf);
	double *const col[5] = { buf, buf + T, buf + 2 * T, buf + 3 * T, buf + 4 * T };
	for (size_t i = 0; i < T; i++)
		ts[i] = first_ms + (int64_t)i * ival;
	struct ds_writer *w = ds_writer_begin(dir, &l, &e);
	*mid = NULL;
	*n_mid = 0;
	if (!w || mk_put(w, pre, "ts.i64", pre ? pre->ts : NULL, 0, 0, ts, NULL, &e) != DS_OK)
		goto fail;
	v->quality = json_object_new_object();
	for (size_t a = 0; a < n; a++) {
		struct kl_quality q;
		kl_grid(&s[a], first_ms, last_ms, ival, col, &q);
		json_object_object_add(v->quality, assets[a], kl_quality_json(&q, 1000));
		kl_quality_free(&q);
		for (size_t f = 0; f < 5; f++) {
			char name[160];
			snprintf(name, sizeof name, "%s.%s.f64", assets[a], fields[f]);
			if (mk_put(w, pre, name, pre ? pre->col[a * 5 + f] : NULL, a, f, NULL, col[f], &e) != DS_OK)
				goto fail;
		}
		for (size_t f = 0; cg && f < MK_CG_FIELDS; f++)
			if (ds_writer_put(w, a, 5 + f, cg + (a * MK_CG_FIELDS + f) * T, &e) != DS_OK)
				goto fail;
	}
	const crypto_hash_sha256_state *ms = ds_writer_midstates(w, n_mid);
	*mid = xcalloc(*n_mid, sizeof **mid);
	memcpy(*mid, ms, *n_mid * sizeof **mid);
	if (ds_writer_commit(w, v->hash, &e) != DS_OK) {
		w = NULL;
		goto fail;
	}
	w = NULL;
	v->bars = T;
	v->first_ms = first_ms;
	v->last_ms = last_ms;
	goto out;
fail:
	ds_writer_abort(w);
	free(*mid);
	*mid = NULL;
	*n_mid = 0;
	snprintf(err, errlen, "writing the dataset: %s", e.msg);
	rc = MK_ERR_STORE;
out:
	free(ts);
	free(buf);
	return rc;
}

/* Point data_dir/window at versions/<hash> atomically. */
static int mk_point_label(const char *data_dir, const char *window, const char *hash)
{
	char tmp[4352], target[128], lnk[4352];
	snprintf(target, sizeof target, "versions/%s", hash);
	snprintf(tmp, sizeof tmp, "%s/.%s.link-%ld", data_dir, window, (long)getpid());
	snprintf(lnk, sizeof lnk, "%s/%s", data_dir, window);
	unlink(tmp);
	if (symlink(target, tmp) != 0)
		return -1;
	if (rename(tmp, lnk) != 0) {
		unlink(tmp);
		return -1;
	}
	return 0;
}

/* Write the quality report next to the version (tmp + rename). */
static int mk_write_quality(const char *data_dir, const struct mk_version *v)
{
	char path[4352], tmp[4400];
	snprintf(path, sizeof path, "%s/versions/%s.quality.json", data_dir, v->hash);
	snprintf(tmp, sizeof tmp, "%s.tmp-%ld", path, (long)getpid());
	FILE *f = fopen(tmp, "w");
	if (!f)
		return -1;
	int bad = fputs(json_object_to_json_string_ext(v->quality, JSON_C_TO_STRING_PRETTY), f) < 0;
	bad |= fputc('\n', f) == EOF;
	bad |= fflush(f) != 0 || fsync(fileno(f)) != 0;
	bad |= fclose(f) != 0;
	if (bad || rename(tmp, path) != 0) {
		unlink(tmp);
		return -1;
	}
	return 0;
}

/* mk_store with the stored prefix of a refresh (NULL: none). */
static enum mk_err mk_store_pre(const char *data_dir, const char *window, const char *const *assets, size_t n,
				const struct kl_series *s, int64_t first_ms, int64_t last_ms, int64_t interval_ms,
				const double *cg, const char *source_json, const struct mk_prefix *pre,
				struct mk_version *v, char *err, size_t errlen)
{
	char vdir[4352], stage[4400];
	crypto_hash_sha256_state *mid = NULL;
	size_t n_mid = 0;
	memset(v, 0, sizeof *v);
	if (!ds_valid_label(window) || strlen(window) > 64) {
		snprintf(err, errlen, "bad window label '%s'", window);
		return MK_ERR_STORE;
	}
	snprintf(vdir, sizeof vdir, "%s/versions", data_dir);
	if ((mkdir(data_dir, 0775) != 0 && errno != EEXIST) || (mkdir(vdir, 0775) != 0 && errno != EEXIST)) {
		snprintf(err, errlen, "cannot create %s: %s", vdir, strerror(errno));
		return MK_ERR_STORE;
	}
	mk_share_dir(data_dir);
	mk_share_dir(vdir);
	mk_label(v->label, sizeof v->label, window, last_ms);
	snprintf(stage, sizeof stage, "%s/.stage-%ld-%lld", vdir, (long)getpid(), (long long)last_ms);
	mk_rmdir_flat(stage); /* a leftover of this pid (reused) */
	enum mk_err rc = mk_write(stage, v->label, assets, n, s, first_ms, last_ms, interval_ms, cg, source_json, pre,
				  v, &mid, &n_mid, err, errlen);
	if (rc != MK_OK)
		goto fail;
	snprintf(v->path, sizeof v->path, "%s/%s", vdir, v->hash);
	if (renameat2(AT_FDCWD, stage, AT_FDCWD, v->path, RENAME_NOREPLACE) != 0) {
		if (errno != EEXIST) {
			snprintf(err, errlen, "cannot move %s into place: %s", stage, strerror(errno));
			rc = MK_ERR_STORE;
			goto fail;
		}
		mk_rmdir_flat(stage); /* same bytes already stored: keep the first */
	}
	mk_share_dir(v->path);
	/* a cache for the next refresh: without it that refresh hashes everything */
	(void)mk_midstate_save(data_dir, v->hash, mid, n_mid);
	free(mid);
	if (mk_write_quality(data_dir, v) != 0 || mk_point_label(data_dir, window, v->hash) != 0) {
		snprintf(err, errlen, "cannot write the quality report or the label %s/%s: %s", data_dir, window,
			 strerror(errno));
		return MK_ERR_STORE;
	}
	return MK_OK;
fail:
	free(mid);
	mk_rmdir_flat(stage);
	json_object_put(v->quality);
	v->quality = NULL;
	return rc;
}

enum mk_err mk_store(const char *data_dir, const char *window, const char *const *assets, size_t n,
		     const struct kl_series *s, int64_t first_ms, int64_t last_ms, int64_t interval_ms,
		     const double *cg, const char *source_json, struct mk_version *v, char *err, size_t errlen)
{
	return mk_store_pre(data_dir, window, assets, n, s, first_ms, last_ms, interval_ms, cg, source_json, NULL, v,
			    err, errlen);
}

/* The stored candles of asset a of ds (its bars with a close) as a series
 * (empty on entry; timestamps of a dataset strictly increase, so the
 * bulk copy keeps the series' order invariant). */
static void mk_load_series(const struct dataset *ds, size_t a, struct kl_series *s)
{
	const int64_t *ts = ds_timestamps(ds);
	const double *c[5];
	for (int f = 0; f < 5; f++)
		c[f] = ds_column(ds, a, (enum ds_field)f);
	/* room for every stored bar and a day of new ones at once: no doubling, no copies */
	s->cap = ds_bars(ds) + 1440;
	s->t = xreallocarray(s->t, s->cap, sizeof *s->t);
	for (int f = 0; f < 5; f++)
		s->v[f] = xreallocarray(s->v[f], s->cap, sizeof *s->v[f]);
	/* runs of present bars (close not NaN) are copied column by column */
	size_t T = ds_bars(ds), i = 0;
	while (c[3] && i < T) {
		while (i < T && isnan(c[3][i]))
			i++;
		size_t j = i;
		while (j < T && !isnan(c[3][j]))
			j++;
		if (j == i)
			break;
		memcpy(s->t + s->n, ts + i, (j - i) * sizeof *ts);
		for (int f = 0; f < 5; f++) {
			if (c[f])
				memcpy(s->v[f] + s->n, c[f] + i, (j - i) * sizeof **c);
			else
				for (size_t k = 0; k < j - i; k++)
					s->v[f][s->n + k] = NAN;
		}
		s->n += j - i;
		i = j;
	}
}

/* Compare the re-fetched overlap with the stored candles and append the
 * new ones; returns the number added, or -1 on a mismatch (err filled). */
static long mk_merge(struct kl_series *old, const struct kl_series *got, const char *asset, char *err,
		     size_t errlen)
{
	long added = 0;
	size_t k = 0;
	int64_t last = old->n ? old->t[old->n - 1] : INT64_MIN;
	for (size_t i = 0; i < got->n; i++) {
		if (got->t[i] <= last) {
			while (k < old->n && old->t[k] < got->t[i])
				k++;
			int same = k < old->n && old->t[k] == got->t[i];
			for (int f = 0; same && f < 5; f++)
				same = old->v[f][k] == got->v[f][i];
			if (!same) {
				snprintf(err, errlen, "%s: the candle at %lld differs from the stored one (or was not stored)",
					 asset, (long long)got->t[i]);
				return -1;
			}
			continue;
		}
		double v[5];
		for (int f = 0; f < 5; f++)
			v[f] = got->v[f][i];
		if (kl_series_push(old, got->t[i], v) == 0)
			added++;
	}
	return added;
}

/* Whether the refresh carries every stored OHLCV column over by its
 * midstate (copied bytes, resumed hash) rather than rewriting it from the
 * values it read. */
static int mk_prefix_whole(const struct mk_prefix *pre, const crypto_hash_sha256_state *mid, size_t n_assets)
{
	if (!mid)
		return 0;
	for (size_t k = 0; k < n_assets * 5; k++)
		if (!pre->col[k])
			return 0;
	return 1;
}

enum mk_err mk_refresh(const char *data_dir, const char *window, struct mk_request *r, size_t overlap,
		       const struct mk_cg_request *cg, struct mk_version *v, size_t *added, char *err, size_t errlen)
{
	char lnk[4352], msg[512];
	enum ds_err de;
	enum mk_err rc = MK_OK;
	*added = 0;
	memset(v, 0, sizeof *v);
	snprintf(lnk, sizeof lnk, "%s/%s", data_dir, window);
	struct dataset *ds = ds_open(lnk, 0, &de, msg, sizeof msg);
	if (!ds) {
		snprintf(err, errlen, "no stored version of %s to refresh: %s", window, msg);
		return MK_ERR_STORE;
	}
	size_t n = ds_asset_count(ds), T = ds_bars(ds);
	int64_t ival = ds_interval_ms(ds), first = ds_timestamps(ds)[0], last = ds_timestamps(ds)[T - 1];
	const char **assets = xcalloc(n, sizeof *assets);
	struct kl_series *old = xcalloc(n, sizeof *old), *got = xcalloc(n, sizeof *got);
	size_t *stored = xcalloc(n, sizeof *stored);
	for (size_t a = 0; a < n; a++) {
		assets[a] = xstrdup(ds_asset_name(ds, a));
		mk_load_series(ds, a, &old[a]);
		stored[a] = old[a].n;
	}
	snprintf(v->hash, sizeof v->hash, "%s", ds_hash(ds));
	/* the stored files' midstates, when every OHLCV field is there to extend */
	struct mk_prefix pre = { .bars = T };
	crypto_hash_sha256_state *mid = mk_midstate_load(data_dir, ds);
	size_t nf = ds_field_count(ds);
	pre.col = xcalloc(n * 5, sizeof *pre.col);
	for (size_t f = 0; mid && f < 5; f++) {
		static const char *const ohlcv[5] = { "open", "high", "low", "close", "volume" };
		long fi = ds_field_index(ds, ohlcv[f]);
		for (size_t a = 0; fi >= 0 && a < n; a++)
			pre.col[a * 5 + f] = &mid[1 + a * nf + (size_t)fi];
	}
	pre.ts = mid;
	snprintf(pre.dir, sizeof pre.dir, "%s/versions/%s", data_dir, v->hash);
	ds_close(ds);
	r->assets = assets;
	r->n_assets = n;
	/* from the oldest "last stored candle" of any asset, minus the overlap */
	int64_t from = last;
	for (size_t a = 0; a < n; a++)
		if (old[a].n && old[a].t[old[a].n - 1] < from)
			from = old[a].t[old[a].n - 1];
	r->start_ms = from - (int64_t)(overlap ? overlap - 1 : 0) * ival;
	if (r->start_ms < first)
		r->start_ms = first;
	if (r->end_ms < r->start_ms)
		r->end_ms = r->start_ms;
	rc = mk_fetch(r, got, err, errlen);
	int64_t new_last = last;
	for (size_t a = 0; rc == MK_OK && a < n; a++) {
		long k = mk_merge(&old[a], &got[a], assets[a], err, errlen);
		if (k < 0)
			rc = MK_ERR_MISMATCH;
		else
			*added += (size_t)k;
		if (old[a].n && old[a].t[old[a].n - 1] > new_last)
			new_last = old[a].t[old[a].n - 1];
	}
	/* an asset whose new candles fill bars of the old grid has no stored prefix */
	for (size_t a = 0; a < n; a++)
		if (old[a].n > stored[a] && old[a].t[stored[a]] <= last)
			for (size_t f = 0; f < 5; f++)
				pre.col[a * 5 + f] = NULL;
	/* A column rewritten from the values read (no midstate, or new candles
	 * filling bars of the old grid) gets a fresh hash over those values: the
	 * stored files must match their manifest first, so that bytes damaged
	 * after they were stored are never blessed as a new version. */
	if (rc == MK_OK && *added > 0 && !mk_prefix_whole(&pre, mid, n)) {
		struct dataset *chk = ds_open(pre.dir, 1, &de, msg, sizeof msg);
		if (!chk) {
			snprintf(err, errlen, "the stored version %s of %s fails verification, not refreshed: %s", v->hash,
				 window, msg);
			rc = MK_ERR_STORE;
		}
		ds_close(chk);
	}
	if (rc == MK_OK && *added > 0) {
		char src[256];
		double *cols = NULL;
		if (cg) {
			struct mk_cg_request q = *cg;
			q.assets = assets;
			q.n_assets = n;
			rc = mk_cg_fetch_grid(&q, first, new_last, ival, &cols, err, errlen);
		}
		snprintf(src, sizeof src, "{\"kind\":\"binance-klines\",\"refresh_of\":\"%s\",\"coinglass\":%s}", v->hash,
			 cols ? "true" : "false");
		if (rc == MK_OK)
			rc = mk_store_pre(data_dir, window, assets, n, old, first, new_last, ival, cols, src,
					  mid ? &pre : NULL, v, err, errlen);
		free(cols);
	}
	for (size_t a = 0; a < n; a++) {
		kl_series_free(&old[a]);
		kl_series_free(&got[a]);
		free((char *)(uintptr_t)assets[a]);
	}
	free(old);
	free(got);
	free(assets);
	free(stored);
	free(mid);
	free(pre.col);
	return rc;
}

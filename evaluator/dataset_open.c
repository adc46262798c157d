/*
 * dataset_open: the reader. Parses and validates manifest.json (json-c, with
 * a depth limit and no trailing bytes), maps every column file read-only,
 * checks sizes against the bar count, the timestamps (strictly increasing,
 * steps multiple of the interval) and the dataset hash against the per-file
 * hashes the manifest lists. With verify, every file is hashed again and every
 * value range-checked. Nothing of a half-opened dataset survives an error.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <json-c/json.h>

#include "xalloc.h"
#include "evaluator/dataset_priv.h"
#include "common/readfile.h"

#define MANIFEST_DEPTH 8

/* Parsed manifest fields needed after the JSON object is gone. */
struct manifest {
	char  (*col_hex)[65];   /* [asset * n_fields + field] */
	char    ts_hex[65];
	char    dataset_hash[65];
	int64_t first_ts, last_ts;
};

/* Get key `k` of object o with type t, or NULL with a message. */
static json_object *get(json_object *o, const char *k, json_type t, struct ds_error *e)
{
	json_object *v = NULL;
	if (!json_object_object_get_ex(o, k, &v) || !json_object_is_type(v, t)) {
		ds__fail(e, DS_ERR_MANIFEST, 0, "manifest.json: \"%s\" missing or not %s", k,
			 json_type_to_name(t));
		return NULL;
	}
	return v;
}

/* 1 if s is 64 lower-case hex digits. */
static int is_hex64(const char *s)
{
	size_t n = strlen(s);
	if (n != 64)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return 1;
}

/* Read an int key into *out, requiring lo <= value <= hi. */
static int get_int(json_object *o, const char *k, int64_t lo, int64_t hi, int64_t *out, struct ds_error *e)
{
	json_object *v = get(o, k, json_type_int, e);
	if (!v)
		return -1;
	errno = 0;
	int64_t x = json_object_get_int64(v);
	if (errno != 0 || x < lo || x > hi) {
		ds__fail(e, DS_ERR_MANIFEST, 0, "manifest.json: \"%s\" out of range", k);
		return -1;
	}
	*out = x;
	return 0;
}

/* Read a list of unique names (assets or fields) into a heap array. */
static int get_names(json_object *o, const char *k, size_t max, int (*valid)(const char *),
		     char ***out, size_t *n_out, struct ds_error *e)
{
	json_object *a = get(o, k, json_type_array, e);
	if (!a)
		return -1;
	size_t n = json_object_array_length(a);
	if (n == 0 || n > max)
		return ds__fail(e, DS_ERR_MANIFEST, 0, "manifest.json: \"%s\" must hold 1..%zu names", k, max), -1;
	char **names = xcalloc(n, sizeof *names);
	*out = names;
	*n_out = n;
	for (size_t i = 0; i < n; i++) {
		json_object *s = json_object_array_get_idx(a, i);
		if (!json_object_is_type(s, json_type_string) || !valid(json_object_get_string(s)))
			return ds__fail(e, DS_ERR_MANIFEST, 0, "manifest.json: \"%s\"[%zu] is not a valid name", k, i), -1;
		names[i] = xstrdup(json_object_get_string(s));
		for (size_t j = 0; j < i; j++)
			if (strcmp(names[j], names[i]) == 0)
				return ds__fail(e, DS_ERR_MANIFEST, 0, "manifest.json: \"%s\" lists \"%s\" twice", k, names[i]), -1;
	}
	return 0;
}

/* Check the "files" entry `name`: sha256 into hex, size == expect. */
static int get_file(json_object *files, const char *name, size_t expect, char hex[65], struct ds_error *e)
{
	json_object *f = NULL, *h = NULL, *sz = NULL;
	if (!json_object_object_get_ex(files, name, &f) || !json_object_is_type(f, json_type_object))
		return ds__fail(e, DS_ERR_MANIFEST, 0, "manifest.json: files lacks \"%s\"", name), -1;
	if (json_object_object_length(f) != 2 ||
	    !json_object_object_get_ex(f, "sha256", &h) || !json_object_is_type(h, json_type_string) ||
	    !is_hex64(json_object_get_string(h)) ||
	    !json_object_object_get_ex(f, "size", &sz) || !json_object_is_type(sz, json_type_int))
		return ds__fail(e, DS_ERR_MANIFEST, 0, "manifest.json: files.\"%s\" needs exactly sha256 (64 hex) and size", name), -1;
	if (json_object_get_int64(sz) < 0 || (uint64_t)json_object_get_int64(sz) != (uint64_t)expect)
		return ds__fail(e, DS_ERR_MANIFEST, 0, "manifest.json: files.\"%s\".size is not bars x 8", name), -1;
	memcpy(hex, json_object_get_string(h), 65);
	return 0;
}

static const char *const top_keys[] = {
	"format", "format_version", "version", "assets", "fields", "interval_ms",
	"first_timestamp_ms", "last_timestamp_ms", "bars", "files", "dataset_hash", "source",
};

/* Validate the manifest object and fill ds (names, sizes) and m (hashes). */
static int parse_manifest(json_object *root, struct dataset *ds, struct manifest *m, struct ds_error *e)
{
	json_object *v;
	int64_t x;
	if (!json_object_is_type(root, json_type_object))
		return ds__fail(e, DS_ERR_MANIFEST, 0, "manifest.json: not a JSON object"), -1;
	json_object_object_foreach(root, key, val) {
		(void)val;
		size_t i = 0;
		while (i < sizeof top_keys / sizeof *top_keys && strcmp(top_keys[i], key) != 0)
			i++;
		if (i == sizeof top_keys / sizeof *top_keys)
			return ds__fail(e, DS_ERR_MANIFEST, 0, "manifest.json: unknown key \"%.64s\"", key), -1;
	}
	if (!(v = get(root, "format", json_type_string, e)))
		return -1;
	if (strcmp(json_object_get_string(v), DS_FORMAT_NAME) != 0)
		return ds__fail(e, DS_ERR_MANIFEST, 0, "manifest.json: format is not \"%s\"", DS_FORMAT_NAME), -1;
	if (get_int(root, "format_version", 1, INT32_MAX, &x, e))
		return -1;
	if (x != DS_FORMAT_VERSION)
		return ds__fail(e, DS_ERR_MANIFEST, 0, "manifest.json: format_version %lld not supported (this build reads %d)",
				(long long)x, DS_FORMAT_VERSION), -1;
	if (!(v = get(root, "version", json_type_string, e)))
		return -1;
	if (!ds_valid_label(json_object_get_string(v)))
		return ds__fail(e, DS_ERR_MANIFEST, 0, "manifest.json: version is not a valid label"), -1;
	ds->version = xstrdup(json_object_get_string(v));
	if (get_names(root, "assets", DS_MAX_ASSETS, ds_valid_asset, &ds->assets, &ds->n_assets, e) ||
	    get_names(root, "fields", DS_MAX_FIELDS, ds_valid_field, &ds->fields, &ds->n_fields, e))
		return -1;
	ds__map_std_fields(ds);
	if (ds->std_field[DS_CLOSE] < 0)
		return ds__fail(e, DS_ERR_MANIFEST, 0, "manifest.json: fields must include \"close\""), -1;
	if (get_int(root, "interval_ms", 1, INT64_MAX, &ds->interval_ms, e) ||
	    get_int(root, "bars", 1, (int64_t)DS_MAX_BARS, &x, e) ||
	    get_int(root, "first_timestamp_ms", INT64_MIN, INT64_MAX, &m->first_ts, e) ||
	    get_int(root, "last_timestamp_ms", INT64_MIN, INT64_MAX, &m->last_ts, e))
		return -1;
	ds->bars = (size_t)x;
	if ((v = json_object_object_get(root, "source")) && !json_object_is_type(v, json_type_object))
		return ds__fail(e, DS_ERR_MANIFEST, 0, "manifest.json: \"source\" is not an object"), -1;
	if (!(v = get(root, "dataset_hash", json_type_string, e)))
		return -1;
	if (!is_hex64(json_object_get_string(v)))
		return ds__fail(e, DS_ERR_MANIFEST, 0, "manifest.json: dataset_hash is not 64 hex digits"), -1;
	memcpy(m->dataset_hash, json_object_get_string(v), 65);
	json_object *files = get(root, "files", json_type_object, e);
	if (!files)
		return -1;
	size_t ncols = xmul(ds->n_assets, ds->n_fields), size = xmul(ds->bars, 8);
	if ((size_t)json_object_object_length(files) != ncols + 1)
		return ds__fail(e, DS_ERR_MANIFEST, 0, "manifest.json: files must list exactly %s and one file per asset and field", DS_TS_FILE), -1;
	if (get_file(files, DS_TS_FILE, size, m->ts_hex, e))
		return -1;
	m->col_hex = xcalloc(ncols, sizeof *m->col_hex);
	for (size_t a = 0; a < ds->n_assets; a++)
		for (size_t f = 0; f < ds->n_fields; f++) {
			char name[2 * DS_MAX_NAME + 8];
			if (ds__col_file(name, sizeof name, ds->assets[a], ds->fields[f]) ||
			    get_file(files, name, size, m->col_hex[a * ds->n_fields + f], e))
				return -1;
		}
	return 0;
}

/* Map `name` in dir read-only, checking it is a regular file of `size` bytes. */
static const void *map_file(struct dataset *ds, const char *name, size_t size, struct ds_error *e)
{
	char path[4096];
	struct stat st;
	void *p = NULL;
	int n = snprintf(path, sizeof path, "%s/%s", ds->dir, name);
	if (n < 0 || (size_t)n >= sizeof path)
		return ds__fail(e, DS_ERR_IO, 0, "path too long for %s", name), NULL;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0) {
		ds__fail(e, errno == ENOENT ? DS_ERR_CORRUPT : DS_ERR_IO, 0, "%s: %s", name, strerror(errno));
		goto out;
	}
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		ds__fail(e, DS_ERR_CORRUPT, 0, "%s: not a regular file", name);
		goto out;
	}
	if ((uintmax_t)st.st_size != (uintmax_t)size) {
		ds__fail(e, DS_ERR_CORRUPT, 0, "%s: %lld bytes, the manifest's bar count needs %zu",
			 name, (long long)st.st_size, size);
		goto out;
	}
	p = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (p == MAP_FAILED) {
		p = NULL;
		ds__fail(e, DS_ERR_IO, 0, "%s: mmap: %s", name, strerror(errno));
		goto out;
	}
	ds__add_region(ds, p, size, 1);
out:
	if (fd >= 0)
		close(fd);
	return p;
}

/* Map every column and check timestamps; with verify re-hash each file. */
static int map_columns(struct dataset *ds, struct manifest *m, int verify, struct ds_error *e)
{
	size_t size = ds->bars * 8; /* checked by parse_manifest */
	char hex[65];
	ds->ts = map_file(ds, DS_TS_FILE, size, e);
	if (!ds->ts)
		return -1;
	if (verify) {
		ds__sha256_hex(ds->ts, size, hex);
		if (strcmp(hex, m->ts_hex) != 0)
			return ds__fail(e, DS_ERR_HASH, 0, "%s: SHA-256 %s, manifest says %s", DS_TS_FILE, hex, m->ts_hex), -1;
	}
	if (ds->ts[0] != m->first_ts || ds->ts[ds->bars - 1] != m->last_ts)
		return ds__fail(e, DS_ERR_CORRUPT, 0, "%s: first/last timestamp differ from the manifest", DS_TS_FILE), -1;
	long bad = ds__check_ts(ds->ts, ds->bars, ds->interval_ms);
	if (bad >= 0)
		return ds__fail(e, DS_ERR_CORRUPT, 0, "%s: bar %ld: timestamps must increase by multiples of interval_ms",
				DS_TS_FILE, bad), -1;
	size_t ncols = ds->n_assets * ds->n_fields;
	ds->cols = xcalloc(ncols, sizeof *ds->cols);
	for (size_t a = 0; a < ds->n_assets; a++)
		for (size_t f = 0; f < ds->n_fields; f++) {
			char name[2 * DS_MAX_NAME + 8];
			size_t k = a * ds->n_fields + f;
			ds__col_file(name, sizeof name, ds->assets[a], ds->fields[f]);
			if (!(ds->cols[k] = map_file(ds, name, size, e)))
				return -1;
			if (!verify)
				continue;
			ds__sha256_hex(ds->cols[k], size, hex);
			if (strcmp(hex, m->col_hex[k]) != 0)
				return ds__fail(e, DS_ERR_HASH, 0, "%s: SHA-256 %s, manifest says %s", name, hex, m->col_hex[k]), -1;
		}
	return 0;
}

/* Re-check all values (verify mode). */
static int check_all_values(const struct dataset *ds, struct ds_error *e)
{
	for (size_t a = 0; a < ds->n_assets; a++) {
		const char *why = NULL;
		long t = ds__check_values(ds, a, &why);
		if (t >= 0)
			return ds__fail(e, DS_ERR_CORRUPT, 0, "asset %s, bar %ld: %s", ds->assets[a], t, why), -1;
	}
	return 0;
}

/* ds_open with a struct ds_error. */
static struct dataset *open_dir(const char *dir, int verify, struct ds_error *e)
{
	struct dataset *ds = ds__alloc();
	struct manifest m = { 0 };
	json_tokener *tok = NULL;
	json_object *root = NULL;
	char *text = NULL, path[4096];
	size_t len = 0;
	int ok = 0;
	ds->dir = xstrdup(dir);
	int n = snprintf(path, sizeof path, "%s/manifest.json", dir);
	if (n < 0 || (size_t)n >= sizeof path) {
		ds__fail(e, DS_ERR_IO, 0, "dataset path too long");
		goto out;
	}
	if (read_file_max(path, DS_MAX_MANIFEST, 0, &text, &len) != 0) {
		ds__fail(e, errno == ENOENT ? DS_ERR_NOT_FOUND : errno == EFBIG ? DS_ERR_MANIFEST : DS_ERR_IO, 0,
			 "manifest.json: %s", errno == EFBIG ? "larger than 4 MiB" : strerror(errno));
		goto out;
	}
	tok = json_tokener_new_ex(MANIFEST_DEPTH);
	root = json_tokener_parse_ex(tok, text, (int)len);
	if (!root || json_tokener_get_error(tok) != json_tokener_success) {
		ds__fail(e, DS_ERR_MANIFEST, 0, "manifest.json: invalid JSON (%s)",
			 json_tokener_error_desc(json_tokener_get_error(tok)));
		goto out;
	}
	size_t end = json_tokener_get_parse_end(tok);
	while (end < len && (text[end] == '\n' || text[end] == ' ' || text[end] == '\r' || text[end] == '\t'))
		end++;
	if (end != len || strlen(text) != len) {
		ds__fail(e, DS_ERR_MANIFEST, 0, "manifest.json: trailing bytes after the JSON object");
		goto out;
	}
	if (parse_manifest(root, ds, &m, e) || map_columns(ds, &m, verify, e))
		goto out;
	ds__dataset_hash(ds->interval_ms, ds->bars, ds->n_assets, ds->assets, ds->n_fields, ds->fields,
			 m.ts_hex, m.col_hex, ds->hash);
	if (strcmp(ds->hash, m.dataset_hash) != 0) {
		ds__fail(e, DS_ERR_HASH, 0, "dataset hash %s, manifest says %s", ds->hash, m.dataset_hash);
		goto out;
	}
	if (verify && check_all_values(ds, e))
		goto out;
	ds->manifest_json = xstrdup(json_object_to_json_string_ext(root, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
	ok = 1;
out:
	if (tok)
		json_tokener_free(tok);
	json_object_put(root);
	free(text);
	free(m.col_hex);
	if (!ok) {
		ds_close(ds);
		ds = NULL;
	}
	return ds;
}

struct dataset *ds_open(const char *dir, int verify, enum ds_err *err, char *msg, size_t msglen)
{
	struct ds_error e = { 0 };
	struct dataset *ds = open_dir(dir, verify, &e);
	*err = ds ? DS_OK : e.code;
	if (!ds && msg && msglen)
		snprintf(msg, msglen, "%s", e.msg);
	return ds;
}

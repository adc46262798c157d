/*
 * dataset_write: the writer. Theory of operation:
 *
 *   begin   validate the layout, refuse an existing target, create missing
 *           parent directories, mkdtemp "<parent>/.<name>.tmp-XXXXXX"
 *   put     stream each column into its file in the temporary directory,
 *           canonicalising NaN and hashing the exact bytes written; columns
 *           arrive in canonical order (ts, then asset-major, field-minor),
 *           so nothing is buffered beyond one chunk
 *   commit  compute the dataset hash, write manifest.json, fsync every file
 *           and the directory, then renameat2(RENAME_NOREPLACE) the
 *           temporary directory to its final name and fsync the parent
 *   abort   (or any error) remove the temporary directory
 *
 * A crash at any point leaves at most a hidden ".<name>.tmp-*" directory,
 * never a partial dataset under the final name.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <json-c/json.h>
#include <sodium.h>

#include "xalloc.h"
#include "evaluator/dataset_priv.h"
#include "evaluator/dataset_extend.h"

#define CHUNK_VALUES 8192

static const char *const ohlcv[] = { "open", "high", "low", "close", "volume" };

struct ds_writer {
	char    *final_dir;
	char    *tmp_dir;
	char    *version;
	char   **assets;
	size_t   n_assets;
	char   **fields;
	size_t   n_fields;
	int64_t  interval_ms;
	size_t   bars;
	json_object *source;
	int      have_ts;
	int64_t  first_ts, last_ts;
	size_t   next_col;          /* columns put so far */
	char     ts_hex[65];
	char   (*col_hex)[65];
	crypto_hash_sha256_state *mid;  /* per file (ts, then columns): SHA-256 state before finalisation */
	char   **written;           /* file names created in tmp_dir (for cleanup) */
	size_t   n_written;
};

/* Free the writer's memory (not the temporary directory). */
static void writer_free(struct ds_writer *w)
{
	for (size_t i = 0; i < w->n_assets; i++)
		free(w->assets[i]);
	for (size_t i = 0; i < w->n_fields; i++)
		free(w->fields[i]);
	for (size_t i = 0; i < w->n_written; i++)
		free(w->written[i]);
	free(w->assets);
	free(w->fields);
	free(w->written);
	free(w->col_hex);
	free(w->mid);
	free(w->final_dir);
	free(w->tmp_dir);
	free(w->version);
	json_object_put(w->source);
	free(w);
}

/* mkdir -p for the parent directories of path (not path itself). */
static int make_parents(const char *path)
{
	char *p = xstrdup(path);
	int rc = 0;
	for (char *s = p + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		if (mkdir(p, 0755) != 0 && errno != EEXIST) {
			rc = -1;
			break;
		}
		*s = '/';
	}
	free(p);
	return rc;
}

/* Validate the layout: names, counts, uniqueness, "close" present. */
static int check_layout(const struct ds_layout *l, struct ds_error *e)
{
	if (!ds_valid_label(l->version))
		return ds__fail(e, DS_ERR_INPUT, 0, "version label must be 1..%d of [A-Za-z0-9._-], not starting with '.'", DS_MAX_LABEL), -1;
	if (l->n_assets == 0 || l->n_assets > DS_MAX_ASSETS)
		return ds__fail(e, DS_ERR_INPUT, 0, "need 1..%d assets", DS_MAX_ASSETS), -1;
	if (l->n_fields > DS_MAX_FIELDS)
		return ds__fail(e, DS_ERR_INPUT, 0, "at most %d fields", DS_MAX_FIELDS), -1;
	if (l->interval_ms <= 0)
		return ds__fail(e, DS_ERR_INPUT, 0, "interval must be > 0 ms"), -1;
	if (l->bars == 0 || l->bars > DS_MAX_BARS)
		return ds__fail(e, DS_ERR_INPUT, 0, "bar count must be 1..%zu", DS_MAX_BARS), -1;
	for (size_t i = 0; i < l->n_assets; i++) {
		if (!ds_valid_asset(l->assets[i]))
			return ds__fail(e, DS_ERR_INPUT, 0, "asset name \"%.40s\" invalid (1..%d of [A-Za-z0-9_-])", l->assets[i] ? l->assets[i] : "", DS_MAX_NAME), -1;
		for (size_t j = 0; j < i; j++)
			if (strcmp(l->assets[i], l->assets[j]) == 0)
				return ds__fail(e, DS_ERR_INPUT, 0, "asset %s listed twice", l->assets[i]), -1;
	}
	int has_close = 0;
	for (size_t i = 0; i < l->n_fields; i++) {
		if (!ds_valid_field(l->fields[i]))
			return ds__fail(e, DS_ERR_INPUT, 0, "field name \"%.40s\" invalid (1..%d of [a-z0-9_])", l->fields[i] ? l->fields[i] : "", DS_MAX_NAME), -1;
		for (size_t j = 0; j < i; j++)
			if (strcmp(l->fields[i], l->fields[j]) == 0)
				return ds__fail(e, DS_ERR_INPUT, 0, "field %s listed twice", l->fields[i]), -1;
		has_close |= strcmp(l->fields[i], "close") == 0;
	}
	if (l->n_fields && !has_close)
		return ds__fail(e, DS_ERR_INPUT, 0, "fields must include \"close\""), -1;
	return 0;
}

/* Copy the layout into w. */
static void copy_layout(struct ds_writer *w, const struct ds_layout *l)
{
	w->version = xstrdup(l->version);
	w->n_assets = l->n_assets;
	w->assets = xcalloc(l->n_assets, sizeof *w->assets);
	for (size_t i = 0; i < l->n_assets; i++)
		w->assets[i] = xstrdup(l->assets[i]);
	w->n_fields = l->n_fields ? l->n_fields : sizeof ohlcv / sizeof *ohlcv;
	w->fields = xcalloc(w->n_fields, sizeof *w->fields);
	for (size_t i = 0; i < w->n_fields; i++)
		w->fields[i] = xstrdup(l->n_fields ? l->fields[i] : ohlcv[i]);
	w->interval_ms = l->interval_ms;
	w->bars = l->bars;
	w->col_hex = xcalloc(xmul(w->n_assets, w->n_fields), sizeof *w->col_hex);
	w->mid = xcalloc(xmul(w->n_assets, w->n_fields) + 1, sizeof *w->mid);
}

struct ds_writer *ds_writer_begin(const char *dir, const struct ds_layout *l, struct ds_error *e)
{
	struct ds_error local;
	if (!e)
		e = &local; /* codes are read back from e */
	struct ds_writer *w = NULL;
	struct stat st;
	char *tmp = NULL, *d1 = NULL, *d2 = NULL;
	if (check_layout(l, e))
		goto out;
	if (!dir || !*dir || strlen(dir) > 3000) {
		ds__fail(e, DS_ERR_INPUT, 0, "output directory name empty or too long");
		goto out;
	}
	if (lstat(dir, &st) == 0) {
		ds__fail(e, DS_ERR_EXISTS, 0, "%s already exists (datasets are immutable; pick a new directory)", dir);
		goto out;
	}
	if (make_parents(dir) != 0) {
		ds__fail(e, DS_ERR_IO, 0, "%s: cannot create parent directories: %s", dir, strerror(errno));
		goto out;
	}
	json_object *src = NULL;
	if (l->source_json) {
		src = json_tokener_parse(l->source_json);
		if (!src || !json_object_is_type(src, json_type_object)) {
			json_object_put(src);
			ds__fail(e, DS_ERR_INPUT, 0, "source metadata is not a JSON object");
			goto out;
		}
	}
	d1 = xstrdup(dir);
	d2 = xstrdup(dir);
	size_t tlen = strlen(dir) + 32;
	tmp = xmalloc(tlen);
	snprintf(tmp, tlen, "%s/.%s.tmp-XXXXXX", dirname(d1), basename(d2)); /* sized to fit */
	if (!mkdtemp(tmp)) {
		json_object_put(src);
		ds__fail(e, DS_ERR_IO, 0, "%s: cannot create a temporary directory: %s", dir, strerror(errno));
		goto out;
	}
	w = xcalloc(1, sizeof *w);
	copy_layout(w, l);
	w->source = src;
	w->final_dir = xstrdup(dir);
	w->tmp_dir = tmp;
	tmp = NULL;
out:
	free(tmp);
	free(d1);
	free(d2);
	return w;
}

/* Write n bytes fully. */
static int write_all(int fd, const void *p, size_t n)
{
	const char *c = p;
	while (n) {
		ssize_t r = write(fd, c, n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		c += r;
		n -= (size_t)r;
	}
	return 0;
}

/* Copy the first n bytes of src_fd into fd (in the kernel where it can:
 * copy_file_range, else pread + write). 0, or -1 with errno. */
static int copy_prefix(int src_fd, int fd, size_t n)
{
	off_t in = 0;
	while (n) {
		ssize_t r = copy_file_range(src_fd, &in, fd, NULL, n, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && (errno == EXDEV || errno == ENOSYS || errno == EOPNOTSUPP || errno == EINVAL))
			break;   /* another file system or kernel: by hand below */
		if (r <= 0)
			return r == 0 ? (errno = EIO, -1) : -1;
		n -= (size_t)r;
	}
	char buf[65536];
	while (n) {
		ssize_t r = pread(src_fd, buf, n < sizeof buf ? n : sizeof buf, in);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0 || write_all(fd, buf, (size_t)r) != 0)
			return r == 0 ? (errno = EIO, -1) : -1;
		in += r;
		n -= (size_t)r;
	}
	return 0;
}

/*
 * Create tmp_dir/name and write `count` 8-byte values (doubles get their NaN
 * canonicalised when is_f64), fsync, and hash the written bytes; the SHA-256
 * state before finalisation goes to *mid_out. With keep > 0 the first keep
 * values are the first keep*8 bytes of src_fd, copied as they are, and
 * *mid_in is the SHA-256 state after exactly those bytes (so they are not
 * hashed again); values keep..count come from src.
 */
static int write_col(struct ds_writer *w, const char *name, const void *src, size_t count, int is_f64,
		     int src_fd, size_t keep, const crypto_hash_sha256_state *mid_in,
		     crypto_hash_sha256_state *mid_out, char hex[65], struct ds_error *e)
{
	char path[4096];
	int rc = -1, fd = -1;
	uint64_t *chunk = NULL;
	crypto_hash_sha256_state st;
	int n = snprintf(path, sizeof path, "%s/%s", w->tmp_dir, name);
	if (n < 0 || (size_t)n >= sizeof path)
		return ds__fail(e, DS_ERR_IO, 0, "path too long for %s", name), -1;
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0) {
		ds__fail(e, DS_ERR_IO, 0, "%s: %s", path, strerror(errno));
		goto out;
	}
	w->written = xreallocarray(w->written, w->n_written + 1, sizeof *w->written);
	w->written[w->n_written++] = xstrdup(name);
	if (keep > count)
		keep = count;
	if (keep) {
		st = *mid_in;
		if (copy_prefix(src_fd, fd, keep * 8) != 0) {
			ds__fail(e, DS_ERR_IO, 0, "%s: copying the stored prefix: %s", path, strerror(errno));
			goto out;
		}
	} else {
		memset(&st, 0, sizeof st);   /* the block buffer's unused bytes are defined in the midstate */
		crypto_hash_sha256_init(&st);
	}
	chunk = xmalloc(CHUNK_VALUES * sizeof *chunk);
	for (size_t off = keep; off < count; off += CHUNK_VALUES) {
		size_t k = count - off < CHUNK_VALUES ? count - off : CHUNK_VALUES;
		memcpy(chunk, (const char *)src + off * 8, k * 8);
		if (is_f64)
			for (size_t i = 0; i < k; i++) {
				double v;
				memcpy(&v, &chunk[i], 8);
				if (isnan(v))
					chunk[i] = UINT64_C(0x7ff8000000000000);
			}
		crypto_hash_sha256_update(&st, (const unsigned char *)chunk, k * 8);
		if (write_all(fd, chunk, k * 8) != 0) {
			ds__fail(e, DS_ERR_IO, 0, "%s: write: %s", path, strerror(errno));
			goto out;
		}
	}
	if (fsync(fd) != 0) {
		ds__fail(e, DS_ERR_IO, 0, "%s: fsync: %s", path, strerror(errno));
		goto out;
	}
	unsigned char h[crypto_hash_sha256_BYTES];
	*mid_out = st;
	crypto_hash_sha256_final(&st, h);
	sodium_bin2hex(hex, 65, h, sizeof h);
	rc = 0;
out:
	free(chunk);
	if (fd >= 0 && close(fd) != 0 && rc == 0) {
		ds__fail(e, DS_ERR_IO, 0, "%s: close: %s", path, strerror(errno));
		rc = -1;
	}
	return rc;
}

enum ds_err ds_writer_put_ts(struct ds_writer *w, const int64_t *ts, struct ds_error *e)
{
	return ds_writer_put_ts_extend(w, -1, 0, NULL, ts, e);
}

enum ds_err ds_writer_put_ts_extend(struct ds_writer *w, int src_fd, size_t keep, const crypto_hash_sha256_state *mid,
				    const int64_t *ts, struct ds_error *e)
{
	struct ds_error local;
	if (!e)
		e = &local; /* codes are read back from e */
	if (w->have_ts)
		return ds__fail(e, DS_ERR_INPUT, 0, "timestamps already written");
	long bad = ds__check_ts(ts, w->bars, w->interval_ms);
	if (bad >= 0)
		return ds__fail(e, DS_ERR_INPUT, 0, "bar %ld: timestamps must increase by multiples of %lld ms",
				bad, (long long)w->interval_ms);
	if (write_col(w, DS_TS_FILE, ts, w->bars, 0, src_fd, keep, mid, &w->mid[0], w->ts_hex, e))
		return e->code;
	w->have_ts = 1;
	w->first_ts = ts[0];
	w->last_ts = ts[w->bars - 1];
	return DS_OK;
}

enum ds_err ds_writer_put(struct ds_writer *w, size_t asset, size_t field, const double *col,
			  struct ds_error *e)
{
	return ds_writer_put_extend(w, asset, field, -1, 0, NULL, col, e);
}

enum ds_err ds_writer_put_extend(struct ds_writer *w, size_t asset, size_t field, int src_fd, size_t keep,
				 const crypto_hash_sha256_state *mid, const double *col, struct ds_error *e)
{
	struct ds_error local;
	if (!e)
		e = &local; /* codes are read back from e */
	char name[2 * DS_MAX_NAME + 8];
	if (!w->have_ts || asset >= w->n_assets || field >= w->n_fields ||
	    asset * w->n_fields + field != w->next_col)
		return ds__fail(e, DS_ERR_INPUT, 0, "columns must be put in canonical order (ts, then asset by asset, field by field)");
	ds__col_file(name, sizeof name, w->assets[asset], w->fields[field]); /* names validated: fits */
	if (write_col(w, name, col, w->bars, 1, src_fd, keep, mid, &w->mid[w->next_col + 1], w->col_hex[w->next_col], e))
		return e->code;
	w->next_col++;
	return DS_OK;
}

const crypto_hash_sha256_state *ds_writer_midstates(const struct ds_writer *w, size_t *n)
{
	*n = (w->have_ts ? 1 : 0) + w->next_col;
	return w->mid;
}

/* Build the manifest object (hash already computed). */
static json_object *build_manifest(struct ds_writer *w, const char *hash)
{
	json_object *m = json_object_new_object(), *a = json_object_new_array(),
		    *f = json_object_new_array(), *files = json_object_new_object();
	json_object_object_add(m, "format", json_object_new_string(DS_FORMAT_NAME));
	json_object_object_add(m, "format_version", json_object_new_int(DS_FORMAT_VERSION));
	json_object_object_add(m, "version", json_object_new_string(w->version));
	for (size_t i = 0; i < w->n_assets; i++)
		json_object_array_add(a, json_object_new_string(w->assets[i]));
	json_object_object_add(m, "assets", a);
	for (size_t i = 0; i < w->n_fields; i++)
		json_object_array_add(f, json_object_new_string(w->fields[i]));
	json_object_object_add(m, "fields", f);
	json_object_object_add(m, "interval_ms", json_object_new_int64(w->interval_ms));
	json_object_object_add(m, "first_timestamp_ms", json_object_new_int64(w->first_ts));
	json_object_object_add(m, "last_timestamp_ms", json_object_new_int64(w->last_ts));
	json_object_object_add(m, "bars", json_object_new_int64((int64_t)w->bars));
	int64_t size = (int64_t)(w->bars * 8);
	for (size_t k = 0; k <= w->n_assets * w->n_fields; k++) {
		char name[2 * DS_MAX_NAME + 8];
		const char *hex = k == 0 ? w->ts_hex : w->col_hex[k - 1];
		if (k == 0)
			snprintf(name, sizeof name, "%s", DS_TS_FILE);
		else
			ds__col_file(name, sizeof name, w->assets[(k - 1) / w->n_fields], w->fields[(k - 1) % w->n_fields]);
		json_object *fo = json_object_new_object();
		json_object_object_add(fo, "sha256", json_object_new_string(hex));
		json_object_object_add(fo, "size", json_object_new_int64(size));
		json_object_object_add(files, name, fo);
	}
	json_object_object_add(m, "files", files);
	json_object_object_add(m, "dataset_hash", json_object_new_string(hash));
	if (w->source)
		json_object_object_add(m, "source", json_object_get(w->source));
	return m;
}

/* Write manifest.json into the temporary directory and fsync it. */
static int write_manifest(struct ds_writer *w, const char *hash, struct ds_error *e)
{
	char path[4096];
	int rc = -1, fd = -1;
	json_object *m = build_manifest(w, hash);
	const char *txt = json_object_to_json_string_ext(m, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED | JSON_C_TO_STRING_NOSLASHESCAPE);
	snprintf(path, sizeof path, "%s/manifest.json", w->tmp_dir); /* tmp_dir is short enough */
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0 || write_all(fd, txt, strlen(txt)) != 0 || write_all(fd, "\n", 1) != 0 || fsync(fd) != 0) {
		ds__fail(e, DS_ERR_IO, 0, "%s: %s", path, strerror(errno));
		goto out;
	}
	w->written = xreallocarray(w->written, w->n_written + 1, sizeof *w->written);
	w->written[w->n_written++] = xstrdup("manifest.json");
	rc = 0;
out:
	if (fd >= 0)
		close(fd);
	json_object_put(m);
	return rc;
}

/* fsync a directory. */
static int sync_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	int rc = fsync(fd);
	close(fd);
	return rc;
}

enum ds_err ds_writer_commit(struct ds_writer *w, char hash[65], struct ds_error *e)
{
	struct ds_error local;
	if (!e)
		e = &local; /* codes are read back from e */
	enum ds_err rc = DS_OK;
	char h[65];
	if (!w->have_ts || w->next_col != w->n_assets * w->n_fields) {
		rc = ds__fail(e, DS_ERR_INPUT, 0, "dataset incomplete: %zu of %zu columns written",
			      w->next_col, w->n_assets * w->n_fields);
		goto fail;
	}
	ds__dataset_hash(w->interval_ms, w->bars, w->n_assets, w->assets, w->n_fields, w->fields,
			 w->ts_hex, w->col_hex, h);
	if (write_manifest(w, h, e) != 0) {
		rc = e->code;
		goto fail;
	}
	if (sync_dir(w->tmp_dir) != 0) {
		rc = ds__fail(e, DS_ERR_IO, 0, "%s: fsync: %s", w->tmp_dir, strerror(errno));
		goto fail;
	}
	if (renameat2(AT_FDCWD, w->tmp_dir, AT_FDCWD, w->final_dir, RENAME_NOREPLACE) != 0) {
		int en = errno;
		rc = ds__fail(e, en == EEXIST || en == ENOTEMPTY ? DS_ERR_EXISTS : DS_ERR_IO, 0,
			      "%s: rename into place: %s", w->final_dir, strerror(en));
		goto fail;
	}
	char *d = xstrdup(w->final_dir);
	sync_dir(dirname(d)); /* best effort: the data itself is already durable */
	free(d);
	if (hash)
		memcpy(hash, h, 65);
	writer_free(w);
	return DS_OK;
fail:
	ds_writer_abort(w);
	return rc;
}

void ds_writer_abort(struct ds_writer *w)
{
	if (!w)
		return;
	char path[4096];
	for (size_t i = 0; i < w->n_written; i++) {
		int n = snprintf(path, sizeof path, "%s/%s", w->tmp_dir, w->written[i]);
		if (n > 0 && (size_t)n < sizeof path)
			unlink(path);
	}
	rmdir(w->tmp_dir);
	writer_free(w);
}

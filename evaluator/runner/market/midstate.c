/*
 * midstate: save and load the SHA-256 midstates of a version's files
 * (contract and file format in midstate.h).
 */
#include "evaluator/runner/market/midstate.h"

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "readfile.h"
#include "xalloc.h"

#define MID_MAGIC "agtmid1\n"

/* Little-endian u64 at p. */
static uint64_t mid_u64(const unsigned char *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

/* Store v little-endian at p. */
static void mid_put_u64(unsigned char *p, uint64_t v)
{
	for (int i = 0; i < 8; i++, v >>= 8)
		p[i] = (unsigned char)(v & 0xff);
}

int mk_midstate_save(const char *data_dir, const char *hash, const crypto_hash_sha256_state *mid, size_t n)
{
	char path[4352], tmp[4400];
	unsigned char head[24];
	snprintf(path, sizeof path, "%s/versions/%s.midstate", data_dir, hash);
	snprintf(tmp, sizeof tmp, "%s.tmp-%ld", path, (long)getpid());
	memcpy(head, MID_MAGIC, 8);
	mid_put_u64(head + 8, n);
	mid_put_u64(head + 16, sizeof *mid);
	FILE *f = fopen(tmp, "wb");
	if (!f)
		return -1;
	int bad = fwrite(head, 1, sizeof head, f) != sizeof head || fwrite(mid, sizeof *mid, n, f) != n;
	bad |= fclose(f) != 0;
	if (bad || rename(tmp, path) != 0) {
		unlink(tmp);
		return -1;
	}
	return 0;
}

/* Does state m finalise to the 64-hex hash `want`? */
static int mid_matches(const crypto_hash_sha256_state *m, const char *want)
{
	crypto_hash_sha256_state c = *m;
	unsigned char h[crypto_hash_sha256_BYTES];
	char hex[65];
	crypto_hash_sha256_final(&c, h);
	sodium_bin2hex(hex, sizeof hex, h, sizeof h);
	return want && strlen(want) == 64 && sodium_memcmp(hex, want, 64) == 0;
}

/* The manifest's sha256 of file `name`, or NULL. */
static const char *mid_file_hash(json_object *files, const char *name)
{
	json_object *f, *h;
	if (!json_object_object_get_ex(files, name, &f) || !json_object_object_get_ex(f, "sha256", &h))
		return NULL;
	return json_object_get_string(h);
}

crypto_hash_sha256_state *mk_midstate_load(const char *data_dir, const struct dataset *ds)
{
	char path[4352];
	size_t nf = ds_field_count(ds), na = ds_asset_count(ds), n = 1 + na * nf, len = 0;
	snprintf(path, sizeof path, "%s/versions/%s.midstate", data_dir, ds_hash(ds));
	char *raw = NULL;
	if (read_file_max(path, 24 + n * sizeof(crypto_hash_sha256_state), 0, &raw, &len) != 0)
		return NULL;
	const unsigned char *u = (const unsigned char *)raw;
	crypto_hash_sha256_state *mid = NULL;
	json_object *man = json_tokener_parse(ds_manifest_json(ds)), *files = NULL;
	if (len != 24 + n * sizeof *mid || memcmp(u, MID_MAGIC, 8) != 0 || mid_u64(u + 8) != n ||
	    mid_u64(u + 16) != sizeof *mid || !json_object_object_get_ex(man, "files", &files))
		goto out;
	mid = xcalloc(n, sizeof *mid);
	memcpy(mid, u + 24, n * sizeof *mid);
	for (size_t k = 0; k < n; k++) {
		char name[160];
		if (k == 0)
			snprintf(name, sizeof name, "ts.i64");
		else
			snprintf(name, sizeof name, "%s.%s.f64", ds_asset_name(ds, (k - 1) / nf),
				 ds_field_name(ds, (k - 1) % nf));
		if (!mid_matches(&mid[k], mid_file_hash(files, name))) {
			free(mid);
			mid = NULL;
			break;
		}
	}
out:
	json_object_put(man);
	free(raw);
	return mid;
}

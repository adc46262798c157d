/* hashes: code_hash and config_hash (see hashes.h). */
#include "evaluator/hashes.h"

#include <stdio.h>
#include <string.h>

#include <sodium.h>

#include "evaluator/canon_json.h"

void hash_sha256_hex(const void *p, size_t n, char out[HASH_HEX_LEN + 1])
{
	unsigned char h[crypto_hash_sha256_BYTES];
	crypto_hash_sha256(h, p, n);
	sodium_bin2hex(out, HASH_HEX_LEN + 1, h, sizeof h);
}

void hash_code(const void *code, size_t n, char out[HASH_HEX_LEN + 1])
{
	hash_sha256_hex(code, n, out);
}

int hash_config(const char *dataset_version, json_object *params, json_object *engine,
		char out[HASH_HEX_LEN + 1], struct buf *canon, char *err, size_t errlen)
{
	return hash_config_asset(dataset_version, NULL, params, engine, out, canon, err, errlen);
}

int hash_config_asset(const char *dataset_version, const char *asset, json_object *params, json_object *engine,
		      char out[HASH_HEX_LEN + 1], struct buf *canon, char *err, size_t errlen)
{
	int rc = -1;
	struct buf b = BUF_INIT;
	if (params && !json_object_is_type(params, json_type_object)) {
		snprintf(err, errlen, "params must be a JSON object");
		goto out;
	}
	size_t vl = strlen(dataset_version);
	if (!cj_valid_utf8(dataset_version, vl)) {
		snprintf(err, errlen, "dataset_version is not valid UTF-8");
		goto out;
	}
	/* Keys in code point order: asset < dataset_version < engine < params. */
	buf_putc(&b, '{');
	if (asset) {
		if (!cj_valid_utf8(asset, strlen(asset))) {
			snprintf(err, errlen, "asset is not valid UTF-8");
			goto out;
		}
		buf_puts(&b, "\"asset\":");
		cj_write_string(&b, asset, strlen(asset));
		buf_putc(&b, ',');
	}
	buf_puts(&b, "\"dataset_version\":");
	cj_write_string(&b, dataset_version, vl);
	if (engine) {
		buf_puts(&b, ",\"engine\":");
		if (cj_write(&b, engine, err, errlen) < 0)
			goto out;
	}
	buf_puts(&b, ",\"params\":");
	if (params) {
		if (cj_write(&b, params, err, errlen) < 0)
			goto out;
	} else {
		buf_puts(&b, "{}");
	}
	buf_putc(&b, '}');
	hash_sha256_hex(b.data, b.len, out);
	if (canon)
		buf_append(canon, b.data, b.len);
	rc = 0;
out:
	buf_free(&b);
	return rc;
}

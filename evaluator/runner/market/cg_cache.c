/*
 * cg_cache: the on-disk cache of fetched CoinGlass series (contract in
 * cg_cache.h).
 *
 * File layout (little-endian, x86-64 native):
 *   magic "AGTCGC1\0" (8) | from (i64) | to (i64) | n (u64)
 *   | n × open time (i64) | n × value (f64) | BLAKE2b-256 of all before (32)
 * At most MK_CG_CACHE_MAX_ROWS rows (a year of hourly candles is 8760).
 */
#include "evaluator/runner/market/cg_cache.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>

#include "xalloc.h"

#define CGC_MAGIC  "AGTCGC1"
#define CGC_HEAD   32
#define CGC_SUM    32
#define MK_CG_CACHE_MAX_ROWS ((size_t)1 << 20)

/* <dir>/<asset>.<field>.cgc into out; -1 if it does not fit or a name is unsafe. */
static int cgc_path(char *out, size_t len, const char *dir, const char *asset, const char *field)
{
	if (strchr(asset, '/') || strchr(field, '/') || asset[0] == '.' || !asset[0])
		return -1;
	int k = snprintf(out, len, "%s/%s.%s.cgc", dir, asset, field);
	return k < 0 || (size_t)k >= len ? -1 : 0;
}

int mk_cg_cache_load(const char *dir, const char *asset, const char *field, struct mk_cg_cached *c)
{
	char path[4352];
	unsigned char *b = NULL, sum[CGC_SUM];
	int ok = 0;
	memset(c, 0, sizeof *c);
	if (!dir || cgc_path(path, sizeof path, dir, asset, field) != 0)
		return 0;
	FILE *f = fopen(path, "rb");
	if (!f)
		return 0;
	struct stat st;
	if (fstat(fileno(f), &st) != 0 || st.st_size < CGC_HEAD + CGC_SUM ||
	    (size_t)st.st_size > CGC_HEAD + CGC_SUM + MK_CG_CACHE_MAX_ROWS * 16)
		goto out;
	size_t len = (size_t)st.st_size;
	b = xmalloc(len);
	if (fread(b, 1, len, f) != len || memcmp(b, CGC_MAGIC, 8) != 0)
		goto out;
	uint64_t n;
	memcpy(&c->from, b + 8, 8);
	memcpy(&c->to, b + 16, 8);
	memcpy(&n, b + 24, 8);
	if (n > MK_CG_CACHE_MAX_ROWS || len != CGC_HEAD + n * 16 + CGC_SUM || c->from > c->to)
		goto out;
	crypto_generichash(sum, sizeof sum, b, len - CGC_SUM, NULL, 0);
	if (sodium_memcmp(sum, b + len - CGC_SUM, CGC_SUM) != 0)
		goto out;
	c->n = (size_t)n;
	c->t = xcalloc(c->n ? c->n : 1, sizeof *c->t);
	c->v = xcalloc(c->n ? c->n : 1, sizeof *c->v);
	memcpy(c->t, b + CGC_HEAD, c->n * 8);
	memcpy(c->v, b + CGC_HEAD + c->n * 8, c->n * 8);
	ok = 1;
	for (size_t i = 0; ok && i < c->n; i++)
		ok = c->t[i] >= c->from && c->t[i] <= c->to && (i == 0 || c->t[i] > c->t[i - 1]);
out:
	fclose(f);
	free(b);
	if (!ok) {
		free(c->t);
		free(c->v);
		memset(c, 0, sizeof *c);
	}
	return ok;
}

/* mkdir dir and, when missing, its parent (the data directory of a first fetch). 0, -1. */
static int cgc_mkdirs(const char *dir)
{
	char parent[4352];
	if (mkdir(dir, 0750) == 0 || errno == EEXIST)
		return 0;
	if (errno != ENOENT || snprintf(parent, sizeof parent, "%s", dir) >= (int)sizeof parent)
		return -1;
	char *slash = strrchr(parent, '/');
	if (!slash || slash == parent)
		return -1;
	*slash = '\0';
	if (mkdir(parent, 0755) != 0 && errno != EEXIST)
		return -1;
	return mkdir(dir, 0750) == 0 || errno == EEXIST ? 0 : -1;
}

int mk_cg_cache_save(const char *dir, const char *asset, const char *field, int64_t from, int64_t to,
		     const int64_t *t, const double *v, size_t n)
{
	char path[4352], tmp[4450];
	size_t lo = 0, hi = n;
	while (lo < n && t[lo] < from)
		lo++;
	while (hi > lo && t[hi - 1] > to)
		hi--;
	uint64_t k = hi - lo;
	if (!dir || from > to || k > MK_CG_CACHE_MAX_ROWS || cgc_path(path, sizeof path, dir, asset, field) != 0)
		return -1;
	if (cgc_mkdirs(dir) != 0)
		return -1;
	snprintf(tmp, sizeof tmp, "%s/.%s.%s.tmp-%ld-%lx", dir, asset, field, (long)getpid(),
		 (unsigned long)pthread_self());
	size_t len = CGC_HEAD + k * 16 + CGC_SUM;
	unsigned char *b = xmalloc(len);
	memcpy(b, CGC_MAGIC, 8);
	memcpy(b + 8, &from, 8);
	memcpy(b + 16, &to, 8);
	memcpy(b + 24, &k, 8);
	memcpy(b + CGC_HEAD, t + lo, k * 8);
	memcpy(b + CGC_HEAD + k * 8, v + lo, k * 8);
	crypto_generichash(b + len - CGC_SUM, CGC_SUM, b, len - CGC_SUM, NULL, 0);
	FILE *f = fopen(tmp, "wb");
	int bad = !f;
	if (f) {
		bad |= fwrite(b, 1, len, f) != len;
		bad |= fclose(f) != 0;
	}
	free(b);
	if (bad || rename(tmp, path) != 0) {
		(void)unlink(tmp);
		return -1;
	}
	return 0;
}

/*
 * dscache: verified datasets shared by the runner's slots.
 *
 * Theory of operation. A run's dataset must be the bytes whose hash was
 * pinned when the run was queued (and verified when the dataset was
 * registered). Verifying re-hashes every file (about 1.2 s for the default
 * 60-day, 29-asset market of 97 MiB), so it is done once per dataset and
 * runner process: the opened, mmap'd dataset stays in a small process-wide
 * cache keyed by directory and by the identity of every regular file in it
 * (name, device, inode, size, mtime with nanoseconds). Each acquire lists and
 * stats the directory again (about 150 stat calls, well under a
 * millisecond); any difference (a file rewritten, replaced, added or
 * removed) retires the entry, and the dataset is opened and verified
 * afresh, so changed bytes fail the run with `dataset_mismatch` (unreadable
 * or gone: `dataset_error`). A retired entry stays mapped until the jobs
 * still using it release it. A file rewritten in place within the same
 * mtime tick at the same size is not seen; datasets are written by
 * ds_writer (a new directory renamed into place), which always changes the
 * identity.
 */
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "evaluator/dataset.h"
#include "evaluator/runner/runner.h"
#include "xalloc.h"

#define DSC_ENTRIES   16
#define DSC_MAX_FILES 4096   /* more files than this: never cached */

struct fid {
	char   *name;
	dev_t   dev;
	ino_t   ino;
	off_t   size;
	struct timespec mtim;
};

/* The identity of a dataset directory: its regular files, sorted by name. */
struct dir_id {
	struct fid *f;
	size_t      n;
	dev_t       dev;      /* of the directory itself */
	ino_t       ino;
};

struct entry {
	char           *path;
	struct dataset *ds;
	struct dir_id   id;
	unsigned        users;    /* jobs holding ds */
	bool            retired;  /* replaced: close when users drops to 0 */
};

static struct {
	pthread_mutex_t mu;
	struct entry    e[DSC_ENTRIES];
	unsigned long   hits, opens;
} cache = { .mu = PTHREAD_MUTEX_INITIALIZER };

/* Free an identity. */
static void id_free(struct dir_id *id)
{
	for (size_t i = 0; i < id->n; i++)
		free(id->f[i].name);
	free(id->f);
	memset(id, 0, sizeof *id);
}

/* qsort order of files by name. */
static int fid_cmp(const void *a, const void *b)
{
	return strcmp(((const struct fid *)a)->name, ((const struct fid *)b)->name);
}

/* List and stat the regular files of dir into *id. 0, or -1 (unreadable, too many files). */
static int id_read(const char *dir, struct dir_id *id)
{
	struct stat st;
	int rc = -1;
	memset(id, 0, sizeof *id);
	DIR *d = opendir(dir);
	if (!d)
		return -1;
	if (fstat(dirfd(d), &st) != 0)
		goto out;
	id->dev = st.st_dev;
	id->ino = st.st_ino;
	size_t cap = 0;
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
			goto out;
		if (!S_ISREG(st.st_mode))
			continue;
		if (id->n == DSC_MAX_FILES)
			goto out;
		if (id->n == cap) {
			cap = cap ? 2 * cap : 64;
			id->f = xreallocarray(id->f, cap, sizeof *id->f);
		}
		id->f[id->n++] = (struct fid){ .name = xstrdup(de->d_name), .dev = st.st_dev, .ino = st.st_ino,
					       .size = st.st_size, .mtim = st.st_mtim };
	}
	if (id->n)
		qsort(id->f, id->n, sizeof *id->f, fid_cmp);
	rc = 0;
out:
	closedir(d);
	if (rc != 0)
		id_free(id);
	return rc;
}

/* True if two identities name the same unchanged files. */
static bool id_same(const struct dir_id *a, const struct dir_id *b)
{
	if (a->n != b->n || a->dev != b->dev || a->ino != b->ino)
		return false;
	for (size_t i = 0; i < a->n; i++) {
		const struct fid *x = &a->f[i], *y = &b->f[i];
		if (strcmp(x->name, y->name) != 0 || x->dev != y->dev || x->ino != y->ino || x->size != y->size ||
		    x->mtim.tv_sec != y->mtim.tv_sec || x->mtim.tv_nsec != y->mtim.tv_nsec)
			return false;
	}
	return true;
}

/* Drop entry i if nobody uses it (cache.mu held). */
static void entry_drop(size_t i)
{
	struct entry *e = &cache.e[i];
	if (e->users)
		return;
	ds_close(e->ds);
	free(e->path);
	id_free(&e->id);
	memset(e, 0, sizeof *e);
}

struct dataset *dscache_acquire(const char *dir, struct rresult *r)
{
	struct dir_id id;
	enum ds_err e;
	char msg[512];
	bool have_id = id_read(dir, &id) == 0;
	pthread_mutex_lock(&cache.mu);
	for (size_t i = 0; i < DSC_ENTRIES; i++) {
		struct entry *c = &cache.e[i];
		if (!c->ds || c->retired || strcmp(c->path, dir) != 0)
			continue;
		if (have_id && id_same(&c->id, &id)) {
			c->users++;
			cache.hits++;
			pthread_mutex_unlock(&cache.mu);
			id_free(&id);
			return c->ds;
		}
		c->retired = true;   /* changed: verify again */
		entry_drop(i);
	}
	cache.opens++;
	pthread_mutex_unlock(&cache.mu);
	struct dataset *ds = ds_open_any(dir, 1, NULL, &e, msg, sizeof msg);
	if (!ds) {
		rresult_fail(r, e == DS_ERR_HASH ? "dataset_mismatch" : "dataset_error",
			     "the dataset of this run cannot be opened: %s", msg);
		if (have_id)
			id_free(&id);
		return NULL;
	}
	if (!have_id)
		return ds;   /* cannot identify it: a private copy, closed by dscache_release */
	pthread_mutex_lock(&cache.mu);
	size_t slot = DSC_ENTRIES;
	for (size_t i = 0; i < DSC_ENTRIES && slot == DSC_ENTRIES; i++)
		if (!cache.e[i].ds)
			slot = i;
	for (size_t i = 0; i < DSC_ENTRIES && slot == DSC_ENTRIES; i++)
		if (!cache.e[i].users) {
			entry_drop(i);
			slot = i;
		}
	if (slot == DSC_ENTRIES) {
		pthread_mutex_unlock(&cache.mu);
		id_free(&id);
		return ds;   /* cache full of busy entries: private copy */
	}
	cache.e[slot] = (struct entry){ .path = xstrdup(dir), .ds = ds, .id = id, .users = 1 };
	pthread_mutex_unlock(&cache.mu);
	return ds;
}

void dscache_release(struct dataset *ds)
{
	pthread_mutex_lock(&cache.mu);
	for (size_t i = 0; i < DSC_ENTRIES; i++) {
		if (cache.e[i].ds == ds) {
			cache.e[i].users--;
			if (cache.e[i].retired)
				entry_drop(i);
			pthread_mutex_unlock(&cache.mu);
			return;
		}
	}
	pthread_mutex_unlock(&cache.mu);
	ds_close(ds);
}

void dscache_stats(unsigned long *hits, unsigned long *opens)
{
	pthread_mutex_lock(&cache.mu);
	*hits = cache.hits;
	*opens = cache.opens;
	pthread_mutex_unlock(&cache.mu);
}

void dscache_clear(void)
{
	pthread_mutex_lock(&cache.mu);
	for (size_t i = 0; i < DSC_ENTRIES; i++)
		if (cache.e[i].ds) {
			cache.e[i].retired = true;
			entry_drop(i);
		}
	pthread_mutex_unlock(&cache.mu);
}

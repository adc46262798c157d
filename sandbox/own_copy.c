/*
 * own_copy.c: agenttest's own files inside the box, as a private copy.
 *
 * Theory of operation. A bind mount shows, in the box's
 * /proc/self/mountinfo, the path of its source inside the source file
 * system (the "root" field): binding the strategy host's directory would
 * name the server's checkout or installation directory. So the fixed
 * destinations of sbx_confine.h (the host directory, the zygote's files)
 * are not bound: a small tmpfs is mounted at /agenttest and the sources are
 * copied into it (regular files with their mode bits minus write and
 * set-id, and their modification times, so compiled bytecode stays valid;
 * directories; symbolic links as links; anything else is skipped), then the
 * tmpfs is remounted read-only. Its mountinfo line reads "/ /agenttest ...
 * tmpfs", which names nothing on the server. The copy is a few hundred KiB:
 * a zygote makes it once, a one-shot run once per run. A one-shot run's
 * --copy=SRC:DEST adds more of them (an agent box's evaluator library and
 * tools), anywhere below /agenttest.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sandbox/sbx_confine.h"

#define OWN_DIR       "/agenttest"
#define OWN_MAX_DEPTH 32
#define OWN_TMPFS     MS_NOSUID | MS_NODEV
#define OWN_OPTS      "size=128m,nr_inodes=16384,mode=0755"

/* Set err and return false. */
static bool own_fail(char *err, size_t errlen, const char *what, const char *name)
{
	snprintf(err, errlen, "copy of agenttest's files: %s %s: %s", what, name, strerror(errno));
	return false;
}

bool sbx_own_dst(const char *dst)
{
	return dst && (strcmp(dst, SBX_BOX_HOST_DIR) == 0 || strcmp(dst, SBX_BOX_ZYGOTE_DIR) == 0 ||
	               strcmp(dst, SBX_BOX_ZYGOTE_SO) == 0);
}

/* Copy the regular file sfd (already open) to name in dfd with st's mode and times. */
static bool copy_file(int sfd, int dfd, const char *name, const struct stat *st, char *err, size_t errlen)
{
	int out = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, st->st_mode & 0555);
	if (out < 0)
		return own_fail(err, errlen, "create", name);
	char buf[65536];
	ssize_t n;
	bool ok = true;
	while (ok && (n = read(sfd, buf, sizeof buf)) != 0) {
		if (n < 0) {
			ok = errno == EINTR || own_fail(err, errlen, "read", name);
			continue;
		}
		for (ssize_t w = 0; ok && w < n;) {
			ssize_t k = write(out, buf + w, (size_t)(n - w));
			if (k < 0 && errno != EINTR)
				ok = own_fail(err, errlen, "write", name);
			else if (k > 0)
				w += k;
		}
	}
	struct timespec times[2] = { st->st_atim, st->st_mtim };
	if (ok && futimens(out, times) < 0)
		ok = own_fail(err, errlen, "times of", name);
	close(out);
	return ok;
}

static bool copy_tree(int sfd, int dfd, int depth, char *err, size_t errlen);

/* Copy the entry `name` of directory sfd into dfd. */
static bool copy_entry(int sfd, int dfd, const char *name, int depth, char *err, size_t errlen)
{
	struct stat st;
	if (fstatat(sfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return own_fail(err, errlen, "stat", name);
	if (S_ISLNK(st.st_mode)) {
		char target[4096];
		ssize_t n = readlinkat(sfd, name, target, sizeof target - 1);
		if (n < 0)
			return own_fail(err, errlen, "readlink", name);
		target[n] = '\0';
		return symlinkat(target, dfd, name) == 0 || own_fail(err, errlen, "symlink", name);
	}
	if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode))
		return true;
	int in = openat(sfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | (S_ISDIR(st.st_mode) ? O_DIRECTORY : 0));
	if (in < 0)
		return own_fail(err, errlen, "open", name);
	bool ok;
	if (S_ISREG(st.st_mode)) {
		ok = copy_file(in, dfd, name, &st, err, errlen);
	} else if (mkdirat(dfd, name, 0755) < 0) {
		ok = own_fail(err, errlen, "mkdir", name);
	} else {
		int sub = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
		ok = sub >= 0 ? copy_tree(in, sub, depth + 1, err, errlen) : own_fail(err, errlen, "open", name);
		if (sub >= 0)
			close(sub);
	}
	close(in);
	return ok;
}

/* Copy every entry of directory sfd into directory dfd (sfd is not consumed). */
static bool copy_tree(int sfd, int dfd, int depth, char *err, size_t errlen)
{
	if (depth > OWN_MAX_DEPTH) {
		snprintf(err, errlen, "copy of agenttest's files: deeper than %d directories", OWN_MAX_DEPTH);
		return false;
	}
	int dup = fcntl(sfd, F_DUPFD_CLOEXEC, 3);
	DIR *d = dup >= 0 ? fdopendir(dup) : NULL;
	if (!d) {
		if (dup >= 0)
			close(dup);
		return own_fail(err, errlen, "opendir", "(source)");
	}
	bool ok = true;
	struct dirent *e;
	while (ok && (e = readdir(d)) != NULL)
		if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
			ok = copy_entry(sfd, dfd, e->d_name, depth, err, errlen);
	closedir(d);
	return ok;
}

bool sbx_own_mount(const char *root, char *err, size_t errlen)
{
	char dst[4096];
	snprintf(dst, sizeof dst, "%s%s", root, OWN_DIR);
	if (mkdir(dst, 0755) < 0 && errno != EEXIST)
		return own_fail(err, errlen, "mkdir", OWN_DIR);
	if (mount("tmpfs", dst, "tmpfs", OWN_TMPFS, OWN_OPTS) < 0)
		return own_fail(err, errlen, "tmpfs", OWN_DIR);
	return true;
}

/* Make the missing parent directories of dst (a path below the tmpfs),
 * from offset `from` on (dst's part that already exists). */
static bool own_parents(char *dst, size_t from, char *err, size_t errlen)
{
	for (char *p = strchr(dst + from, '/'); p; p = strchr(p + 1, '/')) {
		*p = '\0';
		bool ok = mkdir(dst, 0755) == 0 || errno == EEXIST;
		*p = '/';
		if (!ok)
			return own_fail(err, errlen, "mkdir", dst);
	}
	return true;
}

bool sbx_own_copy(const char *root, const char *src, const char *at, char *err, size_t errlen)
{
	char dst[4096];
	struct stat st;
	int n = snprintf(dst, sizeof dst, "%s%s", root, at);
	if (n < 0 || (size_t)n >= sizeof dst || strncmp(at, OWN_DIR "/", sizeof OWN_DIR) != 0 ||
	    strstr(at, "/.") || strstr(at, "//") || at[strlen(at) - 1] == '/') {
		snprintf(err, errlen, "copy of agenttest's files: bad destination %s", at);
		return false;
	}
	if (!own_parents(dst, strlen(root) + sizeof OWN_DIR, err, errlen))
		return false;
	int in = open(src, O_RDONLY | O_CLOEXEC);
	if (in < 0 || fstat(in, &st) < 0) {
		if (in >= 0)
			close(in);
		return own_fail(err, errlen, "open", src);
	}
	bool ok;
	if (S_ISREG(st.st_mode)) {
		int dfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		ok = dfd >= 0 ? copy_file(in, dfd, dst + strlen(root) + 1, &st, err, errlen) : own_fail(err, errlen, "open", root);
		if (dfd >= 0)
			close(dfd);
	} else if (!S_ISDIR(st.st_mode)) {
		errno = EINVAL;
		ok = own_fail(err, errlen, "source", src);
	} else if (mkdir(dst, 0755) < 0) {
		ok = own_fail(err, errlen, "mkdir", at);
	} else {
		int dfd = open(dst, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
		ok = dfd >= 0 ? copy_tree(in, dfd, 0, err, errlen) : own_fail(err, errlen, "open", at);
		if (dfd >= 0)
			close(dfd);
	}
	close(in);
	return ok;
}

bool sbx_own_seal(const char *root, char *err, size_t errlen)
{
	char dst[4096];
	snprintf(dst, sizeof dst, "%s%s", root, OWN_DIR);
	if (mount(NULL, dst, NULL, MS_REMOUNT | MS_RDONLY | OWN_TMPFS, OWN_OPTS) < 0)
		return own_fail(err, errlen, "remount read-only", OWN_DIR);
	return true;
}

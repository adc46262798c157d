/*
 * rootfs.c: the file system a confined run sees.
 *
 * Theory of operation. In the run's own mount namespace (made private so
 * nothing propagates back), a small tmpfs becomes the new root. It gets
 * read-only, nosuid, nodev bind mounts of /usr (Debian's python3 and its
 * numpy/pandas/scipy/scikit-learn live there), the top-level /bin, /lib,
 * /lib64, /sbin entries (symlinks into /usr on merged-usr systems, else
 * read-only binds), /etc/ld.so.cache, /etc/localtime and /etc/alternatives
 * (Debian resolves libblas/liblapack through it); the requested
 * extra paths read-only, each at the same path or at the destination given
 * (agenttest's own files go to fixed places under /agenttest, see
 * sbx_confine.h, as a private copy rather than a bind: own_copy.c); an
 * optional read-write work directory (nosuid, nodev, noexec); an optional
 * size-capped /tmp (noexec); a minimal /dev (null, zero, random, urandom
 * bound from the host, fd symlinks); and an empty /proc mount point. Nothing else of the host exists inside: no /etc
 * secrets, /root, /home, /var, /run or host /tmp. The tmpfs is then
 * remounted read-only and pivot_root(2) switches to it, detaching the old
 * root entirely.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "sandbox/sbx_confine.h"

#define ROOT_MNT   "/run/agenttest-sandbox"
#define ROOT_MNT2  "/tmp/.agenttest-sandbox"

/* Set err from a format and return false. */
static bool fail(char *err, size_t errlen, const char *what, const char *path)
{
	snprintf(err, errlen, "%s %s: %s", what, path, strerror(errno));
	return false;
}

/* mkdir -p of root + path (path absolute). */
static bool mkpath(const char *root, const char *path, char *err, size_t errlen)
{
	char buf[4096];
	int n = snprintf(buf, sizeof buf, "%s%s", root, path);
	if (n < 0 || (size_t)n >= sizeof buf) {
		snprintf(err, errlen, "path too long: %s", path);
		return false;
	}
	for (char *p = buf + strlen(root) + 1; ; p++) {
		if (*p == '/' || *p == '\0') {
			char c = *p;
			*p = '\0';
			if (mkdir(buf, 0755) < 0 && errno != EEXIST)
				return fail(err, errlen, "mkdir", buf);
			*p = c;
			if (c == '\0')
				break;
		}
	}
	return true;
}

/* Create an empty file root+path (parents made) as a bind target. */
static bool mkfile(const char *root, const char *path, char *err, size_t errlen)
{
	char parent[4096], buf[4096];
	snprintf(parent, sizeof parent, "%s", path);
	char *slash = strrchr(parent, '/');
	if (slash && slash != parent) {
		*slash = '\0';
		if (!mkpath(root, parent, err, errlen))
			return false;
	}
	int n = snprintf(buf, sizeof buf, "%s%s", root, path);
	if (n < 0 || (size_t)n >= sizeof buf)
		return false;
	int fd = open(buf, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return fail(err, errlen, "create", buf);
	close(fd);
	return true;
}

/* Bind src at root+at (at NULL: the same path); read-only unless rw; rw
 * mounts are noexec. */
static bool bind_at(const char *root, const char *src, const char *at, bool rw, char *err, size_t errlen)
{
	struct stat st;
	char dst[4096];
	if (!at)
		at = src;
	if (stat(src, &st) < 0)
		return fail(err, errlen, "stat", src);
	int n = snprintf(dst, sizeof dst, "%s%s", root, at);
	if (n < 0 || (size_t)n >= sizeof dst) {
		snprintf(err, errlen, "path too long: %s", at);
		return false;
	}
	if (!(S_ISDIR(st.st_mode) ? mkpath(root, at, err, errlen) : mkfile(root, at, err, errlen)))
		return false;
	if (mount(src, dst, NULL, MS_BIND, NULL) < 0)
		return fail(err, errlen, "bind", src);
	unsigned long fl = MS_BIND | MS_REMOUNT | MS_NOSUID;
	if (rw)
		fl |= MS_NOEXEC | MS_NODEV;
	else if (!S_ISCHR(st.st_mode))
		fl |= MS_RDONLY | MS_NODEV;
	else
		fl |= MS_NOEXEC;
	if (mount(NULL, dst, NULL, fl, NULL) < 0)
		return fail(err, errlen, "remount", src);
	return true;
}

/* Bind src at the same path inside the box. */
static bool bind(const char *root, const char *src, bool rw, char *err, size_t errlen)
{
	return bind_at(root, src, NULL, rw, err, errlen);
}

/* The top-level system entries: same symlink, or a read-only bind. */
static bool system_tree(const char *root, char *err, size_t errlen)
{
	static const char *const top[] = { "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", NULL };
	if (!bind(root, "/usr", false, err, errlen))
		return false;
	for (int i = 0; top[i]; i++) {
		struct stat st;
		if (lstat(top[i], &st) < 0)
			continue;
		if (S_ISLNK(st.st_mode)) {
			char target[256], dst[512];
			ssize_t n = readlink(top[i], target, sizeof target - 1);
			if (n <= 0)
				return fail(err, errlen, "readlink", top[i]);
			target[n] = '\0';
			snprintf(dst, sizeof dst, "%s%s", root, top[i]);
			if (symlink(target, dst) < 0)
				return fail(err, errlen, "symlink", dst);
		} else if (!bind(root, top[i], false, err, errlen)) {
			return false;
		}
	}
	static const char *const etc[] = { "/etc/ld.so.cache", "/etc/localtime", "/etc/alternatives", NULL };
	for (int i = 0; etc[i]; i++)
		if (access(etc[i], R_OK) == 0 && !bind(root, etc[i], false, err, errlen))
			return false;
	return true;
}

/* /dev with the four harmless character devices and the fd links. */
static bool minimal_dev(const char *root, char *err, size_t errlen)
{
	static const char *const devs[] = { "/dev/null", "/dev/zero", "/dev/random", "/dev/urandom", NULL };
	static const char *const links[][2] = {
		{ "/proc/self/fd", "/dev/fd" }, { "/proc/self/fd/0", "/dev/stdin" },
		{ "/proc/self/fd/1", "/dev/stdout" }, { "/proc/self/fd/2", "/dev/stderr" },
	};
	if (!mkpath(root, "/dev", err, errlen))
		return false;
	for (int i = 0; devs[i]; i++)
		if (!bind(root, devs[i], false, err, errlen))
			return false;
	for (size_t i = 0; i < sizeof links / sizeof links[0]; i++) {
		char dst[512];
		snprintf(dst, sizeof dst, "%s%s", root, links[i][1]);
		if (symlink(links[i][0], dst) < 0)
			return fail(err, errlen, "symlink", dst);
	}
	return true;
}

/* Pick and prepare the directory the new root is mounted on. */
static const char *root_mountpoint(void)
{
	if (mkdir(ROOT_MNT, 0700) == 0 || errno == EEXIST)
		return ROOT_MNT;
	if (mkdir(ROOT_MNT2, 0700) == 0 || errno == EEXIST)
		return ROOT_MNT2;
	return NULL;
}

bool sbx_root_enter(const struct sbx_root_opts *o, char *err, size_t errlen)
{
	const char *root = root_mountpoint();
	if (!root) {
		snprintf(err, errlen, "no mount point for the new root");
		return false;
	}
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		return fail(err, errlen, "make private", "/");
	if (mount("tmpfs", root, "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,nr_inodes=4096,mode=0755") < 0)
		return fail(err, errlen, "tmpfs", root);
	if (!system_tree(root, err, errlen) || !minimal_dev(root, err, errlen) ||
	    !mkpath(root, "/proc", err, errlen))
		return false;
	bool own = false;
	for (int i = 0; i < o->nbinds; i++)
		own = own || o->copies[i] || sbx_own_dst(o->dsts[i]);
	if (own && !sbx_own_mount(root, err, errlen))
		return false;
	for (int i = 0; i < o->nbinds; i++)
		if (!(o->copies[i] || sbx_own_dst(o->dsts[i]) ? sbx_own_copy(root, o->binds[i], o->dsts[i], err, errlen)
		                              : bind_at(root, o->binds[i], o->dsts[i], false, err, errlen)))
			return false;
	if (own && !sbx_own_seal(root, err, errlen))
		return false;
	if (o->workdir && !bind_at(root, o->workdir, o->workdir_dst, true, err, errlen))
		return false;
	if (o->tmp_bytes) {
		char dst[512], opts[64];
		if (!mkpath(root, "/tmp", err, errlen))
			return false;
		snprintf(dst, sizeof dst, "%s/tmp", root);
		snprintf(opts, sizeof opts, "size=%llu,mode=1777", (unsigned long long)o->tmp_bytes);
		if (mount("tmpfs", dst, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, opts) < 0)
			return fail(err, errlen, "tmpfs", dst);
	}
	if (mount(NULL, root, NULL, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV, NULL) < 0)
		return fail(err, errlen, "remount read-only", root);
	if (chdir(root) < 0)
		return fail(err, errlen, "chdir", root);
	if (syscall(SYS_pivot_root, ".", ".") < 0)
		return fail(err, errlen, "pivot_root", root);
	if (umount2(".", MNT_DETACH) < 0)
		return fail(err, errlen, "detach old root", root);
	if (chdir("/") < 0)
		return fail(err, errlen, "chdir", "/");
	return true;
}

bool sbx_mount_proc(char *err, size_t errlen)
{
	unsigned long fl = MS_NOSUID | MS_NODEV | MS_NOEXEC;
	if (mount("proc", "/proc", "proc", fl, "hidepid=invisible,subset=pid") == 0 ||
	    mount("proc", "/proc", "proc", fl, "hidepid=2") == 0)
		return true;
	return fail(err, errlen, "mount", "/proc");
}

/*
 * box_lease.c: machine-wide box numbers as flock leases (box_lease.h).
 * No library does this; it is a directory of lock files and a scan.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sandbox/box_lease.h"
#include "sandbox/sbx_int.h"

const char *sbx_box_dir(void)
{
	static char dflt[64];
	const char *env = getenv("AGENTTEST_BOX_DIR");
	if (env != NULL && env[0] == '/')
		return env;
	if (geteuid() == 0)
		return "/run/agenttest-boxes";
	snprintf(dflt, sizeof dflt, "/tmp/agenttest-boxes-%u", (unsigned)geteuid());
	return dflt;
}

/* Open the lease directory (creating it 0700), refusing one that is not a
 * directory of ours or that others can write. Returns its fd or -1. */
static int open_dir(const char *dir, char *err, size_t errlen)
{
	if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
		snprintf(err, errlen, "box leases: cannot create %s: %s", dir, strerror(errno));
		return -1;
	}
	int d = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	if (d < 0 || fstat(d, &st) != 0) {
		snprintf(err, errlen, "box leases: cannot open %s: %s", dir, strerror(errno));
		if (d >= 0)
			close(d);
		return -1;
	}
	if (st.st_uid != geteuid() || (st.st_mode & 022) != 0) {
		snprintf(err, errlen, "box leases: %s must be owned by uid %u and not writable by others",
		         dir, (unsigned)geteuid());
		close(d);
		return -1;
	}
	return d;
}

int sbx_box_acquire(struct sbx_box_lease *l, char *err, size_t errlen)
{
	l->fd = -1;
	l->box_id = 0;
	const char *dir = sbx_box_dir();
	int d = open_dir(dir, err, errlen);
	if (d < 0)
		return -1;
	for (uint32_t n = 1; n <= SBX_BOX_MAX; n++) {
		char name[32];
		snprintf(name, sizeof name, "%u.lock", (unsigned)n);
		int fd = openat(d, name, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd < 0) {
			snprintf(err, errlen, "box leases: cannot open %s/%s: %s", dir, name, strerror(errno));
			close(d);
			return -1;
		}
		if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
			close(d);
			l->fd = fd;
			l->box_id = n;
			return 0;
		}
		int e = errno;
		close(fd);
		if (e != EWOULDBLOCK && e != EINTR) {
			snprintf(err, errlen, "box leases: flock %s/%s: %s", dir, name, strerror(e));
			close(d);
			return -1;
		}
	}
	close(d);
	snprintf(err, errlen, "box leases: all %u box numbers in %s are in use", (unsigned)SBX_BOX_MAX, dir);
	return -1;
}

void sbx_box_release(struct sbx_box_lease *l)
{
	if (l->fd >= 0)
		close(l->fd);
	l->fd = -1;
	l->box_id = 0;
}

/*
 * spawn.c: the supervisor's half of starting a confined run: waiting for
 * the child's report and taking over its seccomp listener.
 *
 * The child created the listener with its filter, so only the child holds
 * it. The supervisor (root, parent of the child) copies it with
 * pidfd_getfd(2) while the child waits for the acknowledgement; only then
 * does the child close its copy and continue to untrusted code.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "sandbox/sbx_confine.h"

int sbx_sync_parent(pid_t child, int sync_fd, int ack_fd, int *listener, char *err, size_t errlen)
{
	struct sbx_sync_msg m;
	ssize_t n;
	*listener = -1;
	do
		n = read(sync_fd, &m, sizeof m);
	while (n < 0 && errno == EINTR);
	if (n != (ssize_t)sizeof m) {
		snprintf(err, errlen, "the run died during setup");
		return -1;
	}
	if (m.kind == SBX_SYNC_ERROR) {
		m.text[sizeof m.text - 1] = '\0';
		snprintf(err, errlen, "setup failed: %s", m.text);
		return -1;
	}
	if (m.kind != SBX_SYNC_READY) {
		snprintf(err, errlen, "bad setup report");
		return -1;
	}
	if (m.listener >= 0) {
		int pidfd = (int)syscall(SYS_pidfd_open, child, 0);
		if (pidfd < 0) {
			snprintf(err, errlen, "pidfd_open: %s", strerror(errno));
			return -1;
		}
		*listener = (int)syscall(SYS_pidfd_getfd, pidfd, m.listener, 0);
		close(pidfd);
		if (*listener < 0) {
			snprintf(err, errlen, "pidfd_getfd: %s", strerror(errno));
			return -1;
		}
	}
	if (write(ack_fd, "A", 1) != 1) {
		snprintf(err, errlen, "acknowledge: %s", strerror(errno));
		return -1;
	}
	return 0;
}

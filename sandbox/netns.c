/*
 * netns.c: the empty network namespace that one-shot runs share.
 *
 * Creating a network namespace costs 0.5 to several milliseconds (and more
 * to tear down), most of a one-shot run's setup. Runs therefore join one
 * persistent, empty namespace instead: it is created once by the helper in
 * a short-lived child, pinned by a bind mount at
 * /run/agenttest-sandbox.netns (root-only directory), and has nothing but
 * a loopback device that is never brought up. Sharing it gives a run no
 * channel to another: the seccomp policy refuses every socket (AF_UNIX
 * with EACCES, everything else as a violation), so abstract unix sockets
 * and loopback traffic cannot be reached. Zygote runs share their
 * zygote's namespace for the same reason. `--netns=fresh` asks for a
 * namespace of the run's own. The agent profile (--profile=agent) always
 * gets a fresh one and brings its loopback up: the in-box relay of an LLM
 * agent listens there (docs/agents.md); nothing else is in it.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/nsfs.h>
#include <net/if.h>
#include <sys/socket.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sandbox/sbx_int.h"

#define NETNS_DIR  "/run/agenttest-sandbox.d"
#define NETNS_PIN  NETNS_DIR "/netns"
#define NETNS_LOCK NETNS_DIR "/netns.lock"

/* Open the pinned namespace if it is one; -1 otherwise. */
static int open_pinned(void)
{
	int fd = open(NETNS_PIN, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (ioctl(fd, NS_GET_NSTYPE) != CLONE_NEWNET) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Create a fresh namespace and pin it at NETNS_PIN. Returns 0 or -1. */
static int create_pinned(void)
{
	int pfd[2];
	if (pipe2(pfd, O_CLOEXEC) < 0)
		return -1;
	pid_t pid = fork();
	if (pid < 0) {
		close(pfd[0]);
		close(pfd[1]);
		return -1;
	}
	if (pid == 0) {     /* holds the namespace until the bind mount exists */
		char c;
		close(pfd[1]);
		if (unshare(CLONE_NEWNET) < 0)
			_exit(1);
		if (read(pfd[0], &c, 1) < 0)
			_exit(1);
		_exit(0);
	}
	close(pfd[0]);
	char src[64];
	snprintf(src, sizeof src, "/proc/%d/ns/net", (int)pid);
	int rc = -1, fd = open(NETNS_PIN, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	if (fd >= 0)
		close(fd);
	/* wait until the child has unshared: its ns link differs from ours */
	for (int i = 0; i < 2000; i++) {
		struct stat a, b;
		if (stat(src, &a) == 0 && stat("/proc/self/ns/net", &b) == 0 && a.st_ino != b.st_ino) {
			rc = mount(src, NETNS_PIN, NULL, MS_BIND, NULL);
			break;
		}
		usleep(500);
	}
	close(pfd[1]);
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
	return rc;
}

int sbx_netns_loopback_up(void)
{
	struct ifreq ifr;
	int rc = -1, s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -1;
	memset(&ifr, 0, sizeof ifr);
	memcpy(ifr.ifr_name, "lo", 3);
	if (ioctl(s, SIOCGIFFLAGS, &ifr) == 0) {
		ifr.ifr_flags |= IFF_UP;
		rc = ioctl(s, SIOCSIFFLAGS, &ifr);
	}
	close(s);
	return rc;
}

int sbx_netns_shared(void)
{
	int fd = open_pinned();
	if (fd >= 0)
		return fd;
	if (mkdir(NETNS_DIR, 0700) < 0 && errno != EEXIST)
		return -1;
	int lock = open(NETNS_LOCK, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (lock < 0)
		return -1;
	if (flock(lock, LOCK_EX) == 0) {
		fd = open_pinned();   /* another helper may have won the race */
		if (fd < 0 && create_pinned() == 0)
			fd = open_pinned();
	}
	close(lock);
	return fd;
}

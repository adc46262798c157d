/*
 * notify: cheap wake-ups from the API to the runners on the same host.
 *
 * Each runner binds a unix datagram socket `<dir>/runner-<pid>.sock`. After
 * it queues a run (or asks for a cancellation) the API sends one small
 * datagram to every socket in the directory; a runner blocked in poll()
 * wakes at once instead of waiting for its next database poll. Datagrams are
 * hints only: losing one costs at most the idle poll interval, and runners on
 * other hosts rely on the poll alone. A socket whose runner is gone answers
 * ECONNREFUSED and is removed by the next runner that starts.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "notify.h"

/* Fill a sockaddr_un for dir/name; false if it does not fit. */
static bool make_addr(struct sockaddr_un *sa, const char *dir, const char *name)
{
	memset(sa, 0, sizeof *sa);
	sa->sun_family = AF_UNIX;
	int n = snprintf(sa->sun_path, sizeof sa->sun_path, "%s/%s", dir, name);
	return n > 0 && (size_t)n < sizeof sa->sun_path;
}

/* True for the names runner sockets have. */
static bool is_runner_sock(const char *name)
{
	size_t n = strlen(name);
	return strncmp(name, "runner-", 7) == 0 && n > 12 && strcmp(name + n - 5, ".sock") == 0;
}

/*
 * Call fn(fd, addr, arg) for every runner socket of dir, fd being one
 * datagram socket of the caller's for all of them. Nothing when dir is
 * NULL, empty or cannot be opened, or no socket can be made.
 */
static void each_runner_sock(const char *dir, void (*fn)(int fd, const struct sockaddr_un *sa, const char *arg),
			     const char *arg)
{
	DIR *d = dir && *dir ? opendir(dir) : NULL;
	if (!d)
		return;
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	struct dirent *e;
	while (fd >= 0 && (e = readdir(d))) {
		struct sockaddr_un sa;
		if (is_runner_sock(e->d_name) && make_addr(&sa, dir, e->d_name))
			fn(fd, &sa, arg);
	}
	if (fd >= 0)
		close(fd);
	closedir(d);
}

/* each_runner_sock step: unlink sa if nobody receives on it any more. */
static void unlink_if_stale(int fd, const struct sockaddr_un *sa, const char *arg)
{
	(void)arg;
	if (connect(fd, (const struct sockaddr *)sa, sizeof *sa) != 0 && errno == ECONNREFUSED)
		unlink(sa->sun_path);
}

/* each_runner_sock step: send the datagram msg to sa (best effort). */
static void send_wakeup(int fd, const struct sockaddr_un *sa, const char *msg)
{
	(void)sendto(fd, msg, strlen(msg), MSG_NOSIGNAL, (const struct sockaddr *)sa, sizeof *sa);
}

/* Remove sockets in dir that nobody receives on any more. */
static void remove_stale(const char *dir)
{
	each_runner_sock(dir, unlink_if_stale, NULL);
}

int notify_bind(const char *dir, struct buf *path)
{
	char name[64];
	struct sockaddr_un sa;
	if (!dir || !*dir)
		return -1;
	(void)mkdir(dir, 0770);
	remove_stale(dir);
	snprintf(name, sizeof name, "runner-%ld.sock", (long)getpid());
	if (!make_addr(&sa, dir, name))
		return -1;
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -1;
	unlink(sa.sun_path);
	if (bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
		close(fd);
		return -1;
	}
	(void)chmod(sa.sun_path, 0660);
	buf_puts(path, sa.sun_path);
	return fd;
}

int notify_drain(int fd, int *cancels)
{
	char tmp[256];
	int n = 0;
	ssize_t got;
	if (cancels)
		*cancels = 0;
	while ((got = recv(fd, tmp, sizeof tmp, MSG_DONTWAIT)) >= 0) {
		n++;
		if (cancels && got > 0 && tmp[0] == 'c')
			(*cancels)++;
	}
	return n;
}

void notify_all(const char *dir, const char *msg)
{
	each_runner_sock(dir, send_wakeup, msg);
}

/*
 * jobwait: bounded waiters woken by datagrams (theory of operation in
 * jobwait.h).
 */
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "jobwait.h"

#define JOBWAIT_PREFIX "wait-"

/* Fill a sockaddr_un for dir/name; false if it does not fit. */
static bool jobwait_addr(struct sockaddr_un *sa, const char *dir, const char *name)
{
	memset(sa, 0, sizeof *sa);
	sa->sun_family = AF_UNIX;
	int n = snprintf(sa->sun_path, sizeof sa->sun_path, "%s/%s", dir, name);
	return n > 0 && (size_t)n < sizeof sa->sun_path;
}

/* The user id of a waiter socket name "wait-<uid>-<pid>.sock"; false for
 * any other name. */
static bool jobwait_parse(const char *name, long long *uid)
{
	long long u;
	long pid;
	int end = 0;

	if (strncmp(name, JOBWAIT_PREFIX, strlen(JOBWAIT_PREFIX)) != 0)
		return false;
	if (sscanf(name + strlen(JOBWAIT_PREFIX), "%lld-%ld.sock%n", &u, &pid, &end) != 2 ||
	    end == 0 || name[strlen(JOBWAIT_PREFIX) + (size_t)end] != '\0')
		return false;
	*uid = u;
	return true;
}

/* Count the live waiters in dir (all, and those of uid); removes the
 * sockets nobody receives on. False when dir cannot be read. */
static bool jobwait_count(const char *dir, long long uid, long *total, long *mine)
{
	DIR *d = opendir(dir);
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	struct dirent *e;
	bool ok = d != NULL && fd >= 0;

	*total = *mine = 0;
	while (ok && (e = readdir(d)) != NULL) {
		struct sockaddr_un sa;
		long long u;
		if (!jobwait_parse(e->d_name, &u) || !jobwait_addr(&sa, dir, e->d_name))
			continue;
		if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
			if (errno == ECONNREFUSED)
				(void)unlink(sa.sun_path);
			continue;
		}
		(*total)++;
		*mine += u == uid;
	}
	if (fd >= 0)
		close(fd);
	if (d != NULL)
		closedir(d);
	return ok;
}

/* Bind w's socket in dir for uid; false (w->fd -1) when it cannot. */
static bool jobwait_bind(struct jobwait *w, const char *dir, long long uid)
{
	char name[64];
	struct sockaddr_un sa;

	snprintf(name, sizeof name, JOBWAIT_PREFIX "%lld-%ld.sock", uid, (long)getpid());
	if (!jobwait_addr(&sa, dir, name))
		return false;
	w->fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (w->fd < 0)
		return false;
	(void)unlink(sa.sun_path);   /* our own, left by a wait this process never ended */
	if (bind(w->fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
		close(w->fd);
		w->fd = -1;
		return false;
	}
	(void)chmod(sa.sun_path, 0660);   /* the runner (same group) sends to it */
	snprintf(w->path, sizeof w->path, "%s", sa.sun_path);
	return true;
}

/* Register under the caps (see jobwait.h). */
enum jobwait_rc jobwait_enter(struct jobwait *w, const char *dir, long long uid, long max_total,
    long max_user)
{
	long total, mine;

	w->fd = -1;
	w->path[0] = '\0';
	if (dir == NULL || dir[0] == '\0')
		return JOBWAIT_NONE;
	if (max_total < 1 || max_user < 1)
		return JOBWAIT_BUSY;
	if (!jobwait_bind(w, dir, uid))
		return JOBWAIT_NONE;
	if (!jobwait_count(dir, uid, &total, &mine)) {
		jobwait_leave(w);
		return JOBWAIT_NONE;
	}
	if (total > max_total || mine > max_user) {
		jobwait_leave(w);
		return JOBWAIT_BUSY;
	}
	return JOBWAIT_OK;
}

/* Wait for a datagram (see jobwait.h). */
bool jobwait_sleep(struct jobwait *w, int timeout_ms)
{
	struct pollfd p = { .fd = w->fd, .events = POLLIN };
	char tmp[64];
	bool woken = false;
	int n;

	if (w->fd < 0)
		return false;
	n = poll(&p, 1, timeout_ms < 0 ? 0 : timeout_ms);
	if (n < 0)
		return errno == EINTR;
	while (recv(w->fd, tmp, sizeof tmp, MSG_DONTWAIT) >= 0)
		woken = true;
	return woken;
}

/* Unregister (see jobwait.h). */
void jobwait_leave(struct jobwait *w)
{
	if (w->fd >= 0) {
		close(w->fd);
		w->fd = -1;
	}
	if (w->path[0] != '\0') {
		(void)unlink(w->path);
		w->path[0] = '\0';
	}
}

/* Send the datagram msg (len bytes) to every waiter socket in dir. */
static void jobwait_send(const char *dir, const char *msg, size_t len)
{
	DIR *d = dir != NULL && dir[0] != '\0' ? opendir(dir) : NULL;
	int fd = d != NULL ? socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0) : -1;
	struct dirent *e;

	while (fd >= 0 && (e = readdir(d)) != NULL) {
		struct sockaddr_un sa;
		long long u;
		if (!jobwait_parse(e->d_name, &u) || !jobwait_addr(&sa, dir, e->d_name))
			continue;
		(void)sendto(fd, msg, len, MSG_NOSIGNAL | MSG_DONTWAIT, (struct sockaddr *)&sa, sizeof sa);
	}
	if (fd >= 0)
		close(fd);
	if (d != NULL)
		closedir(d);
}

/* Wake every waiter in dir (see jobwait.h). */
void jobwait_wake_all(const char *dir)
{
	jobwait_send(dir, "w", 1);
}

/* Tell every waiter in dir that job_id is final (see jobwait.h). */
void jobwait_wake_done(const char *dir, const char *job_id)
{
	char msg[JOBWAIT_ID_MAX + 2];
	int n = snprintf(msg, sizeof msg, "d%s", job_id);
	if (n > 0 && (size_t)n < sizeof msg)
		jobwait_send(dir, msg, (size_t)n);
	else
		jobwait_send(dir, "w", 1);   /* an id too long for the message: a plain wake-up */
}

/* Wait for a wake-up about job_id (see jobwait.h). */
enum jobwait_wake jobwait_sleep_job(struct jobwait *w, int timeout_ms, const char *job_id)
{
	struct pollfd p = { .fd = w->fd, .events = POLLIN };
	char tmp[JOBWAIT_ID_MAX + 2];
	size_t idlen = strlen(job_id);
	enum jobwait_wake got = JOBWAIT_TIMEOUT;
	ssize_t n;

	if (w->fd < 0)
		return JOBWAIT_TIMEOUT;
	if (poll(&p, 1, timeout_ms < 0 ? 0 : timeout_ms) < 0)
		return errno == EINTR ? JOBWAIT_WOKEN : JOBWAIT_TIMEOUT;
	while ((n = recv(w->fd, tmp, sizeof tmp, MSG_DONTWAIT)) >= 0) {
		if (n > 0 && tmp[0] == 'd') {
			if ((size_t)n == idlen + 1 && memcmp(tmp + 1, job_id, idlen) == 0)
				got = JOBWAIT_DONE;
			else if (got == JOBWAIT_TIMEOUT)
				got = JOBWAIT_OTHER;
		} else if (got != JOBWAIT_DONE) {
			got = JOBWAIT_WOKEN;
		}
	}
	return got;
}

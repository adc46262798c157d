/*
 * jobwait.h: bounded waiters for a job to finish, woken by the runner.
 *
 * Theory of operation. A request that waits for its job (POST /runs with
 * `wait`, cancel and verify with `wait`) holds one prefork worker of the
 * pool, so waiting is capped: at most max_total requests of the whole pool
 * wait at once and at most max_user of one user. The registry is the
 * directory the runners already use for their wake-up sockets
 * (RUNNER_NOTIFY_DIR): a waiter binds the unix datagram socket
 * `<dir>/wait-<uid>-<pid>.sock` (one wait per worker process at a time),
 * then counts the waiter sockets that still have a receiver (a connect()
 * to a socket whose process died answers ECONNREFUSED; such a file is
 * removed). Over a cap it unbinds and the caller answers 429. Binding
 * before counting makes two arrivals that race see each other: at worst
 * both are refused, never both admitted over the cap.
 *
 * The waiter then blocks in poll() on its socket with a bounded timeout
 * and re-reads the job's status after every wake-up. The runner sends one
 * datagram to every waiter socket after it wrote a job's final state
 * (jobwait_wake_all), the API after it cancelled a queued job. Datagrams
 * are hints: the socket is bound before the first status read, so a finish
 * between that read and poll() leaves a datagram queued and poll() returns
 * at once; a runner on another host wakes nobody here, and the caller's
 * poll timeout (its backstop) bounds what that costs.
 */
#ifndef AGENTTEST_JOBWAIT_H
#define AGENTTEST_JOBWAIT_H

#include <stdbool.h>

/* One registered waiter; fd -1 when not registered. */
struct jobwait {
	int  fd;
	char path[108];
};

enum jobwait_rc {
	JOBWAIT_OK,       /* registered: call jobwait_sleep, then jobwait_leave */
	JOBWAIT_BUSY,     /* over max_total or max_user: nothing registered */
	JOBWAIT_NONE,     /* no directory, or the socket cannot be bound */
};

/*
 * Register a waiter of user uid in dir under the caps (both >= 1; a cap
 * < 1 refuses every wait). On JOBWAIT_OK, w holds the socket and the
 * caller must call jobwait_leave; otherwise w->fd is -1.
 */
enum jobwait_rc jobwait_enter(struct jobwait *w, const char *dir, long long uid, long max_total,
    long max_user);

/* Block until a wake-up datagram arrives or timeout_ms passed (EINTR
 * counts as a wake-up); drains what is queued. True when woken. */
bool jobwait_sleep(struct jobwait *w, int timeout_ms);

/* Unregister (close and unlink); safe on an unregistered w. */
void jobwait_leave(struct jobwait *w);

/* Send one wake-up datagram to every waiter socket in dir (best effort,
 * never blocks; a NULL or empty dir does nothing). */
void jobwait_wake_all(const char *dir);

#endif

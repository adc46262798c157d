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
 * The waiter then blocks in poll() on its socket with a bounded timeout.
 * The runner sends one datagram to every waiter socket after it wrote a
 * job's final state: "d<job id>" (jobwait_wake_done), so the waiter of that
 * job knows it is final without reading it and every other waiter goes back
 * to sleep without a database round trip (jobwait_sleep_job); "w"
 * (jobwait_wake_all) after a reap, and from the API after it cancelled a
 * queued job, asks every waiter to re-read its job's status. Datagrams are
 * hints: the socket is bound before the job is queued or its status first
 * read, so a finish before poll() leaves a datagram queued and poll()
 * returns at once; a runner on another host wakes nobody here, and the
 * caller's backstop (a status read at least every so often, whatever
 * datagrams for other jobs arrive) bounds what that costs.
 */
#ifndef AGENTTEST_JOBWAIT_H
#define AGENTTEST_JOBWAIT_H

#include <stdbool.h>

/* The longest job id a "d<job id>" datagram carries (job ids are UUIDs, 36). */
#define JOBWAIT_ID_MAX 63

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

/* Send one wake-up datagram ("w": re-read) to every waiter socket in dir
 * (best effort, never blocks; a NULL or empty dir does nothing). */
void jobwait_wake_all(const char *dir);

/* Send "d<job_id>" (job_id's final state is written) to every waiter socket
 * in dir, as jobwait_wake_all; an id over JOBWAIT_ID_MAX bytes sends "w". */
void jobwait_wake_done(const char *dir, const char *job_id);

/* What jobwait_sleep_job saw. */
enum jobwait_wake {
	JOBWAIT_TIMEOUT,  /* nothing: the timeout passed */
	JOBWAIT_OTHER,    /* only other jobs became final: nothing to re-read */
	JOBWAIT_WOKEN,    /* a plain wake-up (or EINTR): re-read the job */
	JOBWAIT_DONE,     /* job_id's final state is written */
};

/* Block until a datagram arrives or timeout_ms passed; drains what is
 * queued and says what it meant for job_id (DONE over WOKEN over OTHER). */
enum jobwait_wake jobwait_sleep_job(struct jobwait *w, int timeout_ms, const char *job_id);

#endif

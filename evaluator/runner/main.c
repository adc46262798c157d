/*
 * agenttest-runner: claims queued runs from MariaDB and executes them in the
 * sandbox.
 *
 * Theory of operation.
 *
 *   main thread ── signal pipe (SIGTERM, SIGINT), notify socket, timers
 *     │  heartbeat: every second while busy, renew the leases of this runner
 *     │             (only the tables of the kinds its slots run), writing
 *     │             the progress of its evaluations in the same UPDATE
 *     │  cancel:    every RUNNER_TICK_MS while busy, and at once on a
 *     │             cancellation datagram, look for cancel requests of our
 *     │             jobs (one statement) and kill their sandboxes (job_cancel)
 *     │  reap:      every RUNNER_REAP_MS, re-queue runs whose lease expired
 *     │             (another runner died) or fail them with runner_lost
 *     │  wake:      each datagram from the API, and the idle poll, wakes
 *     │             one idle slot (a wake token); a slot whose claim
 *     │             saw more queued wakes one more, so a burst spreads over
 *     │             the slots without every idle slot racing for each
 *     │             run; a re-queue or reap bumps `gen` and wakes them
 *     │             all; after a job's final write the slot wakes the
 *     │             API's waiters (jobwait.h)
 *     ▼
 *   slot threads (N) ── each with its own DB connection
 *        loop: jobq_claim (runs first, then evaluations: FOR UPDATE SKIP
 *              LOCKED, short transaction) → jobq_process (the kind's
 *              execute in the sandbox, then hand back, retry or the one
 *              finishing write guarded by lease owner + attempt)
 *              → claim again at once when the claim saw more queued
 *              (or the kind's finish may queue work), else, as when every
 *              queue is empty, sleep until a wake-up (a token or `gen`).
 *
 * The lease owner is "<host>:<pid>:<random>", one per process; the write
 * guard adds the attempt number, so a slot whose lease was lost (a stalled
 * process) writes nothing. SIGTERM: stop claiming, let running jobs finish
 * for up to --drain seconds, then kill them and hand them back to the queue
 * (the attempt is not counted). A second SIGTERM hands back at once.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include <mysql.h>

#include "db.h"

#include "config.h"
#include "jobwait.h"
#include "log.h"
#include "xalloc.h"
#include "evaluator/runner/runner.h"
#include "sandbox/box_lease.h"
#include "sandbox/sandbox.h"
#include "evaluator/runner/jobq.h"
#include "evaluator/runner/jobs.h"
#include "evaluator/runner/check_service.h"
#include "evaluator/runner/agent.h"
#include "evaluator/runner/forward.h"

struct slot {
	pthread_t       thread;
	unsigned        index;
	struct sbx_box_lease box;    /* the slot's box number, leased for the runner's life */
	struct sbx_box_lease spare;  /* a second one, for the audit's second cut host (backtest.h) */
	struct job_ctl *ctl;
	char            job_id[37];  /* current job, "" when idle (under mu) */
	const struct job_kind *kind; /* its kind, NULL when idle (under mu) */
	bool            busy;
};

static struct {
	pthread_mutex_t mu;
	pthread_cond_t  cv;
	unsigned long   gen;        /* bumped to wake every idle slot */
	unsigned        tokens;     /* wake-ups for one idle slot each (at most nslots) */
	unsigned        waiting;    /* slots asleep on cv */
	bool            stopping;   /* no more claims */
	const char     *db_url;
	char            owner[RUNNER_OWNER_MAX];
	struct job_env  env;
	struct prefetch_env prefetch;
	struct forward_env forward;   /* issue 18 */
	struct agent_env agents;    /* the agent iteration kind (agent_job.c) */
	struct jobq     q;          /* the kinds served, in claim priority */
	struct slot     slots[RUNNER_MAX_SLOTS];
	unsigned        nslots;
	atomic_uint     busy;
	atomic_ulong    completed;
	const char     *notify_dir; /* RUNNER_NOTIFY_DIR: API waiters to wake (jobwait.h) */
} R = { .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER };

/* Write end of the self-pipe the signal handler writes to. */
static int sig_pipe_w = -1;

/*
 * SIGTERM/SIGINT handler: hand the signal number to the main loop. A
 * handler plus a pipe (not signalfd) keeps the signals unblocked, because a
 * blocked mask would be inherited by the sandbox helpers the slots start
 * and stop them from ever seeing the SIGTERM that cancels a run.
 */
static void on_signal(int sig)
{
	unsigned char b = (unsigned char)sig;
	int saved = errno;
	if (write(sig_pipe_w, &b, 1) < 0) {
		/* pipe full: a signal is already pending */
	}
	errno = saved;
}

/* Install on_signal for SIGTERM and SIGINT; returns the read end or -1. */
static int signal_pipe(void)
{
	int p[2];
	struct sigaction sa;
	if (pipe2(p, O_CLOEXEC | O_NONBLOCK) != 0)
		return -1;
	sig_pipe_w = p[1];
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	return p[0];
}

/* Monotonic milliseconds. */
static long long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Wake every idle slot. */
static void wake_slots(void)
{
	pthread_mutex_lock(&R.mu);
	R.gen++;
	pthread_cond_broadcast(&R.cv);
	pthread_mutex_unlock(&R.mu);
}

/*
 * Wake n idle slots, one per token. A token left when no slot sleeps is
 * taken by the next slot that comes back idle, which then claims once more
 * instead of sleeping (so a datagram that arrives while a slot is between
 * its empty claim and its sleep is not lost); at most nslots are kept.
 * only_if_asleep: add nothing when no slot sleeps (the hint of a slot whose
 * claim succeeded: that a run may be left for another slot).
 */
static void wake_some(unsigned n, bool only_if_asleep)
{
	pthread_mutex_lock(&R.mu);
	if (only_if_asleep && n > R.waiting)
		n = R.waiting;
	R.tokens = R.tokens + n > R.nslots ? R.nslots : R.tokens + n;
	for (unsigned i = 0; i < n; i++)
		pthread_cond_signal(&R.cv);
	pthread_mutex_unlock(&R.mu);
}

/* Log one line about a run. */
static void log_run(enum log_level lvl, const char *event, const char *run_id, const char *msg)
{
	struct buf b = BUF_INIT;
	log_begin(&b, lvl, event);
	log_str(&b, "run_id", run_id);
	if (msg)
		log_str(&b, "msg", msg);
	log_end(&b);
	buf_free(&b);
}

/*
 * A slot counts as busy from just before it claims until its claim came back
 * empty or its job is written: the drain then waits for a claim in flight and
 * hand_back_all() reaches a job claimed a moment before SIGTERM. The stop
 * check and the busy mark happen under R.mu, the lock under which the main
 * thread sets R.stopping, so a slot either is counted before the drain
 * starts or sees the stop and claims nothing. Returns false when stopping.
 */
static bool slot_enter(struct slot *s, unsigned long *seen)
{
	pthread_mutex_lock(&R.mu);
	bool go = !R.stopping;
	*seen = R.gen;
	if (go) {
		s->busy = true;
		atomic_fetch_add(&R.busy, 1);
	}
	pthread_mutex_unlock(&R.mu);
	return go;
}

/* The slot is idle again (claim empty, or its job written). */
static void slot_leave(struct slot *s)
{
	pthread_mutex_lock(&R.mu);
	s->job_id[0] = '\0';
	s->kind = NULL;
	s->busy = false;
	atomic_fetch_sub(&R.busy, 1);
	pthread_mutex_unlock(&R.mu);
	job_ctl_reset(s->ctl);
}

/* jobq_slot.write_failed: log a finishing write being retried (the 1st, 2nd, 4th, ... try). */
static void log_write_retry(const struct jobq_lease *l, unsigned tries, const char *why)
{
	if (tries & (tries - 1))
		return;
	struct buf b = BUF_INIT;
	log_begin(&b, LOG_LVL_WARNING, "finish_retrying");
	log_str(&b, "run_id", l->id);
	log_str(&b, "kind", l->kind->name);
	log_int(&b, "tries", tries);
	log_str(&b, "msg", why);
	log_end(&b);
	buf_free(&b);
}

/* jobq.claim_lost: a claim whose row another runner reaped before this one read it. */
static void log_claim_lost(const struct jobq_lease *l)
{
	log_run(LOG_LVL_WARNING, "lease_lost", l->id[0] ? l->id : "?",
		"claim lost before the job was read (stalled past the lease): another runner owns the job");
}

/* Execute one claimed job and write its outcome; the slot is busy (slot_enter). */
static void slot_run(struct slot *s, struct db *c, struct jobq_job *j)
{
	struct job_outcome o;
	struct buf err = BUF_INIT;
	const char *id = j->lease.id;
	job_outcome_init(&o);
	pthread_mutex_lock(&R.mu);
	snprintf(s->job_id, sizeof s->job_id, "%s", id);
	s->kind = j->lease.kind;
	pthread_mutex_unlock(&R.mu);

	struct jobq_slot slot = { .box_id = s->box.box_id, .spare_box_id = s->spare.box_id, .ctl = s->ctl,
	                          .write_failed = log_write_retry };
	switch (jobq_process(c, &R.q, j, &slot, &o, &err)) {
	case JOBQ_HANDED_BACK:
		log_run(LOG_LVL_INFO, "handed_back", id, NULL);
		break;
	case JOBQ_REQUEUED:
		/* a failure of the trusted side (sandbox, environment), not of the
		 * strategy: tried again, on any runner, while attempts are left */
		log_run(LOG_LVL_WARNING, "retrying", id, buf_cstr(&o.message));
		wake_slots();
		break;
	case JOBQ_LEASE_LOST:
		log_run(LOG_LVL_WARNING, "lease_lost", id, "result discarded: another runner owns the job");
		break;
	case JOBQ_DB_ERROR:
		log_run(LOG_LVL_ERROR, "finish_failed", id, buf_cstr(&err));
		break;
	case JOBQ_WRITTEN:
		atomic_fetch_add(&R.completed, 1);
		/* a run's waiter learns it is final without a read; other waiters
		 * (another run's, an agent's event stream) re-read what they wait for */
		if (j->lease.kind == &run_kind)
			jobwait_wake_done(R.notify_dir, id);
		else
			jobwait_wake_all(R.notify_dir);
		log_run(LOG_LVL_DEBUG, j->lease.kind == &run_kind ? "run_done" : "job_done", id,
			o.status == JOB_COMPLETED ? "completed" : o.error_code[0] ? o.error_code : "failed");
		break;
	}
	job_outcome_free(&o);
	buf_free(&err);
}

/* Slot thread: claim, execute, repeat; sleep on the condition when idle. */
static void *slot_main(void *arg)
{
	struct slot *s = arg;
	struct buf err = BUF_INIT;
	struct db *c = NULL;
	mysql_thread_init();
	for (;;) {
		unsigned long seen;
		if (!slot_enter(s, &seen))
			break;
		int got = 0;
		struct jobq_job j = { .job = NULL };   /* filled by jobq_claim */
		if (!c) {
			buf_reset(&err);
			c = rdb_connect(R.db_url, &err);
			if (!c)
				log_msg(LOG_LVL_ERROR, "db_connect_failed", "%s", buf_cstr(&err));
		}
		if (c) {
			buf_reset(&err);
			got = jobq_claim(c, &R.q, &j, &err);
			if (got < 0) {
				log_msg(LOG_LVL_ERROR, "claim_failed", "%s", buf_cstr(&err));
				db_free(c);
				c = NULL;
			}
		}
		if (got > 0) {
			/* ask the queue again at once only when the claim saw more
			 * queued, or the job may queue more itself; else whatever
			 * is queued meanwhile comes with a wake-up (a token kept
			 * for the slot below, or gen bumped by a re-queue) */
			bool again = j.more || !j.lease.kind->queues_nothing;
			if (j.more)
				wake_some(1, true);   /* more is queued: one idle slot looks */
			slot_run(s, c, &j);
			jobq_job_free(&j);
			slot_leave(s);
			if (again)
				continue;
		} else {
			slot_leave(s);
		}
		pthread_mutex_lock(&R.mu);
		while (R.gen == seen && R.tokens == 0 && !R.stopping) {
			R.waiting++;
			pthread_cond_wait(&R.cv, &R.mu);
			R.waiting--;
		}
		if (R.gen == seen && R.tokens > 0)
			R.tokens--;
		pthread_mutex_unlock(&R.mu);
	}
	if (c)
		db_free(c);
	buf_free(&err);
	mysql_thread_end();
	return NULL;
}

/* Cancel the slots whose run ids are listed NUL-separated in ids (n of them). */
static void cancel_listed(const struct buf *ids, int n)
{
	const char *p = ids->data;
	for (int k = 0; k < n; k++, p += strlen(p) + 1) {
		pthread_mutex_lock(&R.mu);
		for (unsigned i = 0; i < R.nslots; i++) {
			if (R.slots[i].busy && strcmp(R.slots[i].job_id, p) == 0) {
				log_run(LOG_LVL_INFO, "cancelling", p, NULL);
				job_cancel(R.slots[i].ctl, false);
			}
		}
		pthread_mutex_unlock(&R.mu);
	}
}

/* Kill and hand back every running job (end of the SIGTERM drain). */
static void hand_back_all(void)
{
	pthread_mutex_lock(&R.mu);
	for (unsigned i = 0; i < R.nslots; i++)
		if (R.slots[i].busy)
			job_cancel(R.slots[i].ctl, true);
	pthread_mutex_unlock(&R.mu);
}

/* The progress of the running jobs whose kind records it, into p (R.nslots entries); how many. */
static size_t collect_progress(struct jobq_progress *p)
{
	size_t n = 0;
	pthread_mutex_lock(&R.mu);
	for (unsigned i = 0; i < R.nslots; i++) {
		struct slot *s = &R.slots[i];
		if (!s->busy || !s->kind || !s->kind->progress || !s->job_id[0] ||
		    !job_progress_get(s->ctl, &p[n].done, &p[n].total))
			continue;
		p[n].kind = s->kind;
		snprintf(p[n].id, sizeof p[n].id, "%s", s->job_id);
		n++;
	}
	pthread_mutex_unlock(&R.mu);
	return n;
}

/* The kinds the slots run now, as a mask of jobq_kind_bit. */
static unsigned running_kinds(void)
{
	unsigned m = 0;
	pthread_mutex_lock(&R.mu);
	for (unsigned i = 0; i < R.nslots; i++)
		if (R.slots[i].kind)
			m |= jobq_kind_bit(&R.q, R.slots[i].kind);
	pthread_mutex_unlock(&R.mu);
	return m;
}

/* When the housekeeping of the main thread last did each of its periodic steps. */
struct house_times {
	long long hb, reap, cancel;
};

/*
 * Periodic database work of the main thread; reconnects as needed. The
 * heartbeat and the cancel poll name only the kinds the slots run (a job
 * claimed a moment ago and not yet listed has a fresh lease and is seen by
 * the next poll); the cancel poll runs every RUNNER_TICK_MS, or at once
 * when cancel_now (a cancellation datagram).
 */
static void housekeeping(struct db **c, long long t, struct house_times *ht, bool cancel_now)
{
	struct buf err = BUF_INIT, ids = BUF_INIT;
	if (!*c && !(*c = rdb_connect(R.db_url, &err)))
		goto out;
	bool busy = atomic_load(&R.busy) > 0;
	unsigned kinds = busy ? running_kinds() : 0;
	if (busy && t - ht->hb >= 1000) {
		struct jobq_progress prog[RUNNER_MAX_SLOTS];
		size_t np = collect_progress(prog);
		if (jobq_heartbeat(*c, &R.q, kinds, prog, np, &err) != 0)
			goto fail;
		ht->hb = t;
	}
	if (kinds && (cancel_now || t - ht->cancel >= RUNNER_TICK_MS)) {
		ht->cancel = t;
		int n = jobq_cancel_requests(*c, &R.q, kinds, &ids, &err);
		if (n < 0)
			goto fail;
		if (n > 0)
			cancel_listed(&ids, n);
	}
	if (t - ht->reap >= RUNNER_REAP_MS) {
		ht->reap = t;
		int n = jobq_reap(*c, &R.q, &err);
		if (n < 0)
			goto fail;
		if (n > 0) {
			wake_slots();
			jobwait_wake_all(R.notify_dir);   /* some may have failed (runner_lost) */
		}
		/* paused agents past MANTIS_PAUSE_TIMEOUT get their next iteration */
		n = agent_auto_resume(*c, &R.agents, &err);
		if (n < 0 || agent_purge_deleted(*c, &R.agents, &err) < 0)
			goto fail;
		if (n > 0)
			wake_slots();
	}
	goto out;
fail:
	log_msg(LOG_LVL_ERROR, "housekeeping_failed", "%s", buf_cstr(&err));
	db_free(*c);
	*c = NULL;
out:
	if (err.len && !*c)
		log_msg(LOG_LVL_ERROR, "db_unavailable", "%s", buf_cstr(&err));
	buf_free(&err);
	buf_free(&ids);
}

/* The main loop: signals, wake-ups, heartbeats, drain. Returns the exit status. */
static int supervise(int sfd, int nfd, int poll_ms, int drain_s)
{
	struct db *c = NULL;
	long long last_poll = now_ms(), drain_until = 0;
	struct house_times ht = { 0, 0, 0 };
	bool handed_back = false;
	for (;;) {
		bool busy = atomic_load(&R.busy) > 0;
		if (R.stopping && !busy)
			break;
		struct pollfd p[2] = { { .fd = sfd, .events = POLLIN }, { .fd = nfd, .events = POLLIN } };
		int timeout = busy || R.stopping ? RUNNER_TICK_MS : poll_ms;
		if (poll(p, nfd >= 0 ? 2 : 1, timeout) < 0 && errno != EINTR)
			return 1;
		long long t = now_ms();
		if (p[0].revents & POLLIN) {
			unsigned char signo;
			if (read(sfd, &signo, 1) == 1) {
				if (R.stopping) {
					drain_until = t;  /* second signal: hand back now */
				} else {
					log_msg(LOG_LVL_INFO, "draining", "signal %u: no more claims; %u running",
						(unsigned)signo, atomic_load(&R.busy));
					pthread_mutex_lock(&R.mu);
					R.stopping = true;
					pthread_cond_broadcast(&R.cv);
					pthread_mutex_unlock(&R.mu);
					drain_until = t + (long long)drain_s * 1000;
				}
			}
		}
		int woken = 0, cancels = 0;
		if (nfd >= 0 && (p[1].revents & POLLIN) && (woken = notify_drain(nfd, &cancels)) > 0) {
			wake_some((unsigned)woken, false);   /* one idle slot per datagram */
			last_poll = t;
		}
		if (!R.stopping && t - last_poll >= poll_ms) {
			wake_some(1, false);   /* the DB poll: the fallback for other hosts */
			last_poll = t;
		}
		if (R.stopping && !handed_back && t >= drain_until) {
			hand_back_all();
			handed_back = true;
		}
		housekeeping(&c, t, &ht, cancels > 0);
	}
	if (c)
		db_free(c);
	return 0;
}

/* Build the lease owner "<host>:<pid>:<random hex>". */
static void make_owner(void)
{
	char host[64] = "host";
	unsigned char rnd[4] = { 0 };
	gethostname(host, sizeof host - 1);
	host[sizeof host - 1] = '\0';
	if (getrandom(rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd)
		rnd[0] = (unsigned char)time(NULL);
	snprintf(R.owner, sizeof R.owner, "%.64s:%ld:%02x%02x%02x%02x", host, (long)getpid(),
		 rnd[0], rnd[1], rnd[2], rnd[3]);
}

/* Print usage on out. */
static void usage(FILE *out)
{
	fprintf(out, "usage: agenttest-runner [--slots N] [--config FILE] [--poll-ms MS] [--drain S]\n"
		     "  --slots N     concurrent runs (default: the number of CPUs; 0: code checks only)\n"
		     "  --config FILE configuration file (default: $AGENTTEST_CONFIG, /etc/agenttest/agenttest.conf)\n"
		     "  --poll-ms MS  idle database poll interval (default RUNNER_POLL_MS or %d)\n"
		     "  --drain S     on SIGTERM, let running jobs finish this long (default %d)\n",
		RUNNER_IDLE_POLL_MS, RUNNER_DRAIN_S);
}

/* Parse a bounded integer option; exits with status 2 on error. */
static long opt_long(const char *name, const char *v, long lo, long hi)
{
	char *end;
	errno = 0;
	long x = strtol(v, &end, 10);
	if (errno || *end || end == v || x < lo || x > hi) {
		fprintf(stderr, "{\"error\":\"%s must be an integer in [%ld, %ld]\",\"code\":\"invalid_field\","
				"\"detail\":\"%s must be an integer in [%ld, %ld]\"}\n", name, lo, hi, name, lo, hi);
		exit(2);
	}
	return x;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "slots", required_argument, NULL, 's' }, { "config", required_argument, NULL, 'c' },
		{ "poll-ms", required_argument, NULL, 'p' }, { "drain", required_argument, NULL, 'd' },
		{ "help", no_argument, NULL, 'h' }, { NULL, 0, NULL, 0 },
	};
	long nslots = sysconf(_SC_NPROCESSORS_ONLN), poll_ms = -1, drain_s = RUNNER_DRAIN_S;
	const char *cfg_path = NULL;
	int o, rc = 1, nfd = -1;
	struct config cfg;
	struct buf err = BUF_INIT, npath = BUF_INIT;
	while ((o = getopt_long(argc, argv, "s:c:p:d:h", opts, NULL)) != -1) {
		switch (o) {
		case 's': nslots = opt_long("--slots", optarg, 0, RUNNER_MAX_SLOTS); break;
		case 'c': cfg_path = optarg; break;
		case 'p': poll_ms = opt_long("--poll-ms", optarg, 10, 600000); break;
		case 'd': drain_s = opt_long("--drain", optarg, 0, 3600); break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (nslots < 0)   /* sysconf failed; 0 (--slots 0): a check-only runner */
		nslots = 1;
	if (nslots > RUNNER_MAX_SLOTS)
		nslots = RUNNER_MAX_SLOTS;
	if (!config_load(&cfg, cfg_path, &err)) {
		fprintf(stderr, "{\"error\":\"configuration\",\"code\":\"invalid_field\",\"detail\":\"%s\"}\n", buf_cstr(&err));
		buf_free(&err);
		return 2;
	}
	log_set_level(cfg.log_level);
	const char *v;
	if (poll_ms < 0)
		poll_ms = (v = config_get(&cfg, "RUNNER_POLL_MS")) ? opt_long("RUNNER_POLL_MS", v, 10, 600000)
								   : RUNNER_IDLE_POLL_MS;
	R.db_url = cfg.database_url;
	R.env.artifacts_root = (v = config_get(&cfg, "ARTIFACTS_DIR")) ? v : "run_artifacts";
	if (!runner_limits(&cfg, &R.env.limits, &err)) {
		fprintf(stderr, "{\"error\":\"%s\",\"code\":\"invalid_config\",\"detail\":\"%s\"}\n", buf_cstr(&err),
			buf_cstr(&err));
		rc = 2;
		goto out;
	}
	make_owner();
	jobq_init(&R.q, R.owner);
	R.q.claim_lost = log_claim_lost;
	jobq_add(&R.q, &run_kind, &R.env);     /* claim priority: runs, then evaluations */
	jobq_add(&R.q, &eval_kind, NULL);
	R.prefetch.db_url = cfg.database_url;       /* market-data prefetches (issue 13) */
	R.prefetch.data_dir = config_get(&cfg, "MANTIS_DATA_DIR");
	R.prefetch.binance_url = config_get(&cfg, "BINANCE_API_URL");
	R.prefetch.binance_urls = config_get(&cfg, "BINANCE_API_URLS");
	R.prefetch.secret_file = cfg.secret_file;
	R.prefetch.coinglass_url = config_get(&cfg, "COINGLASS_API_URL");
	R.prefetch.keep_versions = (v = config_get(&cfg, "MANTIS_DATA_KEEP_VERSIONS"))
		? opt_long("MANTIS_DATA_KEEP_VERSIONS", v, 1, 1000) : 3;
	R.prefetch.backoff_ms = (v = config_get(&cfg, "MANTIS_FETCH_BACKOFF_MS"))
		? opt_long("MANTIS_FETCH_BACKOFF_MS", v, 1, 60000) : 0;
	jobq_add(&R.q, &prefetch_kind, &R.prefetch);
	jobq_add(&R.q, &paper_kind, &R.env);      /* paper trading of the defaults (issue 18) */
	if (!agent_env_init(&R.agents, &cfg, &err)) {
		fprintf(stderr, "{\"error\":\"agents: %s\",\"code\":\"invalid_config\",\"detail\":\"agents: %s\"}\n",
			buf_cstr(&err), buf_cstr(&err));
		rc = 2;
		goto out;
	}
	jobq_add(&R.q, &agent_kind, &R.agents);   /* agent iterations */
	/* forward scores (issue 18): background work, claimed last */
	R.forward.final_minutes = (v = config_get(&cfg, "AGENTTEST_FORWARD_FINAL_MINUTES"))
		? opt_long("AGENTTEST_FORWARD_FINAL_MINUTES", v, 1, FWD_FINAL_MINUTES_MAX) : 0;
	jobq_add(&R.q, &forward_kind, &R.forward);
	if (mysql_library_init(0, NULL, NULL) != 0)
		goto out;

	signal(SIGPIPE, SIG_IGN);
	int sfd = signal_pipe();
	if (sfd < 0)
		goto out;
	const char *ndir = config_get(&cfg, "RUNNER_NOTIFY_DIR");
	nfd = notify_bind(ndir, &npath);
	R.notify_dir = ndir;

	/* One zygote helper per slot (each serves one run at a time) and one
	 * more, which an audit takes for its second cut host while it is idle
	 * (sbx_start_spare), started now so the first runs do not pay the
	 * interpreter start-up. */
	const char *zs = getenv("AGENTTEST_SANDBOX_ZYGOTES");
	if (!zs || atol(zs) < nslots + 1) {
		char n[16];
		snprintf(n, sizeof n, "%ld", nslots + 1);
		setenv("AGENTTEST_SANDBOX_ZYGOTES", n, 1);
	}
	/* the code-check service for the API (check_service.c) first: the API
	 * answers submissions while the zygotes import (a check meanwhile runs
	 * on the one-shot helper), then the slots once their zygotes are ready */
	struct check_service *check = check_service_start(&cfg, (unsigned)nslots);
	char perr[256] = "";
	if (sbx_prestart((unsigned)nslots + 1, perr, sizeof perr) != 0)
		log_msg(LOG_LVL_WARNING, "sandbox_prestart_failed", "%s (runs start helpers on demand)", perr);

	R.nslots = (unsigned)nslots;
	for (unsigned i = 0; i < R.nslots; i++) {
		R.slots[i].index = i;
		R.slots[i].box = (struct sbx_box_lease)SBX_BOX_LEASE_INIT;
		R.slots[i].spare = (struct sbx_box_lease)SBX_BOX_LEASE_INIT;
		/* a box number no other process on this machine uses meanwhile (another
		 * runner, the check service, a CLI run, an agent turn) */
		char berr[256];
		if (sbx_box_acquire(&R.slots[i].box, berr, sizeof berr) != 0) {
			log_msg(LOG_LVL_ERROR, "box_lease_failed", "slot %u: %s", i, berr);
			R.nslots = i;
			break;
		}
		/* optional: without it the slot's audits run their cuts one by one */
		if (sbx_box_acquire(&R.slots[i].spare, berr, sizeof berr) != 0)
			log_msg(LOG_LVL_WARNING, "box_lease_failed", "slot %u, spare box: %s", i, berr);
		R.slots[i].ctl = job_ctl_new();
		if (pthread_create(&R.slots[i].thread, NULL, slot_main, &R.slots[i]) != 0) {
			log_msg(LOG_LVL_ERROR, "thread_failed", "cannot start slot %u", i);
			job_ctl_free(R.slots[i].ctl);
			sbx_box_release(&R.slots[i].box);
			sbx_box_release(&R.slots[i].spare);
			R.nslots = i;
			break;
		}
	}
	{
		struct buf b = BUF_INIT;
		log_begin(&b, LOG_LVL_INFO, "runner_started");
		log_str(&b, "owner", R.owner);
		log_int(&b, "slots", R.nslots);
		log_int(&b, "poll_ms", poll_ms);
		log_str(&b, "notify", npath.len ? npath.data : "none (polling only)");
		log_end(&b);
		buf_free(&b);
	}
	rc = supervise(sfd, nfd, (int)poll_ms, (int)drain_s);
	pthread_mutex_lock(&R.mu);
	R.stopping = true;
	pthread_cond_broadcast(&R.cv);
	pthread_mutex_unlock(&R.mu);
	for (unsigned i = 0; i < R.nslots; i++) {
		pthread_join(R.slots[i].thread, NULL);
		job_ctl_free(R.slots[i].ctl);
		sbx_box_release(&R.slots[i].box);
		sbx_box_release(&R.slots[i].spare);
	}
	check_service_stop(check);
	log_msg(LOG_LVL_INFO, "runner_stopped", "%lu runs written", atomic_load(&R.completed));
	if (npath.len)
		unlink(npath.data);
	if (nfd >= 0)
		close(nfd);
	close(sfd);
	mysql_library_end();
out:
	config_free(&cfg);
	buf_free(&err);
	buf_free(&npath);
	return rc;
}

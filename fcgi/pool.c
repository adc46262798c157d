/*
 * pool.c: the master process of agenttest-fcgi.
 *
 * Theory of operation. The master loads and validates the configuration,
 * reads (or creates) the secret file, maps the shared metrics region, opens
 * the listening socket, and forks N workers, all before serving anything;
 * then it only supervises. Signals are blocked in the master and taken
 * synchronously with sigtimedwait(), so there is no async handler state:
 *   SIGCHLD  reap; a worker that died unexpectedly is counted
 *            (agenttest_worker_restarts_total) and restarted, at once if it
 *            had lived WORKER_STABLE_MS, otherwise after an exponential
 *            backoff (100 ms doubling up to 30 s) so a crash loop cannot spin;
 *   SIGTERM, SIGINT  graceful stop: SIGTERM to every worker (each finishes
 *            the request in flight), SIGKILL after STOP_GRACE_MS, then the
 *            unix socket file is removed;
 *   SIGHUP   reload the configuration (kept if invalid) and replace the
 *            workers one at a time: start the new one, then stop the old one
 *            and wait for it before moving on, so capacity never drops below
 *            N. The socket and the worker count are fixed at start.
 * The master holds no database connection and serves no request.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "common/log.h"
#include "common/xalloc.h"
#include "fcgi/app.h"

#define WORKER_STABLE_MS 2000
#define BACKOFF_MIN_MS 100
#define BACKOFF_MAX_MS 30000
#define STOP_GRACE_MS 10000

struct slot {
	pid_t     pid;        /* 0: not running */
	pid_t     old_pid;    /* being replaced (SIGHUP), 0 if none */
	long long started_ms;
	long long restart_at; /* 0: no restart pending */
	long long backoff_ms;
	long long old_deadline;
};

struct pool {
	struct config  cfg;
	struct prom *metrics;
	unsigned char  key[SECRET_BYTES];
	int            fd;
	char          *socket;
	long           n;
	struct slot   *slots;
	bool           stopping;
	long long      stop_deadline;
	long           rolling;   /* next slot to replace, -1 when not rolling */
};

/* Fork a worker into slot i. */
static void pool_spawn(struct pool *p, long i)
{
	pid_t pid = fork();
	if (pid < 0) {
		log_msg(LOG_LVL_ERROR, "fork", "cannot fork a worker: %s", strerror(errno));
		p->slots[i].restart_at = app_now_ms() + BACKOFF_MIN_MS;
		return;
	}
	if (pid == 0)
		worker_main(p->fd, &p->cfg, p->metrics, p->key, (int)i);
	p->slots[i].pid = pid;
	p->slots[i].started_ms = app_now_ms();
	p->slots[i].restart_at = 0;
}

/* Handle the exit of pid with wait status st. */
static void pool_reaped(struct pool *p, pid_t pid, int st)
{
	long long now = app_now_ms();
	for (long i = 0; i < p->n; i++) {
		struct slot *s = &p->slots[i];
		if (s->old_pid == pid) {
			s->old_pid = 0;
			if (p->rolling == i)
				p->rolling = i + 1 < p->n ? i + 1 : -1;
			return;
		}
		if (s->pid != pid)
			continue;
		s->pid = 0;
		if (p->stopping)
			return;
		prom_worker_restart(p->metrics);
		long long lived = now - s->started_ms;
		s->backoff_ms = lived >= WORKER_STABLE_MS ? 0
		               : s->backoff_ms == 0 ? BACKOFF_MIN_MS
		               : s->backoff_ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : s->backoff_ms * 2;
		s->restart_at = now + s->backoff_ms;
		struct buf b = BUF_INIT;
		log_begin(&b, LOG_LVL_WARNING, "worker_died");
		log_int(&b, "slot", i);
		log_int(&b, "pid", pid);
		if (WIFSIGNALED(st))
			log_int(&b, "signal", WTERMSIG(st));
		else
			log_int(&b, "exit_status", WEXITSTATUS(st));
		log_int(&b, "restart_in_ms", s->backoff_ms);
		log_end(&b);
		buf_free(&b);
		return;
	}
}

/* Start pending restarts and the next rolling replacement. */
static void pool_tick(struct pool *p)
{
	long long now = app_now_ms();
	if (p->stopping)
		return;
	for (long i = 0; i < p->n; i++)
		if (p->slots[i].pid == 0 && p->slots[i].restart_at != 0 && now >= p->slots[i].restart_at)
			pool_spawn(p, i);
	if (p->rolling >= 0) {
		struct slot *s = &p->slots[p->rolling];
		if (s->old_pid == 0 && s->pid != 0 && s->old_deadline == 0) {
			s->old_pid = s->pid;
			s->old_deadline = now + STOP_GRACE_MS;
			pool_spawn(p, p->rolling);
			kill(s->old_pid, SIGTERM);
		} else if (s->old_pid == 0) {
			s->old_deadline = 0;
			if (s->pid == 0) /* the slot was empty: move on */
				p->rolling = p->rolling + 1 < p->n ? p->rolling + 1 : -1;
		} else if (now >= s->old_deadline) {
			kill(s->old_pid, SIGKILL);
		}
	}
}

/* SIGHUP: reload the configuration and start a rolling replacement. */
static void pool_reload(struct pool *p, const char *config_path)
{
	struct config fresh;
	struct buf err = BUF_INIT;
	if (!config_load(&fresh, config_path, &err) || !config_validate(&fresh, &err)) {
		log_msg(LOG_LVL_ERROR, "reload_failed", "keeping the running configuration: %s", buf_cstr(&err));
		if (fresh.path != NULL || fresh.database_url != NULL)
			config_free(&fresh);
		buf_free(&err);
		return;
	}
	buf_free(&err);
	config_free(&p->cfg);
	p->cfg = fresh;
	log_set_level(p->cfg.log_level);
	for (long i = 0; i < p->n; i++)
		if (p->slots[i].old_pid == 0)
			p->slots[i].old_deadline = 0;
	p->rolling = 0;
	log_msg(LOG_LVL_INFO, "reload", "configuration reloaded; replacing %ld workers one by one", p->n);
}

/* Begin the graceful stop. */
static void pool_stop(struct pool *p, int sig)
{
	if (p->stopping)
		return;
	p->stopping = true;
	p->stop_deadline = app_now_ms() + STOP_GRACE_MS;
	log_msg(LOG_LVL_INFO, "stopping", "signal %d: stopping %ld workers", sig, p->n);
	for (long i = 0; i < p->n; i++) {
		if (p->slots[i].pid > 0)
			kill(p->slots[i].pid, SIGTERM);
		if (p->slots[i].old_pid > 0)
			kill(p->slots[i].old_pid, SIGTERM);
	}
}

/* Workers still alive. */
static long pool_alive(const struct pool *p)
{
	long n = 0;
	for (long i = 0; i < p->n; i++)
		n += (p->slots[i].pid > 0) + (p->slots[i].old_pid > 0);
	return n;
}

/* The supervision loop; returns when every worker has stopped. */
static void pool_loop(struct pool *p, const char *config_path, const sigset_t *set)
{
	for (;;) {
		struct timespec ts = { 0, 100 * 1000000L };
		siginfo_t si;
		int sig = sigtimedwait(set, &si, &ts);
		if (sig == SIGCHLD || sig < 0 || p->stopping) {
			int st;
			pid_t pid;
			while ((pid = waitpid(-1, &st, WNOHANG)) > 0)
				pool_reaped(p, pid, st);
		}
		if (sig == SIGTERM || sig == SIGINT)
			pool_stop(p, sig);
		else if (sig == SIGHUP && !p->stopping)
			pool_reload(p, config_path);
		if (p->stopping) {
			if (pool_alive(p) == 0)
				return;
			if (app_now_ms() >= p->stop_deadline)
				for (long i = 0; i < p->n; i++) {
					if (p->slots[i].pid > 0)
						kill(p->slots[i].pid, SIGKILL);
					if (p->slots[i].old_pid > 0)
						kill(p->slots[i].old_pid, SIGKILL);
				}
			continue;
		}
		pool_tick(p);
	}
}

/* Load everything the workers need; false with a message. */
static bool pool_prepare(struct pool *p, const struct pool_opts *o, struct buf *err)
{
	if (!config_load(&p->cfg, o->config_path, err) || !config_validate(&p->cfg, err))
		return false;
	log_set_level(p->cfg.log_level);
	p->socket = xstrdup(o->socket ? o->socket : p->cfg.fcgi_socket);
	p->n = o->workers > 0 ? o->workers : p->cfg.workers;
	struct router *r = router_new(fcgi_routes, fcgi_nroutes, err);
	if (r == NULL)
		return false;
	router_free(r);
	if (!secret_load(p->cfg.secret_file, true, p->key, err))
		return false;
	p->metrics = prom_new(fcgi_nroutes);
	if (p->metrics == NULL) {
		buf_printf(err, "cannot map the shared metrics region: %s", strerror(errno));
		return false;
	}
	prom_set_workers(p->metrics, p->n);
	p->fd = sock_listen(p->socket, err);
	return p->fd >= 0;
}

int pool_run(const struct pool_opts *o)
{
	struct pool p;
	struct buf err = BUF_INIT;
	sigset_t set;
	int rc = 1;

	memset(&p, 0, sizeof p);
	p.fd = -1;
	p.rolling = -1;
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	sigprocmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);
	if (!pool_prepare(&p, o, &err)) {
		log_msg(LOG_LVL_ERROR, "startup_failed", "%s", buf_cstr(&err));
		goto out;
	}
	p.slots = xcalloc((size_t)p.n, sizeof *p.slots);
	struct buf b = BUF_INIT;
	log_begin(&b, LOG_LVL_INFO, "start");
	log_str(&b, "version", AGENTTEST_VERSION);
	log_str(&b, "commit", AGENTTEST_COMMIT);
	log_str(&b, "socket", p.socket);
	log_int(&b, "workers", p.n);
	log_str(&b, "auth", config_auth_required(&p.cfg) ? "required" : "auto");
	log_end(&b);
	buf_free(&b);
	for (long i = 0; i < p.n; i++)
		pool_spawn(&p, i);
	pool_loop(&p, o->config_path, &set);
	rc = 0;
	log_msg(LOG_LVL_INFO, "stopped", "all workers stopped");
out:
	if (p.fd >= 0) {
		close(p.fd);
		if (p.socket != NULL && p.socket[0] == '/')
			unlink(p.socket);
	}
	sodium_memzero(p.key, sizeof p.key);
	prom_free(p.metrics);
	free(p.slots);
	free(p.socket);
	if (p.cfg.database_url != NULL)
		config_free(&p.cfg);
	buf_free(&err);
	return rc;
}

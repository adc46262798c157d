/*
 * supervise.c: watching one run from outside, shared by the helper binary
 * (confined runs), the trusted-mode supervisor of the client library and the
 * zygote path.
 *
 * Theory of operation. The supervisor is the parent of the run's top process
 * (in confined mode that process is PID 1 of the run's PID namespace, so its
 * death takes every other process of the run with it). One poll(2) loop with
 * a SBX_POLL_MS tick multiplexes:
 *   - a pidfd of the top process (readable when it has exited);
 *   - the run's stdout and stderr, copied to the caller's pipes and counted
 *     against the output limit (the program never holds the caller's pipes,
 *     so a flood is cut off at the limit, not when a pipe fills);
 *   - the seccomp user-notification listener, when the policy reports
 *     violations to us rather than killing in-kernel (see seccomp.c): the
 *     first execve of the top process is let through (it is the helper's
 *     own exec of the program), anything else is a violation: we note the
 *     syscall name and kill the run, never answering the notification, so
 *     the forbidden call never executes;
 *   - on each tick, wall time (CLOCK_MONOTONIC) and CPU time (the cgroup's
 *     accounting when there is one, else /proc/<pid>/stat of the top
 *     process including reaped children). The cgroup's counter is read
 *     only once the run could have reached its limit: a run can use at
 *     most one CPU second per second on each of the machine's CPUs, so
 *     after reading c of a limit L the next read is due (L - c) / CPUs
 *     seconds later, and no crossing is seen later than before. A round
 *     that only relays a frame reads no counter (the kernel sums it over
 *     every CPU at each read, a cost per frame in the old loop).
 * Any limit kills the whole run (cgroup kill plus SIGKILL of the top
 * process, or of its process group in trusted mode) and the loop goes on
 * until the top process is reaped with wait4(2), which also yields the
 * peak RSS. Without a seccomp listener the loop allocates nothing, so the
 * trusted-mode supervisor may run it in a child forked from a
 * multi-threaded caller.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <seccomp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sandbox/sbx_int.h"

#define RELAY_BUF 65536

struct relay {
	int    in, to;
	size_t len, off;
	char   buf[RELAY_BUF];
};

enum kill_reason { KR_NONE, KR_TIME, KR_OUTPUT, KR_SYSCALL, KR_INTERNAL, KR_CANCEL };

struct sup {
	struct sbx_watch *w;
	int      pidfd;
	struct timespec start;
	uint64_t out_total;
	enum kill_reason why;
	char     syscall[32];
	struct relay rel[2];
	struct seccomp_notif *req;
	struct seccomp_notif_resp *resp;
	bool     exec_done;
	char     logged[200];   /* --seccomp-log: names seen */
	bool     reaped;        /* without pidfd: wait4 already done */
	double   cpu_due;       /* with a cgroup: seconds since start when its CPU is read next */
	int      status;
	struct rusage ru;
};

static volatile sig_atomic_t cancel_flag;

/* Signal handler: ask the loop to cancel the run. */
static void on_cancel(int sig)
{
	(void)sig;
	cancel_flag = 1;
}

void sbx_supervise_reset_cancel(void)
{
	cancel_flag = 0;
}

void sbx_supervise_signals(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_cancel;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
}

/* Seconds elapsed since *t0 on CLOCK_MONOTONIC. */
static double since(const struct timespec *t0)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)(now.tv_sec - t0->tv_sec) + (double)(now.tv_nsec - t0->tv_nsec) / 1e9;
}

/* CPU seconds of pid and its reaped children from /proc, or -1. */
static double proc_cpu(pid_t pid)
{
	char path[64], buf[1024];
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	char *p = strrchr(buf, ')'); /* comm may hold spaces */
	if (!p)
		return -1;
	unsigned long long f[4];
	/* after ")": state(3) ... utime(14) stime(15) cutime(16) cstime(17) */
	if (sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %llu %llu",
	           &f[0], &f[1], &f[2], &f[3]) != 4)
		return -1;
	long hz = sysconf(_SC_CLK_TCK);
	return (double)(f[0] + f[1] + f[2] + f[3]) / (double)(hz > 0 ? hz : 100);
}

/* The machine's CPUs (configured, so at least those online), once, in a
 * helper (with a cgroup: never the trusted-mode child of a threaded
 * caller, where sysconf could allocate); 1 if unknown. */
static double machine_cpus(void)
{
	static long n;
	if (n == 0) {
		n = sysconf(_SC_NPROCESSORS_CONF);
		if (n < 1)
			n = 1;
	}
	return (double)n;
}

/* CPU seconds of the run so far (cgroup if any), or -1. */
static double run_cpu(struct sup *s)
{
	double c = s->w->cg ? sbx_cg_cpu(s->w->cg) : -1;
	return c >= 0 ? c - s->w->cpu_base : proc_cpu(s->w->pid);
}

/* Kill the whole run, remembering the first reason. */
static void kill_run(struct sup *s, enum kill_reason why)
{
	if (s->why == KR_NONE)
		s->why = why;
	if (s->w->cg)
		sbx_cg_kill(s->w->cg);
	if (s->w->kill_group)
		kill(-s->w->pid, SIGKILL);
	kill(s->w->pid, SIGKILL);
}

/* Close one relay side, tolerating -1. */
static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* Move bytes for relay r after poll said in/to are ready. */
static void relay_step(struct sup *s, struct relay *r, short in_ev, short to_ev)
{
	if (r->len == r->off && (in_ev & (POLLIN | POLLHUP | POLLERR))) {
		ssize_t n = read(r->in, r->buf, sizeof r->buf);
		if (n > 0) {
			r->len = (size_t)n;
			r->off = 0;
			s->out_total += (uint64_t)n;
			if (s->out_total > s->w->limits.output_bytes) {
				kill_run(s, KR_OUTPUT);
				r->len = r->off = 0;
			}
			if (r->to < 0)
				r->len = r->off = 0; /* nobody listens: drop */
		} else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
			close_fd(&r->in);
			close_fd(&r->to);
		}
	}
	if (r->len > r->off && r->to >= 0 && (to_ev & (POLLOUT | POLLERR | POLLHUP))) {
		ssize_t n = write(r->to, r->buf + r->off, r->len - r->off);
		if (n > 0) {
			r->off += (size_t)n;
			if (r->off == r->len)
				r->len = r->off = 0;
		} else if (n < 0 && errno == EAGAIN && r == &s->rel[1]) {
			r->len = r->off = 0; /* the log is lossy when nobody reads it */
		} else if (n < 0 && errno != EINTR && errno != EAGAIN) {
			close_fd(&r->to);   /* the caller went away: drop the rest */
			r->len = r->off = 0;
		}
	}
}

/* Handle one pending seccomp notification. */
static void notify_step(struct sup *s)
{
	memset(s->req, 0, sizeof *s->req);
	if (seccomp_notify_receive(s->w->notify_fd, s->req) != 0)
		return; /* e.g. the task died meanwhile (ENOENT) */
	int nr = s->req->data.nr;
	if (s->w->allow_exec && !s->exec_done && s->req->pid == (uint32_t)s->w->pid &&
	    nr == seccomp_syscall_resolve_name("execve")) {
		s->exec_done = true;
		memset(s->resp, 0, sizeof *s->resp);
		s->resp->id = s->req->id;
		s->resp->flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
		if (seccomp_notify_respond(s->w->notify_fd, s->resp) != 0)
			kill_run(s, KR_INTERNAL);
		return;
	}
	char *name = seccomp_syscall_resolve_num_arch(s->req->data.arch, nr);
	char label[32];
	if (name)
		snprintf(label, sizeof label, "%s", name);
	else
		snprintf(label, sizeof label, "#%d", nr);
	free(name);
	if (s->w->log_only) {   /* debug mode: note it once and let it run */
		size_t used = strlen(s->logged);
		if (!strstr(s->logged, label) && used + strlen(label) + 2 < sizeof s->logged)
			snprintf(s->logged + used, sizeof s->logged - used, " %s", label);
		memset(s->resp, 0, sizeof *s->resp);
		s->resp->id = s->req->id;
		s->resp->flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
		if (seccomp_notify_respond(s->w->notify_fd, s->resp) != 0)
			kill_run(s, KR_INTERNAL);
		return;
	}
	if (s->why == KR_NONE)
		snprintf(s->syscall, sizeof s->syscall, "%s", label);
	kill_run(s, KR_SYSCALL); /* never answered: the call does not run */
}

/* Fill the verdict from the wait status and what the loop saw. */
static void conclude(struct sup *s, int status, const struct rusage *ru, struct sbx_verdict *v)
{
	v->wall_seconds = since(&s->start);
	double cg_cpu = s->w->cg ? sbx_cg_cpu(s->w->cg) : -1;
	v->cpu_seconds = cg_cpu >= 0 ? (cg_cpu > s->w->cpu_base ? cg_cpu - s->w->cpu_base : 0) :
		(double)(ru->ru_utime.tv_sec + ru->ru_stime.tv_sec) +
		(double)(ru->ru_utime.tv_usec + ru->ru_stime.tv_usec) / 1e6;
	v->max_rss_bytes = (uint64_t)ru->ru_maxrss * 1024u;
	bool oom = false;
	if (s->w->cg)
		sbx_cg_stats(s->w->cg, &v->cg_mem_bytes, &oom);
	v->killed = s->why != KR_NONE;
	if (WIFEXITED(status))
		v->exit_code = WEXITSTATUS(status);
	else if (WIFSIGNALED(status))
		v->exit_signal = WTERMSIG(status);
	const struct sbx_limits *l = &s->w->limits;
	if (s->logged[0])
		sbx_note(v->warnings, sizeof v->warnings, "seccomp-log:%s", s->logged);
	if (s->w->allow_exec && !s->exec_done && s->why == KR_NONE) {
		v->status = SBX_XX;
		sbx_note(v->message, sizeof v->message, "the program could not be started");
	} else if (s->why == KR_SYSCALL) {
		v->status = SBX_SY;
		snprintf(v->syscall_name, sizeof v->syscall_name, "%s", s->syscall);
		sbx_note(v->message, sizeof v->message, "forbidden system call %s", s->syscall);
	} else if (s->why == KR_OUTPUT) {
		v->status = SBX_OL;
		sbx_note(v->message, sizeof v->message, "output limit of %llu bytes exceeded",
		         (unsigned long long)l->output_bytes);
	} else if (s->why == KR_INTERNAL) {
		v->status = SBX_XX;
		sbx_note(v->message, sizeof v->message, "supervisor failure");
	} else if (oom) {
		/* before KR_CANCEL: a host killed by the OOM killer closes its
		 * pipes, and the caller, seeing EOF, may cancel the run before the
		 * supervisor has concluded; the run still ran out of memory */
		v->status = SBX_ML;
		sbx_note(v->message, sizeof v->message, "memory limit of %llu bytes exceeded",
		         (unsigned long long)l->memory_bytes);
	} else if (s->why == KR_CANCEL) {
		v->status = SBX_SG;
		sbx_note(v->message, sizeof v->message, "cancelled");
	} else if (s->why == KR_TIME || (WIFSIGNALED(status) && WTERMSIG(status) == SIGXCPU)) {
		v->status = SBX_TO;
		sbx_note(v->message, sizeof v->message, "%s limit exceeded",
		         v->wall_seconds >= l->wall_seconds ? "wall time" : "CPU time");
	} else if (WIFSIGNALED(status) && WTERMSIG(status) == SIGSYS) {
		v->status = SBX_SY;
		snprintf(v->syscall_name, sizeof v->syscall_name, "unknown");
		sbx_note(v->message, sizeof v->message, "killed by the seccomp policy");
	} else if (WIFSIGNALED(status)) {
		v->status = SBX_SG;
		sbx_note(v->message, sizeof v->message, "killed by signal %d (%s)",
		         WTERMSIG(status), strsignal(WTERMSIG(status)));
	} else if (v->exit_code != 0) {
		v->status = SBX_RE;
		sbx_note(v->message, sizeof v->message, "exited with status %d", v->exit_code);
	} else {
		v->status = SBX_OK;
	}
}

/* One poll round; returns true once the top process has exited. */
static bool poll_round(struct sup *s)
{
	struct pollfd p[6];
	int n = 0, ip = -1, in_i[2] = { -1, -1 }, to_i[2] = { -1, -1 }, nt = -1;
	if (s->pidfd >= 0) {
		p[n] = (struct pollfd){ .fd = s->pidfd, .events = POLLIN };
		ip = n++;
	}
	for (int i = 0; i < 2; i++) {
		struct relay *r = &s->rel[i];
		if (r->in >= 0 && r->len == r->off) {
			p[n] = (struct pollfd){ .fd = r->in, .events = POLLIN };
			in_i[i] = n++;
		}
		if (r->to >= 0 && r->len > r->off) {
			p[n] = (struct pollfd){ .fd = r->to, .events = POLLOUT };
			to_i[i] = n++;
		}
	}
	if (s->w->notify_fd >= 0) {
		p[n] = (struct pollfd){ .fd = s->w->notify_fd, .events = POLLIN };
		nt = n++;
	}
	int rc = poll(p, (nfds_t)n, SBX_POLL_MS);
	if (rc < 0 && errno != EINTR) {
		kill_run(s, KR_INTERNAL);
		return true;
	}
	if (rc > 0) {
		for (int i = 0; i < 2; i++)
			relay_step(s, &s->rel[i], in_i[i] >= 0 ? p[in_i[i]].revents : 0,
			           to_i[i] >= 0 ? p[to_i[i]].revents : 0);
		if (nt >= 0 && (p[nt].revents & POLLIN))
			notify_step(s);
		if (nt >= 0 && (p[nt].revents & (POLLHUP | POLLERR)))
			close_fd(&s->w->notify_fd);
	}
	if (cancel_flag)
		kill_run(s, KR_CANCEL);
	double now = since(&s->start);
	if (now > s->w->limits.wall_seconds)
		kill_run(s, KR_TIME);
	if (!s->w->cg || now >= s->cpu_due) {
		double cpu = run_cpu(s), lim = s->w->limits.cpu_seconds;
		if (cpu > lim)
			kill_run(s, KR_TIME);
		else if (s->w->cg && cpu >= 0)
			s->cpu_due = now + (lim - cpu) / machine_cpus();
	}
	if (ip < 0) {   /* no pidfd (old kernel, valgrind): poll the wait status */
		pid_t r = wait4(s->w->pid, &s->status, WNOHANG, &s->ru);
		if (r == s->w->pid || (r < 0 && errno != EINTR))
			s->reaped = true;
		return s->reaped;
	}
	return rc > 0 && (p[ip].revents & POLLIN);
}

/* After the top process exited: flush what the relays still hold, bounded. */
static void drain(struct sup *s)
{
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while ((s->rel[0].in >= 0 || s->rel[1].in >= 0 ||
	        s->rel[0].len > s->rel[0].off || s->rel[1].len > s->rel[1].off) &&
	       since(&t0) < 2.0) {
		struct pollfd p[4];
		int n = 0, in_i[2] = { -1, -1 }, to_i[2] = { -1, -1 };
		for (int i = 0; i < 2; i++) {
			struct relay *r = &s->rel[i];
			if (r->in >= 0 && r->len == r->off) {
				p[n] = (struct pollfd){ .fd = r->in, .events = POLLIN };
				in_i[i] = n++;
			}
			if (r->to >= 0 && r->len > r->off) {
				p[n] = (struct pollfd){ .fd = r->to, .events = POLLOUT };
				to_i[i] = n++;
			} else if (r->to < 0) {
				r->len = r->off = 0;
			}
		}
		if (n == 0)
			break;
		if (poll(p, (nfds_t)n, SBX_POLL_MS) <= 0)
			continue;
		for (int i = 0; i < 2; i++)
			relay_step(s, &s->rel[i], in_i[i] >= 0 ? p[in_i[i]].revents : 0,
			           to_i[i] >= 0 ? p[to_i[i]].revents : 0);
	}
}

/* Make fd non-blocking; true for fd < 0 (no relay). false if fcntl fails. */
static bool set_nonblock(int fd)
{
	if (fd < 0)
		return true;
	int fl = fcntl(fd, F_GETFL);
	return fl >= 0 && fcntl(fd, F_SETFL, fl | O_NONBLOCK) == 0;
}

int sbx_supervise(struct sbx_watch *w, struct sbx_verdict *v)
{
	static struct sup s; /* one supervised run per process; big relay buffers */
	int rc = 0, status = 0;
	struct rusage ru;
	memset(&s, 0, sizeof s);
	memset(&ru, 0, sizeof ru);
	s.w = w;
	clock_gettime(CLOCK_MONOTONIC, &s.start);
	sbx_limits_fill(&w->limits);
	v->limits = w->limits;
	s.rel[0].in = w->out_in; s.rel[0].to = w->out_to;
	s.rel[1].in = w->err_in; s.rel[1].to = w->err_to;
	/* a relay left blocking could stall the loop (and every limit): fail closed */
	for (int i = 0; i < 2; i++)
		if (!set_nonblock(s.rel[i].in) || !set_nonblock(s.rel[i].to))
			kill_run(&s, KR_INTERNAL);
	if (w->notify_fd >= 0 && seccomp_notify_alloc(&s.req, &s.resp) != 0) {
		s.req = NULL;
		s.resp = NULL;
		kill_run(&s, KR_INTERNAL);
	}
	s.pidfd = (int)syscall(SYS_pidfd_open, w->pid, 0);
	if (s.pidfd < 0 && errno != ENOSYS)
		kill_run(&s, KR_INTERNAL);
	while (!poll_round(&s))
		;
	drain(&s);
	if (s.reaped) {
		status = s.status;
		ru = s.ru;
	} else {
		pid_t r;
		do
			r = wait4(w->pid, &status, 0, &ru);
		while (r < 0 && errno == EINTR);
		if (r < 0) {
			rc = -1;
			s.why = KR_INTERNAL;
		}
	}
	conclude(&s, status, &ru, v);
	for (int i = 0; i < 2; i++) {
		close_fd(&s.rel[i].in);
		close_fd(&s.rel[i].to);
	}
	close_fd(&s.pidfd);
	close_fd(&w->notify_fd);
	if (s.req)
		seccomp_notify_free(s.req, s.resp);
	w->out_in = w->out_to = w->err_in = w->err_to = -1;
	return rc;
}

/*
 * client.c: the sbx_* API (sandbox.h) that the runner and the CLI use.
 *
 * Theory of operation. sbx_start creates the caller's three pipes (frames
 * in, frames out, log) plus a verdict pipe, then starts a supervisor
 * process that stays the parent of the run until it ends:
 *   - SBX_TRUSTED: the supervisor is a fork of the caller; it forks the
 *     host (own process group, RLIMIT_CPU, explicit environment, all other
 *     fds closed) and runs sbx_supervise() from supervise.c;
 *   - SBX_CONFINED: through the zygote (zygote_client.c) when it is enabled
 *     and alive, else the supervisor is the agenttest-sandbox helper,
 *     exec'd with the limits as options and the verdict record on fd 3.
 * Either way the verdict record arrives on the verdict pipe when the run is
 * over; sbx_finish reads it (bounded, parsed as untrusted text) and reaps
 * the supervisor. sbx_kill asks the supervisor to cancel (SIGTERM).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/xalloc.h"
#include "sandbox/sbx_client.h"
#include "sandbox/sbx_int.h"

/* Close *fd if open and mark it closed. */
static void xclose(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

void sbx_pipes_close(struct sbx_pipes *p)
{
	for (int i = 0; i < 2; i++) {
		xclose(&p->in[i]);
		xclose(&p->out[i]);
		xclose(&p->log[i]);
		xclose(&p->verdict[i]);
	}
}

int sbx_pipes_open(struct sbx_pipes *p)
{
	memset(p, -1, sizeof *p);
	if (pipe2(p->in, O_CLOEXEC) < 0 || pipe2(p->out, O_CLOEXEC) < 0 ||
	    pipe2(p->log, O_CLOEXEC) < 0 || pipe2(p->verdict, O_CLOEXEC) < 0) {
		sbx_pipes_close(p);
		return -1;
	}
	return 0;
}

/* Set RLIMIT_CPU to the CPU limit (soft) and one second more (hard). false if setrlimit fails. */
static bool cpu_rlimit(double seconds)
{
	rlim_t soft = (rlim_t)ceil(seconds);
	struct rlimit rl = { soft, soft + 1 };
	return setrlimit(RLIMIT_CPU, &rl) == 0;
}

/* In the forked host of a trusted run: wire fds 0-2 (and 4: shm) and exec the host. */
static void __attribute__((noreturn)) trusted_exec(int in, int out, int err, int shm, const char *hostdir)
{
	char script[PATH_MAX + 32];
	sbx_sig_child_reset(false);
	/* every step is checked: a host that would outlive its supervisor, escape
	 * its process group or inherit a stray descriptor never starts */
	if (setpgid(0, 0) != 0 || prctl(PR_SET_PDEATHSIG, SIGKILL) != 0)
		_exit(127);
	if (dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0 || (shm > 2 && (dup2(shm, 4) < 0 || fcntl(4, F_SETFD, 0) < 0)))
		_exit(127);
	if (close_range(3, 3, 0) != 0 || close_range(shm > 2 ? 5 : 4, ~0u, 0) != 0)
		_exit(127);
	int n = snprintf(script, sizeof script, "%s/agenttest_host", hostdir);
	if (n < 0 || (size_t)n >= sizeof script)
		_exit(127);
	char *const argv[] = { (char *)SBX_PYTHON, (char *)"-E", (char *)"-s", (char *)"-B", script, NULL };
	execve(SBX_PYTHON, argv, sbx_host_env);
	_exit(127);
}

/* The trusted-mode supervisor (a fork of the caller): never returns. */
static void __attribute__((noreturn)) trusted_supervisor(struct sbx_pipes *p, const struct sbx_limits *l,
                                                          int shm, const char *hostdir)
{
	int rout[2] = { -1, -1 }, rerr[2] = { -1, -1 };
	struct sbx_verdict v;
	char meta[SBX_META_MAX];
	memset(&v, 0, sizeof v);
	sbx_sig_child_reset(true);
	sbx_supervise_signals();
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0)
		_exit(3);
	xclose(&p->in[1]);
	xclose(&p->out[0]);
	xclose(&p->log[0]);
	xclose(&p->verdict[0]);
	if (pipe2(rout, O_CLOEXEC) < 0 || pipe2(rerr, O_CLOEXEC) < 0)
		_exit(3);
	if (!cpu_rlimit(l->cpu_seconds))
		_exit(3);
	pid_t host = fork();
	if (host < 0)
		_exit(3);
	if (host == 0)
		trusted_exec(p->in[0], rout[1], rerr[1], shm, hostdir);
	xclose(&p->in[0]);
	xclose(&rout[1]);
	xclose(&rerr[1]);
	struct sbx_watch w = {
		.pid = host, .out_in = rout[0], .out_to = p->out[1],
		.err_in = rerr[0], .err_to = p->log[1], .notify_fd = -1,
		.kill_group = true, .limits = *l,
	};
	sbx_supervise(&w, &v);
	sbx_note(v.warnings, sizeof v.warnings, "trusted mode: no isolation");
	int n = sbx_verdict_format(&v, meta, sizeof meta);
	if (n > 0 && write(p->verdict[1], meta, (size_t)n) != n)
		_exit(3);
	_exit(0);
}

/* Start a trusted run. Returns 0 or -1 with err filled. */
static int start_trusted(const struct sbx_spec *spec, struct sbx_run *run, char *err, size_t errlen)
{
	char hostdir[PATH_MAX];
	struct sbx_pipes p;
	struct sbx_limits l = spec->limits;
	sbx_limits_fill(&l);
	if (sbx_host_dir(hostdir, sizeof hostdir) < 0) {
		snprintf(err, errlen, "strategy host directory not found (set AGENTTEST_HOST_DIR)");
		return -1;
	}
	if (sbx_pipes_open(&p) < 0) {
		snprintf(err, errlen, "pipe: %s", strerror(errno));
		return -1;
	}
	sigset_t old;
	sbx_sig_block_all(&old);
	pid_t pid = fork();
	if (pid == 0)
		trusted_supervisor(&p, &l, spec->shm_fd, hostdir);
	sbx_sig_restore(&old);
	if (pid < 0) {
		snprintf(err, errlen, "fork: %s", strerror(errno));
		sbx_pipes_close(&p);
		return -1;
	}
	sbx_run_adopt(run, pid, &p);
	return 0;
}

void sbx_run_adopt(struct sbx_run *run, pid_t pid, struct sbx_pipes *p)
{
	struct sbx_run_priv *priv = xcalloc(1, sizeof *priv);
	priv->verdict_fd = p->verdict[0];
	p->verdict[0] = -1;
	xclose(&p->verdict[1]);
	xclose(&p->in[0]);
	xclose(&p->out[1]);
	xclose(&p->log[1]);
	run->pid = pid;
	run->to_host = p->in[1];
	run->from_host = p->out[0];
	run->log_fd = p->log[0];
	p->in[1] = p->out[0] = p->log[0] = -1;
	run->priv = priv;
}

int sbx_start(const struct sbx_spec *spec, struct sbx_run *run, char *err, size_t errlen)
{
	memset(run, 0, sizeof *run);
	run->pid = -1;
	run->to_host = run->from_host = run->log_fd = -1;
	if (spec->box_id > SBX_BOX_MAX) {
		snprintf(err, errlen, "box id %u out of range (max %u)", spec->box_id, SBX_BOX_MAX);
		return -1;
	}
	if (spec->mode == SBX_TRUSTED)
		return start_trusted(spec, run, err, errlen);
	if (spec->mode != SBX_CONFINED) {
		snprintf(err, errlen, "unknown sandbox mode %d", (int)spec->mode);
		return -1;
	}
	if (sbx_zygote_enabled() && !spec->rw_workdir && !(spec->ro_binds && spec->ro_binds[0])) {
		if (sbx_zygote_start(spec, run, false, err, errlen) == 0)
			return 0;
		err[0] = '\0'; /* no zygote (pool busy or failing): one-shot instead */
	}
	return sbx_helper_start(spec, run, err, errlen);
}

int sbx_start_spare(const struct sbx_spec *spec, struct sbx_run *run, char *err, size_t errlen)
{
	memset(run, 0, sizeof *run);
	run->pid = -1;
	run->to_host = run->from_host = run->log_fd = -1;
	if (spec->box_id > SBX_BOX_MAX || spec->mode != SBX_CONFINED || !sbx_zygote_enabled() ||
	    spec->rw_workdir || (spec->ro_binds && spec->ro_binds[0])) {
		snprintf(err, errlen, "no spare zygote for this spec");
		return -1;
	}
	return sbx_zygote_start(spec, run, true, err, errlen);
}

/* Read the whole verdict record from fd (bounded). Returns bytes or -1. */
static ssize_t read_record(int fd, char *buf, size_t len)
{
	size_t got = 0;
	while (got < len) {
		ssize_t n = read(fd, buf + got, len - got);
		if (n == 0)
			break;
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		got += (size_t)n;
	}
	return (ssize_t)got;
}

int sbx_finish(struct sbx_run *run, struct sbx_verdict *v)
{
	struct sbx_run_priv *priv = run->priv;
	char meta[SBX_META_MAX + 1];
	int rc = -1;
	memset(v, 0, sizeof *v);
	v->status = SBX_XX;
	xclose(&run->to_host);
	xclose(&run->from_host);
	xclose(&run->log_fd);
	if (!priv)
		return -1;
	ssize_t n = read_record(priv->verdict_fd, meta, sizeof meta);
	xclose(&priv->verdict_fd);
	if (n > 0 && (size_t)n <= SBX_META_MAX && sbx_verdict_parse(meta, (size_t)n, v) == 0)
		rc = 0;
	else
		snprintf(v->message, sizeof v->message, "the sandbox supervisor ended without a verdict");
	priv->ended_badly = rc != 0;
	if (priv->finish)
		priv->finish(run);
	else if (run->pid > 0)
		while (waitpid(run->pid, NULL, 0) < 0 && errno == EINTR)
			;
	free(priv);
	run->priv = NULL;
	run->pid = -1;
	return rc;
}

void sbx_kill(struct sbx_run *run)
{
	struct sbx_run_priv *priv = run->priv;
	if (priv && priv->kill)
		priv->kill(run);
	else if (run->pid > 0)
		kill(run->pid, SIGTERM);
}

/*
 * zygote_sup.c: the helper's --zygote mode, the supervisor of a Python
 * zygote and of every run forked from it.
 *
 * Theory of operation.
 *   start: build the box like a one-shot run (new mount, network, IPC, UTS
 *     and cgroup namespaces; fresh read-only root with the host, the
 *     zygote bootstrap and agenttest-zygote.so bound in), but keep root and
 *     no seccomp in it: the zygote is trusted code that never loads a
 *     strategy. It is not PID 1 of a namespace, so its children can be
 *     created with CLONE_PARENT and belong to this helper. It execs
 *     `python3 zygote.py SO HOSTDIR PRELOAD`, which imports the preloaded
 *     modules and the host, compiles the seccomp policy (sbx_zygote_init)
 *     and says "R" on fd 3 (which we pass on to the client), then waits for
 *     spawn orders there.
 *   per run: the client sends a request with the caller's four pipe ends on
 *     the control socket; we create the run's cgroup, open its
 *     cgroup.procs files, make the relay and sync pipes and send the spawn
 *     order. The zygote answers with the child's pid; the child confines
 *     itself (zygote_so.c) and reports on the sync pipe exactly like a
 *     one-shot child; we take over its seccomp listener and supervise it
 *     with sbx_supervise (no exec is ever allowed), then write the verdict
 *     record to the request's verdict pipe and close it.
 *   end: when the control socket closes, or the zygote dies (the pending
 *     request gets XX), we kill the zygote and exit; the client starts a
 *     new helper on its next run.
 *   warm child: between runs the helper already asks the zygote for the
 *     next child (a "deferred" spawn): it is cloned, joins a fresh cgroup
 *     and mounts /proc, then waits on a socket. When a request comes, the
 *     helper sets the cgroup's limits and sends the box, limits and stdin
 *     (and shared memory); the child confines itself and reports as above.
 *     The clone and the cgroup migration (an RCU grace period on v1) are
 *     thus off the request's path. A warm child that cannot take a request
 *     is dropped and the request is served directly.
 * One run at a time per helper; the client keeps a pool of helpers.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sandbox/sbx_int.h"
#include "sandbox/sbx_zygote.h"

#define ZY_NS (CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWCGROUP)

/* A warm child: spawned, in its cgroup, waiting for its run. */
struct warm {
	pid_t pid;                 /* -1: none */
	int   sync_r, ack_w;       /* sync pipe; params/ack socket */
	int   rout_r, rerr_r;      /* its stdout/stderr */
	struct sbx_cgroup *cg;
	double cpu_base;           /* cgroup CPU used before the run */
	char  warnings[128];
};

struct zsup {
	pid_t zpid;       /* the Python zygote */
	int   zsock;      /* our end of its socket */
	bool  seccomp_log;
	bool  no_cgroup;
	bool  huge;       /* heap in huge pages (heap_thp.c); AGENTTEST_ZYGOTE_HUGE=0: off */
	uint32_t seq;     /* names the warm children's cgroups */
	struct warm w;
	struct sbx_cgroup *spare;   /* a finished warm child's emptied cgroup, for the next one */
};

/* Receive one message with up to maxfds descriptors. Returns bytes (0 on
 * EOF) or -1; *nfds gets the descriptor count. */
static ssize_t recv_fds(int sock, void *buf, size_t len, int *fds, int maxfds, int *nfds)
{
	union { char b[CMSG_SPACE(sizeof(int) * 12)]; struct cmsghdr align; } cbuf;
	struct iovec iov = { buf, len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf.b,
	                     .msg_controllen = sizeof cbuf.b };
	ssize_t n;
	*nfds = 0;
	do
		n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -1;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		int k = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
		for (int i = 0; i < k; i++) {
			int fd;
			memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
			if (*nfds < maxfds)
				fds[(*nfds)++] = fd;
			else
				close(fd);
		}
	}
	if (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC))
		return -1;
	return n;
}

/* Send one message with nfds descriptors. Returns 0 or -1. */
static int send_fds(int sock, const void *buf, size_t len, const int *fds, int nfds)
{
	if (nfds < 0 || nfds > 12)
		return -1;
	union { char b[CMSG_SPACE(sizeof(int) * 12)]; struct cmsghdr align; } cbuf;
	struct iovec iov = { (void *)(uintptr_t)buf, len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	memset(&cbuf, 0, sizeof cbuf);
	if (nfds > 0) {
		mh.msg_control = cbuf.b;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
		struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * (size_t)nfds);
	}
	ssize_t n;
	do
		n = sendmsg(sock, &mh, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	return n == (ssize_t)len ? 0 : -1;
}

/* Where the zygote's files are: <exe dir>/agenttest-zygote.so and the
 * bootstrap directory (dev tree or installed). Returns 0 or -1. */
static int zygote_paths(char *so, size_t solen, char *dir, size_t dirlen)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (n <= 0)
		return -1;
	exe[n] = '\0';
	char *slash = strrchr(exe, '/');
	if (!slash)
		return -1;
	*slash = '\0';
	const char *env = getenv("AGENTTEST_ZYGOTE_SO");
	int k = env && *env ? snprintf(so, solen, "%s", env) : snprintf(so, solen, "%s/agenttest-zygote.so", exe);
	if (k < 0 || (size_t)k >= solen || access(so, R_OK) < 0)
		return -1;
	static const char *const rel[] = { "../share/agenttest/zygote", "../sandbox/zygote", NULL };
	for (int i = 0; rel[i]; i++) {
		char cand[PATH_MAX + 64], *real;
		snprintf(cand, sizeof cand, "%s/%s/zygote.py", exe, rel[i]);
		if (access(cand, R_OK) == 0 && (real = realpath(cand, NULL))) {
			char *s = strrchr(real, '/');
			*s = '\0';
			k = snprintf(dir, dirlen, "%s", real);
			free(real);
			return (k < 0 || (size_t)k >= dirlen) ? -1 : 0;
		}
	}
	return -1;
}

/*
 * The zygote's environment: the host's (sbx_host_env) without
 * PYTHONHASHSEED and with PYTHONMALLOC=malloc. The zygote runs without -E
 * so that Python reads PYTHONMALLOC: with the system allocator every
 * Python object lives in the one [heap] mapping, which sbx_heap_collapse
 * can make huge pages (pymalloc's 1 MiB arenas are scattered mappings too
 * small for that). PYTHONHASHSEED is left out so that -E's old behaviour
 * (a random hash secret per zygote) is kept; zygote.py puts the host's
 * exact environment back into os.environ (PYTHONHASHSEED=0 in, PYTHONMALLOC
 * out) before any child exists. Returns env (n entries at most).
 */
static char *const *zygote_env(char **env, size_t n)
{
	size_t k = 0;
	for (size_t i = 0; sbx_host_env[i] && k + 2 < n; i++)
		if (strncmp(sbx_host_env[i], "PYTHONHASHSEED=", 15) != 0)
			env[k++] = sbx_host_env[i];
	env[k++] = (char *)"PYTHONMALLOC=malloc";
	env[k] = NULL;
	return env;
}

/* Start the Python zygote in its box. Returns 0 or -1 (err). */
static int start_zygote(struct zsup *z, const struct sbx_root_opts *root_in, char *err, size_t errlen)
{
	char so[PATH_MAX], dir[PATH_MAX], script[PATH_MAX + 16];
	int sp[2];
	struct sbx_root_opts root = *root_in;
	if (zygote_paths(so, sizeof so, dir, sizeof dir) < 0) {
		snprintf(err, errlen, "zygote files (agenttest-zygote.so, zygote/zygote.py) not found");
		return -1;
	}
	if (root.nbinds + 2 > SBX_MAX_BINDS || root.nbinds < 1) {
		snprintf(err, errlen, "zygote needs the host directory as the first --bind");
		return -1;
	}
	root.dsts[root.nbinds] = SBX_BOX_ZYGOTE_SO;
	root.binds[root.nbinds++] = so;
	root.dsts[root.nbinds] = SBX_BOX_ZYGOTE_DIR;
	root.binds[root.nbinds++] = dir;
	snprintf(script, sizeof script, "%s/zygote.py", SBX_BOX_ZYGOTE_DIR);
	const char *box_host = root_in->dsts[0] ? root_in->dsts[0] : root_in->binds[0];
	/* unset: the full zygote's default; empty: nothing (the plain zygote) */
	const char *preload = getenv("AGENTTEST_ZYGOTE_PRELOAD");
	if (!preload)
		preload = "numpy,pandas";
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0) {
		snprintf(err, errlen, "socketpair: %s", strerror(errno));
		return -1;
	}
	struct clone_args a;
	memset(&a, 0, sizeof a);
	a.flags = ZY_NS;
	a.exit_signal = SIGCHLD;
	pid_t pid = (pid_t)syscall(SYS_clone3, &a, sizeof a);
	if (pid < 0) {
		snprintf(err, errlen, "clone3: %s", strerror(errno));
		close(sp[0]);
		close(sp[1]);
		return -1;
	}
	if (pid == 0) {
		char e[256] = "";
		sbx_sig_child_reset(false);
		int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || !sbx_root_enter(&root, e, sizeof e) || devnull < 0 ||
		    sethostname("box", 3) < 0 || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
		    dup2(devnull, 0) < 0 || dup2(devnull, 1) < 0 || dup2(sp[1], 3) < 0 ||
		    close_range(4, ~0u, 0) != 0) {
			fprintf(stderr, "agenttest-sandbox: zygote setup: %s\n", e[0] ? e : strerror(errno));
			_exit(2);
		}
		/* with huge pages off, the flags and allocator of before (-E, pymalloc) */
		char *argv[10], *env[24];
		int k = 0;
		argv[k++] = (char *)SBX_PYTHON;
		if (!z->huge)
			argv[k++] = (char *)"-E";
		argv[k++] = (char *)"-s";
		argv[k++] = (char *)"-B";
		argv[k++] = script;
		argv[k++] = (char *)SBX_BOX_ZYGOTE_SO;
		argv[k++] = (char *)(uintptr_t)box_host;
		argv[k++] = (char *)(uintptr_t)preload;
		argv[k] = NULL;
		execve(SBX_PYTHON, argv, z->huge ? zygote_env(env, sizeof env / sizeof env[0]) : sbx_host_env);
		_exit(127);
	}
	close(sp[1]);
	z->zpid = pid;
	z->zsock = sp[0];
	return 0;
}

/* Open the cgroup.procs files of cg for the child to join. Returns count. */
static int cg_proc_fds(struct sbx_cgroup *cg, int *fds)
{
	return cg ? sbx_cg_procs_fds(cg, fds) : 0;
}

/* Close n descriptors of fds. */
static void close_all(int *fds, int n)
{
	for (int i = 0; i < n; i++)
		if (fds[i] >= 0) {
			close(fds[i]);
			fds[i] = -1;
		}
}

/* Close and forget the warm child (killing it if it still lives). */
static void warm_drop(struct warm *w)
{
	if (w->pid > 0) {
		kill(w->pid, SIGKILL);
		while (waitpid(w->pid, NULL, 0) < 0 && errno == EINTR)
			;
	}
	if (w->cg) {
		sbx_cg_kill(w->cg);
		sbx_cg_destroy(w->cg);
	}
	int *fds[] = { &w->sync_r, &w->ack_w, &w->rout_r, &w->rerr_r };
	for (size_t i = 0; i < sizeof fds / sizeof fds[0]; i++)
		if (*fds[i] >= 0) {
			close(*fds[i]);
			*fds[i] = -1;
		}
	w->pid = -1;
	w->cg = NULL;
	w->warnings[0] = '\0';
}

/* Spawn a warm child for the next run (best effort: on failure runs take
 * the direct path). */
static void warm_prepare(struct zsup *z)
{
	struct warm *w = &z->w;
	struct sbx_limits l = { 0 };
	int sync[2] = { -1, -1 }, ack[2] = { -1, -1 }, rout[2] = { -1, -1 }, rerr[2] = { -1, -1 };
	int cfds[3] = { -1, -1, -1 }, ncg = 0;
	const char *off = getenv("AGENTTEST_ZYGOTE_WARM");
	if (w->pid > 0 || z->zpid <= 0 || (off && strcmp(off, "0") == 0))
		return;
	sbx_limits_fill(&l);
	if (z->spare && sbx_cg_set_limits(z->spare, &l) == 0) {
		w->cg = z->spare;   /* emptied and recycled by warm_run: no mkdir, no rmdir */
		z->spare = NULL;
	} else if (!z->no_cgroup) {
		if (z->spare) {
			sbx_cg_destroy(z->spare);
			z->spare = NULL;
		}
		w->cg = sbx_cg_create(SBX_BOX_MAX + 1 + (z->seq++ % 1000000), &l, w->warnings, sizeof w->warnings);
	}
	ncg = cg_proc_fds(w->cg, cfds);
	if (ncg < 0 || pipe2(sync, O_CLOEXEC) < 0 ||
	    socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, ack) < 0 ||
	    pipe2(rout, O_CLOEXEC) < 0 || pipe2(rerr, O_CLOEXEC) < 0)
		goto fail;
	struct sbx_zspawn sp = { .magic = SBX_ZSPAWN_MAGIC, .limits = l, .has_cgroup = w->cg != NULL,
	                         .ncg = (uint32_t)ncg, .deferred = 1 };
	int sfds[SBX_ZSPAWN_FDS + 3] = { ack[1], rout[1], rerr[1], sync[1], ack[1] };
	for (int i = 0; i < ncg; i++)
		sfds[SBX_ZSPAWN_FDS + i] = cfds[i];
	int32_t pid = 0;
	ssize_t got = -1;
	if (send_fds(z->zsock, &sp, sizeof sp, sfds, SBX_ZSPAWN_FDS + ncg) == 0) {
		do
			got = read(z->zsock, &pid, sizeof pid);
		while (got < 0 && errno == EINTR);
	}
	if (got != (ssize_t)sizeof pid) {
		kill(z->zpid, SIGKILL);
		z->zpid = -1;
		goto fail;
	}
	if (pid <= 0)
		goto fail;
	w->pid = pid;
	w->sync_r = sync[0];
	w->ack_w = ack[0];
	w->rout_r = rout[0];
	w->rerr_r = rerr[0];
	sync[0] = ack[0] = rout[0] = rerr[0] = -1;
	w->cpu_base = w->cg ? sbx_cg_cpu(w->cg) : 0;
fail:
	close_all(cfds, 3);
	close_all(sync, 2);
	close_all(ack, 2);
	close_all(rout, 2);
	close_all(rerr, 2);
	if (w->pid <= 0)
		warm_drop(w);
}

/* Run the request on the warm child. Returns false, with nothing sent to
 * the caller yet, if the warm child cannot take it (then the direct path
 * serves the request). */
static bool warm_run(struct zsup *z, const struct sbx_zreq *rq, int *fds)
{
	struct warm *w = &z->w;
	struct sbx_verdict v;
	char err[256] = "", meta[SBX_META_MAX];
	int listener = -1;
	if (w->pid <= 0)
		return false;
	memset(&v, 0, sizeof v);
	struct sbx_limits l = rq->limits;
	sbx_limits_fill(&l);
	v.limits = l;
	if (w->cg && sbx_cg_set_limits(w->cg, &l) < 0) {
		warm_drop(w);
		return false;
	}
	if (w->cg) {
		double c = sbx_cg_cpu(w->cg);
		w->cpu_base = c >= 0 ? c : 0;
	}
	struct sbx_zparams pm = { .magic = SBX_ZPARAMS_MAGIC, .box_id = rq->box_id, .limits = l,
	                          .has_shm = rq->has_shm ? 1 : 0 };
	int pfds[2] = { fds[0], fds[4] };
	if (send_fds(w->ack_w, &pm, sizeof pm, pfds, rq->has_shm ? 2 : 1) < 0 ||
	    sbx_sync_parent(w->pid, w->sync_r, w->ack_w, &listener, err, sizeof err) < 0) {
		warm_drop(w);   /* it may have died: the direct path takes the run */
		return false;
	}
	struct sbx_watch wt = {
		.pid = w->pid, .out_in = w->rout_r, .out_to = fds[1], .err_in = w->rerr_r,
		.err_to = fds[2], .notify_fd = listener, .log_only = z->seccomp_log, .cg = w->cg,
		.cpu_base = w->cpu_base, .limits = l,
	};
	w->rout_r = w->rerr_r = fds[1] = fds[2] = -1;
	sbx_supervise(&wt, &v);
	w->pid = -1;   /* reaped by sbx_supervise */
	if (w->warnings[0])
		sbx_note(v.warnings, sizeof v.warnings, "%s", w->warnings);
	sbx_note(v.warnings, sizeof v.warnings, "zygote (warm child); cgroup %s", sbx_cg_kind(w->cg));
	/* the verdict first: cleaning up is off the caller's path */
	int n = sbx_verdict_format(&v, meta, sizeof meta);
	if (n > 0 && fds[3] >= 0 && write(fds[3], meta, (size_t)n) < 0)
		fprintf(stderr, "agenttest-sandbox: verdict: %s\n", strerror(errno));
	close_all(fds, 5);
	/* The run was PID 1 of its namespace and is reaped, so nothing of it is
	 * left; its group, once seen empty, serves the next warm child (three
	 * mkdirs and rmdirs less per child on v1, and no kernel work to free
	 * them). Anything else: killed and removed as before. */
	if (!z->spare && sbx_cg_recycle(w->cg)) {
		z->spare = w->cg;
		w->cg = NULL;
	}
	warm_drop(w);  /* kills what is left of the run and removes its cgroup */
	return true;
}

/* Serve one run: fds = in, out, log, verdict (and shm when rq->has_shm). */
static void serve_run(struct zsup *z, const struct sbx_zreq *rq, int *fds)
{
	struct sbx_verdict v;
	struct sbx_cgroup *cg = NULL;
	char err[256] = "", meta[SBX_META_MAX];
	int sync[2] = { -1, -1 }, ack[2] = { -1, -1 }, rout[2] = { -1, -1 }, rerr[2] = { -1, -1 };
	int cfds[3] = { -1, -1, -1 }, ncg = 0, listener = -1;
	memset(&v, 0, sizeof v);
	struct sbx_limits l = rq->limits;
	sbx_limits_fill(&l);
	v.limits = l;
	if (!z->no_cgroup)
		cg = sbx_cg_create(rq->box_id, &l, v.warnings, sizeof v.warnings);
	ncg = cg_proc_fds(cg, cfds);
	if (pipe2(sync, O_CLOEXEC) < 0 || pipe2(ack, O_CLOEXEC) < 0 ||
	    pipe2(rout, O_CLOEXEC) < 0 || pipe2(rerr, O_CLOEXEC) < 0 || ncg < 0) {
		snprintf(err, sizeof err, "pipes: %s", strerror(errno));
		goto fail;
	}
	struct sbx_zspawn sp = { .magic = SBX_ZSPAWN_MAGIC, .box_id = rq->box_id, .limits = l,
	                         .has_cgroup = cg != NULL, .ncg = (uint32_t)ncg,
	                         .has_shm = rq->has_shm ? 1 : 0 };
	int sfds[SBX_ZSPAWN_FDS + 4] = { fds[0], rout[1], rerr[1], sync[1], ack[0] };
	int ns = SBX_ZSPAWN_FDS;
	if (rq->has_shm)
		sfds[ns++] = fds[4];
	for (int i = 0; i < ncg; i++)
		sfds[ns++] = cfds[i];
	int32_t pid = 0;
	ssize_t got = -1;
	if (send_fds(z->zsock, &sp, sizeof sp, sfds, ns) == 0) {
		do   /* a cancellation (SIGTERM) may interrupt the wait */
			got = read(z->zsock, &pid, sizeof pid);
		while (got < 0 && errno == EINTR);
	}
	if (got != (ssize_t)sizeof pid) {
		snprintf(err, sizeof err, "the zygote is gone");
		kill(z->zpid, SIGKILL);
		z->zpid = -1;
		goto fail;
	}
	close_all(cfds, 3);
	close(sync[1]); sync[1] = -1;
	close(ack[0]); ack[0] = -1;
	close(rout[1]); rout[1] = -1;
	close(rerr[1]); rerr[1] = -1;
	close(fds[0]); fds[0] = -1;
	if (fds[4] >= 0) {
		close(fds[4]);
		fds[4] = -1;
	}
	if (pid <= 0) {
		snprintf(err, sizeof err, "zygote spawn failed: %s", strerror(-pid));
		goto fail;
	}
	if (sbx_sync_parent(pid, sync[0], ack[1], &listener, err, sizeof err) < 0) {
		kill(pid, SIGKILL);
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
		goto fail;
	}
	struct sbx_watch w = {
		.pid = pid, .out_in = rout[0], .out_to = fds[1], .err_in = rerr[0], .err_to = fds[2],
		.notify_fd = listener, .log_only = z->seccomp_log, .cg = cg, .limits = l,
	};
	rout[0] = rerr[0] = fds[1] = fds[2] = -1;
	char keep[sizeof v.warnings];
	memcpy(keep, v.warnings, sizeof keep);
	sbx_supervise(&w, &v);
	if (keep[0])
		sbx_note(v.warnings, sizeof v.warnings, "%s", keep);
	sbx_note(v.warnings, sizeof v.warnings, "zygote; cgroup %s", sbx_cg_kind(cg));
	goto out;
fail:
	v.status = SBX_XX;
	snprintf(v.message, sizeof v.message, "%s", err);
out:;
	int n = sbx_verdict_format(&v, meta, sizeof meta);
	if (n > 0 && fds[3] >= 0 && write(fds[3], meta, (size_t)n) < 0)
		fprintf(stderr, "agenttest-sandbox: verdict: %s\n", strerror(errno));
	close_all(fds, 5);
	if (cg) {
		sbx_cg_kill(cg);
		sbx_cg_destroy(cg);
	}
	close_all(cfds, 3);
	close_all(sync, 2);
	close_all(ack, 2);
	close_all(rout, 2);
	close_all(rerr, 2);
	close_all(fds, 5);
}

int sbx_zygote_main(int ctl_fd, const struct sbx_root_opts *root, bool no_cgroup, bool seccomp_log)
{
	struct zsup z = { .zpid = -1, .zsock = -1, .seccomp_log = seccomp_log, .no_cgroup = no_cgroup,
	                  .w = { .pid = -1, .sync_r = -1, .ack_w = -1, .rout_r = -1, .rerr_r = -1 } };
	char err[256] = "";
	const char *huge = getenv("AGENTTEST_ZYGOTE_HUGE");
	z.huge = !(huge && strcmp(huge, "0") == 0);
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) {
		/* without it the zygote supervisor could outlive the runner */
		fprintf(stderr, "agenttest-sandbox: PR_SET_PDEATHSIG: %s\n", strerror(errno));
		return 2;
	}
	if (start_zygote(&z, root, err, sizeof err) < 0) {
		fprintf(stderr, "agenttest-sandbox: %s\n", err);
		return 2;
	}
	/* the zygote says "R" once it has imported everything; pass it on */
	char ready = 0;
	ssize_t got;
	do
		got = read(z.zsock, &ready, 1);
	while (got < 0 && errno == EINTR);
	if (got != 1 || ready != 'R' || send(ctl_fd, "R", 1, MSG_NOSIGNAL) != 1) {
		fprintf(stderr, "agenttest-sandbox: the zygote did not start\n");
		kill(z.zpid, SIGKILL);
		while (waitpid(z.zpid, NULL, 0) < 0 && errno == EINTR)
			;
		return 2;
	}
	if (z.huge)
		sbx_heap_collapse(z.zpid);   /* idle in its order loop now; best effort */
	warm_prepare(&z);
	for (;;) {
		struct sbx_zreq rq;
		memset(&rq, 0, sizeof rq);
		int fds[5] = { -1, -1, -1, -1, -1 }, nfds = 0;
		ssize_t n = recv_fds(ctl_fd, &rq, sizeof rq, fds, 5, &nfds);
		if (n <= 0)
			break;
		if (n != (ssize_t)sizeof rq || nfds != (rq.has_shm ? 5 : 4) || rq.magic != SBX_ZREQ_MAGIC ||
		    rq.box_id > SBX_BOX_MAX) {
			close_all(fds, nfds);
			continue; /* malformed: the client gets EOF on its verdict pipe */
		}
		sbx_supervise_reset_cancel();
		if (!warm_run(&z, &rq, fds))
			serve_run(&z, &rq, fds);
		if (z.zpid < 0)
			break;
		warm_prepare(&z);
	}
	warm_drop(&z.w);
	sbx_cg_destroy(z.spare);
	if (z.zpid > 0) {
		kill(z.zpid, SIGKILL);
		while (waitpid(z.zpid, NULL, 0) < 0 && errno == EINTR)
			;
	}
	return z.zpid > 0 ? 0 : 3;
}

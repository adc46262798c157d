/*
 * zygote_client.c: confined runs through a pool of zygote helpers.
 *
 * Theory of operation. A zygote helper is `agenttest-sandbox --zygote`
 * (zygote_sup.c) started by this library with one end of a SOCK_SEQPACKET
 * socket as fd 3; it keeps a Python zygote with its preloaded modules
 * imported and serves one run at a time. There are three kinds of zygote
 * (enum sbx_zygote): FULL preloads numpy and pandas
 * ($AGENTTEST_ZYGOTE_PRELOAD), NUMPY numpy alone, which has about half the
 * mappings and memory and so costs less to fork and to tear down at every
 * run, and PLAIN nothing but the host, for code that only uses the
 * standard library (half the memory of NUMPY again, about a quarter less
 * CPU per run). The pool holds up to $AGENTTEST_SANDBOX_ZYGOTES helpers of each
 * kind (default 2, at most SBX_ZYGOTES_MAX), started by sbx_prestart()
 * (which waits until they are ready) or warmed up from the second sbx_start
 * of the process on (a process that makes a single run never pays for a
 * zygote). A helper reports "R" once its zygote has imported everything.
 * sbx_start takes an idle, ready helper of the kind the spec asks for;
 * when there is none of its kind it starts one in the background (if the
 * pool has room and none of that kind is starting) and takes an idle one
 * of another kind, the nearest larger first (a run imports itself
 * whatever its zygote did not preload: still far cheaper than a new
 * interpreter) or, with none idle, runs this one on the one-shot helper.
 * It sends the request and the caller-side pipe ends and marks the helper
 * busy; sbx_finish marks it idle again once the verdict pipe reaches EOF. A
 * helper that died (send fails, or a run ends without a verdict) is reaped
 * and replaced on the next start. A mutex makes the pool safe for threaded
 * callers. The helpers die with the calling process (parent-death signal).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sandbox/sbx_client.h"
#include "sandbox/sbx_confine.h"
#include "sandbox/sbx_int.h"
#include "sandbox/sbx_zygote.h"

#define ZPOOL_MAX SBX_ZYGOTES_MAX

struct zhelper {
	enum sbx_zygote kind;
	pid_t pid;     /* -1: slot empty */
	int   ctl;
	bool  ready;   /* its zygote has finished importing ("R" received) */
	bool  busy;
};

static pthread_mutex_t zlock = PTHREAD_MUTEX_INITIALIZER;
static struct zhelper zpool[SBX_ZYGOTE__MAX][ZPOOL_MAX];
static bool zinit;
static unsigned zstarts;   /* sbx_start calls seen: warm up from the second on */

/* Pool size per kind from the environment (1..ZPOOL_MAX, default 2). */
static int pool_size(void)
{
	return (int)sbx_zygote_pool_size();
}

unsigned sbx_zygote_pool_size(void)
{
	const char *s = getenv("AGENTTEST_SANDBOX_ZYGOTES");
	int n = s ? atoi(s) : 2;
	return n < 1 ? 1u : n > ZPOOL_MAX ? ZPOOL_MAX : (unsigned)n;
}

bool sbx_zygote_enabled(void)
{
	const char *s = getenv("AGENTTEST_SANDBOX_ZYGOTE");
	return !(s && strcmp(s, "0") == 0);
}

/* Forget a helper: close, kill, reap. Caller holds zlock. */
static void zdrop(struct zhelper *z)
{
	if (z->pid > 0) {
		close(z->ctl);
		kill(z->pid, SIGKILL);
		while (waitpid(z->pid, NULL, 0) < 0 && errno == EINTR)
			;
	}
	z->pid = -1;
	z->ctl = -1;
	z->busy = false;
	z->ready = false;
}

/* Start one helper of z->kind into *z. Caller holds zlock. Returns 0 or -1. */
static int zspawn(struct zhelper *z, char *err, size_t errlen)
{
	char helper[PATH_MAX], hostdir[PATH_MAX], bind[PATH_MAX + 16];
	int sp[2];
	if (sbx_helper_path(helper, sizeof helper) < 0 || sbx_host_dir(hostdir, sizeof hostdir) < 0) {
		snprintf(err, errlen, "sandbox helper or host directory not found");
		return -1;
	}
	int n = snprintf(bind, sizeof bind, "--bind=%s:%s", hostdir, SBX_BOX_HOST_DIR);
	if (n < 0 || (size_t)n >= sizeof bind)
		return -1;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0) {
		snprintf(err, errlen, "socketpair: %s", strerror(errno));
		return -1;
	}
	sigset_t old;
	sbx_sig_block_all(&old);
	pid_t pid = fork();
	if (pid != 0)
		sbx_sig_restore(&old);
	if (pid < 0) {
		snprintf(err, errlen, "fork: %s", strerror(errno));
		close(sp[0]);
		close(sp[1]);
		return -1;
	}
	if (pid == 0) {
		sbx_sig_child_reset(true);
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0)
			_exit(2);
		int devnull = open("/dev/null", O_RDWR);
		if (devnull < 0 || dup2(devnull, 0) < 0 || dup2(devnull, 1) < 0 || dup2(sp[1], 3) < 0 ||
		    close_range(4, ~0u, 0) != 0)
			_exit(2);
		char *argv[] = { helper, (char *)"--zygote", (char *)"--ctl-fd=3", bind, NULL };
		char *envp[6];
		int k = 0;
		static char pre[256], cgm[32], warm[32], huge[32];
		/* FULL: the operator's list, or the helper's default when unset or empty */
		const char *p = z->kind == SBX_ZYGOTE_NUMPY ? "numpy" :
			z->kind == SBX_ZYGOTE_PLAIN ? "" : getenv("AGENTTEST_ZYGOTE_PRELOAD");
		if (p && (*p || z->kind == SBX_ZYGOTE_PLAIN) &&
		    snprintf(pre, sizeof pre, "AGENTTEST_ZYGOTE_PRELOAD=%s", p) < (int)sizeof pre)
			envp[k++] = pre;
		const char *c = getenv("AGENTTEST_CGROUP");
		if (c && snprintf(cgm, sizeof cgm, "AGENTTEST_CGROUP=%s", c) < (int)sizeof cgm)
			envp[k++] = cgm;
		const char *w = getenv("AGENTTEST_ZYGOTE_WARM");
		if (w && snprintf(warm, sizeof warm, "AGENTTEST_ZYGOTE_WARM=%s", w) < (int)sizeof warm)
			envp[k++] = warm;
		const char *h = getenv("AGENTTEST_ZYGOTE_HUGE");
		if (h && snprintf(huge, sizeof huge, "AGENTTEST_ZYGOTE_HUGE=%s", h) < (int)sizeof huge)
			envp[k++] = huge;
		envp[k] = NULL;
		execve(helper, argv, envp);
		_exit(2);
	}
	close(sp[1]);
	z->pid = pid;
	z->ctl = sp[0];
	z->busy = false;
	z->ready = false;
	return 0;
}

/* Learn whether a starting helper is ready (its "R"), waiting up to
 * timeout_ms (0: just look). A helper that died is dropped. Caller holds
 * zlock. */
static void zcheck(struct zhelper *z, int timeout_ms)
{
	if (z->pid <= 0 || z->ready)
		return;
	struct pollfd pfd = { .fd = z->ctl, .events = POLLIN };
	if (poll(&pfd, 1, timeout_ms) <= 0)
		return;
	char c = 0;
	ssize_t n = recv(z->ctl, &c, 1, MSG_DONTWAIT);
	if (n == 1 && c == 'R')
		z->ready = true;
	else if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR) || (n == 1 && c != 'R'))
		zdrop(z);
}

/* Initialize the pool slots once. Caller holds zlock. */
static void zpool_init(void)
{
	if (zinit)
		return;
	for (int k = 0; k < SBX_ZYGOTE__MAX; k++)
		for (int i = 0; i < ZPOOL_MAX; i++)
			zpool[k][i] = (struct zhelper){ .kind = (enum sbx_zygote)k, .pid = -1, .ctl = -1 };
	zinit = true;
}

/* Start up to n helpers of every kind whose bit is in kinds, then wait
 * (bounded: 60 s) until they have imported everything. The pool's lock is
 * not held while waiting, so other threads' starts go on meanwhile (on a
 * helper already ready, or one-shot). 0 or -1 (err). */
static int prestart(unsigned kinds, unsigned n, char *err, size_t errlen)
{
	int rc = 0;
	pthread_mutex_lock(&zlock);
	zpool_init();
	int cap = pool_size();
	int want = (int)n < cap ? (int)n : cap;
	for (int k = 0; k < SBX_ZYGOTE__MAX && rc == 0; k++)
		for (int i = 0; i < want && (kinds >> k & 1u); i++)
			if (zpool[k][i].pid <= 0 && zspawn(&zpool[k][i], err, errlen) < 0) {
				rc = -1;
				break;
			}
	pthread_mutex_unlock(&zlock);
	for (int t = 0; rc == 0 && t < 3000; t++) {
		bool waiting = false;
		pthread_mutex_lock(&zlock);
		for (int k = 0; k < SBX_ZYGOTE__MAX; k++)
			for (int i = 0; i < want && (kinds >> k & 1u); i++) {
				zcheck(&zpool[k][i], 0);
				waiting = waiting || (zpool[k][i].pid > 0 && !zpool[k][i].ready);
			}
		pthread_mutex_unlock(&zlock);
		if (!waiting)
			break;
		usleep(20000);
	}
	pthread_mutex_lock(&zlock);
	for (int k = 0; k < SBX_ZYGOTE__MAX && rc == 0; k++)
		for (int i = 0; i < want && (kinds >> k & 1u); i++)
			if (zpool[k][i].pid <= 0 || !zpool[k][i].ready) {
				snprintf(err, errlen, "zygote did not become ready");
				rc = -1;
			}
	pthread_mutex_unlock(&zlock);
	return rc;
}

int sbx_prestart(unsigned n, char *err, size_t errlen)
{
	return prestart((1u << SBX_ZYGOTE__MAX) - 1, n, err, errlen);
}

int sbx_prestart_kind(enum sbx_zygote kind, unsigned n, char *err, size_t errlen)
{
	if ((unsigned)kind >= SBX_ZYGOTE__MAX) {
		snprintf(err, errlen, "unknown zygote kind %d", (int)kind);
		return -1;
	}
	return prestart(1u << kind, n, err, errlen);
}

/* Reap helpers that exited on their own. Caller holds zlock. */
static void zreap(void)
{
	for (int k = 0; k < SBX_ZYGOTE__MAX; k++)
		for (int i = 0; i < ZPOOL_MAX; i++) {
			struct zhelper *z = &zpool[k][i];
			if (z->pid > 0 && !z->busy && waitpid(z->pid, NULL, WNOHANG) == z->pid) {
				z->pid = -1;
				close(z->ctl);
				z->ctl = -1;
			}
		}
}

/* An idle, ready helper of kind k (readiness polled first), or NULL; with
 * `spare`, only while a second one is idle too. Caller holds zlock. */
static struct zhelper *zidle(enum sbx_zygote k, int cap, bool spare)
{
	struct zhelper *first = NULL;
	for (int i = 0; i < cap; i++)
		zcheck(&zpool[k][i], 0);
	for (int i = 0; i < cap; i++)
		if (zpool[k][i].pid > 0 && zpool[k][i].ready && !zpool[k][i].busy) {
			if (!spare || first)
				return spare ? first : &zpool[k][i];
			first = &zpool[k][i];
		}
	return NULL;
}

/* Start one helper of kind k in the background unless one of that kind is
 * already starting or the pool of that kind is full. Caller holds zlock. */
static void zwarm(enum sbx_zygote k, int cap, char *err, size_t errlen)
{
	for (int i = 0; i < cap; i++)
		if (zpool[k][i].pid > 0 && !zpool[k][i].ready)
			return;
	for (int i = 0; i < cap; i++)
		if (zpool[k][i].pid <= 0) {
			zspawn(&zpool[k][i], err, errlen);
			return;
		}
}

/* sbx_finish hook: the verdict pipe is at EOF; the helper is free again. */
static void zfinish(struct sbx_run *run)
{
	struct sbx_run_priv *priv = run->priv;
	struct zhelper *z = priv->ext;
	pthread_mutex_lock(&zlock);
	z->busy = false;
	if (priv->ended_badly)
		zdrop(z);
	pthread_mutex_unlock(&zlock);
}

/* sbx_kill hook: the helper cancels the run it is supervising. */
static void zkill(struct sbx_run *run)
{
	struct zhelper *z = ((struct sbx_run_priv *)run->priv)->ext;
	if (z->pid > 0)
		kill(z->pid, SIGTERM);
}

/* Send the request; 0 or -1. */
static int zsend(struct zhelper *z, const struct sbx_zreq *rq, const int *fds, int nfds)
{
	union { char b[CMSG_SPACE(sizeof(int) * 5)]; struct cmsghdr align; } cbuf;
	struct iovec iov = { (void *)(uintptr_t)rq, sizeof *rq };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf.b,
	                     .msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds) };
	memset(&cbuf, 0, sizeof cbuf);
	struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
	memcpy(CMSG_DATA(c), fds, sizeof(int) * (size_t)nfds);
	ssize_t n;
	do
		n = sendmsg(z->ctl, &mh, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	return n == (ssize_t)sizeof *rq ? 0 : -1;
}

int sbx_zygote_start(const struct sbx_spec *spec, struct sbx_run *run, bool spare, char *err, size_t errlen)
{
	/* the other kinds to take when none of the wanted one is idle: the
	 * nearest one that preloads more first (fewer imports left to the run) */
	static const enum sbx_zygote fallback[SBX_ZYGOTE__MAX][SBX_ZYGOTE__MAX - 1] = {
		[SBX_ZYGOTE_FULL] = { SBX_ZYGOTE_NUMPY, SBX_ZYGOTE_PLAIN },
		[SBX_ZYGOTE_NUMPY] = { SBX_ZYGOTE_FULL, SBX_ZYGOTE_PLAIN },
		[SBX_ZYGOTE_PLAIN] = { SBX_ZYGOTE_NUMPY, SBX_ZYGOTE_FULL },
	};
	struct sbx_pipes p;
	struct zhelper *z = NULL;
	struct sbx_zreq rq = { .magic = SBX_ZREQ_MAGIC, .box_id = spec->box_id, .limits = spec->limits,
	                       .has_shm = spec->shm_fd > 2 };
	sbx_limits_fill(&rq.limits);
	if (sbx_pipes_open(&p) < 0) {
		snprintf(err, errlen, "pipe: %s", strerror(errno));
		return -1;
	}
	enum sbx_zygote want = (unsigned)spec->zygote < SBX_ZYGOTE__MAX ? spec->zygote : SBX_ZYGOTE_FULL;
	pthread_mutex_lock(&zlock);
	zpool_init();
	zreap();
	int cap = pool_size();
	bool warm = zstarts++ > 0;  /* a single-run process never starts a zygote */
	for (int attempt = 0; attempt < 2; attempt++) {
		z = zidle(want, cap, spare);
		if (!z && spare)
			break;
		if (!z) {
			/* none of its kind ready and idle: warm one up for later, and run
			 * on an idle zygote of the other kind (whose child imports what
			 * its own did not preload) or, with none, one-shot now */
			if (warm)
				zwarm(want, cap, err, errlen);
			for (int i = 0; !z && i < SBX_ZYGOTE__MAX - 1; i++)
				z = zidle(fallback[want][i], cap, false);
			if (!z)
				break;
		}
		int fds[5] = { p.in[0], p.out[1], p.log[1], p.verdict[1], spec->shm_fd };
		if (zsend(z, &rq, fds, rq.has_shm ? 5 : 4) == 0)
			break;
		zdrop(z);   /* dead helper: replace it once */
		z = NULL;
	}
	if (z)
		z->busy = true;
	pthread_mutex_unlock(&zlock);
	if (!z) {
		if (!err[0])
			snprintf(err, errlen, "no zygote available");
		sbx_pipes_close(&p);
		return -1;
	}
	sbx_run_adopt(run, -1, &p);
	struct sbx_run_priv *priv = run->priv;
	priv->finish = zfinish;
	priv->kill = zkill;
	priv->ext = z;
	return 0;
}

/*
 * zygote_so.c: the C half of the Python zygote, built into
 * agenttest-zygote.so and called through ctypes.PyDLL (the GIL stays held,
 * the zygote is single-threaded).
 *
 * Theory of operation. The zygote is a Python interpreter that the helper
 * started inside the box's file system and namespaces (zygote_sup.c), as
 * root, with numpy (and more) imported and the strategy host loaded. For
 * every run the helper sends a spawn order; sbx_zygote_spawn clones a child
 * with CLONE_PARENT (so the helper, not the zygote, is its parent and can
 * supervise and reap it) into new PID, mount, IPC and UTS namespaces. The
 * child, before returning to Python, joins the run's cgroup through the
 * cgroup.procs descriptors the helper opened, mounts its own /proc and runs
 * sbx_confine_final: the very same rlimits, credentials, NO_NEW_PRIVS,
 * descriptor and seccomp steps as the one-shot helper, with the policy
 * compiled once at zygote start. Only then does Python continue, in the
 * child, into the host's serve loop, which is what loads untrusted code.
 * A warm child (deferred) is spawned before its run is known, so that the
 * clone and the cgroup migration (which waits for an RCU grace period on
 * cgroup v1) happen between runs. sbx_zygote_spawn returns 0 to it before
 * its confinement: the zygote's trusted code then calls sbx_zygote_confine
 * (running nothing else: no strategy exists in the process yet, and its
 * stdin is not even there), which waits for the run's box, limits and
 * stdin and only then confines it. Nothing returns to Python confined or
 * not without the zygote knowing: sbx_zygote_unconfined() says which.
 * Each run is a fresh copy of the pristine zygote: whatever a run changes
 * (modules, files it cannot write anyway, threads, signal handlers) dies
 * with it.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "sandbox/sbx_int.h"
#include "sandbox/sbx_zygote.h"

#define NS_FLAGS (CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWUTS)

static struct sbx_bpf zy_bpf;
static bool zy_ready;

__attribute__((visibility("default"))) int sbx_zygote_init(void)
{
	char err[256];
	struct sbx_policy_opts po = { .writable = false, .notify = true };
	if (zy_ready)
		return 0;
	if (sbx_policy_build(&po, &zy_bpf, err, sizeof err) < 0) {
		fprintf(stderr, "agenttest-zygote: %s\n", err);
		return -1;
	}
	zy_ready = true;
	/* names in ps, top and profiles: the zygote and each run apart from
	 * every other python3 on the machine */
	prctl(PR_SET_NAME, "agenttest-zygot", 0, 0, 0);
	return 0;
}

/*
 * Once, in the zygote, after its gc.freeze and malloc_trim and before the
 * first spawn: take the heap's free chunks (sbx_heap_plug). Returns the
 * bytes taken.
 */
__attribute__((visibility("default"))) long sbx_zygote_plug_heap(void)
{
	return (long)sbx_heap_plug();
}

/* A warm child: wait for its run (sbx_zparams with stdin and maybe the
 * shared memory). Returns false on EOF or a malformed message. */
static bool await_params(int sock, int sync_fd, uint32_t *box, struct sbx_limits *lim,
                         int *fd_in, int *keep)
{
	struct sbx_zparams pm;
	union { char b[CMSG_SPACE(sizeof(int) * 2)]; struct cmsghdr align; } cbuf;
	struct iovec iov = { &pm, sizeof pm };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf.b,
	                     .msg_controllen = sizeof cbuf.b };
	int got[2] = { -1, -1 }, n = 0;
	ssize_t r;
	do
		r = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
	while (r < 0 && errno == EINTR);
	if (r != (ssize_t)sizeof pm || (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)))
		return false;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c))
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
			for (size_t i = 0; i < (c->cmsg_len - CMSG_LEN(0)) / sizeof(int) && n < 2; i++)
				memcpy(&got[n++], CMSG_DATA(c) + i * sizeof(int), sizeof(int));
	if (pm.magic != SBX_ZPARAMS_MAGIC || pm.box_id > SBX_BOX_MAX || pm.has_shm > 1 ||
	    n != 1 + (int)pm.has_shm)
		return false;
	*box = pm.box_id;
	*lim = pm.limits;
	sbx_limits_fill(lim);
	*fd_in = fcntl(got[0], F_DUPFD_CLOEXEC, 100);
	if (*fd_in < 0)
		return false;
	if (pm.has_shm) {
		if (dup2(got[1], 4) < 0)
			sbx_child_die(sync_fd, "shared memory fd: %s", strerror(errno));
		*keep = 4;
	}
	return true;
}

/* A child between its spawn and its confinement (one per process: the child's own copy). */
static struct {
	bool     pending;            /* spawned, not yet confined */
	struct sbx_zspawn z;
	int      fds[SBX_ZSPAWN_FDS]; /* in, out, err, sync, ack; above 100 */
	int      keep;               /* 4 with shared memory, else -1 */
} zy_child = { .keep = -1 };

/* In the child: join the cgroups, mount /proc; the rest is child_confine. Never fails back. */
static void child_prepare(const struct sbx_zspawn *z, const int *fds_in, int nfds)
{
	char err[256] = "";
	int fds[SBX_ZSPAWN_FDS + 4] = { -1, -1, -1, -1, -1, -1, -1, -1, -1 };
	sigset_t none;   /* the run starts with nothing blocked, whatever the zygote had */
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	prctl(PR_SET_NAME, "agenttest-run", 0, 0, 0);
	/* move everything above 100 first: the shared memory must become fd 4 */
	for (int i = 0; i < nfds; i++) {
		fds[i] = fcntl(fds_in[i], F_DUPFD_CLOEXEC, 100);
		if (fds[i] < 0)
			_exit(2);
	}
	int sync_fd = fds[3], first_cg = SBX_ZSPAWN_FDS + (z->has_shm ? 1 : 0);
	zy_child.keep = -1;
	if (z->has_shm) {
		if (dup2(fds[SBX_ZSPAWN_FDS], 4) < 0)
			sbx_child_die(sync_fd, "shared memory fd: %s", strerror(errno));
		zy_child.keep = 4;
	}
	for (int i = first_cg; i < nfds; i++) {
		if (write(fds[i], "0", 1) != 1)
			sbx_child_die(sync_fd, "cannot join the run's cgroup: %s", strerror(errno));
		close(fds[i]);
	}
	if (!sbx_mount_proc(err, sizeof err))
		sbx_child_die(sync_fd, "%s", err);
	zy_child.z = *z;
	memcpy(zy_child.fds, fds, sizeof zy_child.fds);
	zy_child.pending = true;
}

/* In the child: (a warm child: wait for its run, then) confine. Never fails back. */
static void child_confine(void)
{
	char err[256] = "";
	const struct sbx_zspawn *z = &zy_child.z;
	const int *fds = zy_child.fds;
	int sync_fd = fds[3], keep = zy_child.keep;
	uint32_t box = z->box_id;
	struct sbx_limits lim = z->limits;
	int fd_in = fds[0];
	if (z->deferred && !await_params(fds[4], sync_fd, &box, &lim, &fd_in, &keep))
		sbx_child_die(sync_fd, "no run for the warm child");
	struct sbx_final f = {
		.box_id = box, .limits = lim, .has_cgroup = z->has_cgroup != 0,
		.writable = false, .fd_in = fd_in, .fd_out = fds[1], .fd_err = fds[2],
		.sync_fd = fds[3], .ack_fd = fds[4], .bpf = &zy_bpf, .keep_fd = keep,
	};
	if (!sbx_confine_final(&f, err, sizeof err))
		sbx_child_die(sync_fd, "%s", err);
	zy_child.pending = false;
}

/*
 * In a child that sbx_zygote_spawn returned 0 to: 1 if it is a warm child
 * that is not confined yet (the zygote may run its own warm-up code, then
 * must call sbx_zygote_confine), else 0.
 */
__attribute__((visibility("default"))) int sbx_zygote_unconfined(void)
{
	return zy_child.pending ? 1 : 0;
}

/*
 * In a warm child: wait for its run, then confine (rlimits, box user,
 * no_new_privs, descriptors, seccomp). Returns 0 once confined (at once if
 * it already was); never returns otherwise (the child reports and exits).
 */
__attribute__((visibility("default"))) int sbx_zygote_confine(void)
{
	if (zy_child.pending)
		child_confine();
	return 0;
}

__attribute__((visibility("default"))) int sbx_zygote_spawn(const void *msg, size_t len, const int *fds, int nfds)
{
	struct sbx_zspawn z;
	if (!zy_ready || len != sizeof z || nfds < SBX_ZSPAWN_FDS || nfds > SBX_ZSPAWN_FDS + 4)
		return -EINVAL;
	memcpy(&z, msg, sizeof z);
	if (z.magic != SBX_ZSPAWN_MAGIC || z.box_id > SBX_BOX_MAX || z.has_shm > 1 || z.deferred > 1 ||
	    (z.deferred && z.has_shm) ||
	    z.ncg > 3 || z.ncg + z.has_shm != (uint32_t)(nfds - SBX_ZSPAWN_FDS))
		return -EINVAL;
	sbx_limits_fill(&z.limits);
	struct clone_args a;
	memset(&a, 0, sizeof a);
	a.flags = CLONE_PARENT | NS_FLAGS;
	pid_t pid = (pid_t)syscall(SYS_clone3, &a, sizeof a);
	if (pid < 0)
		return -errno;
	if (pid > 0)
		return (int)pid;
	child_prepare(&z, fds, nfds);
	if (!z.deferred)
		child_confine();
	return 0;
}

/* Close the n descriptors of fds. */
static void close_fds(const int *fds, int n)
{
	for (int i = 0; i < n; i++)
		close(fds[i]);
}

/*
 * The zygote's order loop, in C so that the zygote runs no Python code
 * between two spawns: whatever the parent writes while a child shares its
 * pages is copied (a fault in the parent), and a Python loop writes to
 * many objects per iteration. Reads spawn orders (with their descriptors)
 * on ctl, spawns each (sbx_zygote_spawn), closes the order's descriptors in
 * the zygote and answers with the int32 pid or -errno. Returns 0 in a
 * spawned child (exactly as sbx_zygote_spawn does), 1 when ctl reaches
 * EOF, -1 on a read or write error on ctl.
 */
__attribute__((visibility("default"))) int sbx_zygote_serve(int ctl)
{
	for (;;) {
		char msg[256];
		union { char b[CMSG_SPACE(sizeof(int) * SBX_ZSERVE_MAX_FDS)]; struct cmsghdr align; } cbuf;
		struct iovec iov = { msg, sizeof msg };
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf.b,
		                     .msg_controllen = sizeof cbuf.b };
		int fds[SBX_ZSERVE_MAX_FDS], nfds = 0;
		ssize_t n;
		do
			n = recvmsg(ctl, &mh, MSG_CMSG_CLOEXEC);
		while (n < 0 && errno == EINTR);
		if (n == 0)
			return 1;
		if (n < 0)
			return -1;
		for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c))
			if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
				for (size_t i = 0; i < (c->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++)
					if (nfds < SBX_ZSERVE_MAX_FDS)
						memcpy(&fds[nfds++], CMSG_DATA(c) + i * sizeof(int), sizeof(int));
		/* a cut message or descriptor list is refused (spawn checks lengths) */
		int32_t pid = (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) ? -EINVAL
		              : sbx_zygote_spawn(msg, (size_t)n, fds, nfds);
		if (pid == 0)
			return 0;
		close_fds(fds, nfds);
		ssize_t w;
		do
			w = send(ctl, &pid, sizeof pid, MSG_NOSIGNAL);
		while (w < 0 && errno == EINTR);
		if (w != (ssize_t)sizeof pid)
			return -1;
	}
}

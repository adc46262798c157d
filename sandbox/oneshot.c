/*
 * oneshot.c: one confined run of a program (the helper's normal mode).
 *
 * Theory of operation (the helper is root and is the supervisor):
 *   1. in the parent: create the run's cgroup, make the sync/ack/relay
 *      pipes;
 *   2. clone3 with new PID, mount, IPC, UTS and cgroup namespaces; the
 *      network namespace is the shared empty one of netns.c (joined with
 *      setns) or, with --netns=fresh, a new one. On cgroup v2 the child is
 *      born in its cgroup (CLONE_INTO_CGROUP);
 *   3. in the child (PID 1 of its namespace): fresh root and pivot_root and
 *      a fresh /proc, while the parent moves it into its cgroups on v1 (a
 *      v1 migration waits for an RCU grace period, so the two overlap) and
 *      fetches the compiled seccomp policy (cached, see policy.c). The
 *      child then waits for "G" (it is inside its cgroup) and the BPF
 *      program on the ack pipe, runs sbx_confine_final (rlimits,
 *      credentials, NO_NEW_PRIVS, descriptors, seccomp last) and execs the
 *      program with the explicit environment. Any failure is reported on
 *      the sync pipe and the child exits: nothing runs unconfined, and
 *      nothing but the helper's own code runs outside the cgroup;
 *   4. in the parent: take over the seccomp listener (spawn.c), then
 *      sbx_supervise until the child is reaped; the first execve
 *      notification is the child's own exec and is let through.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sandbox/sbx_confine.h"
#include "sandbox/sbx_int.h"
#include "sandbox/sbx_oneshot.h"

#define NS_FLAGS (CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWCGROUP)

/* Read exactly len bytes. Returns 0 or -1. */
static int read_full(int fd, void *buf, size_t len)
{
	char *p = buf;
	while (len) {
		ssize_t n = read(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Write exactly len bytes. Returns 0 or -1. */
static int write_full(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	while (len) {
		ssize_t n = write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* The child: never returns. */
static void __attribute__((noreturn)) child(const struct sbx_oneshot *o, int netfd, int sync_w,
                                            int ack_r, int out_w, int err_w, bool has_cg)
{
	static struct sock_filter ins[SBX_BPF_MAX];
	char err[256] = "";
	char go = 0;
	sbx_sig_child_reset(false);
	if (netfd >= 0 && setns(netfd, CLONE_NEWNET) < 0)
		sbx_child_die(sync_w, "joining the shared network namespace: %s", strerror(errno));
	if (o->agent && sbx_netns_loopback_up() < 0)
		sbx_child_die(sync_w, "bringing the box's loopback up: %s", strerror(errno));
	/* the file system first: it overlaps with the parent moving us into
	 * the cgroup (a v1 migration waits for an RCU grace period) */
	if (!sbx_root_enter(&o->root, err, sizeof err))
		sbx_child_die(sync_w, "%s", err);
	if (!sbx_mount_proc(err, sizeof err))
		sbx_child_die(sync_w, "%s", err);
	struct stat st;
	if (stat(o->argv[0], &st) < 0 || !S_ISREG(st.st_mode) || !(st.st_mode & 0111))
		sbx_child_die(sync_w, "program %s not found in the box", o->argv[0]);
	/* "G": we are in the run's cgroup; then the compiled policy */
	if (read(ack_r, &go, 1) != 1 || go != 'G')
		sbx_child_die(sync_w, "no go from the supervisor");
	struct sbx_bpf_hdr h;
	if (read_full(ack_r, &h, sizeof h) < 0 || h.len == 0 || h.len > SBX_BPF_MAX ||
	    read_full(ack_r, ins, h.len * sizeof ins[0]) < 0)
		sbx_child_die(sync_w, "no seccomp policy from the supervisor");
	struct sbx_bpf bpf = { .ins = ins, .len = h.len, .notify = h.notify != 0 };
	struct sbx_final f = {
		.box_id = o->box_id, .limits = o->limits, .has_cgroup = has_cg,
		.writable = o->root.workdir != NULL || o->root.tmp_bytes, .fd_in = 0, .fd_out = out_w,
		.fd_err = err_w, .sync_fd = sync_w, .ack_fd = ack_r, .bpf = &bpf, .keep_fd = o->keep_fd,
	};
	if (!sbx_confine_final(&f, err, sizeof err))
		sbx_child_die(sync_w, "%s", err);
	if (o->root.workdir && chdir(o->root.workdir_dst ? o->root.workdir_dst : o->root.workdir) < 0)
		_exit(127);
	execve(o->argv[0], o->argv, o->envp);
	/* only reachable if the program is missing: the supervisor saw no exec */
	_exit(127);
}

/* clone3 into the namespaces (and cgroup fd when >= 0). */
static pid_t clone_box(int cgfd, bool fresh_net)
{
	struct clone_args a;
	memset(&a, 0, sizeof a);
	a.flags = NS_FLAGS | (fresh_net ? CLONE_NEWNET : 0);
	a.exit_signal = SIGCHLD;
	if (cgfd >= 0) {
		a.flags |= CLONE_INTO_CGROUP;
		a.cgroup = (uint64_t)cgfd;
	}
	return (pid_t)syscall(SYS_clone3, &a, sizeof a);
}

/* Close a pair of pipe ends. */
static void close2(int *p)
{
	for (int i = 0; i < 2; i++)
		if (p[i] >= 0) {
			close(p[i]);
			p[i] = -1;
		}
}

int sbx_oneshot_run(struct sbx_oneshot *o, struct sbx_verdict *v, char *err, size_t errlen)
{
	struct sbx_bpf bpf;
	struct sbx_policy_opts po = { .writable = o->root.workdir != NULL || o->root.tmp_bytes, .notify = true,
		.agent = o->agent };
	int sync[2] = { -1, -1 }, ack[2] = { -1, -1 }, rout[2] = { -1, -1 }, rerr[2] = { -1, -1 };
	int rc = -1, cgfd = -1, listener = -1, netfd = -1;
	struct sbx_cgroup *cg = NULL;
	pid_t pid = -1;
	memset(v, 0, sizeof *v);
	memset(&bpf, 0, sizeof bpf);
	sbx_limits_fill(&o->limits);
	if (!o->no_cgroup)
		cg = sbx_cg_create(o->box_id, &o->limits, v->warnings, sizeof v->warnings);
	else
		sbx_note(v->warnings, sizeof v->warnings, "cgroup disabled: rlimits only");
	if (!cg && o->limits.cpu_quota > 0) {   /* a quota is not dropped quietly */
		snprintf(err, errlen, "a CPU quota needs the run's cgroup (%s)", v->warnings);
		goto out;
	}
	cgfd = sbx_cg_dirfd(cg);
	if (pipe2(sync, O_CLOEXEC) < 0 || pipe2(ack, O_CLOEXEC) < 0 ||
	    pipe2(rout, O_CLOEXEC) < 0 || pipe2(rerr, O_CLOEXEC) < 0) {
		snprintf(err, errlen, "pipe: %s", strerror(errno));
		goto out;
	}
	netfd = o->fresh_netns || o->agent ? -1 : sbx_netns_shared();
	if (netfd < 0 && !o->fresh_netns && !o->agent)
		sbx_note(v->warnings, sizeof v->warnings, "no shared network namespace: a fresh one");
	pid = clone_box(cgfd, netfd < 0);
	if (pid < 0 && cgfd >= 0) {   /* older kernel: no CLONE_INTO_CGROUP */
		close(cgfd);
		cgfd = -1;
		pid = clone_box(-1, netfd < 0);
	}
	if (pid < 0) {
		snprintf(err, errlen, "clone3: %s", strerror(errno));
		goto out;
	}
	if (pid == 0)
		child(o, netfd, sync[1], ack[0], rout[1], rerr[1], cg != NULL);
	close(sync[1]); sync[1] = -1;
	close(ack[0]); ack[0] = -1;
	close(rout[1]); rout[1] = -1;
	close(rerr[1]); rerr[1] = -1;
	if (cg && cgfd < 0 && sbx_cg_enter(cg, pid) < 0) {
		snprintf(err, errlen, "cannot enter the run's cgroup: %s", strerror(errno));
		goto kill;
	}
	if (write(ack[1], "G", 1) != 1)
		goto kill;
	/* compile the policy while the child builds its root, then hand it over */
	if (sbx_policy_cached(&po, &bpf, err, errlen) < 0)
		goto kill;
	if (!bpf.notify)
		sbx_note(v->warnings, sizeof v->warnings, "no seccomp user notification: violations are killed in-kernel");
	struct sbx_bpf_hdr h = { .len = bpf.len, .notify = bpf.notify };
	if (write_full(ack[1], &h, sizeof h) < 0 ||
	    write_full(ack[1], bpf.ins, bpf.len * sizeof bpf.ins[0]) < 0 ||
	    sbx_sync_parent(pid, sync[0], ack[1], &listener, err, errlen) < 0)
		goto kill;
	struct sbx_watch w = {
		.pid = pid, .out_in = rout[0], .out_to = o->out_fd, .err_in = rerr[0],
		.err_to = o->err_fd, .notify_fd = listener, .allow_exec = !o->agent,
		.log_only = o->seccomp_log, .cg = cg, .limits = o->limits,
	};
	rout[0] = rerr[0] = -1;
	char keep[sizeof v->warnings];
	memcpy(keep, v->warnings, sizeof keep);
	rc = sbx_supervise(&w, v);
	if (keep[0])
		sbx_note(v->warnings, sizeof v->warnings, "%s", keep);
	sbx_note(v->warnings, sizeof v->warnings, "cgroup %s", sbx_cg_kind(cg));
	pid = -1;
	goto out;
kill:
	kill(pid, SIGKILL);
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
	pid = -1;
	rc = -1;
out:
	if (cg) {
		sbx_cg_kill(cg);
		sbx_cg_destroy(cg);
	}
	if (cgfd >= 0)
		close(cgfd);
	if (netfd >= 0)
		close(netfd);
	close2(sync);
	close2(ack);
	close2(rout);
	close2(rerr);
	sbx_policy_free(&bpf);
	return rc;
}

/*
 * oneshot.c: one confined run of a program (the helper's normal mode).
 *
 * Theory of operation (the helper is root and is the supervisor):
 *   1. in the parent: compile the seccomp policy, create the run's cgroup,
 *      make the sync/ack/relay pipes;
 *   2. clone3 with new PID, network, mount, IPC, UTS and cgroup namespaces
 *      (and CLONE_INTO_CGROUP on cgroup v2, so the child is born inside its
 *      cgroup); on v1 the parent moves the child into its cgroups while the
 *      child waits for the "go" byte, so nothing runs outside the limits;
 *   3. in the child (PID 1 of its namespace): fresh root and pivot_root,
 *      fresh /proc, then sbx_confine_final (rlimits, credentials,
 *      NO_NEW_PRIVS, descriptors, seccomp last), then execve of the
 *      program with the explicit environment. Any failure is reported on
 *      the sync pipe and the child exits: nothing runs unconfined;
 *   4. in the parent: take over the seccomp listener (spawn.c), then
 *      sbx_supervise until the child is reaped; the first execve
 *      notification is the child's own exec and is let through.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
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

#define NS_FLAGS (CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWNS | CLONE_NEWIPC | \
                  CLONE_NEWUTS | CLONE_NEWCGROUP)

/* The child: never returns. */
static void __attribute__((noreturn)) child(const struct sbx_oneshot *o, const struct sbx_bpf *bpf,
                                            int sync_w, int ack_r, int out_w, int err_w, bool has_cg)
{
	char err[256] = "";
	char go = 0;
	if (read(ack_r, &go, 1) != 1 || go != 'G')
		sbx_child_die(sync_w, "no go from the supervisor");
	if (!sbx_root_enter(&o->root, err, sizeof err))
		sbx_child_die(sync_w, "%s", err);
	if (!sbx_mount_proc(err, sizeof err))
		sbx_child_die(sync_w, "%s", err);
	struct stat st;
	if (stat(o->argv[0], &st) < 0 || !S_ISREG(st.st_mode) || !(st.st_mode & 0111))
		sbx_child_die(sync_w, "program %s not found in the box", o->argv[0]);
	struct sbx_final f = {
		.box_id = o->box_id, .limits = o->limits, .has_cgroup = has_cg,
		.writable = o->root.workdir != NULL, .fd_in = 0, .fd_out = out_w,
		.fd_err = err_w, .sync_fd = sync_w, .ack_fd = ack_r, .bpf = bpf,
	};
	if (!sbx_confine_final(&f, err, sizeof err))
		sbx_child_die(sync_w, "%s", err);
	if (o->root.workdir && chdir(o->root.workdir) < 0)
		_exit(127);
	execve(o->argv[0], o->argv, o->envp);
	/* only reachable if the program is missing: the supervisor saw no exec */
	_exit(127);
}

/* clone3 into the namespaces (and cgroup fd when >= 0). */
static pid_t clone_box(int cgfd)
{
	struct clone_args a;
	memset(&a, 0, sizeof a);
	a.flags = NS_FLAGS;
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
	struct sbx_policy_opts po = { .writable = o->root.workdir != NULL, .notify = true };
	int sync[2] = { -1, -1 }, ack[2] = { -1, -1 }, rout[2] = { -1, -1 }, rerr[2] = { -1, -1 };
	int rc = -1, cgfd = -1, listener = -1;
	struct sbx_cgroup *cg = NULL;
	pid_t pid = -1;
	memset(v, 0, sizeof *v);
	sbx_limits_fill(&o->limits);
	if (sbx_policy_build(&po, &bpf, err, errlen) < 0)
		return -1;
	if (!bpf.notify)
		sbx_note(v->warnings, sizeof v->warnings, "no seccomp user notification: violations are killed in-kernel");
	if (!o->no_cgroup)
		cg = sbx_cg_create(o->box_id, &o->limits, v->warnings, sizeof v->warnings);
	else
		sbx_note(v->warnings, sizeof v->warnings, "cgroup disabled: rlimits only");
	cgfd = sbx_cg_dirfd(cg);
	if (pipe2(sync, O_CLOEXEC) < 0 || pipe2(ack, O_CLOEXEC) < 0 ||
	    pipe2(rout, O_CLOEXEC) < 0 || pipe2(rerr, O_CLOEXEC) < 0) {
		snprintf(err, errlen, "pipe: %s", strerror(errno));
		goto out;
	}
	pid = clone_box(cgfd);
	if (pid < 0 && cgfd >= 0) {   /* older kernel: no CLONE_INTO_CGROUP */
		close(cgfd);
		cgfd = -1;
		pid = clone_box(-1);
	}
	if (pid < 0) {
		snprintf(err, errlen, "clone3: %s", strerror(errno));
		goto out;
	}
	if (pid == 0)
		child(o, &bpf, sync[1], ack[0], rout[1], rerr[1], cg != NULL);
	close(sync[1]); sync[1] = -1;
	close(ack[0]); ack[0] = -1;
	close(rout[1]); rout[1] = -1;
	close(rerr[1]); rerr[1] = -1;
	if (cg && cgfd < 0 && sbx_cg_enter(cg, pid) < 0) {
		snprintf(err, errlen, "cannot enter the run's cgroup: %s", strerror(errno));
		goto kill;
	}
	if (write(ack[1], "G", 1) != 1 || sbx_sync_parent(pid, sync[0], ack[1], &listener, err, errlen) < 0)
		goto kill;
	struct sbx_watch w = {
		.pid = pid, .out_in = rout[0], .out_to = o->out_fd, .err_in = rerr[0],
		.err_to = o->err_fd, .notify_fd = listener, .allow_exec = true,
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
	close2(sync);
	close2(ack);
	close2(rout);
	close2(rerr);
	sbx_policy_free(&bpf);
	return rc;
}

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
	return 0;
}

/* In the child: join the cgroups, mount /proc, confine. Never fails back. */
static void child_confine(const struct sbx_zspawn *z, const int *fds_in, int nfds)
{
	char err[256] = "";
	int fds[SBX_ZSPAWN_FDS + 4] = { -1, -1, -1, -1, -1, -1, -1, -1, -1 };
	/* move everything above 100 first: the shared memory must become fd 4 */
	for (int i = 0; i < nfds; i++) {
		fds[i] = fcntl(fds_in[i], F_DUPFD_CLOEXEC, 100);
		if (fds[i] < 0)
			_exit(2);
	}
	int sync_fd = fds[3], first_cg = SBX_ZSPAWN_FDS + (z->has_shm ? 1 : 0), keep = -1;
	if (z->has_shm) {
		if (dup2(fds[SBX_ZSPAWN_FDS], 4) < 0)
			sbx_child_die(sync_fd, "shared memory fd: %s", strerror(errno));
		keep = 4;
	}
	for (int i = first_cg; i < nfds; i++) {
		if (write(fds[i], "0", 1) != 1)
			sbx_child_die(sync_fd, "cannot join the run's cgroup: %s", strerror(errno));
		close(fds[i]);
	}
	if (!sbx_mount_proc(err, sizeof err))
		sbx_child_die(sync_fd, "%s", err);
	struct sbx_final f = {
		.box_id = z->box_id, .limits = z->limits, .has_cgroup = z->has_cgroup != 0,
		.writable = false, .fd_in = fds[0], .fd_out = fds[1], .fd_err = fds[2],
		.sync_fd = fds[3], .ack_fd = fds[4], .bpf = &zy_bpf, .keep_fd = keep,
	};
	if (!sbx_confine_final(&f, err, sizeof err))
		sbx_child_die(sync_fd, "%s", err);
}

__attribute__((visibility("default"))) int sbx_zygote_spawn(const void *msg, size_t len, const int *fds, int nfds)
{
	struct sbx_zspawn z;
	if (!zy_ready || len != sizeof z || nfds < SBX_ZSPAWN_FDS || nfds > SBX_ZSPAWN_FDS + 4)
		return -EINVAL;
	memcpy(&z, msg, sizeof z);
	if (z.magic != SBX_ZSPAWN_MAGIC || z.box_id > SBX_BOX_MAX || z.has_shm > 1 ||
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
	child_confine(&z, fds, nfds);
	return 0;
}

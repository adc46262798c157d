/*
 * policy.c: the seccomp allow-list of a confined run, built with
 * libseccomp in the (trusted) parent and exported as raw BPF so the child
 * only has to call seccomp(2) on it.
 *
 * Theory of operation. Everything not listed takes the default action. With
 * a supervisor (always, in the helper and the zygote) the default is
 * SCMP_ACT_NOTIFY: the offending thread blocks inside the system call, the
 * supervisor reads the call's number from the notification, records it as
 * the SY verdict and kills the run without ever answering, so the call
 * never executes (if the supervisor is gone, the kernel fails the call with
 * ENOSYS and the parent-death signal ends the run). Without user
 * notification support the default is SCMP_ACT_KILL_PROCESS (verdict SY,
 * syscall "unknown"). Only the native architecture is accepted; any other
 * is killed. execve/execveat take the default action too: the one-shot
 * helper's supervisor answers the very first execve of the run's top
 * process with CONTINUE (that is the helper's own exec of the program: the
 * filter is loaded immediately before it, nothing else runs in between),
 * and every later one is a violation. The zygote path never execs at all.
 *
 * Calls that ordinary Python code makes and that must fail rather than
 * kill get an errno: AF_UNIX socket/socketpair (EACCES: glibc's NSS tries
 * nscd when anything looks up the box uid; other families are violations), process creation (fork, vfork, clone without
 * CLONE_THREAD or with namespace flags: EPERM; clone3: ENOSYS so glibc
 * falls back to clone, whose flags we can inspect), opening for writing and
 * changes to the file system (EACCES / EROFS) unless a writable work
 * directory was asked for, ioctls other than terminal queries and fd
 * flags (ENOTTY), prctl other than thread names (EPERM), prlimit64 that
 * sets limits (EPERM), file locks (ENOLCK), shared mappings of files
 * (EACCES), sysinfo (ENOSYS). x32 system calls (same architecture, the
 * __X32_SYSCALL_BIT set) are killed in-kernel by libseccomp's
 * bad-architecture action, verdict SY with syscall "unknown".
 *
 * Channels between boxes. Concurrent boxes share the read-only root (the
 * same files, the same inodes) and the kernel. Nothing one box can do to a
 * shared object may be observable by another: no file locks or leases, no
 * shared file mappings, no shared futex waits (see fd_rules), no sysinfo
 * (process count, load and free memory move with other runs).
 *
 * W^X, strictly: no executable memory can be created after the exec.
 * mprotect may never add PROT_EXEC (so write-then-flip fails too), mmap
 * may be executable only when it maps a file and is not writable (the
 * dynamic loader loading an extension module from the read-only root);
 * pkey_mprotect and memfd_create are violations, and every writable mount
 * is noexec, so no file the run wrote can be mapped executable.
 *
 * Compiling takes a few milliseconds of CPU, a large part of a one-shot
 * run's setup, so the helper keeps each compiled variant in a root-only
 * cache (SBX_POLICY_CACHE_DIR) keyed by the helper binary's inode, size
 * and mtime; the zygote compiles once per zygote.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <linux/sched.h>
#include <seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

#include "common/xalloc.h"
#include "sandbox/sbx_confine.h"

/* Plain allow-list: calls whose every use is harmless inside the box. */
static const char *const allow[] = {
	/* descriptors and reading */
	"read", "readv", "pread64", "preadv", "preadv2", "write", "writev",
	"pwrite64", "pwritev", "pwritev2", "lseek", "close", "close_range",
	"dup", "dup2", "dup3", "fstat", "stat", "lstat", "newfstatat",
	"statx", "fstatfs", "statfs", "getdents64", "readlink", "readlinkat",
	"access", "faccessat", "faccessat2", "getcwd", "chdir", "fchdir",
	"pipe", "pipe2", "ftruncate", "fsync", "fdatasync", "fadvise64",
	"sendfile", "splice", "copy_file_range",
	/* waiting */
	"poll", "ppoll", "select", "pselect6", "epoll_create", "epoll_create1",
	"epoll_ctl", "epoll_wait", "epoll_pwait", "epoll_pwait2", "eventfd2",
	"nanosleep", "clock_nanosleep", "clock_gettime", "clock_getres",
	"gettimeofday", "time", "sched_yield",
	"sched_getaffinity", "sched_getparam", "sched_getscheduler",
	"timerfd_create", "timerfd_settime", "timerfd_gettime",
	/* memory (W^X rules for mmap/mprotect below) */
	"munmap", "mremap", "brk", "madvise", "msync", "mincore",
	/* threads and signals */
	"set_tid_address", "set_robust_list", "get_robust_list", "rseq",
	"rt_sigaction", "rt_sigprocmask", "rt_sigreturn", "rt_sigpending",
	"rt_sigtimedwait", "rt_sigsuspend", "sigaltstack", "tgkill", "tkill",
	"exit", "exit_group", "wait4", "waitid", "restart_syscall",
	/* identity and information */
	"getpid", "gettid", "getppid", "getuid", "geteuid", "getgid", "getegid",
	"getgroups", "getresuid", "getresgid", "getpgrp", "getpgid", "getsid",
	"uname", "getrlimit", "getrusage", "times", "getrandom",
	"getpriority", "arch_prctl", "umask",
	NULL,
};

/* Calls that change the file system: allowed with a writable work dir,
 * else EROFS (the mounts are read-only anyway; this is the second wall). */
static const char *const fs_write[] = {
	"mkdir", "mkdirat", "rmdir", "unlink", "unlinkat", "rename", "renameat",
	"renameat2", "link", "linkat", "symlink", "symlinkat", "chmod", "fchmod",
	"fchmodat", "utimensat", "futimesat", "utimes", "utime", "creat",
	"fallocate", NULL,
};

/* Add one rule or remember the failure. */
static void rule(scmp_filter_ctx ctx, bool *ok, uint32_t action, const char *name,
                 unsigned n, const struct scmp_arg_cmp *args)
{
	int nr = seccomp_syscall_resolve_name(name);
	if (nr == __NR_SCMP_ERROR)
		return; /* not a call of this architecture */
	if (seccomp_rule_add_array(ctx, action, nr, n, args) != 0)
		*ok = false;
}

/* One value of a call's argument and what it gets. */
struct val_act {
	uint64_t val;
	uint32_t action;
};

/* Give `name` the action `act` for every value of argument `arg` in
 * [lo, hi], as aligned power-of-two blocks (one masked comparison each:
 * libseccomp takes at most one comparison per argument in a rule). */
static void arg_range(scmp_filter_ctx ctx, bool *ok, const char *name, unsigned arg,
                      uint64_t lo, uint64_t hi, uint32_t act)
{
	while (lo <= hi) {
		unsigned k = 0;
		while (k < 63 && (lo & ((2ULL << k) - 1)) == 0 && lo + ((2ULL << k) - 1) <= hi)
			k++;
		uint64_t size = 1ULL << k;
		struct scmp_arg_cmp c = SCMP_CMP(arg, SCMP_CMP_MASKED_EQ, ~(size - 1), lo);
		rule(ctx, ok, act, name, 1, &c);
		if (lo + (size - 1) >= hi)
			break;
		lo += size;
	}
}

/* Give `name` tab[i].action when argument `arg` equals tab[i].val (tab
 * sorted by value, distinct), and fail it with err for every other value.
 * The complement is written out (below the first, between neighbours,
 * above the last) because in libseccomp a rule without arguments would
 * take precedence over the argument-filtered ones. */
static void arg_table(scmp_filter_ctx ctx, bool *ok, const char *name, unsigned arg,
                      const struct val_act *tab, size_t n, int err)
{
	uint32_t other = SCMP_ACT_ERRNO((uint32_t)err);
	for (size_t i = 0; i < n; i++) {
		struct scmp_arg_cmp eq = SCMP_CMP(arg, SCMP_CMP_EQ, tab[i].val);
		rule(ctx, ok, tab[i].action, name, 1, &eq);
	}
	struct scmp_arg_cmp lo = SCMP_CMP(arg, SCMP_CMP_LT, tab[0].val);
	if (tab[0].val > 0)
		rule(ctx, ok, other, name, 1, &lo);
	for (size_t i = 0; i + 1 < n; i++)
		if (tab[i].val + 1 < tab[i + 1].val)
			arg_range(ctx, ok, name, arg, tab[i].val + 1, tab[i + 1].val - 1, other);
	struct scmp_arg_cmp hi = SCMP_CMP(arg, SCMP_CMP_GT, tab[n - 1].val);
	rule(ctx, ok, other, name, 1, &hi);
}

#define OK_ SCMP_ACT_ALLOW
#define NOLCK SCMP_ACT_ERRNO(ENOLCK)

/* Descriptor, lock, futex and mapping rules that close the channels
 * between concurrent boxes: every file a box can open is shared with
 * every other box (the read-only root), so nothing that one box can do
 * to a file may be observable by another.
 * - fcntl: descriptor flags, dup, pipe size and seal queries only; the
 *   lock commands (F_GETLK/F_SETLK/F_SETLKW and the OFD variants) fail
 *   with ENOLCK, anything else (leases, F_NOTIFY, F_SETOWN, ...) EINVAL;
 *   flock fails with ENOLCK.
 * - futex: process-private operations (FUTEX_PRIVATE_FLAG) only, plus a
 *   plain shared FUTEX_WAKE (the strategy host waking the runner on the
 *   run's own memfd; a wake is observable only by a waiter on the same
 *   key, and a box cannot wait on a shared key); any other shared
 *   operation is a violation (forbidden_syscall futex), because a shared
 *   futex on a read-only file page is keyed by the file and would reach
 *   every box mapping that file.
 *   futex_waitv (its flags live in memory) fails with ENOSYS.
 * - sysinfo fails with ENOSYS: its process count, load, free memory and
 *   uptime move with the other runs on the host. */
static void fd_rules(scmp_filter_ctx ctx, bool *ok)
{
	static const struct val_act fc[] = {
		{ F_DUPFD, OK_ }, { F_GETFD, OK_ }, { F_SETFD, OK_ }, { F_GETFL, OK_ },
		{ F_SETFL, OK_ }, { F_GETLK, NOLCK }, { F_SETLK, NOLCK }, { F_SETLKW, NOLCK },
		{ F_OFD_GETLK, NOLCK }, { F_OFD_SETLK, NOLCK }, { F_OFD_SETLKW, NOLCK },
		{ F_DUPFD_CLOEXEC, OK_ }, { F_SETPIPE_SZ, OK_ }, { F_GETPIPE_SZ, OK_ },
		{ F_GET_SEALS, OK_ },
	};
	arg_table(ctx, ok, "fcntl", 1, fc, sizeof fc / sizeof fc[0], EINVAL);
	rule(ctx, ok, SCMP_ACT_ERRNO(ENOLCK), "flock", 0, NULL);
	struct scmp_arg_cmp priv = SCMP_A1(SCMP_CMP_MASKED_EQ, FUTEX_PRIVATE_FLAG, FUTEX_PRIVATE_FLAG);
	rule(ctx, ok, SCMP_ACT_ALLOW, "futex", 1, &priv);
	struct scmp_arg_cmp wake = SCMP_A1(SCMP_CMP_EQ, FUTEX_WAKE);
	rule(ctx, ok, SCMP_ACT_ALLOW, "futex", 1, &wake);
	rule(ctx, ok, SCMP_ACT_ERRNO(ENOSYS), "futex_waitv", 0, NULL);
	rule(ctx, ok, SCMP_ACT_ERRNO(ENOSYS), "sysinfo", 0, NULL);
}

/* Open flags that mean writing. */
#define WRITE_FLAGS (O_WRONLY | O_RDWR | O_CREAT | O_TRUNC | O_APPEND)
/* clone flags that create namespaces or otherwise leave the box. */
#define NS_FLAGS (CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER | \
                  CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWCGROUP | CLONE_NEWTIME)

static void open_rules(scmp_filter_ctx ctx, bool *ok, const struct sbx_policy_opts *o);
static void ioctl_prctl_rules(scmp_filter_ctx ctx, bool *ok);

/* Socket calls of the agent profile (the box's own network namespace has
 * nothing but loopback, where only the relay listens). */
static const char *const agent_net[] = {
	"bind", "listen", "accept", "accept4", "connect", "getsockname", "getpeername",
	"setsockopt", "getsockopt", "sendto", "recvfrom", "sendmsg", "recvmsg", "sendmmsg",
	"recvmmsg", "shutdown", NULL,
};

/*
 * The agent profile (--profile=agent: an LLM agent's CLI, which is node
 * with a JIT and runs shell commands). On top of the strategy rules it
 * allows, and only it: new processes (fork, vfork, clone without namespace
 * flags) and execve/execveat (the box is still one PID namespace and one
 * cgroup, everything dies with it); kill/setpgid/setsid inside the PID
 * namespace; sockets of the families AF_UNIX, AF_INET and AF_INET6 (the box
 * has its own network namespace with only loopback up: the relay on
 * 127.0.0.1 is the one way out, and abstract unix sockets are per
 * namespace), other families fail with EAFNOSUPPORT; writable+executable
 * anonymous memory and mprotect to PROT_EXEC (V8's JIT; files written in
 * the workspace still cannot be mapped executable: the mount is noexec);
 * pkey_alloc fails with ENOSYS (V8 then does without memory keys);
 * futex without the private flag and capget (node's threads and libuv);
 * get_mempolicy/set_mempolicy and inotify fail with ENOSYS (node falls
 * back; inotify would report other boxes' opens of the shared root).
 * Residual channel: a shared futex on a page of the read-only root is
 * keyed by the file, so two agent boxes could signal each other through
 * it (the strategy profile refuses that); agents are the owner's own code
 * generator, not adversaries of each other's runs, and hold no holdout.
 */
static void agent_rules(scmp_filter_ctx ctx, bool *ok)
{
	for (int i = 0; agent_net[i]; i++)
		rule(ctx, ok, SCMP_ACT_ALLOW, agent_net[i], 0, NULL);
	static const char *const procs[] = { "fork", "vfork", "execve", "execveat", "kill", "setpgid",
		"setsid", "mprotect", NULL };
	for (int i = 0; procs[i]; i++)
		rule(ctx, ok, SCMP_ACT_ALLOW, procs[i], 0, NULL);
	struct scmp_arg_cmp no_ns = SCMP_A0(SCMP_CMP_MASKED_EQ, NS_FLAGS, 0);
	rule(ctx, ok, SCMP_ACT_ALLOW, "clone", 1, &no_ns);
	rule(ctx, ok, SCMP_ACT_ERRNO(ENOSYS), "clone3", 0, NULL);
	const uint32_t kind = MAP_ANONYMOUS | MAP_TYPE;
	struct scmp_arg_cmp anon = SCMP_A3(SCMP_CMP_MASKED_EQ, MAP_ANONYMOUS, MAP_ANONYMOUS);
	rule(ctx, ok, SCMP_ACT_ALLOW, "mmap", 1, &anon);
	struct scmp_arg_cmp priv = SCMP_A3(SCMP_CMP_MASKED_EQ, kind, MAP_PRIVATE);
	rule(ctx, ok, SCMP_ACT_ALLOW, "mmap", 1, &priv);
	struct scmp_arg_cmp shared_file = SCMP_A3(SCMP_CMP_MASKED_EQ, kind, MAP_SHARED);
	rule(ctx, ok, SCMP_ACT_ERRNO(EACCES), "mmap", 1, &shared_file);
	struct scmp_arg_cmp validate = SCMP_A3(SCMP_CMP_MASKED_EQ, kind, MAP_SHARED_VALIDATE);
	rule(ctx, ok, SCMP_ACT_ERRNO(EACCES), "mmap", 1, &validate);
	rule(ctx, ok, SCMP_ACT_ERRNO(ENOSYS), "pkey_alloc", 0, NULL);
	/* node: shared futexes, NUMA policy, capability queries, file watches */
	rule(ctx, ok, SCMP_ACT_ALLOW, "futex", 0, NULL);
	rule(ctx, ok, SCMP_ACT_ALLOW, "capget", 0, NULL);
	static const char *const nosys[] = { "get_mempolicy", "set_mempolicy", "inotify_init",
		"inotify_init1", NULL };
	for (int i = 0; nosys[i]; i++)
		rule(ctx, ok, SCMP_ACT_ERRNO(ENOSYS), nosys[i], 0, NULL);
	/* what shell tools (coreutils, bash, curl, git) call besides: timers
	 * are allowed; extended attributes read as unsupported; ownership and
	 * scheduling changes fail with EPERM */
	static const char *const tools[] = { "alarm", "setitimer", "getitimer", "timer_create",
		"timer_settime", "timer_gettime", "timer_getoverrun", "timer_delete", "getcpu",
		"ioprio_get", NULL };
	for (int i = 0; tools[i]; i++)
		rule(ctx, ok, SCMP_ACT_ALLOW, tools[i], 0, NULL);
	static const char *const xattr[] = { "getxattr", "lgetxattr", "fgetxattr", "listxattr",
		"llistxattr", "flistxattr", "setxattr", "lsetxattr", "fsetxattr", "removexattr",
		"lremovexattr", "fremovexattr", NULL };
	for (int i = 0; xattr[i]; i++)
		rule(ctx, ok, SCMP_ACT_ERRNO(ENOTSUP), xattr[i], 0, NULL);
	static const char *const eperm[] = { "chown", "fchown", "lchown", "fchownat",
		"sched_setscheduler", "sched_setparam", "ioprio_set", "mknod", "mknodat", NULL };
	for (int i = 0; eperm[i]; i++)
		rule(ctx, ok, SCMP_ACT_ERRNO(EPERM), eperm[i], 0, NULL);
	static const int fams[] = { AF_UNIX, AF_INET, AF_INET6 };
	for (int i = 0; i < 3; i++) {
		struct scmp_arg_cmp f = SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)fams[i]);
		rule(ctx, ok, SCMP_ACT_ALLOW, "socket", 1, &f);
	}
	struct scmp_arg_cmp unix_fam = SCMP_A0(SCMP_CMP_EQ, AF_UNIX);
	rule(ctx, ok, SCMP_ACT_ALLOW, "socketpair", 1, &unix_fam);
	arg_range(ctx, ok, "socket", 0, AF_UNIX + 1, AF_INET - 1, SCMP_ACT_ERRNO(EAFNOSUPPORT));
	arg_range(ctx, ok, "socket", 0, AF_INET + 1, AF_INET6 - 1, SCMP_ACT_ERRNO(EAFNOSUPPORT));
	arg_range(ctx, ok, "socket", 0, AF_INET6 + 1, AF_MAX, SCMP_ACT_ERRNO(EAFNOSUPPORT));
}

/* The argument-filtered rules. */
static void arg_rules(scmp_filter_ctx ctx, bool *ok, const struct sbx_policy_opts *o)
{
	if (o->agent) {
		agent_rules(ctx, ok);
		open_rules(ctx, ok, o);
		ioctl_prctl_rules(ctx, ok);
		return;
	}
	/* No new executable memory after the exec: mprotect never adds
	 * PROT_EXEC; mmap may map executable only from a file (the dynamic
	 * loader mapping an extension module) and never writable+executable.
	 * Anything else takes the default action (a violation). */
	struct scmp_arg_cmp no_x = SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, 0);
	rule(ctx, ok, SCMP_ACT_ALLOW, "mprotect", 1, &no_x);
	/* Mappings are private, except anonymous ones (visible only to this
	 * process: there is no fork) and the run's own market memory, which
	 * the runner passes as descriptor SBX_SHM_FD. A shared mapping of any
	 * other file fails with EACCES (defence in depth: files are read-only,
	 * and shared futex waits are refused, see fd_rules). */
	const uint32_t kind = MAP_ANONYMOUS | MAP_TYPE;
	struct scmp_arg_cmp anon[2] = { no_x, SCMP_A3(SCMP_CMP_MASKED_EQ, MAP_ANONYMOUS, MAP_ANONYMOUS) };
	struct scmp_arg_cmp priv[2] = { no_x, SCMP_A3(SCMP_CMP_MASKED_EQ, kind, MAP_PRIVATE) };
	struct scmp_arg_cmp shm[3] = {
		no_x, SCMP_A3(SCMP_CMP_MASKED_EQ, kind, MAP_SHARED), SCMP_A4(SCMP_CMP_EQ, SBX_SHM_FD),
	};
	rule(ctx, ok, SCMP_ACT_ALLOW, "mmap", 2, anon);
	rule(ctx, ok, SCMP_ACT_ALLOW, "mmap", 2, priv);
	rule(ctx, ok, SCMP_ACT_ALLOW, "mmap", 3, shm);
	struct scmp_arg_cmp file_x[2] = {
		SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_WRITE | PROT_EXEC, PROT_EXEC),
		SCMP_A3(SCMP_CMP_MASKED_EQ, kind, MAP_PRIVATE),
	};
	rule(ctx, ok, SCMP_ACT_ALLOW, "mmap", 2, file_x);
	struct scmp_arg_cmp shared_file[2] = {
		SCMP_A3(SCMP_CMP_MASKED_EQ, kind, MAP_SHARED), SCMP_A4(SCMP_CMP_NE, SBX_SHM_FD),
	};
	struct scmp_arg_cmp validate = SCMP_A3(SCMP_CMP_MASKED_EQ, kind, MAP_SHARED_VALIDATE);
	rule(ctx, ok, SCMP_ACT_ERRNO(EACCES), "mmap", 2, shared_file);
	rule(ctx, ok, SCMP_ACT_ERRNO(EACCES), "mmap", 1, &validate);
	/* threads only: CLONE_THREAD set, no namespace flag; other clones EPERM */
	struct scmp_arg_cmp thr = SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD | NS_FLAGS, CLONE_THREAD);
	rule(ctx, ok, SCMP_ACT_ALLOW, "clone", 1, &thr);
	struct scmp_arg_cmp nothr = SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD, 0);
	rule(ctx, ok, SCMP_ACT_ERRNO(EPERM), "clone", 1, &nothr);
	rule(ctx, ok, SCMP_ACT_ERRNO(ENOSYS), "clone3", 0, NULL);
	rule(ctx, ok, SCMP_ACT_ERRNO(EPERM), "fork", 0, NULL);
	rule(ctx, ok, SCMP_ACT_ERRNO(EPERM), "vfork", 0, NULL);
	open_rules(ctx, ok, o);
	/* sockets: a local (AF_UNIX) one fails with EACCES, because glibc's
	 * NSS tries the nscd socket when code looks up the box uid; every
	 * other family is a violation (default action) */
	struct scmp_arg_cmp unix_fam = SCMP_A0(SCMP_CMP_EQ, AF_UNIX);
	rule(ctx, ok, SCMP_ACT_ERRNO(EACCES), "socket", 1, &unix_fam);
	rule(ctx, ok, SCMP_ACT_ERRNO(EACCES), "socketpair", 1, &unix_fam);
	ioctl_prctl_rules(ctx, ok);
}

/* Opening files: read-only unless a writable work dir exists. */
static void open_rules(scmp_filter_ctx ctx, bool *ok, const struct sbx_policy_opts *o)
{
	if (o->writable) {
		rule(ctx, ok, SCMP_ACT_ALLOW, "open", 0, NULL);
		rule(ctx, ok, SCMP_ACT_ALLOW, "openat", 0, NULL);
		for (int i = 0; fs_write[i]; i++)
			rule(ctx, ok, SCMP_ACT_ALLOW, fs_write[i], 0, NULL);
	} else {
		struct scmp_arg_cmp ro1 = SCMP_A1(SCMP_CMP_MASKED_EQ, WRITE_FLAGS, 0);
		struct scmp_arg_cmp ro2 = SCMP_A2(SCMP_CMP_MASKED_EQ, WRITE_FLAGS, 0);
		rule(ctx, ok, SCMP_ACT_ALLOW, "open", 1, &ro1);
		rule(ctx, ok, SCMP_ACT_ALLOW, "openat", 1, &ro2);
		struct scmp_arg_cmp w1 = SCMP_A1(SCMP_CMP_MASKED_EQ, O_ACCMODE, O_WRONLY);
		struct scmp_arg_cmp w2 = SCMP_A2(SCMP_CMP_MASKED_EQ, O_ACCMODE, O_WRONLY);
		struct scmp_arg_cmp rw1 = SCMP_A1(SCMP_CMP_MASKED_EQ, O_ACCMODE, O_RDWR);
		struct scmp_arg_cmp rw2 = SCMP_A2(SCMP_CMP_MASKED_EQ, O_ACCMODE, O_RDWR);
		rule(ctx, ok, SCMP_ACT_ERRNO(EACCES), "open", 1, &w1);
		rule(ctx, ok, SCMP_ACT_ERRNO(EACCES), "open", 1, &rw1);
		rule(ctx, ok, SCMP_ACT_ERRNO(EACCES), "openat", 1, &w2);
		rule(ctx, ok, SCMP_ACT_ERRNO(EACCES), "openat", 1, &rw2);
		/* O_RDONLY with O_CREAT/O_TRUNC/O_APPEND: also refused */
		const uint32_t bits[] = { O_CREAT, O_TRUNC, O_APPEND };
		for (int i = 0; i < 3; i++) {
			struct scmp_arg_cmp b1 = SCMP_A1(SCMP_CMP_MASKED_EQ, O_ACCMODE | bits[i], bits[i]);
			struct scmp_arg_cmp b2 = SCMP_A2(SCMP_CMP_MASKED_EQ, O_ACCMODE | bits[i], bits[i]);
			rule(ctx, ok, SCMP_ACT_ERRNO(EACCES), "open", 1, &b1);
			rule(ctx, ok, SCMP_ACT_ERRNO(EACCES), "openat", 1, &b2);
		}
		for (int i = 0; fs_write[i]; i++)
			rule(ctx, ok, SCMP_ACT_ERRNO(EROFS), fs_write[i], 0, NULL);
	}
	rule(ctx, ok, SCMP_ACT_ERRNO(ENOSYS), "openat2", 0, NULL);
}

/* ioctl, prctl, descriptor and prlimit rules (both profiles). */
static void ioctl_prctl_rules(scmp_filter_ctx ctx, bool *ok)
{
	/* ioctl: terminal queries and fd flags; every other request ENOTTY */
	static const struct val_act ioc[] = {
		{ TCGETS, OK_ }, { TIOCGWINSZ, OK_ }, { FIONREAD, OK_ }, { FIONBIO, OK_ },
		{ FIONCLEX, OK_ }, { FIOCLEX, OK_ },
	};
	arg_table(ctx, ok, "ioctl", 1, ioc, sizeof ioc / sizeof ioc[0], ENOTTY);
	/* prctl: thread names; everything else EPERM */
	static const struct val_act prc[] = { { PR_SET_NAME, OK_ }, { PR_GET_NAME, OK_ } };
	arg_table(ctx, ok, "prctl", 0, prc, 2, EPERM);
	fd_rules(ctx, ok);
	/* prlimit64: reading only (new limit pointer NULL) */
	struct scmp_arg_cmp rd = SCMP_A2(SCMP_CMP_EQ, 0);
	rule(ctx, ok, SCMP_ACT_ALLOW, "prlimit64", 1, &rd);
	struct scmp_arg_cmp wrl = SCMP_A2(SCMP_CMP_NE, 0);
	rule(ctx, ok, SCMP_ACT_ERRNO(EPERM), "prlimit64", 1, &wrl);
}

/* Set the error-returning rules that need no arguments. */
static void errno_rules(scmp_filter_ctx ctx, bool *ok)
{
	for (int i = 0; allow[i]; i++)
		rule(ctx, ok, SCMP_ACT_ALLOW, allow[i], 0, NULL);
	rule(ctx, ok, SCMP_ACT_ERRNO(EPERM), "sched_setaffinity", 0, NULL);
	rule(ctx, ok, SCMP_ACT_ERRNO(EPERM), "setpriority", 0, NULL);
}

int sbx_policy_build(const struct sbx_policy_opts *o, struct sbx_bpf *out, char *err, size_t errlen)
{
	int rc = -1, memfd = -1;
	bool ok = true, notify = o->notify && seccomp_api_get() >= 5;
	scmp_filter_ctx ctx = seccomp_init(notify ? SCMP_ACT_NOTIFY : SCMP_ACT_KILL_PROCESS);
	memset(out, 0, sizeof *out);
	if (!ctx) {
		snprintf(err, errlen, "seccomp_init failed");
		goto out;
	}
	/* A binary tree on the syscall number, not libseccomp's default linear
	 * chain: when a filter is loaded, the kernel's action cache
	 * (seccomp_cache_prepare) emulates it once for every syscall number,
	 * with the task's signal lock held, and every syscall a run makes walks
	 * it too; a tree makes both logarithmic in the rules instead of linear
	 * (about 0.25 ms less per confined process here, issue 19). The rules
	 * and actions are the same. */
	if (seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS) != 0 ||
	    seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0) != 0 ||
	    seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2) != 0) {
		snprintf(err, errlen, "seccomp attributes");
		goto out;
	}
	errno_rules(ctx, &ok);
	arg_rules(ctx, &ok, o);
	/* mmap/mprotect with W and X take the default. */
	if (!ok) {
		snprintf(err, errlen, "seccomp rule rejected");
		goto out;
	}
	memfd = memfd_create("sbx-bpf", MFD_CLOEXEC);
	if (memfd < 0 || seccomp_export_bpf(ctx, memfd) != 0) {
		snprintf(err, errlen, "seccomp export failed");
		goto out;
	}
	off_t size = lseek(memfd, 0, SEEK_END);
	if (size <= 0 || size % (off_t)sizeof(struct sock_filter) != 0 ||
	    size / (off_t)sizeof(struct sock_filter) > SBX_BPF_MAX) {
		snprintf(err, errlen, "seccomp program has a bad size");
		goto out;
	}
	out->len = (unsigned short)(size / (off_t)sizeof(struct sock_filter));
	out->ins = xcalloc(out->len, sizeof(struct sock_filter));
	if (pread(memfd, out->ins, (size_t)size, 0) != size) {
		snprintf(err, errlen, "seccomp program read failed");
		free(out->ins);
		out->ins = NULL;
		goto out;
	}
	out->notify = notify;
	rc = 0;
out:
	if (memfd >= 0)
		close(memfd);
	if (ctx)
		seccomp_release(ctx);
	return rc;
}

/* The cache file name of a variant, bound to this very binary (inode,
 * size, mtime), so a rebuilt helper never loads an old policy. */
static int cache_path(const struct sbx_policy_opts *o, bool notify, char *out, size_t len)
{
	struct stat st;
	if (stat("/proc/self/exe", &st) < 0)
		return -1;
	int n = snprintf(out, len, "%s/policy-%d%d%d-%lx-%lx-%lx.bpf", SBX_POLICY_CACHE_DIR,
	                 o->writable ? 1 : 0, notify ? 1 : 0, o->agent ? 1 : 0, (unsigned long)st.st_ino,
	                 (unsigned long)st.st_size, (unsigned long)st.st_mtime);
	return (n < 0 || (size_t)n >= len) ? -1 : 0;
}

/* Load a cached program into *out. Returns 0 or -1. */
static int cache_load(const char *path, bool notify, struct sbx_bpf *out)
{
	struct stat st;
	int rc = -1, fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) < 0 || st.st_uid != 0 || (st.st_mode & 022) || st.st_size <= 0 ||
	    st.st_size % (off_t)sizeof(struct sock_filter) != 0 ||
	    st.st_size / (off_t)sizeof(struct sock_filter) > SBX_BPF_MAX)
		goto out;
	out->len = (unsigned short)(st.st_size / (off_t)sizeof(struct sock_filter));
	out->ins = xcalloc(out->len, sizeof(struct sock_filter));
	if (pread(fd, out->ins, (size_t)st.st_size, 0) != st.st_size) {
		sbx_policy_free(out);
		goto out;
	}
	out->notify = notify;
	rc = 0;
out:
	close(fd);
	return rc;
}

/* Store a program atomically (temp file + rename); failures are ignored. */
static void cache_store(const char *path, const struct sbx_bpf *b)
{
	char tmp[600];
	if (mkdir(SBX_POLICY_CACHE_DIR, 0700) < 0 && errno != EEXIST)
		return;
	snprintf(tmp, sizeof tmp, "%s.%d", path, (int)getpid());
	int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return;
	size_t size = (size_t)b->len * sizeof(struct sock_filter);
	bool ok = write(fd, b->ins, size) == (ssize_t)size;
	close(fd);
	if (!ok || rename(tmp, path) < 0)
		unlink(tmp);
}

int sbx_policy_cached(const struct sbx_policy_opts *o, struct sbx_bpf *out, char *err, size_t errlen)
{
	char path[512];
	bool notify = o->notify && seccomp_api_get() >= 5;
	memset(out, 0, sizeof *out);
	if (cache_path(o, notify, path, sizeof path) == 0 && cache_load(path, notify, out) == 0)
		return 0;
	if (sbx_policy_build(o, out, err, errlen) < 0)
		return -1;
	if (out->notify == notify)
		cache_store(path, out);
	return 0;
}

void sbx_policy_free(struct sbx_bpf *b)
{
	free(b->ins);
	b->ins = NULL;
	b->len = 0;
}

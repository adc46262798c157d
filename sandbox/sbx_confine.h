/*
 * sbx_confine.h: the confinement steps shared by the one-shot helper
 * (main.c, oneshot.c) and the zygote (zygote_so.c, loaded by the Python
 * zygote through ctypes). There is exactly one implementation of each step;
 * both paths call the same functions in the same order:
 *
 *   namespaces (clone flags) -> sbx_root_*: fresh root, read-only binds,
 *   minimal /dev, pivot_root -> sbx_mount_proc -> sbx_confine_final:
 *   hostname, rlimits, setgroups/setresgid/setresuid + check, NO_NEW_PRIVS,
 *   parent-death signal, descriptors 0-2 and nothing else -> seccomp (last),
 *   reporting the listener to the supervisor.
 *
 * Each step returns bool; the caller treats false as fatal (sbx_child_die).
 */
#ifndef AGENTTEST_SBX_CONFINE_H
#define AGENTTEST_SBX_CONFINE_H

#include <linux/filter.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "sandbox/sandbox.h"

/* ---- seccomp policy (policy.c) ------------------------------------------ */
/* The descriptor number of the run's market memory inside the box (the
 * only file a box may map shared; see policy.c). */
#define SBX_SHM_FD 4

struct sbx_policy_opts {
	bool writable;  /* a read-write work dir exists: allow opening for writing */
	bool notify;    /* report violations to a supervisor (else kill in-kernel) */
	bool agent;     /* the agent profile (--profile=agent, see policy.c) */
};

/* A compiled filter. */
struct sbx_bpf {
	struct sock_filter *ins;
	unsigned short      len;
	bool                notify; /* uses SECCOMP_RET_USER_NOTIF: load with a listener */
};

/* Header of a BPF program sent down a pipe, followed by len instructions. */
struct sbx_bpf_hdr {
	uint32_t len;
	uint32_t notify;
};
#define SBX_BPF_MAX 4096

/* Build the policy with libseccomp and export it as BPF. 0 or -1 (err). */
int sbx_policy_build(const struct sbx_policy_opts *o, struct sbx_bpf *out, char *err, size_t errlen);
/* Same, through the helper's cache of compiled programs. */
int sbx_policy_cached(const struct sbx_policy_opts *o, struct sbx_bpf *out, char *err, size_t errlen);
#define SBX_POLICY_CACHE_DIR "/run/agenttest-sandbox.d"
/* Free a compiled filter. */
void sbx_policy_free(struct sbx_bpf *b);

/* ---- the box's file system (rootfs.c) ----------------------------------- */
#define SBX_MAX_BINDS 16

/* Fixed places inside the box for agenttest's own files, so that where a
 * checkout or an installation lives on the host (say under /tmp) never
 * shapes the box's tree nor collides with its private /tmp. */
#define SBX_BOX_HOST_DIR   "/agenttest/host"
#define SBX_BOX_ZYGOTE_DIR "/agenttest/zygote"
#define SBX_BOX_ZYGOTE_SO  "/agenttest/agenttest-zygote.so"

struct sbx_root_opts {
	const char *binds[SBX_MAX_BINDS]; /* extra read-only paths on the host */
	const char *dsts[SBX_MAX_BINDS];  /* where each appears inside; NULL: same path */
	bool        copies[SBX_MAX_BINDS];/* a private copy under /agenttest (own_copy.c), not a bind */
	int         nbinds;
	const char *workdir;              /* read-write directory on the host, or NULL */
	const char *workdir_dst;          /* where it appears inside (and the cwd); NULL: same path */
	uint64_t    tmp_bytes;            /* size of a private /tmp; 0: none */
};

/* In a fresh mount namespace: build the new root (tmpfs, read-only binds of
 * the system and the requested paths, minimal /dev, empty /proc mount
 * point), pivot into it and drop the old root. Returns true or false with
 * a message in err. */
bool sbx_root_enter(const struct sbx_root_opts *o, char *err, size_t errlen);
/* agenttest's own files (own_copy.c): the fixed destinations above, and
 * every --copy, are a private read-only copy in a tmpfs at /agenttest,
 * never a bind mount, so the box's mountinfo names no server directory.
 * sbx_own_dst: is dst one of the fixed ones; sbx_own_mount: the tmpfs at
 * root/agenttest; sbx_own_copy: copy the file or tree src to root+at (at
 * below /agenttest, missing parent directories made); sbx_own_seal:
 * remount it read-only. */
bool sbx_own_dst(const char *dst);
bool sbx_own_mount(const char *root, char *err, size_t errlen);
bool sbx_own_copy(const char *root, const char *src, const char *at, char *err, size_t errlen);
bool sbx_own_seal(const char *root, char *err, size_t errlen);
/* Mount a fresh proc (hidepid=invisible) on /proc; needs a new PID and
 * mount namespace. */
bool sbx_mount_proc(char *err, size_t errlen);

/* ---- the last steps in the child (confine.c) ---------------------------- */
/* The child -> supervisor report on the sync pipe. */
struct sbx_sync_msg {
	int  kind;        /* SBX_SYNC_READY, SBX_SYNC_ERROR */
	int  listener;    /* READY: the seccomp listener fd number in the child, or -1 */
	char text[200];   /* ERROR: what failed */
};
enum { SBX_SYNC_READY = 1, SBX_SYNC_ERROR = 2 };

struct sbx_final {
	uint32_t box_id;
	struct sbx_limits limits;    /* filled */
	bool     has_cgroup;         /* memory limited by a cgroup: RLIMIT_AS gets slack */
	bool     writable;           /* a rw work dir: RLIMIT_FSIZE is not 0 */
	int      fd_in, fd_out, fd_err; /* become 0, 1, 2 */
	int      sync_fd;            /* write end, child -> supervisor */
	int      ack_fd;             /* read end, supervisor -> child */
	int      keep_fd;            /* > 3: also kept open, inheritable (the stream's memfd) */
	const struct sbx_bpf *bpf;
};

/* Hostname, rlimits, credentials, no_new_privs, pdeathsig, fds, seccomp,
 * listener hand-over. On success only fds 0-2 remain open. */
bool sbx_confine_final(const struct sbx_final *f, char *err, size_t errlen);
/* Report err on sync_fd and _exit(2): the run never starts. */
void sbx_child_die(int sync_fd, const char *fmt, ...) __attribute__((noreturn, format(printf, 2, 3)));

/* ---- the supervisor's side of the hand-over (spawn.c) ------------------ */
/* Read the child's report; on READY fetch its listener with pidfd_getfd
 * into *listener (or -1) and acknowledge. Returns 0, or -1 with err set. */
int sbx_sync_parent(pid_t child, int sync_fd, int ack_fd, int *listener, char *err, size_t errlen);

#endif

/*
 * sbx_int.h: the private header of the sandbox component (libsandbox.a,
 * agenttest-sandbox, the zygote's confinement library).
 *
 * Sections: verdict records, host paths and environment, supervision,
 * confinement steps (namespaces, root, limits, credentials, seccomp) and
 * cgroups. Nothing here is part of the public API (sandbox.h).
 */
#ifndef AGENTTEST_SBX_INT_H
#define AGENTTEST_SBX_INT_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "sandbox/sandbox.h"

/* ---- defaults ---------------------------------------------------------- */
#define SBX_DEF_CPU      60.0
#define SBX_DEF_MEMORY   (256ull << 20)
#define SBX_DEF_PROCS    16u
#define SBX_DEF_FILES    64u
#define SBX_DEF_OUTPUT   (256ull << 20)
#define SBX_PYTHON       "/usr/bin/python3"
#define SBX_UID_BASE     60000u   /* box N runs as uid/gid SBX_UID_BASE + N */
#define SBX_BOX_MAX      9999u
#define SBX_POLL_MS      50       /* supervision tick */
#define SBX_META_MAX     4096     /* bytes of a verdict record */

/* Fill every zero field of *l with its default. */
void sbx_limits_fill(struct sbx_limits *l);

/* ---- verdict records (verdict.c) --------------------------------------- */
/* Two-letter status of the verdict record ("OK", "RE", ...). */
const char *sbx_status_letters(enum sbx_status s);
/* Parse letters back; returns SBX_STATUS__MAX when unknown. */
enum sbx_status sbx_status_parse(const char *letters);
/* Format *v as a verdict record (key:value lines) into buf; returns the
 * length, or -1 if it did not fit. */
int sbx_verdict_format(const struct sbx_verdict *v, char *buf, size_t len);
/* Parse a verdict record of len bytes into *v (unknown keys are ignored,
 * malformed values rejected). Returns 0, or -1 if it lacks a valid status. */
int sbx_verdict_parse(const char *text, size_t len, struct sbx_verdict *v);
/* Append "; msg" style text to a fixed-size verdict field. */
void sbx_note(char *field, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* ---- paths and environment (hostdir.c) --------------------------------- */
/* The strategy host directory (the one holding agenttest_host/), resolved
 * as described in sandbox.h, into out. Returns 0 or -1. */
int sbx_host_dir(char *out, size_t len);
/* The agenttest-sandbox helper binary into out. Returns 0 or -1. */
int sbx_helper_path(char *out, size_t len);
/* The fixed environment every strategy host gets (NULL-terminated). */
extern char *const sbx_host_env[];

/* ---- supervision (supervise.c) ----------------------------------------- */
struct sbx_cgroup;

/* What the supervisor watches and enforces for one run. */
struct sbx_watch {
	pid_t    pid;          /* the top process of the run (a child of ours) */
	int      out_in, out_to;   /* relay: program stdout -> caller (or -1) */
	int      err_in, err_to;   /* relay: program stderr -> caller (or -1) */
	int      notify_fd;    /* seccomp user-notification listener or -1 */
	bool     allow_exec;   /* answer the first execve notification with CONTINUE */
	bool     log_only;     /* debug (--seccomp-log): note violations, let them run */
	bool     kill_group;   /* kill(-pid) rather than kill(pid) (trusted mode) */
	struct sbx_cgroup *cg; /* per-run cgroup or NULL */
	double   cpu_base;     /* CPU seconds the cgroup had used before the run */
	struct sbx_limits limits;
};

/*
 * Supervise one run until its top process has been reaped: relay output
 * (counting it against limits.output_bytes), answer seccomp notifications,
 * enforce CPU and wall time every SBX_POLL_MS, kill the whole run on any
 * limit, and fill *v (limits, status, times, memory). Closes the relay fds.
 * Returns 0, or -1 on an internal failure (v->status is then SBX_XX and the
 * run has been killed and reaped).
 */
int sbx_supervise(struct sbx_watch *w, struct sbx_verdict *v);
/* Make SIGTERM/SIGINT cancel the run being supervised in this process
 * (status SG, message "cancelled"); SIGPIPE is ignored; then unblock every
 * signal (a helper starts with SIGTERM/SIGINT blocked, see sigreset.c). */
void sbx_supervise_signals(void);

/* ---- signal state of created processes (sigreset.c) ---- */
/* Before fork: block every signal in the calling thread, old mask into *old. */
void sbx_sig_block_all(sigset_t *old);
/* After fork, in the parent: restore the mask saved by sbx_sig_block_all. */
void sbx_sig_restore(const sigset_t *old);
/* In a new child: every disposition SIG_DFL; mask empty, or SIGTERM and
 * SIGINT blocked if keep_cancel_blocked (a helper or supervisor that
 * installs its handlers with sbx_supervise_signals). */
void sbx_sig_child_reset(bool keep_cancel_blocked);
/* Forget a cancellation that arrived between runs (the zygote helper
 * serves many runs; a late SIGTERM for a finished run must not cancel the
 * next one). */
void sbx_supervise_reset_cancel(void);

/* ---- shared empty network namespace (netns.c) ------------------------- */
/* An fd of the persistent empty network namespace (created on first use),
 * or -1. */
int sbx_netns_shared(void);
/* Bring the loopback device of the current network namespace up (needs
 * CAP_NET_ADMIN in it: call before dropping privileges). 0 or -1. */
int sbx_netns_loopback_up(void);

/* ---- cgroups (cgroup.c) ------------------------------------------------- */
/* Create the per-run cgroup of box_id with the given limits. Returns NULL
 * (and explains in warn) when no cgroup controller is usable. */
struct sbx_cgroup *sbx_cg_create(uint32_t box_id, const struct sbx_limits *l, char *warn, size_t wlen);
/* Change the limits of an existing cgroup (a warm zygote child's, once its
 * run is known) and restart its peak-memory counter. 0 or -1. */
int sbx_cg_set_limits(struct sbx_cgroup *cg, const struct sbx_limits *l);
/* Open the cgroup.procs file(s) for writing into fds (up to 3), so that a
 * child can move itself in by writing "0". Returns the count or -1. */
int sbx_cg_procs_fds(struct sbx_cgroup *cg, int *fds);
/* Move pid into the cgroup. Returns 0 or -1. */
int sbx_cg_enter(struct sbx_cgroup *cg, pid_t pid);
/* Cumulative CPU seconds of the cgroup, or -1. */
double sbx_cg_cpu(struct sbx_cgroup *cg);
/* Kill every process of the cgroup (repeat until empty, bounded). */
void sbx_cg_kill(struct sbx_cgroup *cg);
/* Peak memory in bytes (0 if unknown) and whether the OOM killer fired. */
void sbx_cg_stats(struct sbx_cgroup *cg, uint64_t *peak, bool *oom);
/* Ready an emptied group for another child of the same supervisor: true
 * when it is a v1 group without a CPU quota and holds no task, its OOM kills
 * so far becoming the base sbx_cg_stats counts from (the caller then sets
 * the next limits with sbx_cg_set_limits, which restarts the peak). False:
 * kill and destroy it as usual. */
bool sbx_cg_recycle(struct sbx_cgroup *cg);
/* Remove the cgroup (after sbx_cg_kill) and free it. NULL is a no-op. */
void sbx_cg_destroy(struct sbx_cgroup *cg);
/* A directory fd of a v2 cgroup (for clone3 CLONE_INTO_CGROUP), else -1. */
int sbx_cg_dirfd(const struct sbx_cgroup *cg);
/* "v2", "v1" or "none". */
const char *sbx_cg_kind(const struct sbx_cgroup *cg);

#endif

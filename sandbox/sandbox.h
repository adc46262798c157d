/*
 * sandbox.h: the public API for running the strategy host confined.
 *
 * The runner and the CLI never fork Python themselves: they ask this library
 * for a confined strategy host and talk to it over the framed protocol of
 * docs/protocol.md. Behind the API a run is either a fresh
 * `agenttest-sandbox ... -- python3 host` (one-shot) or a fork of a
 * pre-started, pre-imported interpreter (the zygote), confined before it
 * loads any untrusted code; callers cannot tell the difference except by
 * speed. Trusted mode (no confinement, for `--trusted`) is the same API with
 * SBX_TRUSTED so every caller has one code path.
 *
 * Where the host is: $AGENTTEST_HOST_DIR, else <exe dir>/../share/agenttest/host,
 * else <exe dir>/../sandbox/host (the dev tree); it runs as
 * `/usr/bin/python3 -E -s -B <hostdir>/agenttest_host` with a fixed, minimal
 * environment. Confined runs use a ready zygote when there is one (see
 * sbx_prestart; AGENTTEST_SANDBOX_ZYGOTE=0 disables them), else the helper
 * binary ($AGENTTEST_SANDBOX_HELPER, else agenttest-sandbox next to the
 * running executable). Confined runs need the process to be root.
 *
 * Callers: ignore SIGPIPE (a killed host closes to_host under you); keep
 * reading log_fd or lose lines (the log is dropped, never blocks the host);
 * use a distinct box_id for every run that may overlap another; call
 * sbx_start and sbx_finish from threads that outlive the run (helpers have
 * a parent-death signal tied to the starting thread). The library is
 * thread-safe.
 *
 * Limits (CPU, wall, output) are enforced from the moment sbx_start returns,
 * in every mode, by a supervisor process, so a caller blocked on from_host is
 * released (EOF) when the run is killed. Output written by the host beyond
 * limits.output_bytes (stdout and stderr together) ends the run with OL.
 */
#ifndef AGENTTEST_SANDBOX_H
#define AGENTTEST_SANDBOX_H

#include <stdint.h>
#include <sys/types.h>

enum sbx_mode {
	SBX_CONFINED = 0,  /* default: full isolation */
	SBX_TRUSTED,       /* no isolation: plain child process (explicit opt-in) */
};

/*
 * Which zygote a confined run would rather fork from. Only a matter of
 * speed: every zygote's child can import every module of the box (a
 * module the zygote did not preload is imported by the run itself, which
 * then costs its import time), and a run's results do not depend on the
 * zygote it came from. A small zygote is cheaper to fork and to tear down.
 */
enum sbx_zygote {
	SBX_ZYGOTE_FULL = 0,  /* default: numpy, pandas ($AGENTTEST_ZYGOTE_PRELOAD) */
	SBX_ZYGOTE_NUMPY,     /* numpy alone */
	SBX_ZYGOTE_PLAIN,     /* nothing beyond the host (the standard library only) */
	SBX_ZYGOTE__MAX
};

/* Limits of one run; zero means "the default" for every field. */
struct sbx_limits {
	double   cpu_seconds;   /* default 60 */
	double   wall_seconds;  /* default 2 x cpu_seconds */
	uint64_t memory_bytes;  /* default 256 MiB */
	unsigned processes;     /* default 16 */
	unsigned open_files;    /* default 64 */
	uint64_t output_bytes;  /* cap on bytes the host may write back; default 256 MiB */
	double   cpu_quota;     /* CPU bandwidth in CPUs (cgroup cpu.max / cfs_quota_us over a
	                           100 ms period); 0: none. Needs the cgroup: one-shot runs only */
};

/* Verdict status, as in the verdict record (agenttest-sandbox(1)). */
enum sbx_status {
	SBX_OK = 0,   /* exited 0 */
	SBX_RE,       /* non-zero exit */
	SBX_SG,       /* killed by a signal */
	SBX_TO,       /* CPU or wall time limit */
	SBX_ML,       /* memory limit */
	SBX_SY,       /* forbidden system call */
	SBX_OL,       /* output limit */
	SBX_XX,       /* internal error of the sandbox */
	SBX_STATUS__MAX
};

struct sbx_verdict {
	enum sbx_status status;
	int      exit_code;        /* valid for OK and RE */
	int      exit_signal;      /* valid for SG (and SY: SIGSYS) */
	char     syscall_name[32]; /* valid for SY */
	double   cpu_seconds;
	double   wall_seconds;
	uint64_t max_rss_bytes;    /* peak RSS of the top process (wait4) */
	uint64_t cg_mem_bytes;     /* peak memory of the whole run (cgroup), 0 if unknown */
	int      killed;           /* 1 if the sandbox killed the run (limit, syscall, cancel) */
	struct sbx_limits limits;  /* the limits that applied, defaults filled in */
	char     message[256];
	char     warnings[256];    /* e.g. "cgroup unavailable: rlimits only" */
};

/* A running strategy host. */
struct sbx_run {
	pid_t pid;       /* the supervisor process, -1 on the zygote path; never
	                    wait for it yourself: sbx_finish reaps it */
	int   to_host;   /* write end: frames to the host (its stdin) */
	int   from_host; /* read end: frames from the host (its stdout) */
	int   log_fd;    /* read end of the host's stderr (for log tails) */
	void *priv;      /* implementation state */
};

struct sbx_spec {
	enum sbx_mode     mode;
	struct sbx_limits limits;
	const char       *rw_workdir;   /* optional read-write directory, else NULL */
	const char *const *ro_binds;    /* optional NULL-terminated extra read-only paths */
	uint32_t          box_id;       /* distinct per concurrent run: selects uid/gid and cgroup */
	int               shm_fd;       /* > 2: handed to the host as its fd 4 (the lockstep
	                                   stream's memfd, evaluator/runner/drive/stream.c), in every
	                                   mode including the zygote; 0: none */
	enum sbx_zygote   zygote;       /* preferred zygote (sbx_zygote_for_code); a run forks
	                                   from the other kind when none of its own is idle */
};

/*
 * The zygote for a strategy's source: FULL if the bytes name pandas
 * anywhere (an import, a string, a comment: a conservative test, so that
 * every run that imports pandas the usual way finds it preloaded); PLAIN
 * if its only imports are import statements of a few standard modules
 * that never load numpy (math, random, statistics, ...: see
 * zygote_kind.c) and the bytes hold no other "import" (no __import__, no
 * importlib, not even in a string) and no "numpy"; else NUMPY. Code that
 * reaches a module another way still runs, only slower.
 */
enum sbx_zygote sbx_zygote_for_code(const char *code, size_t len);

/*
 * Machine code of a status, as used in API and CLI errors: "ok",
 * "strategy_error" (RE: non-zero exit; the caller refines it from the
 * host's error frame), "crashed" (SG), "timeout", "memory_limit",
 * "forbidden_syscall", "output_limit", "internal" (XX).
 */
const char *sbx_status_code(enum sbx_status s);

/*
 * Start a strategy host as `spec` says. Returns 0 and fills *run, or -1 with
 * a message in err (errlen bytes). The host is ready to read frames.
 */
int sbx_start(const struct sbx_spec *spec, struct sbx_run *run, char *err, size_t errlen);

/*
 * Start a confined host only if it costs no more than a fork: on an idle
 * zygote helper of the spec's own kind, and only while another idle one of
 * that kind stays for the next sbx_start (which would otherwise start a new
 * interpreter). Never starts a helper, never falls back. For work that may
 * run alongside the caller's other host (the audit's cuts) and otherwise
 * waits its turn. 0, or -1 with a message in err (no such helper now).
 */
int sbx_start_spare(const struct sbx_spec *spec, struct sbx_run *run, char *err, size_t errlen);

/*
 * Close the caller's ends, wait for the run to end (enforcing the limits the
 * whole time) and fill *v. Returns 0, or -1 if the verdict could not be read
 * (then v->status is SBX_XX).
 */
int sbx_finish(struct sbx_run *run, struct sbx_verdict *v);

/*
 * Start n zygote helpers of each kind now (up to $AGENTTEST_SANDBOX_ZYGOTES
 * per kind), so that the first confined runs do not pay the interpreter
 * and import start-up. Optional: sbx_start starts them on demand. Returns
 * 0 or -1 (err).
 */
int sbx_prestart(unsigned n, char *err, size_t errlen);
/* The same for one kind of zygote only. */
int sbx_prestart_kind(enum sbx_zygote kind, unsigned n, char *err, size_t errlen);

/*
 * Most zygote helpers a process may hold ($AGENTTEST_SANDBOX_ZYGOTES is
 * clamped to it): one per concurrent run (the runner's 64 slots) plus the
 * runner's code checks (at most 8).
 */
#define SBX_ZYGOTES_MAX 72

/* The zygote pool size in effect, per kind: $AGENTTEST_SANDBOX_ZYGOTES in [1, SBX_ZYGOTES_MAX], default 2. */
unsigned sbx_zygote_pool_size(void);

/* Kill the whole run now (cancellation; status SG, message "cancelled");
 * sbx_finish must still be called. */
void sbx_kill(struct sbx_run *run);

#endif

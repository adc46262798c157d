/*
 * helper_client.c: confined runs through the one-shot agenttest-sandbox
 * helper. The helper is the run's supervisor: it gets the caller's pipes as
 * its stdin, stdout and stderr and the verdict pipe as fd 3 (--meta-fd 3),
 * and runs `/usr/bin/python3 -E -s -B <hostdir>/agenttest_host` in the box.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "sandbox/sbx_client.h"
#include "sandbox/sbx_confine.h"
#include "sandbox/sbx_int.h"

#define MAX_ARGS 96

/* Append a formatted argument to argv (storage in pool). Returns 0 or -1. */
static int add_arg(char **argv, int *argc, char *pool, size_t *used, size_t cap, const char *fmt, ...)
	__attribute__((format(printf, 6, 7)));

static int add_arg(char **argv, int *argc, char *pool, size_t *used, size_t cap, const char *fmt, ...)
{
	if (*argc >= MAX_ARGS - 1 || *used >= cap)
		return -1;
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(pool + *used, cap - *used, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= cap - *used)
		return -1;
	argv[(*argc)++] = pool + *used;
	argv[*argc] = NULL;
	*used += (size_t)n + 1;
	return 0;
}

int sbx_helper_start(const struct sbx_spec *spec, struct sbx_run *run, char *err, size_t errlen)
{
	char helper[PATH_MAX], hostdir[PATH_MAX], pool[16384];
	char *argv[MAX_ARGS];
	int argc = 0, rc = 0;
	size_t used = 0;
	struct sbx_pipes p;
	struct sbx_limits l = spec->limits;
	sbx_limits_fill(&l);
	if (sbx_helper_path(helper, sizeof helper) < 0) {
		snprintf(err, errlen, "agenttest-sandbox helper not found (set AGENTTEST_SANDBOX_HELPER)");
		return -1;
	}
	if (sbx_host_dir(hostdir, sizeof hostdir) < 0) {
		snprintf(err, errlen, "strategy host directory not found (set AGENTTEST_HOST_DIR)");
		return -1;
	}
#define ARG(...) rc |= add_arg(argv, &argc, pool, &used, sizeof pool, __VA_ARGS__)
	ARG("%s", helper);
	ARG("--box=%u", spec->box_id);
	ARG("--cpu=%.3f", l.cpu_seconds);
	ARG("--wall=%.3f", l.wall_seconds);
	ARG("--mem=%llu", (unsigned long long)l.memory_bytes);
	ARG("--procs=%u", l.processes);
	ARG("--files=%u", l.open_files);
	ARG("--output=%llu", (unsigned long long)l.output_bytes);
	ARG("--meta-fd=3");
	if (spec->shm_fd > 2)
		ARG("--shm-fd=4");
	ARG("--bind=%s:%s", hostdir, SBX_BOX_HOST_DIR);
	for (int i = 0; spec->ro_binds && spec->ro_binds[i]; i++)
		ARG("--bind=%s", spec->ro_binds[i]);
	if (spec->rw_workdir)
		ARG("--workdir=%s", spec->rw_workdir);
	for (int i = 0; sbx_host_env[i]; i++)
		ARG("--env=%s", sbx_host_env[i]);
	ARG("--");
	ARG("%s", SBX_PYTHON);
	ARG("-E");
	ARG("-s");
	ARG("-B");
	ARG("%s/agenttest_host", SBX_BOX_HOST_DIR);
#undef ARG
	if (rc != 0) {
		snprintf(err, errlen, "helper command line too long");
		return -1;
	}
	if (sbx_pipes_open(&p) < 0) {
		snprintf(err, errlen, "pipe: %s", strerror(errno));
		return -1;
	}
	/* above the range the child's dup2 calls below touch */
	int shm = spec->shm_fd > 2 ? fcntl(spec->shm_fd, F_DUPFD_CLOEXEC, 10) : -1;
	if (spec->shm_fd > 2 && shm < 0) {
		snprintf(err, errlen, "shm fd: %s", strerror(errno));
		sbx_pipes_close(&p);
		return -1;
	}
	sigset_t old;
	sbx_sig_block_all(&old);
	pid_t pid = fork();
	if (pid != 0)
		sbx_sig_restore(&old);
	if (pid < 0) {
		if (shm >= 0)
			close(shm);
		snprintf(err, errlen, "fork: %s", strerror(errno));
		sbx_pipes_close(&p);
		return -1;
	}
	if (pid == 0) {
		/* the helper (and through its own death signal, the run) dies with
		 * the calling thread: no orphaned runs after a runner crash */
		sbx_sig_child_reset(true);
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0)
			_exit(2);
		if (dup2(p.in[0], 0) < 0 || dup2(p.out[1], 1) < 0 || dup2(p.log[1], 2) < 0 ||
		    dup2(p.verdict[1], 3) < 0 || (shm >= 0 && dup2(shm, 4) < 0))
			_exit(2);
		if (close_range(shm >= 0 ? 5 : 4, ~0u, 0) != 0)
			_exit(2);
		char *const envp[] = { NULL };
		execve(helper, argv, envp);
		_exit(2);
	}
	if (shm >= 0)
		close(shm);
	sbx_run_adopt(run, pid, &p);
	return 0;
}

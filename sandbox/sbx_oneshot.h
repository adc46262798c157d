/*
 * sbx_oneshot.h: one confined run of a program (oneshot.c), as the helper
 * binary performs it.
 */
#ifndef AGENTTEST_SBX_ONESHOT_H
#define AGENTTEST_SBX_ONESHOT_H

#include <stdbool.h>

#include "sandbox/sbx_confine.h"

struct sbx_oneshot {
	uint32_t box_id;
	struct sbx_limits limits;
	struct sbx_root_opts root;
	char *const *argv;      /* program (absolute path inside the box) and args */
	char *const *envp;      /* the complete environment */
	int  out_fd, err_fd;    /* where the program's stdout/stderr are relayed */
	bool no_cgroup;         /* rlimits only (tests, or no cgroup wanted) */
	bool seccomp_log;       /* debug: log violations and let them run */
	bool fresh_netns;       /* a network namespace of its own (slower) */
	bool agent;             /* --profile=agent: own netns with loopback up, agent policy */
	int  keep_fd;           /* > 3: stays open at that number in the program (--shm-fd) */
};

/* Run o->argv confined and supervised, filling *v. Returns 0 when the
 * program ran (whatever its verdict), -1 when the helper failed before it
 * could run it (err says why; v->warnings may hold notes). */
int sbx_oneshot_run(struct sbx_oneshot *o, struct sbx_verdict *v, char *err, size_t errlen);

#endif

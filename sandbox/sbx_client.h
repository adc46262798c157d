/*
 * sbx_client.h: private glue between the client-side files of the sandbox
 * library (client.c, helper_client.c, zygote_client.c).
 */
#ifndef AGENTTEST_SBX_CLIENT_H
#define AGENTTEST_SBX_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "sandbox/sandbox.h"

/* The caller's pipes of one run; [0] read end, [1] write end, -1 closed. */
struct sbx_pipes {
	int in[2];       /* caller -> host stdin */
	int out[2];      /* host stdout -> caller */
	int log[2];      /* host stderr -> caller */
	int verdict[2];  /* supervisor -> caller: the verdict record, then EOF */
};

/* Per-run state behind sbx_run.priv. */
struct sbx_run_priv {
	int verdict_fd;                     /* read end of the verdict pipe */
	void (*finish)(struct sbx_run *);   /* reap the supervisor; NULL: waitpid(run->pid) */
	void (*kill)(struct sbx_run *);     /* cancel; NULL: SIGTERM to run->pid */
	void *ext;                          /* mode-specific */
	bool ended_badly;                   /* no valid verdict arrived */
};

/* Open the four pipes (O_CLOEXEC). Returns 0, or -1 with all closed. */
int sbx_pipes_open(struct sbx_pipes *p);
/* Close every open end. */
void sbx_pipes_close(struct sbx_pipes *p);
/* Fill *run for supervisor `pid`: take the caller's ends out of *p and close
 * the supervisor's ends in this process. */
void sbx_run_adopt(struct sbx_run *run, pid_t pid, struct sbx_pipes *p);
/* Start a confined run through the agenttest-sandbox helper. 0 or -1. */
int sbx_helper_start(const struct sbx_spec *spec, struct sbx_run *run, char *err, size_t errlen);

/* Zygote path (zygote_client.c): false if AGENTTEST_SANDBOX_ZYGOTE=0. */
bool sbx_zygote_enabled(void);
/* Start a confined run on a pooled zygote helper. 0, or -1 (fall back).
 * With `spare`, only on an idle helper of the spec's own kind while another
 * idle one of that kind stays for other callers; never starts a helper. */
int sbx_zygote_start(const struct sbx_spec *spec, struct sbx_run *run, bool spare, char *err, size_t errlen);

#endif

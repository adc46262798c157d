/*
 * verdict_map: sandbox verdict -> run error, one table indexed by the
 * verdict status (verdict_map.h). Pure; unit-tested over every status in
 * tests/unit/runner/test_verdict_map.c.
 */
#include <signal.h>

#include "evaluator/runner/drive/verdict_map.h"

static const enum ev_err by_status[SBX_STATUS__MAX] = {
	[SBX_OK] = EV_OK,
	[SBX_RE] = EV_OK,
	[SBX_SG] = EV_CRASHED,
	[SBX_TO] = EV_TIMEOUT,
	[SBX_ML] = EV_MEMORY_LIMIT,
	[SBX_SY] = EV_FORBIDDEN_SYSCALL,
	[SBX_OL] = EV_OUTPUT_LIMIT,
	[SBX_XX] = EV_INTERNAL,
};
_Static_assert(SBX_XX + 1 == SBX_STATUS__MAX, "a new sandbox status needs its line in by_status");

enum ev_err verdict_map_error(const struct sbx_verdict *v)
{
	if ((unsigned)v->status >= SBX_STATUS__MAX)
		return EV_INTERNAL;
	/* RLIMIT_CPU's SIGXCPU is the CPU limit, whoever reported it as a signal */
	if (v->status == SBX_SG && v->exit_signal == SIGXCPU)
		return EV_TIMEOUT;
	return by_status[v->status];
}

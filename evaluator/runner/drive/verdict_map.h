/*
 * verdict_map.h: the one mapping from a sandbox verdict (sandbox/sandbox.h,
 * enum sbx_status) to the run error a user sees (evaluator/errors.h), used
 * by every driver (backtest.c, stream.c) and so by every job kind and the
 * CLI. docs/development.md, "Error codes", shows the table.
 */
#ifndef AGENTTEST_RUNNER_DRIVE_VERDICT_MAP_H
#define AGENTTEST_RUNNER_DRIVE_VERDICT_MAP_H

#include "evaluator/errors.h"
#include "sandbox/sandbox.h"

/*
 * The error the verdict v explains by itself: TO -> EV_TIMEOUT, ML ->
 * EV_MEMORY_LIMIT, SY -> EV_FORBIDDEN_SYSCALL, OL -> EV_OUTPUT_LIMIT, SG ->
 * EV_CRASHED except SIGXCPU (RLIMIT_CPU) -> EV_TIMEOUT, XX and any status
 * out of range -> EV_INTERNAL. OK and RE give EV_OK: a clean or non-zero
 * exit explains nothing on its own, the driver decides from what the host
 * answered (crashed when it ended without the answers).
 */
enum ev_err verdict_map_error(const struct sbx_verdict *v);

#endif

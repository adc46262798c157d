/*
 * errors: the one error enum of a backtest run, with the machine codes users,
 * agents and the API see (docs/development.md, "Error codes").
 *
 * Every failure of a run maps to exactly one of these; the enum is the
 * public error type of engine.h and of the runner's drivers
 * (evaluator/runner/drive/backtest.h, protocol.h), and the code
 * string is what goes into {"error","code","detail"}.
 */
#ifndef AGENTTEST_EVALUATOR_ERRORS_H
#define AGENTTEST_EVALUATOR_ERRORS_H

enum ev_err {
	EV_OK = 0,
	EV_BAD_OUTPUT,        /* the strategy's output broke its contract (length, NaN, first value, protocol) */
	EV_LOOKAHEAD,         /* the causality audit found output that depends on future bars */
	EV_STRATEGY_ERROR,    /* the strategy raised (or did not compile, or lacks the entry point) */
	EV_TIMEOUT,           /* CPU or wall-clock limit */
	EV_MEMORY_LIMIT,      /* memory limit */
	EV_FORBIDDEN_SYSCALL, /* the sandbox killed the host for a system call */
	EV_CRASHED,           /* the host died (signal, exit) without an answer */
	EV_OUTPUT_LIMIT,      /* the host tried to send more than the caps allow */
	EV_NON_FINITE_METRIC, /* a metric came out NaN or infinite */
	EV_RUNNER_LOST,       /* the runner executing the job disappeared */
	EV_INVALID_FIELD,     /* a caller-supplied input (params, options) is invalid */
	EV_DATASET,           /* the dataset could not be opened or is unusable */
	EV_INTERNAL,          /* a bug or an environment failure on the trusted side */
	EV_ERR__MAX
};

/* Machine code of e ("bad_output", ...); "internal" for out-of-range values. */
const char *ev_errcode(enum ev_err e);
/*
 * The error of an ERROR frame's `code` sent by the strategy host. What the
 * host says is untrusted: it is always the user's error (bad_output, else
 * strategy_error), never internal, timeout or memory_limit, which come only
 * from the trusted side's own observations (issue 11, item 4).
 */
enum ev_err ev_from_host_code(const char *code);
/* Short human description of e. */
const char *ev_strerror(enum ev_err e);

#endif

/* errors: machine codes and descriptions of enum ev_err (see errors.h). */
#include <string.h>

#include "evaluator/errors.h"

static const char *const ev_codes[EV_ERR__MAX] = {
	[EV_OK] = "ok",
	[EV_BAD_OUTPUT] = "bad_output",
	[EV_LOOKAHEAD] = "lookahead_detected",
	[EV_STRATEGY_ERROR] = "strategy_error",
	[EV_TIMEOUT] = "timeout",
	[EV_MEMORY_LIMIT] = "memory_limit",
	[EV_FORBIDDEN_SYSCALL] = "forbidden_syscall",
	[EV_CRASHED] = "crashed",
	[EV_OUTPUT_LIMIT] = "output_limit",
	[EV_NON_FINITE_METRIC] = "non_finite_metric",
	[EV_RUNNER_LOST] = "runner_lost",
	[EV_INVALID_FIELD] = "invalid_field",
	[EV_DATASET] = "dataset_error",
	[EV_INTERNAL] = "internal",
};

static const char *const ev_texts[EV_ERR__MAX] = {
	[EV_OK] = "success",
	[EV_BAD_OUTPUT] = "the strategy's output violates its contract",
	[EV_LOOKAHEAD] = "the strategy's past output changes when future bars are removed",
	[EV_STRATEGY_ERROR] = "the strategy raised an exception",
	[EV_TIMEOUT] = "the strategy exceeded its time limit",
	[EV_MEMORY_LIMIT] = "the strategy exceeded its memory limit",
	[EV_FORBIDDEN_SYSCALL] = "the strategy made a forbidden system call",
	[EV_CRASHED] = "the strategy host died without an answer",
	[EV_OUTPUT_LIMIT] = "the strategy host exceeded its output limit",
	[EV_NON_FINITE_METRIC] = "a metric is not finite",
	[EV_RUNNER_LOST] = "the runner executing the job was lost",
	[EV_INVALID_FIELD] = "an input field is invalid",
	[EV_DATASET] = "the dataset cannot be used",
	[EV_INTERNAL] = "internal error",
};

const char *ev_errcode(enum ev_err e)
{
	if ((unsigned)e >= EV_ERR__MAX)
		return "internal";
	return ev_codes[e];
}

const char *ev_strerror(enum ev_err e)
{
	if ((unsigned)e >= EV_ERR__MAX)
		return "internal error";
	return ev_texts[e];
}

enum ev_err ev_from_host_code(const char *code)
{
	return code && strcmp(code, "bad_output") == 0 ? EV_BAD_OUTPUT : EV_STRATEGY_ERROR;
}

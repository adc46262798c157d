/*
 * forward.h: forward scores (issue 18, docs/forward-scores.md), the pure
 * policy (forward_policy.c, unit-tested) and the job kind's environment
 * (forward_job.c).
 *
 * A forward score rescores a completed evaluation or agent iteration of a
 * refreshed window on the bars that arrived after it was submitted: the
 * same walk-forward evaluation (stream_evaluate, in the sandbox) over the
 * window's newest version, with the holdout being exactly those bars.
 */
#ifndef AGENTTEST_RUNNER_FORWARD_H
#define AGENTTEST_RUNNER_FORWARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "evaluator/challenges/challenges.h"

#define FWD_BATCH_MAX        256          /* subjects one job scores; more: the job queues the next one */
#define FWD_FINAL_MINUTES_MAX 10000000L   /* AGENTTEST_FORWARD_FINAL_MINUTES upper bound (about 19 years) */

/* The forward job kind's environment (main.c). */
struct forward_env {
	long final_minutes;   /* AGENTTEST_FORWARD_FINAL_MINUTES: > 0 overrides every challenge's period */
};

enum fwd_state { FWD_PROVISIONAL, FWD_FINAL };

/*
 * Days of forward data after which the challenge's forward score is final
 * (the table in docs/forward-scores.md): about two holdout windows of the
 * challenge's walk-forward grid, more for the event-driven and funding
 * challenges whose samples are sparse. override_minutes > 0 replaces the
 * table for every challenge. def NULL: the longest period of the table.
 */
double forward_final_days(const struct ch_def *def, long override_minutes);

/* "provisional" / "final". */
const char *forward_state_name(enum fwd_state s);

/* FWD_FINAL once `bars` bars of interval_ms cover final_days, else FWD_PROVISIONAL. */
enum fwd_state forward_state(size_t bars, int64_t interval_ms, double final_days);

/*
 * How many of the n ascending timestamps ts lie after cutoff (binary
 * search): the forward bars at the end of a series.
 */
size_t forward_bars_after(const int64_t *ts, size_t n, int64_t cutoff);

/*
 * The primary metric of a result dictionary (mean_auc, direct_log_loss,
 * mean_balanced_accuracy or mean_spearman, the first present): its name in
 * *name (NULL when none is present) and value; true when it is a finite
 * number. Shared by evaluations and forward scores.
 */
bool policy_primary_metric(json_object *res, const char **name, double *v);

#endif

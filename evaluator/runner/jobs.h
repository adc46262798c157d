/*
 * jobs.h: the job kinds this runner serves (jobq.h explains how to add one).
 * main.c hands them to the queue in claim priority: runs, then evaluations.
 */
#ifndef AGENTTEST_RUNNER_JOBS_H
#define AGENTTEST_RUNNER_JOBS_H

#include "evaluator/runner/jobq.h"

/* Backtest runs, table `runs` (run_job.c); env: a struct job_env (runner.h). */
extern const struct job_kind run_kind;

/* Challenge evaluations, table `evaluations` (eval_job.c); env: unused (NULL). */
extern const struct job_kind eval_kind;

#endif

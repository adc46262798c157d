/*
 * jobs.h: the job kinds this runner serves (jobq.h explains how to add one).
 * main.c hands them to the queue in claim priority: runs, evaluations,
 * prefetches, agent iterations, then forward scores.
 */
#ifndef AGENTTEST_RUNNER_JOBS_H
#define AGENTTEST_RUNNER_JOBS_H

#include "evaluator/runner/jobq.h"

/* Backtest runs, table `runs` (run_job.c); env: a struct job_env (runner.h). */
extern const struct job_kind run_kind;

/* Challenge evaluations, table `evaluations` (eval_job.c); env: unused (NULL). */
extern const struct job_kind eval_kind;

/* Market-data prefetches, table `data_prefetches` (prefetch_job.c); env: a struct prefetch_env. */
struct prefetch_env {
	const char *db_url;       /* DATABASE_URL: the job's own progress connection */
	const char *data_dir;     /* MANTIS_DATA_DIR: where versions and labels live */
	const char *binance_url;  /* BINANCE_API_URL, or NULL: the ping-and-fallback list */
	const char *binance_urls; /* BINANCE_API_URLS: that list (comma-separated), or NULL: the original's */
	long        keep_versions;/* MANTIS_DATA_KEEP_VERSIONS: versions of a window kept (1..1000) */
	const char *secret_file;  /* AGENTTEST_SECRET_FILE: opens the CoinGlass key of the secret store */
	const char *coinglass_url;/* COINGLASS_API_URL, or NULL: https://open-api-v4.coinglass.com */
	long        backoff_ms;   /* MANTIS_FETCH_BACKOFF_MS: first retry back-off of the fetcher (0: its default) */
};
extern const struct job_kind prefetch_kind;
/* Agent iterations, table `agent_iterations` (agent_job.c); env: a struct agent_env (agent.h). */
extern const struct job_kind agent_kind;
/* Paper trading of a label's default, table `paper_steps` (paper_job.c); env: a struct job_env (runner.h). */
extern const struct job_kind paper_kind;

/* Forward scores, table `forward_jobs` (forward_job.c, issue 18); env: a struct forward_env (forward.h). */
extern const struct job_kind forward_kind;
/*
 * Queue a forward-score job for window `window` unless one is queued already
 * (the queued one will score on the newest version anyway). Called inside the
 * prefetch job's finishing transaction when it moves the window's label. 0 or -1.
 */
int forward_enqueue(struct db *db, const char *window, struct buf *err);

#endif

/*
 * cancel: killing the sandbox of a running job from another thread.
 *
 * Theory of operation. bt_run and stream_evaluate hand the running host to
 * their caller through the `on_host` hook of their requests
 * (evaluator/runner/drive/backtest.h, evaluator/runner/drive/stream.h): job_on_host(ctl, run, 1) is
 * called once a sandbox has started and job_on_host(ctl, run, 0) just
 * before sbx_finish releases it. A job may hold up to JOB_CTL_RUNS hosts
 * at once (the audit runs two cuts side by side). It registers the run in
 * the slot's job_ctl under the job_ctl's mutex; job_cancel() takes the
 * same mutex and kills every registered run, so a kill never reaches a
 * released run. A cancel that arrives before the sandbox exists kills it as soon as
 * it is registered (the run then ends at once with the verdict of a killed
 * host, which the job overrides with `cancelled`).
 *
 * Progress. The same handle carries how far the job is (job_progress, the
 * on_progress hook of stream_request): two relaxed atomic stores per step
 * from the slot's thread, read by the main thread's heartbeat
 * (job_progress_get), which writes them with the lease renewal. total is
 * stored before any done of a job, so a reader never sees done > total.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "evaluator/runner/runner.h"
#include "sandbox/sandbox.h"
#include "xalloc.h"

/* Hosts one job may run at once (backtest.h: the full run or two cuts). */
#define JOB_CTL_RUNS 4

struct job_ctl {
	pthread_mutex_t mu;
	struct sbx_run *runs[JOB_CTL_RUNS]; /* registered sandboxes (NULL: free entry) */
	bool            cancel;
	bool            hand_back;
	atomic_ullong   done, total;  /* progress of the current job; total 0: none reported */
};

struct job_ctl *job_ctl_new(void)
{
	struct job_ctl *ctl = xcalloc(1, sizeof *ctl);
	pthread_mutex_init(&ctl->mu, NULL);
	return ctl;
}

void job_ctl_free(struct job_ctl *ctl)
{
	if (!ctl)
		return;
	pthread_mutex_destroy(&ctl->mu);
	free(ctl);
}

void job_cancel(struct job_ctl *ctl, bool hand_back)
{
	pthread_mutex_lock(&ctl->mu);
	if (!ctl->cancel)
		ctl->hand_back = hand_back;
	ctl->cancel = true;
	for (int i = 0; i < JOB_CTL_RUNS; i++)
		if (ctl->runs[i])
			sbx_kill(ctl->runs[i]);
	pthread_mutex_unlock(&ctl->mu);
}

bool job_cancelled(struct job_ctl *ctl, bool *hand_back)
{
	pthread_mutex_lock(&ctl->mu);
	bool c = ctl->cancel;
	if (hand_back)
		*hand_back = ctl->hand_back;
	pthread_mutex_unlock(&ctl->mu);
	return c;
}

void job_ctl_reset(struct job_ctl *ctl)
{
	pthread_mutex_lock(&ctl->mu);
	ctl->cancel = false;
	ctl->hand_back = false;
	for (int i = 0; i < JOB_CTL_RUNS; i++)
		ctl->runs[i] = NULL;
	pthread_mutex_unlock(&ctl->mu);
	atomic_store_explicit(&ctl->total, 0, memory_order_relaxed);
	atomic_store_explicit(&ctl->done, 0, memory_order_relaxed);
}

void job_progress(void *arg, size_t done, size_t total)
{
	struct job_ctl *ctl = arg;
	atomic_store_explicit(&ctl->total, total, memory_order_relaxed);
	atomic_store_explicit(&ctl->done, done, memory_order_release);
}

bool job_progress_get(struct job_ctl *ctl, unsigned long long *done, unsigned long long *total)
{
	*done = atomic_load_explicit(&ctl->done, memory_order_acquire);
	*total = atomic_load_explicit(&ctl->total, memory_order_relaxed);
	if (*done > *total)
		*done = *total;
	return *total > 0;
}

void job_on_host(void *arg, struct sbx_run *run, int live)
{
	struct job_ctl *ctl = arg;
	pthread_mutex_lock(&ctl->mu);
	int i = 0;
	while (i < JOB_CTL_RUNS && ctl->runs[i] != (live ? NULL : run))
		i++;
	if (i < JOB_CTL_RUNS)
		ctl->runs[i] = live ? run : NULL;
	/* a host beyond JOB_CTL_RUNS (a caller bug) is still killed when the
	 * job was already cancelled, only not by a later cancel */
	if (live && ctl->cancel)
		sbx_kill(run);
	pthread_mutex_unlock(&ctl->mu);
}

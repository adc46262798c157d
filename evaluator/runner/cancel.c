/*
 * cancel: killing the sandbox of a running job from another thread.
 *
 * Theory of operation. bt_run and stream_evaluate hand the running host to
 * their caller through the `on_host` hook of their requests
 * (evaluator/runner/drive/backtest.h, evaluator/runner/drive/stream.h): job_on_host(ctl, run) is
 * called once the sandbox has started and job_on_host(ctl, NULL) just
 * before sbx_finish releases it. It registers the run in the slot's
 * job_ctl under the job_ctl's mutex; job_cancel() takes the same mutex and,
 * if a run is registered, kills it, so a kill never reaches a released
 * run. A cancel that arrives before the sandbox exists kills it as soon as
 * it is registered (the run then ends at once with the verdict of a killed
 * host, which the job overrides with `cancelled`).
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "evaluator/runner/runner.h"
#include "sandbox/sandbox.h"
#include "xalloc.h"

struct job_ctl {
	pthread_mutex_t mu;
	struct sbx_run *run;       /* registered sandbox, or NULL */
	bool            cancel;
	bool            hand_back;
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
	if (ctl->run)
		sbx_kill(ctl->run);
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
	ctl->run = NULL;
	pthread_mutex_unlock(&ctl->mu);
}

void job_on_host(void *arg, struct sbx_run *run)
{
	struct job_ctl *ctl = arg;
	pthread_mutex_lock(&ctl->mu);
	ctl->run = run;
	if (run && ctl->cancel)
		sbx_kill(run);
	pthread_mutex_unlock(&ctl->mu);
}

/*
 * cancel: killing the sandbox of a running job from another thread.
 *
 * Theory of operation. bt_run (evaluator/backtest.h) starts and finishes its
 * sandbox internally and does not hand the struct sbx_run to its caller, so
 * the runner cannot call sbx_kill() on it directly. The runner binary is
 * therefore linked with `-Wl,--wrap=sbx_start,--wrap=sbx_finish` (see
 * evaluator/module.mk): every sbx_start made by a slot thread registers the
 * run in that slot's job_ctl (found through a thread-local pointer), and
 * sbx_finish unregisters it before the real finish releases it. job_cancel()
 * takes the job_ctl's mutex and, if a run is registered, kills it; a cancel
 * that arrives before the sandbox exists makes the next sbx_start fail with
 * "cancelled" so bt_run returns at once. sbx_start and sbx_kill are also
 * serialised by one process-wide mutex, because the zygote's control
 * channel is shared by every slot.
 *
 * The clean interface would be a cancel hook in struct bt_request; this file
 * goes away when backtest.h gets one.
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

static pthread_mutex_t sbx_mu = PTHREAD_MUTEX_INITIALIZER;
static __thread struct job_ctl *tls_ctl;

int __real_sbx_start(const struct sbx_spec *spec, struct sbx_run *run, char *err, size_t errlen);
int __real_sbx_finish(struct sbx_run *run, struct sbx_verdict *v);
int __wrap_sbx_start(const struct sbx_spec *spec, struct sbx_run *run, char *err, size_t errlen);
int __wrap_sbx_finish(struct sbx_run *run, struct sbx_verdict *v);

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

/* Make ctl the job_ctl of the calling thread (NULL: none). */
void job_ctl_bind(struct job_ctl *ctl)
{
	tls_ctl = ctl;
}

void job_cancel(struct job_ctl *ctl, bool hand_back)
{
	pthread_mutex_lock(&ctl->mu);
	if (!ctl->cancel)
		ctl->hand_back = hand_back;
	ctl->cancel = true;
	if (ctl->run) {
		pthread_mutex_lock(&sbx_mu);
		sbx_kill(ctl->run);
		pthread_mutex_unlock(&sbx_mu);
	}
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

int __wrap_sbx_start(const struct sbx_spec *spec, struct sbx_run *run, char *err, size_t errlen)
{
	struct job_ctl *ctl = tls_ctl;
	if (!ctl) {
		pthread_mutex_lock(&sbx_mu);
		int rc = __real_sbx_start(spec, run, err, errlen);
		pthread_mutex_unlock(&sbx_mu);
		return rc;
	}
	pthread_mutex_lock(&ctl->mu);
	if (ctl->cancel) {
		pthread_mutex_unlock(&ctl->mu);
		snprintf(err, errlen, "cancelled");
		return -1;
	}
	pthread_mutex_lock(&sbx_mu);
	int rc = __real_sbx_start(spec, run, err, errlen);
	pthread_mutex_unlock(&sbx_mu);
	if (rc == 0)
		ctl->run = run;
	pthread_mutex_unlock(&ctl->mu);
	return rc;
}

int __wrap_sbx_finish(struct sbx_run *run, struct sbx_verdict *v)
{
	struct job_ctl *ctl = tls_ctl;
	if (ctl) {
		pthread_mutex_lock(&ctl->mu);
		if (ctl->run == run)
			ctl->run = NULL;
		pthread_mutex_unlock(&ctl->mu);
	}
	return __real_sbx_finish(run, v);
}

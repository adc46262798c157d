/*
 * sigreset: the signal state of the processes the sandbox creates.
 *
 * Theory of operation. A fork or clone inherits the calling thread's
 * blocked-signal mask, and an exec keeps both the mask and every ignored
 * disposition. The library's callers (the runner's slot threads, the CLI,
 * tests) may block SIGTERM, SIGCHLD and others in the thread that starts a
 * run, or ignore SIGCHLD: a supervisor inheriting that would never see the
 * SIGTERM that cancels a run, and wait4 would find no child. So:
 *   - before fork the caller blocks every signal (sbx_sig_block_all), so no
 *     handler of the caller ever runs in the child, and restores its own
 *     mask right after (sbx_sig_restore);
 *   - the child first sets every disposition back to SIG_DFL and the mask
 *     to exactly what it needs (sbx_sig_child_reset): empty before the exec
 *     of a strategy host, SIGTERM and SIGINT only for a helper or
 *     supervisor, which unblocks them once its handlers are installed
 *     (sbx_supervise_signals), so a cancellation that arrives during its
 *     start-up is delivered then instead of killing it without a verdict.
 */
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <string.h>

#include "sandbox/sbx_int.h"

void sbx_sig_block_all(sigset_t *old)
{
	sigset_t all;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, old);
}

void sbx_sig_restore(const sigset_t *old)
{
	pthread_sigmask(SIG_SETMASK, old, NULL);
}

void sbx_sig_child_reset(bool keep_cancel_blocked)
{
	struct sigaction dfl;
	memset(&dfl, 0, sizeof dfl);
	dfl.sa_handler = SIG_DFL;
	sigemptyset(&dfl.sa_mask);
	for (int s = 1; s < NSIG; s++)
		if (s != SIGKILL && s != SIGSTOP)
			(void)sigaction(s, &dfl, NULL);   /* EINVAL for the C library's own: fine */
	sigset_t m;
	sigemptyset(&m);
	if (keep_cancel_blocked) {
		sigaddset(&m, SIGTERM);
		sigaddset(&m, SIGINT);
	}
	sigprocmask(SIG_SETMASK, &m, NULL);
}

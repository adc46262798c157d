/*
 * box_lease.h: box numbers allocated on the machine, never derived.
 *
 * A box number selects the run's uid/gid (60000 + N) and cgroup, and the
 * kernel counts RLIMIT_NPROC per uid on the whole machine, so two runs that
 * overlap must never share a number, whichever process started them (a
 * runner's slots, the check service's workers, a CLI backtest, an agent's
 * turn, two stacks on one host). Every such process leases its numbers
 * here: number N is held by an exclusive flock on <dir>/N.lock, taken with
 * LOCK_NB in increasing order from 1, so the first free number wins and a
 * lease ends when its descriptor is closed, including when the holder dies
 * by SIGKILL (the kernel drops the lock). The agent loop's Python side
 * (evaluator/runner/agentloop/sandbox_profile.py) leases from the same
 * directory the same way.
 *
 * The directory is $AGENTTEST_BOX_DIR, else /run/agenttest-boxes for root
 * (mode 0700: box users cannot reach it), else /tmp/agenttest-boxes-<euid>
 * for an unprivileged caller (trusted runs, tests).
 */
#ifndef AGENTTEST_SANDBOX_BOX_LEASE_H
#define AGENTTEST_SANDBOX_BOX_LEASE_H

#include <stddef.h>
#include <stdint.h>

struct sbx_box_lease {
	int      fd;       /* the locked file, -1 when not held */
	uint32_t box_id;   /* 1..SBX_BOX_MAX while held */
};

#define SBX_BOX_LEASE_INIT { -1, 0 }

/*
 * Lease the lowest free box number. Returns 0 and fills *l, or -1 with a
 * message in err (directory unusable, every number taken). The descriptor
 * is close-on-exec: a sandboxed child never holds the lock.
 */
int sbx_box_acquire(struct sbx_box_lease *l, char *err, size_t errlen);

/* End a lease (closing its lock); a no-op for one not held. */
void sbx_box_release(struct sbx_box_lease *l);

/* The lease directory in use (for logs and docs); never NULL. */
const char *sbx_box_dir(void);

#endif

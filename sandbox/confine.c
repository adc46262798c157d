/*
 * confine.c: the last confinement steps of a run's process, identical for
 * the one-shot helper (just before execve) and the zygote (just before the
 * host's serve loop), in the order of CONVENTIONS item 2: hostname,
 * rlimits, credentials (then a check that root cannot be regained),
 * NO_NEW_PRIVS, parent-death signal and non-dumpable, descriptors, and
 * seccomp last. After seccomp the listener is handed to the supervisor
 * (sbx_sync_parent) and closed here, so the confined code can never answer
 * its own notifications.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/seccomp.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/sysinfo.h>
#include <unistd.h>
#include <grp.h>

#include "sandbox/sbx_confine.h"
#include "sandbox/sbx_int.h"

void sbx_child_die(int sync_fd, const char *fmt, ...)
{
	struct sbx_sync_msg m;
	memset(&m, 0, sizeof m);
	m.kind = SBX_SYNC_ERROR;
	m.listener = -1;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(m.text, sizeof m.text, fmt, ap);
	va_end(ap);
	if (sync_fd >= 0 && write(sync_fd, &m, sizeof m) < 0)
		_exit(2);
	_exit(2);
}

/* Set one rlimit (soft = hard = v unless hard given). */
static bool set_limit(int res, rlim_t soft, rlim_t hard, char *err, size_t errlen, const char *name)
{
	struct rlimit rl = { soft, hard };
	if (setrlimit(res, &rl) < 0) {
		snprintf(err, errlen, "setrlimit %s: %s", name, strerror(errno));
		return false;
	}
	return true;
}

/*
 * RLIMIT_AS of a run. With a cgroup, the cgroup is the memory limit: an
 * allocation the machine could hold must reach it, so that exceeding the
 * limit ends in the cgroup's OOM kill (verdict ML, the sandbox's own
 * observation) and never in a MemoryError inside the box, which the host
 * could also raise at will and so cannot be taken as a verdict. The address
 * space then only stops mappings larger than the machine (RAM + swap, at
 * least 4 x the limit + 1 GiB). Without a cgroup it is the limit itself.
 */
static rlim_t as_limit(const struct sbx_final *f)
{
	const struct sbx_limits *l = &f->limits;
	if (!f->has_cgroup)
		return (rlim_t)l->memory_bytes + (128ull << 20);
	rlim_t as = (rlim_t)l->memory_bytes * 4 + (1ull << 30);
	struct sysinfo si;
	if (sysinfo(&si) == 0) {
		unsigned long long machine = ((unsigned long long)si.totalram + si.totalswap) * si.mem_unit;
		if (machine > as)
			as = (rlim_t)machine;
	}
	return as;
}

/* Address space, CPU, file size, files, processes, core, stack, memlock. */
static bool limits(const struct sbx_final *f, char *err, size_t errlen)
{
	const struct sbx_limits *l = &f->limits;
	rlim_t as = as_limit(f);
	rlim_t cpu = (rlim_t)ceil(l->cpu_seconds);
	rlim_t fsize = f->writable ? (rlim_t)l->output_bytes : 0;
	return set_limit(RLIMIT_AS, as, as, err, errlen, "AS") &&
	       set_limit(RLIMIT_CPU, cpu, cpu + 1, err, errlen, "CPU") &&
	       set_limit(RLIMIT_FSIZE, fsize, fsize, err, errlen, "FSIZE") &&
	       set_limit(RLIMIT_NOFILE, l->open_files, l->open_files, err, errlen, "NOFILE") &&
	       set_limit(RLIMIT_NPROC, l->processes, l->processes, err, errlen, "NPROC") &&
	       set_limit(RLIMIT_CORE, 0, 0, err, errlen, "CORE") &&
	       set_limit(RLIMIT_STACK, 8u << 20, 8u << 20, err, errlen, "STACK") &&
	       set_limit(RLIMIT_MEMLOCK, 0, 0, err, errlen, "MEMLOCK") &&
	       set_limit(RLIMIT_MSGQUEUE, 0, 0, err, errlen, "MSGQUEUE");
}

/* Drop to the box user and prove that root cannot come back. */
static bool credentials(uint32_t box, char *err, size_t errlen)
{
	uid_t u = SBX_UID_BASE + box;
	gid_t g = SBX_UID_BASE + box;
	if (setgroups(0, NULL) < 0 || setresgid(g, g, g) < 0 || setresuid(u, u, u) < 0) {
		snprintf(err, errlen, "dropping privileges: %s", strerror(errno));
		return false;
	}
	uid_t r, e, s;
	gid_t gr, ge, gs;
	if (getresuid(&r, &e, &s) < 0 || getresgid(&gr, &ge, &gs) < 0 ||
	    r != u || e != u || s != u || gr != g || ge != g || gs != g ||
	    getgroups(0, NULL) != 0) {
		snprintf(err, errlen, "credentials did not change");
		return false;
	}
	if (setuid(0) == 0 || seteuid(0) == 0 || setgid(0) == 0) {
		snprintf(err, errlen, "root could be regained");
		return false;
	}
	return true;
}

/* Make fd become `target`, clearing close-on-exec. */
static bool place_fd(int fd, int target, char *err, size_t errlen)
{
	if (fd == target)
		return fcntl(fd, F_SETFD, 0) == 0;
	if (dup2(fd, target) < 0) {
		snprintf(err, errlen, "dup2: %s", strerror(errno));
		return false;
	}
	return true;
}

/*
 * Close every descriptor >= 3 except keep_a, keep_b and keep_c (-1: none).
 * false with a message if close_range fails: the zygote path never execs,
 * so O_CLOEXEC is no backstop and a leaked descriptor would reach the
 * strategy; the caller then aborts the setup.
 */
static bool close_others(int keep_a, int keep_b, int keep_c, char *err, size_t errlen)
{
	int k[3] = { keep_a, keep_b, keep_c }, next = 3;
	for (int i = 0; i < 3; i++)  /* sort the three */
		for (int j = i + 1; j < 3; j++)
			if (k[j] < k[i]) {
				int x = k[i];
				k[i] = k[j];
				k[j] = x;
			}
	for (int i = 0; i < 3; i++) {
		if (k[i] < next)
			continue;
		if (k[i] > next && close_range((unsigned)next, (unsigned)k[i] - 1, 0) != 0)
			goto fail;
		next = k[i] + 1;
	}
	if (close_range((unsigned)next, ~0u, 0) == 0)
		return true;
fail:
	snprintf(err, errlen, "close_range: %s", strerror(errno));
	return false;
}

/* Descriptors: in/out/err become 0/1/2; only sync and ack stay besides. */
static bool descriptors(const struct sbx_final *f, char *err, size_t errlen)
{
	/* move sync/ack above the 0-2 range first so dup2 cannot clobber them */
	int in = f->fd_in, out = f->fd_out, er = f->fd_err;
	if (in < 3 && in != 0) in = fcntl(in, F_DUPFD_CLOEXEC, 3);
	if (out < 3 && out != 1) out = fcntl(out, F_DUPFD_CLOEXEC, 3);
	if (er < 3 && er != 2) er = fcntl(er, F_DUPFD_CLOEXEC, 3);
	if (in < 0 || out < 0 || er < 0 || f->sync_fd < 3 || f->ack_fd < 3) {
		snprintf(err, errlen, "bad descriptors");
		return false;
	}
	if (!place_fd(in, 0, err, errlen) || !place_fd(out, 1, err, errlen) ||
	    !place_fd(er, 2, err, errlen))
		return false;
	if (!close_others(f->sync_fd, f->ack_fd, f->keep_fd > 3 ? f->keep_fd : -1, err, errlen))
		return false;
	if (f->keep_fd > 3 && fcntl(f->keep_fd, F_SETFD, 0) < 0) {
		snprintf(err, errlen, "keep fd %d: %s", f->keep_fd, strerror(errno));
		return false;
	}
	return true;
}

/* Load the filter; returns the listener fd, 0 without one, -1 on error. */
static int load_seccomp(const struct sbx_bpf *b)
{
	struct sock_fprog prog = { .len = b->len, .filter = b->ins };
	unsigned flags = b->notify ? SECCOMP_FILTER_FLAG_NEW_LISTENER : 0;
	long r = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, flags, &prog);
	if (r < 0)
		return -1;
	return b->notify ? (int)r : 0;
}

bool sbx_confine_final(const struct sbx_final *f, char *err, size_t errlen)
{
	if (sethostname("box", 3) < 0) {
		snprintf(err, errlen, "sethostname: %s", strerror(errno));
		return false;
	}
	if (!limits(f, err, errlen) || !credentials(f->box_id, err, errlen))
		return false;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) != 1) {
		snprintf(err, errlen, "no_new_privs: %s", strerror(errno));
		return false;
	}
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || prctl(PR_SET_DUMPABLE, 0) < 0) {
		snprintf(err, errlen, "prctl: %s", strerror(errno));
		return false;
	}
	if (!descriptors(f, err, errlen))
		return false;
	int listener = load_seccomp(f->bpf);
	if (listener < 0) {
		snprintf(err, errlen, "seccomp: %s", strerror(errno));
		return false;
	}
	/* from here on only the allow-list works: write, read, close */
	struct sbx_sync_msg m;
	memset(&m, 0, sizeof m);
	m.kind = SBX_SYNC_READY;
	m.listener = f->bpf->notify ? listener : -1;
	char ack = 0;
	if (write(f->sync_fd, &m, sizeof m) != (ssize_t)sizeof m || read(f->ack_fd, &ack, 1) != 1 || ack != 'A') {
		snprintf(err, errlen, "supervisor hand-over failed");
		return false;
	}
	if (f->bpf->notify)
		close(listener);
	close(f->sync_fd);
	close(f->ack_fd);
	return true;
}

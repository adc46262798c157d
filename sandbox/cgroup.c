/*
 * cgroup.c: the per-run control group (memory, process count, CPU
 * accounting, whole-tree kill).
 *
 * Theory of operation. A run gets its own cgroup named
 * agenttest-<box>-<supervisor pid> below the supervisor's own cgroup (or
 * below $AGENTTEST_CGROUP_ROOT for cgroup v2). cgroup v2 is preferred when
 * its memory and pids controllers can be enabled for children: memory.max,
 * memory.swap.max=0, pids.max; CPU from cpu.stat, OOM kills from
 * memory.events, peak from memory.peak, kill with cgroup.kill. Otherwise the
 * v1 hierarchies are used (this is what many hosts still have):
 * memory.limit_in_bytes plus memory.memsw.limit_in_bytes when swap
 * accounting exists, pids.max, cpuacct.usage, oom_kill from
 * memory.oom_control, memory.max_usage_in_bytes; kill by SIGKILLing every
 * pid of cgroup.procs until it is empty (pids.max bounds a fork race). A
 * CPU quota (limits.cpu_quota, in CPUs) is cpu.max on v2 (the cpu
 * controller enabled for children like memory and pids) and, on v1, a
 * group of its own in the cpu hierarchy (cpu.cfs_period_us 100 ms,
 * cpu.cfs_quota_us), made only for runs that ask for one, so runs without
 * it cost no extra group; a quota that cannot be set fails the cgroup. If
 * neither works the caller is told why and runs on rlimits alone, with the
 * reason in the verdict's warnings. Empty run cgroups of supervisors that
 * were killed before they could clean up are removed by the next
 * supervisor's first run (each supervisor sweeps once).
 */
#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/xalloc.h"
#include "sandbox/sbx_int.h"

enum { CG_MEM, CG_PIDS, CG_CPU, CG__MAX };

enum { CG_FILES_MAX = 16 };

/* A control file of the group kept open (cg_fd): opening a cgroup file is
 * a path walk in the kernel's cgroup file system and costs far more than
 * reading it, and a helper reads and writes the same few files at every
 * child (a recycled group, zygote_sup.c, serves many). */
struct cg_file {
	const char *dir;            /* one of the group's directories */
	const char *name;           /* a string literal */
	int         flags;          /* O_RDONLY or O_WRONLY */
	int         fd;
};

struct sbx_cgroup {
	int  version;               /* 1 or 2 */
	char dir[CG__MAX][512];     /* v1: one dir per controller; v2: dir[0] */
	char quota_dir[512];        /* v1 cpu hierarchy group of a CPU quota, or "" */
	long long oom_base;         /* OOM kills counted before this use (a recycled group) */
	struct cg_file files[CG_FILES_MAX];
	int  nfiles;
};

enum { CG_QUOTA_PERIOD_US = 100000 };

/* A group still charged with more than this after its run is not recycled. */
#define CG_RECYCLE_MAX_CHARGE (4ull << 20)

/* The quota in microseconds of CPU per period, at least 1 ms (the kernel's floor). */
static long long quota_us(double cpus)
{
	long long q = (long long)(cpus * CG_QUOTA_PERIOD_US + 0.5);
	return q < 1000 ? 1000 : q;
}

static const char *const v1_ctrl[CG__MAX] = { "memory", "pids", "cpuacct" };

/* Write a string to dir/file. Returns 0 or -1. */
static int cg_write(const char *dir, const char *file, const char *val)
{
	char path[600];
	int n = snprintf(path, sizeof path, "%s/%s", dir, file);
	if (n < 0 || (size_t)n >= sizeof path)
		return -1;
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	size_t len = strlen(val);
	ssize_t w = write(fd, val, len);
	close(fd);
	return w == (ssize_t)len ? 0 : -1;
}

/* Read dir/file into buf (NUL-terminated). Returns bytes read or -1. */
static ssize_t cg_read(const char *dir, const char *file, char *buf, size_t len)
{
	char path[600];
	int n = snprintf(path, sizeof path, "%s/%s", dir, file);
	if (n < 0 || (size_t)n >= sizeof path || len == 0)
		return -1;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t r = read(fd, buf, len - 1);
	close(fd);
	if (r < 0)
		return -1;
	buf[r] = '\0';
	return r;
}

/* The value following `key ` in a "key value" line text, or -1. */
static long long keyed_value(const char *buf, const char *key)
{
	size_t kl = strlen(key);
	for (const char *line = buf; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL)
		if (strncmp(line, key, kl) == 0 && line[kl] == ' ')
			return strtoll(line + kl + 1, NULL, 10);
	return -1;
}

/* The descriptor of dir/name (dir one of cg's directories) opened with
 * flags, kept open with the group; -1 if it cannot be opened. *temp is
 * set when the table is full and the caller must close it after use. */
static int cg_fd(struct sbx_cgroup *cg, const char *dir, const char *name, int flags, bool *temp)
{
	*temp = false;
	for (int i = 0; i < cg->nfiles; i++)
		if (cg->files[i].dir == dir && cg->files[i].flags == flags && strcmp(cg->files[i].name, name) == 0)
			return cg->files[i].fd;
	char path[600];
	int n = snprintf(path, sizeof path, "%s/%s", dir, name);
	if (n < 0 || (size_t)n >= sizeof path)
		return -1;
	int fd = open(path, flags | O_CLOEXEC);
	if (fd >= 0 && cg->nfiles < CG_FILES_MAX)
		cg->files[cg->nfiles++] = (struct cg_file){ dir, name, flags, fd };
	else
		*temp = fd >= 0;
	return fd;
}

/* Close every kept descriptor of cg. */
static void cg_files_close(struct sbx_cgroup *cg)
{
	for (int i = 0; i < cg->nfiles; i++)
		close(cg->files[i].fd);
	cg->nfiles = 0;
}

/* Write val to the group's file dir/name. 0 or -1. */
static int cgf_write(struct sbx_cgroup *cg, const char *dir, const char *name, const char *val)
{
	bool temp;
	int fd = cg_fd(cg, dir, name, O_WRONLY, &temp);
	if (fd < 0)
		return -1;
	size_t len = strlen(val);
	ssize_t w = pwrite(fd, val, len, 0);
	if (temp)
		close(fd);
	return w == (ssize_t)len ? 0 : -1;
}

/* Read the group's file dir/name into buf (NUL-terminated) from its start.
 * Returns bytes read or -1. */
static ssize_t cgf_read(struct sbx_cgroup *cg, const char *dir, const char *name, char *buf, size_t len)
{
	bool temp = false;
	int fd = len ? cg_fd(cg, dir, name, O_RDONLY, &temp) : -1;
	if (fd < 0)
		return -1;
	ssize_t r = pread(fd, buf, len - 1, 0);
	if (temp)
		close(fd);
	if (r < 0)
		return -1;
	buf[r] = '\0';
	return r;
}

/* The value following `key ` in the group's file dir/name, or -1. */
static long long cgf_keyed(struct sbx_cgroup *cg, const char *dir, const char *name, const char *key)
{
	char buf[4096];
	return cgf_read(cg, dir, name, buf, sizeof buf) < 0 ? -1 : keyed_value(buf, key);
}

/* Our own path in the hierarchy whose /proc/self/cgroup entry matches ctrl
 * ("" for the v2 line), read from /proc/self/cgroup. Returns 0 or -1. */
static int self_path_read(const char *ctrl, char *out, size_t len)
{
	FILE *f = fopen("/proc/self/cgroup", "re");
	char line[1024];
	int rc = -1;
	if (!f)
		return -1;
	while (fgets(line, sizeof line, f)) {
		line[strcspn(line, "\n")] = '\0';
		char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		if (!c2)
			continue;
		*c2 = '\0';
		const char *ctrls = c1 + 1;
		bool match = false;
		if (*ctrl == '\0') {
			match = *ctrls == '\0';
		} else {
			char tmp[256];
			snprintf(tmp, sizeof tmp, ",%s,", ctrls);
			char want[64];
			snprintf(want, sizeof want, ",%s,", ctrl);
			match = strstr(tmp, want) != NULL;
		}
		if (match) {
			int n = snprintf(out, len, "%s", c2 + 1);
			rc = (n < 0 || (size_t)n >= len) ? -1 : 0;
			break;
		}
	}
	fclose(f);
	return rc;
}

/*
 * self_path_read, remembered per process: a supervisor (the zygote helper
 * creates a cgroup per run and per audit call) never moves itself, so its
 * own place in each hierarchy is read once, not at every create.
 */
static int self_path(const char *ctrl, char *out, size_t len)
{
	static struct { char ctrl[16]; char path[256]; pid_t pid; } memo[CG__MAX + 1];
	for (size_t i = 0; i < sizeof memo / sizeof memo[0]; i++) {
		if (memo[i].pid == getpid() && strcmp(memo[i].ctrl, ctrl) == 0) {
			int n = snprintf(out, len, "%s", memo[i].path);
			return (n < 0 || (size_t)n >= len) ? -1 : 0;
		}
		if (memo[i].pid != getpid()) {   /* a free slot (or a parent's, after fork) */
			if (self_path_read(ctrl, out, len) < 0)
				return -1;
			if (strlen(ctrl) < sizeof memo[i].ctrl && strlen(out) < sizeof memo[i].path) {
				snprintf(memo[i].ctrl, sizeof memo[i].ctrl, "%s", ctrl);
				snprintf(memo[i].path, sizeof memo[i].path, "%s", out);
				memo[i].pid = getpid();
			}
			return 0;
		}
	}
	return self_path_read(ctrl, out, len);
}

/* Build "<base><self>/agenttest-<box>-<pid>" into out. Returns 0 or -1. */
static int run_dir(const char *base, const char *self, uint32_t box, char *out, size_t len)
{
	int n = snprintf(out, len, "%s%s%sagenttest-%u-%d", base, self,
	                 self[strlen(self) - 1] == '/' ? "" : "/", box, (int)getpid());
	return (n < 0 || (size_t)n >= len) ? -1 : 0;
}

/* Remove empty run cgroups left in dir by supervisors that were killed
 * (their name ends in a pid that no longer exists). Best effort. Done once
 * per process and directory: the directory holds every supervisor's run
 * groups, and listing it (and probing each pid) at every create was a
 * per-run cost of the long-lived zygote helper; what a killed supervisor
 * leaves is removed when the next supervisor creates its first group. */
static void sweep_stale(const char *dir)
{
	static struct { char dir[512]; pid_t pid; } done[CG__MAX + 2];   /* + v2, + the v1 quota */
	size_t slot = sizeof done / sizeof done[0];
	for (size_t i = 0; i < sizeof done / sizeof done[0]; i++) {
		if (done[i].pid == getpid() && strcmp(done[i].dir, dir) == 0)
			return;
		if (done[i].pid != getpid() && slot == sizeof done / sizeof done[0])
			slot = i;
	}
	if (slot < sizeof done / sizeof done[0] && strlen(dir) < sizeof done[slot].dir) {
		snprintf(done[slot].dir, sizeof done[slot].dir, "%s", dir);
		done[slot].pid = getpid();
	}
	DIR *d = opendir(dir);
	struct dirent *e;
	if (!d)
		return;
	while ((e = readdir(d))) {
		unsigned box;
		int pid, used = 0;
		if (sscanf(e->d_name, "agenttest-%u-%d%n", &box, &pid, &used) != 2 ||
		    e->d_name[used] != '\0' || pid <= 0 || pid == getpid())
			continue;
		if (kill((pid_t)pid, 0) == 0 || errno != ESRCH)
			continue;
		char path[700];
		if (snprintf(path, sizeof path, "%s/%s", dir, e->d_name) < (int)sizeof path)
			rmdir(path);   /* fails harmlessly if it still holds processes */
	}
	closedir(d);
}

/* Try cgroup v2. Returns 0 with cg filled, -2 if there is no v2 hierarchy
 * where we are, or -1. */
static int try_v2(struct sbx_cgroup *cg, uint32_t box, const struct sbx_limits *l)
{
	char parent[400], self[256] = "/", buf[256];
	const char *root = getenv("AGENTTEST_CGROUP_ROOT");
	if (root && *root) {
		snprintf(parent, sizeof parent, "%s", root);
	} else {
		const char *mnt = access("/sys/fs/cgroup/unified/cgroup.controllers", F_OK) == 0 ?
			"/sys/fs/cgroup/unified" : "/sys/fs/cgroup";
		if (self_path("", self, sizeof self) < 0)
			return -1;
		int n = snprintf(parent, sizeof parent, "%s%s", mnt, strcmp(self, "/") == 0 ? "" : self);
		if (n < 0 || (size_t)n >= sizeof parent)
			return -1;
	}
	bool quota = l->cpu_quota > 0;
	if (cg_read(parent, "cgroup.controllers", buf, sizeof buf) < 0)
		return -2;   /* no v2 hierarchy here at all */
	if (!strstr(buf, "memory") || !strstr(buf, "pids") || (quota && !strstr(buf, "cpu ") && !strstr(buf, "cpu\n")))
		return -1;
	cg_read(parent, "cgroup.subtree_control", buf, sizeof buf);
	if ((!strstr(buf, "memory") || !strstr(buf, "pids")) &&
	    cg_write(parent, "cgroup.subtree_control", "+memory +pids") < 0)
		return -1;
	if (quota && cg_write(parent, "cgroup.subtree_control", "+cpu") < 0)
		return -1;
	sweep_stale(parent);
	if (run_dir(parent, "/", box, cg->dir[0], sizeof cg->dir[0]) < 0)
		return -1;
	if (mkdir(cg->dir[0], 0755) < 0 && errno != EEXIST)
		return -1;
	char v[32];
	snprintf(v, sizeof v, "%" PRIu64, l->memory_bytes);
	if (cg_write(cg->dir[0], "memory.max", v) < 0)
		goto fail;
	cg_write(cg->dir[0], "memory.swap.max", "0"); /* absent without swap accounting */
	snprintf(v, sizeof v, "%u", l->processes);
	if (cg_write(cg->dir[0], "pids.max", v) < 0)
		goto fail;
	snprintf(v, sizeof v, "%lld %d", quota_us(l->cpu_quota), CG_QUOTA_PERIOD_US);
	if (quota && cg_write(cg->dir[0], "cpu.max", v) < 0)
		goto fail;
	cg->version = 2;
	return 0;
fail:
	rmdir(cg->dir[0]);
	return -1;
}

/* The v1 cpu-hierarchy group of a run's CPU quota (cpus CPUs) into
 * cg->quota_dir. Returns 0, or -1 with nothing left behind. */
static int v1_quota(struct sbx_cgroup *cg, uint32_t box, double cpus)
{
	char self[256], v[32];
	if (access("/sys/fs/cgroup/cpu", W_OK) < 0 || self_path("cpu", self, sizeof self) < 0 ||
	    run_dir("/sys/fs/cgroup/cpu", self, box, cg->quota_dir, sizeof cg->quota_dir) < 0)
		goto fail;
	char *slash = strrchr(cg->quota_dir, '/');
	*slash = '\0';
	sweep_stale(cg->quota_dir);   /* quota groups of killed supervisors */
	*slash = '/';
	if (mkdir(cg->quota_dir, 0755) < 0 && errno != EEXIST)
		goto fail;
	snprintf(v, sizeof v, "%d", CG_QUOTA_PERIOD_US);
	if (cg_write(cg->quota_dir, "cpu.cfs_period_us", v) < 0)
		goto fail_dir;
	snprintf(v, sizeof v, "%lld", quota_us(cpus));
	if (cg_write(cg->quota_dir, "cpu.cfs_quota_us", v) < 0)
		goto fail_dir;
	return 0;
fail_dir:
	rmdir(cg->quota_dir);
fail:
	cg->quota_dir[0] = '\0';
	return -1;
}

/* Try cgroup v1 (memory, pids, cpuacct; cpu for a quota). Returns 0 with cg filled, or -1. */
static int try_v1(struct sbx_cgroup *cg, uint32_t box, const struct sbx_limits *l)
{
	char v[32];
	int made = 0;
	for (int i = 0; i < CG__MAX; i++) {
		char base[128], self[256];
		snprintf(base, sizeof base, "/sys/fs/cgroup/%s", v1_ctrl[i]);
		if (access(base, W_OK) < 0 || self_path(v1_ctrl[i], self, sizeof self) < 0)
			goto fail;
		if (run_dir(base, self, box, cg->dir[i], sizeof cg->dir[i]) < 0)
			goto fail;
		char *slash = strrchr(cg->dir[i], '/');
		*slash = '\0';
		sweep_stale(cg->dir[i]);
		*slash = '/';
		if (mkdir(cg->dir[i], 0755) < 0 && errno != EEXIST)
			goto fail;
		made = i + 1;
	}
	snprintf(v, sizeof v, "%" PRIu64, l->memory_bytes);
	if (cg_write(cg->dir[CG_MEM], "memory.limit_in_bytes", v) < 0)
		goto fail;
	char probe[64];
	if (cg_read(cg->dir[CG_MEM], "memory.memsw.limit_in_bytes", probe, sizeof probe) >= 0 &&
	    cg_write(cg->dir[CG_MEM], "memory.memsw.limit_in_bytes", v) < 0)
		goto fail;
	snprintf(v, sizeof v, "%u", l->processes);
	if (cg_write(cg->dir[CG_PIDS], "pids.max", v) < 0)
		goto fail;
	if (l->cpu_quota > 0 && v1_quota(cg, box, l->cpu_quota) < 0)
		goto fail;
	cg->version = 1;
	return 0;
fail:
	for (int i = 0; i < made; i++)
		rmdir(cg->dir[i]);
	return -1;
}

struct sbx_cgroup *sbx_cg_create(uint32_t box_id, const struct sbx_limits *l, char *warn, size_t wlen)
{
	struct sbx_cgroup *cg = xcalloc(1, sizeof *cg);
	const char *mode = getenv("AGENTTEST_CGROUP");  /* "v1", "v2", "none"; tests */
	/* a host without a v2 hierarchy stays without one: a supervisor asks
	 * once, not at every run (the zygote helper creates one per run) */
	static pid_t no_v2;
	if ((!mode || strcmp(mode, "v1") != 0) && (!mode || strcmp(mode, "none") != 0) && no_v2 != getpid()) {
		int r = try_v2(cg, box_id, l);
		if (r == 0)
			return cg;
		if (r == -2)
			no_v2 = getpid();
	}
	cg_files_close(cg);
	memset(cg, 0, sizeof *cg);
	if ((!mode || strcmp(mode, "v2") != 0) && (!mode || strcmp(mode, "none") != 0) &&
	    try_v1(cg, box_id, l) == 0)
		return cg;
	cg_files_close(cg);
	free(cg);
	sbx_note(warn, wlen, "cgroup unavailable: rlimits only");
	return NULL;
}

const char *sbx_cg_kind(const struct sbx_cgroup *cg)
{
	return !cg ? "none" : cg->version == 2 ? "v2" : "v1";
}

int sbx_cg_dirfd(const struct sbx_cgroup *cg)
{
	if (!cg || cg->version != 2)
		return -1;
	return open(cg->dir[0], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

int sbx_cg_set_limits(struct sbx_cgroup *cg, const struct sbx_limits *l)
{
	char v[32], probe[64];
	snprintf(v, sizeof v, "%" PRIu64, l->memory_bytes);
	if (cg->version == 2) {
		if (cgf_write(cg, cg->dir[0], "memory.max", v) < 0)
			return -1;
		snprintf(v, sizeof v, "%u", l->processes);
		return cgf_write(cg, cg->dir[0], "pids.max", v);
	}
	/* memsw must stay >= memory: order the two writes by direction */
	bool sw = cgf_read(cg, cg->dir[CG_MEM], "memory.memsw.limit_in_bytes", probe, sizeof probe) >= 0;
	uint64_t cur = sw ? strtoull(probe, NULL, 10) : 0;
	if (sw && l->memory_bytes > cur && cgf_write(cg, cg->dir[CG_MEM], "memory.memsw.limit_in_bytes", v) < 0)
		return -1;
	if (cgf_write(cg, cg->dir[CG_MEM], "memory.limit_in_bytes", v) < 0)
		return -1;
	if (sw && l->memory_bytes <= cur && cgf_write(cg, cg->dir[CG_MEM], "memory.memsw.limit_in_bytes", v) < 0)
		return -1;
	cgf_write(cg, cg->dir[CG_MEM], "memory.max_usage_in_bytes", "0");  /* restart the peak */
	snprintf(v, sizeof v, "%u", l->processes);
	return cgf_write(cg, cg->dir[CG_PIDS], "pids.max", v);
}

int sbx_cg_procs_fds(struct sbx_cgroup *cg, int *fds)
{
	if (cg->quota_dir[0])
		return -1;   /* a v1 quota group is joined by sbx_cg_enter only (one-shot runs) */
	int n = cg->version == 2 ? 1 : CG__MAX;
	for (int i = 0; i < n; i++) {
		bool temp;
		int fd = cg_fd(cg, cg->dir[i], "cgroup.procs", O_WRONLY, &temp);
		fds[i] = fd < 0 || temp ? fd : fcntl(fd, F_DUPFD_CLOEXEC, 3);
		if (fds[i] < 0) {
			while (i-- > 0)
				close(fds[i]);
			return -1;
		}
	}
	return n;
}

int sbx_cg_enter(struct sbx_cgroup *cg, pid_t pid)
{
	char v[32];
	snprintf(v, sizeof v, "%d", (int)pid);
	if (cg->version == 2)
		return cgf_write(cg, cg->dir[0], "cgroup.procs", v);
	for (int i = 0; i < CG__MAX; i++)
		if (cgf_write(cg, cg->dir[i], "cgroup.procs", v) < 0)
			return -1;
	return cg->quota_dir[0] ? cgf_write(cg, cg->quota_dir, "cgroup.procs", v) : 0;
}

double sbx_cg_cpu(struct sbx_cgroup *cg)
{
	if (cg->version == 2) {
		long long us = cgf_keyed(cg, cg->dir[0], "cpu.stat", "usage_usec");
		return us < 0 ? -1 : (double)us / 1e6;
	}
	char buf[64];
	if (cgf_read(cg, cg->dir[CG_CPU], "cpuacct.usage", buf, sizeof buf) < 0)
		return -1;
	return (double)strtoull(buf, NULL, 10) / 1e9;
}

/* SIGKILL every pid listed in dir/cgroup.procs; returns how many were listed. */
static int kill_listed(const char *dir)
{
	char buf[8192];
	int count = 0;
	if (cg_read(dir, "cgroup.procs", buf, sizeof buf) < 0)
		return 0;
	for (char *p = buf; *p;) {
		char *end;
		long pid = strtol(p, &end, 10);
		if (end == p)
			break;
		if (pid > 0) {
			kill((pid_t)pid, SIGKILL);
			count++;
		}
		p = end;
		while (*p == '\n')
			p++;
	}
	return count;
}

/* Tasks in the group from its pids controller (0: empty), or -1 unknown.
 * Cheaper than listing cgroup.procs, which on v1 builds a pid list that a
 * kernel worker later frees. */
static long long cg_tasks(struct sbx_cgroup *cg)
{
	char buf[32];
	if (cgf_read(cg, cg->version == 2 ? cg->dir[0] : cg->dir[CG_PIDS], "pids.current", buf, sizeof buf) <= 0)
		return -1;
	return strtoll(buf, NULL, 10);
}

void sbx_cg_kill(struct sbx_cgroup *cg)
{
	if (cg_tasks(cg) == 0)
		return;
	if (cg->version == 2 && cgf_write(cg, cg->dir[0], "cgroup.kill", "1") == 0)
		return;
	const char *dir = cg->version == 2 ? cg->dir[0] : cg->dir[CG_PIDS];
	for (int round = 0; round < 100 && kill_listed(dir) > 0; round++) {
		struct timespec ts = { 0, 1000000 };
		nanosleep(&ts, NULL);
	}
}

void sbx_cg_stats(struct sbx_cgroup *cg, uint64_t *peak, bool *oom)
{
	char buf[64];
	*peak = 0;
	*oom = false;
	if (cg->version == 2) {
		if (cgf_read(cg, cg->dir[0], "memory.peak", buf, sizeof buf) > 0)
			*peak = strtoull(buf, NULL, 10);
		*oom = cgf_keyed(cg, cg->dir[0], "memory.events", "oom_kill") > 0;
		return;
	}
	if (cgf_read(cg, cg->dir[CG_MEM], "memory.max_usage_in_bytes", buf, sizeof buf) > 0)
		*peak = strtoull(buf, NULL, 10);
	*oom = cgf_keyed(cg, cg->dir[CG_MEM], "memory.oom_control", "oom_kill") > cg->oom_base;
}

bool sbx_cg_recycle(struct sbx_cgroup *cg)
{
	/* v1 only: its peak can be restarted (memory.max_usage_in_bytes) and its
	 * OOM count read as a base; a v2 memory.peak restarts only per open file
	 * on recent kernels, so v2 groups stay one per child */
	if (!cg || cg->version != 1 || cg->quota_dir[0] || cg_tasks(cg) != 0)
		return false;
	/* what an earlier run left charged (page cache it read) counts in the
	 * next run's usage: bounded, or the group is replaced */
	char buf[32];
	if (cgf_read(cg, cg->dir[CG_MEM], "memory.usage_in_bytes", buf, sizeof buf) <= 0 ||
	    strtoull(buf, NULL, 10) > CG_RECYCLE_MAX_CHARGE)
		return false;
	long long ooms = cgf_keyed(cg, cg->dir[CG_MEM], "memory.oom_control", "oom_kill");
	if (ooms < 0)
		return false;
	cg->oom_base = ooms;
	return true;
}

void sbx_cg_destroy(struct sbx_cgroup *cg)
{
	if (!cg)
		return;
	cg_files_close(cg);
	int n = cg->version == 2 ? 1 : CG__MAX;
	for (int i = 0; i <= n; i++) {
		const char *dir = i < n ? cg->dir[i] : cg->quota_dir;
		if (!dir[0])
			continue;
		for (int tries = 0; tries < 200 && rmdir(dir) < 0 && errno == EBUSY; tries++) {
			struct timespec ts = { 0, 1000000 };
			nanosleep(&ts, NULL);
		}
	}
	free(cg);
}

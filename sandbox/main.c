/*
 * agenttest-sandbox: run one program confined (see agenttest-sandbox(1)).
 *
 *   agenttest-sandbox [options] -- /usr/bin/python3 ... 
 *   agenttest-sandbox --zygote [options]      (used by libsandbox)
 *
 * The helper must run as root (it creates namespaces, cgroups and mounts
 * and drops to the box user); it refuses to run set-user-ID. It is the
 * supervisor of the run: it relays the program's stdout/stderr to its own,
 * enforces the limits and writes the verdict record (--meta FILE or
 * --meta-fd N). Exit status: 0 when the program ran, whatever the verdict;
 * 2 when the helper failed (the record then says status:XX).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "sandbox/sbx_int.h"
#include "sandbox/sbx_oneshot.h"
#include "sandbox/sbx_zygote.h"

#define MAX_ENV 64

static int meta_fd = -1;

/* Write the record for a helper failure and exit 2. */
static void __attribute__((noreturn, format(printf, 1, 2))) die(const char *fmt, ...)
{
	struct sbx_verdict v;
	char meta[SBX_META_MAX];
	memset(&v, 0, sizeof v);
	v.status = SBX_XX;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(v.message, sizeof v.message, fmt, ap);
	va_end(ap);
	fprintf(stderr, "agenttest-sandbox: %s\n", v.message);
	int n = sbx_verdict_format(&v, meta, sizeof meta);
	if (meta_fd >= 0 && n > 0 && write(meta_fd, meta, (size_t)n) < 0)
		exit(2);
	exit(2);
}

/* Usage on stdout (help) or as a failure. */
static void __attribute__((noreturn)) usage(int status)
{
	FILE *o = status ? stderr : stdout;
	fprintf(o, "usage: agenttest-sandbox [options] -- PROGRAM [ARGS...]\n"
	        "       agenttest-sandbox --zygote --ctl-fd=N [options]\n"
	        "options: --box=N --cpu=SEC --wall=SEC --mem=BYTES[KMG] --procs=N --files=N --cpus=N\n"
	        "         --output=BYTES[KMG] --bind=PATH[:DEST] --copy=PATH:DEST\n"
	        "         --workdir=PATH[:DEST] --tmp=BYTES[KMG]\n"
	        "         --env=K=V --meta=FILE --meta-fd=N --no-cgroup --netns=fresh|shared\n"
	        "         --profile=strategy|agent (agent: own netns with loopback, processes, exec, sockets, JIT)\n"
	        "         --seccomp-log --shm-fd=N (keep fd N open in the program: the stream memfd)\n"
	        "see agenttest-sandbox(1)\n");
	exit(status);
}

/* Parse a size with an optional K/M/G suffix, within [1, 1 TiB]. */
static uint64_t parse_size(const char *s, const char *opt)
{
	char *end;
	errno = 0;
	unsigned long long x = strtoull(s, &end, 10);
	uint64_t mul = 1;
	if (*end == 'K' || *end == 'k') mul = 1ull << 10, end++;
	else if (*end == 'M' || *end == 'm') mul = 1ull << 20, end++;
	else if (*end == 'G' || *end == 'g') mul = 1ull << 30, end++;
	if (errno || end == s || *end || *s == '-' || x == 0 || x > (1ull << 40) / mul)
		die("bad value for --%s: %s", opt, s);
	return x * mul;
}

/* Parse an unsigned count within [lo, hi]. */
static unsigned parse_count(const char *s, unsigned lo, unsigned hi, const char *opt)
{
	char *end;
	errno = 0;
	unsigned long x = strtoul(s, &end, 10);
	if (errno || end == s || *end || *s == '-' || x < lo || x > hi)
		die("bad value for --%s: %s (%u..%u)", opt, s, lo, hi);
	return (unsigned)x;
}

/* Parse seconds within (0, 86400]. */
static double parse_seconds(const char *s, const char *opt)
{
	char *end;
	errno = 0;
	double x = strtod(s, &end);
	if (errno || end == s || *end || !isfinite(x) || x <= 0 || x > 86400)
		die("bad value for --%s: %s", opt, s);
	return x;
}

/* Parse a CPU quota in CPUs within [0.01, 1024]. */
static double parse_cpus(const char *s)
{
	char *end;
	errno = 0;
	double x = strtod(s, &end);
	if (errno || end == s || *end || !isfinite(x) || x < 0.01 || x > 1024)
		die("bad value for --cpus: %s (0.01..1024)", s);
	return x;
}

/* An absolute, normalized-looking path (no "..", no "//"). */
static const char *parse_path(const char *s, const char *opt)
{
	if (s[0] != '/' || strstr(s, "/..") || strstr(s, "//") || strlen(s) > 1024 ||
	    strcmp(s, "/") == 0)
		die("bad path for --%s: %s", opt, s);
	return s;
}

/* --bind, --copy, --workdir=SRC[:DST]: SRC on the host, seen at DST
 * inside (default SRC). The argument is split in place; both halves are
 * checked like paths (opt names the option in the message). */
static void parse_bind(char *s, const char *opt, const char **src, const char **dst)
{
	char *colon = strchr(s, ':');
	*dst = NULL;
	if (colon) {
		*colon = '\0';
		*dst = parse_path(colon + 1, opt);
	}
	*src = parse_path(s, opt);
}

int main(int argc, char **argv)
{
	pid_t parent = getppid();
	enum { O_BOX = 256, O_CPU, O_WALL, O_MEM, O_PROCS, O_FILES, O_OUTPUT, O_BIND,
	       O_COPY, O_WORKDIR, O_TMP, O_ENV, O_META, O_METAFD, O_NOCG, O_SLOG, O_ZYGOTE, O_CTL, O_NETNS,
	       O_SHMFD, O_PROFILE, O_CPUS, O_HELP, O_VERSION };
	static const struct option longopts[] = {
		{ "box", 1, NULL, O_BOX }, { "cpu", 1, NULL, O_CPU }, { "wall", 1, NULL, O_WALL },
		{ "mem", 1, NULL, O_MEM }, { "procs", 1, NULL, O_PROCS }, { "files", 1, NULL, O_FILES },
		{ "output", 1, NULL, O_OUTPUT }, { "bind", 1, NULL, O_BIND }, { "copy", 1, NULL, O_COPY },
		{ "workdir", 1, NULL, O_WORKDIR }, { "tmp", 1, NULL, O_TMP }, { "env", 1, NULL, O_ENV },
		{ "meta", 1, NULL, O_META }, { "meta-fd", 1, NULL, O_METAFD },
		{ "no-cgroup", 0, NULL, O_NOCG }, { "netns", 1, NULL, O_NETNS }, { "seccomp-log", 0, NULL, O_SLOG },
		{ "zygote", 0, NULL, O_ZYGOTE }, { "ctl-fd", 1, NULL, O_CTL }, { "shm-fd", 1, NULL, O_SHMFD },
		{ "profile", 1, NULL, O_PROFILE }, { "cpus", 1, NULL, O_CPUS },
		{ "help", 0, NULL, O_HELP }, { "version", 0, NULL, O_VERSION },
		{ NULL, 0, NULL, 0 },
	};
	struct sbx_oneshot o;
	char *envp[MAX_ENV + 1];
	int nenv = 0, c, ctl_fd = -1;
	bool zygote = false;
	memset(&o, 0, sizeof o);
	envp[0] = NULL;
	while ((c = getopt_long(argc, argv, "+", longopts, NULL)) != -1) {
		switch (c) {
		case O_BOX: o.box_id = parse_count(optarg, 0, SBX_BOX_MAX, "box"); break;
		case O_CPU: o.limits.cpu_seconds = parse_seconds(optarg, "cpu"); break;
		case O_WALL: o.limits.wall_seconds = parse_seconds(optarg, "wall"); break;
		case O_MEM: o.limits.memory_bytes = parse_size(optarg, "mem"); break;
		case O_CPUS: o.limits.cpu_quota = parse_cpus(optarg); break;
		case O_PROCS: o.limits.processes = parse_count(optarg, 1, 4096, "procs"); break;
		case O_FILES: o.limits.open_files = parse_count(optarg, 4, 65536, "files"); break;
		case O_OUTPUT: o.limits.output_bytes = parse_size(optarg, "output"); break;
		case O_BIND:
		case O_COPY:
			if (o.root.nbinds >= SBX_MAX_BINDS)
				die("too many --bind and --copy (max %d)", SBX_MAX_BINDS);
			parse_bind(optarg, c == O_COPY ? "copy" : "bind", &o.root.binds[o.root.nbinds], &o.root.dsts[o.root.nbinds]);
			if (c == O_COPY && (!o.root.dsts[o.root.nbinds] ||
			                    strncmp(o.root.dsts[o.root.nbinds], "/agenttest/", 11) != 0))
				die("--copy needs a destination below /agenttest/: %s", optarg);
			o.root.copies[o.root.nbinds++] = c == O_COPY;
			break;
		case O_WORKDIR: parse_bind(optarg, "workdir", &o.root.workdir, &o.root.workdir_dst); break;
		case O_TMP: o.root.tmp_bytes = parse_size(optarg, "tmp"); break;
		case O_ENV:
			if (nenv >= MAX_ENV || !strchr(optarg, '=') || optarg[0] == '=')
				die("bad or too many --env: %s", optarg);
			envp[nenv++] = optarg;
			envp[nenv] = NULL;
			break;
		case O_META:
			if (meta_fd >= 0)
				close(meta_fd);
			meta_fd = open(optarg, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0640);
			if (meta_fd < 0)
				die("cannot open meta file %s: %s", optarg, strerror(errno));
			break;
		case O_METAFD:
			meta_fd = (int)parse_count(optarg, 3, 1024, "meta-fd");
			if (fcntl(meta_fd, F_SETFD, FD_CLOEXEC) < 0)
				die("--meta-fd %d is not open", meta_fd);
			break;
		case O_NOCG: o.no_cgroup = true; break;
		case O_NETNS:
			if (strcmp(optarg, "fresh") != 0 && strcmp(optarg, "shared") != 0)
				die("bad value for --netns: %s (fresh or shared)", optarg);
			o.fresh_netns = strcmp(optarg, "fresh") == 0;
			break;
		case O_SLOG: o.seccomp_log = true; break;
		case O_PROFILE:
			if (strcmp(optarg, "strategy") != 0 && strcmp(optarg, "agent") != 0)
				die("bad value for --profile: %s (strategy or agent)", optarg);
			o.agent = strcmp(optarg, "agent") == 0;
			break;
		case O_ZYGOTE: zygote = true; break;
		case O_CTL: ctl_fd = (int)parse_count(optarg, 3, 1024, "ctl-fd"); break;
		case O_SHMFD: /* a descriptor the program keeps at the same number */
			o.keep_fd = (int)parse_count(optarg, 4, 1024, "shm-fd");
			if (fcntl(o.keep_fd, F_GETFD) < 0)
				die("--shm-fd %d is not open", o.keep_fd);
			break;
		case O_HELP: usage(0);
		case O_VERSION:
			printf("agenttest-sandbox %s (%s)\n", AGENTTEST_VERSION, AGENTTEST_COMMIT);
			return 0;
		default: usage(2);
		}
	}
	if (getuid() != geteuid() || getgid() != getegid())
		die("refusing to run set-user-ID or set-group-ID");
	if (geteuid() != 0)
		die("must run as root (namespaces, cgroups, mounts, uid change)");
	sbx_supervise_signals();
	if (zygote && o.agent)
		die("--profile=agent is for one-shot runs only");
	if (o.limits.cpu_quota > 0 && (zygote || o.no_cgroup))
		die("--cpus needs a one-shot run with its cgroup");
	if (zygote) {
		if (ctl_fd < 0 || optind != argc)
			usage(2);
		return sbx_zygote_main(ctl_fd, &o.root, o.no_cgroup, o.seccomp_log);
	}
	if (optind >= argc || argv[optind][0] != '/')
		die("expected -- /absolute/program [args]");
	/* a one-shot run ends with its caller: SIGTERM (a cancel, see
	 * sbx_supervise_signals) when the process that started us dies, so the
	 * box is killed and reaped before we exit. A caller that passed us its
	 * lease of the box number (box_lease.h) keeps the number held until
	 * then: a harness killed mid-turn must not leave a box running under a
	 * number the next run may lease, since the kernel counts RLIMIT_NPROC
	 * per uid (its exec would fail) */
	if (prctl(PR_SET_PDEATHSIG, SIGTERM) != 0)
		die("prctl(PR_SET_PDEATHSIG): %s", strerror(errno));
	if (getppid() != parent)
		die("the caller is gone");
	o.argv = argv + optind;
	o.envp = envp;
	o.out_fd = 1;
	o.err_fd = 2;
	struct sbx_verdict v;
	char err[256] = "", meta[SBX_META_MAX];
	if (sbx_oneshot_run(&o, &v, err, sizeof err) < 0)
		die("%s", err[0] ? err : "internal error");
	int n = sbx_verdict_format(&v, meta, sizeof meta);
	if (n < 0)
		die("verdict record too long");
	if (meta_fd >= 0 && write(meta_fd, meta, (size_t)n) != n)
		die("cannot write the verdict record: %s", strerror(errno));
	return 0;
}

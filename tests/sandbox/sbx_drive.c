/*
 * sbx-drive: run strategies through the real sandbox API (sandbox.h) and
 * the real strategy host, for the escape corpus (tests/sandbox/corpus.py)
 * and the benchmark.
 *
 *   sbx-drive [--trusted] [--cpu=S] [--wall=S] [--mem=BYTES] [--box=N]
 *             [--bars=N] [--repeat=K] [--prestart] [--workdir=DIR]
 *             [--cancel-after=S] [--kill-helpers] [--shm]
 *             [--zygote=code|full|numpy|plain] FILE...
 *
 * For every FILE (a Python strategy), in order and in this one process (so
 * the zygote pool is shared between them): sbx_start, LOAD the source, DATA
 * with N synthetic prices, RUN on all bars, BYE, read the log, sbx_finish.
 * Prints one JSON object per run on stdout: verdict fields, the frames the
 * host sent back (type and meta; bodies summarized as their length and
 * FNV-1a hash, so runs can be compared bit for bit), the tail of the log
 * and the time from sbx_start to the verdict. --zygote picks the zygote
 * kind a run asks for: by its source as the runner does
 * (sbx_zygote_for_code, the default), or always FULL, NUMPY or PLAIN.
 */
#include <errno.h>
#include <poll.h>
#include <sys/mman.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "sandbox/sandbox.h"

#define LOG_TAIL 2048

struct opts {
	struct sbx_spec spec;
	double cancel_after;   /* > 0: sbx_kill this many seconds after start */
	bool kill_helpers;     /* SIGKILL our own child processes before the second run */
	unsigned bars;
	unsigned repeat;
	bool prestart;
	int zygote;            /* -1: by the source (sbx_zygote_for_code), else an enum sbx_zygote */
};

/* 64-bit FNV-1a of n bytes, as 16 hex digits in out[17]. */
static void fnv1a_hex(const unsigned char *p, size_t n, char out[17])
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	snprintf(out, 17, "%016llx", (unsigned long long)h);
}

/* Write all of buf to fd; false on error (the host may be dead). */
static bool write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	while (len) {
		ssize_t n = write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return false;
		p += n;
		len -= (size_t)n;
	}
	return true;
}

/* Send one frame. */
static bool send_frame(int fd, uint16_t type, const char *meta, const void *body, size_t blen)
{
	unsigned char h[16];
	uint32_t ml = meta ? (uint32_t)strlen(meta) : 0, bl = (uint32_t)blen;
	memcpy(h, "ATP1", 4);
	h[4] = (unsigned char)(type & 0xff); h[5] = (unsigned char)(type >> 8);
	h[6] = h[7] = 0;
	for (int i = 0; i < 4; i++) {
		h[8 + i] = (unsigned char)(ml >> (8 * i));
		h[12 + i] = (unsigned char)(bl >> (8 * i));
	}
	return write_all(fd, h, sizeof h) && (!ml || write_all(fd, meta, ml)) && (!bl || write_all(fd, body, blen));
}

/* Reader state: frames from the host plus the log, multiplexed. */
struct reader {
	int out, log;
	unsigned char *buf;
	size_t len, cap;
	char tail[LOG_TAIL + 1];
	size_t tail_len;
};

/* Append log bytes keeping only the last LOG_TAIL. */
static void tail_add(struct reader *r, const char *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (r->tail_len == LOG_TAIL) {
			memmove(r->tail, r->tail + 1, LOG_TAIL - 1);
			r->tail_len--;
		}
		r->tail[r->tail_len++] = p[i];
	}
	r->tail[r->tail_len] = '\0';
}

/* Pump until a whole frame is buffered (true) or EOF/timeout (false). */
static bool next_frame(struct reader *r, uint16_t *type, json_object **meta, uint32_t *blen, char hash[17])
{
	for (;;) {
		if (r->len >= 16) {
			uint32_t ml = 0, bl = 0;
			for (int i = 0; i < 4; i++) {
				ml |= (uint32_t)r->buf[8 + i] << (8 * i);
				bl |= (uint32_t)r->buf[12 + i] << (8 * i);
			}
			if (memcmp(r->buf, "ATP1", 4) != 0 || ml > (1u << 24) || bl > (1u << 28))
				return false;
			size_t total = 16 + (size_t)ml + bl;
			if (r->len >= total) {
				*type = (uint16_t)(r->buf[4] | (r->buf[5] << 8));
				char *m = strndup((const char *)r->buf + 16, ml);
				*meta = m && ml ? json_tokener_parse(m) : NULL;
				free(m);
				*blen = bl;
				fnv1a_hex(r->buf + 16 + ml, bl, hash);
				memmove(r->buf, r->buf + total, r->len - total);
				r->len -= total;
				return true;
			}
		}
		struct pollfd p[2] = { { r->out, POLLIN, 0 }, { r->log, POLLIN, 0 } };
		int n = poll(p, r->log >= 0 ? 2 : 1, 30000);
		if (n <= 0)
			return false;
		if (r->log >= 0 && (p[1].revents & (POLLIN | POLLHUP))) {
			char tmp[4096];
			ssize_t k = read(r->log, tmp, sizeof tmp);
			if (k > 0)
				tail_add(r, tmp, (size_t)k);
			else
				r->log = -1;
		}
		if (p[0].revents & (POLLIN | POLLHUP)) {
			if (r->cap - r->len < 65536) {
				r->cap = r->cap * 2 + 65536;
				r->buf = realloc(r->buf, r->cap);
				if (!r->buf)
					abort();
			}
			ssize_t k = read(r->out, r->buf + r->len, 65536);
			if (k <= 0)
				return false;
			r->len += (size_t)k;
		}
	}
}

/* Read whatever is left of the log (bounded by EOF). */
static void drain_log(struct reader *r)
{
	char tmp[4096];
	ssize_t k;
	while (r->log >= 0 && (k = read(r->log, tmp, sizeof tmp)) > 0)
		tail_add(r, tmp, (size_t)k);
}

/* Read a whole file. */
static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	char *buf = malloc(1 << 20);
	*len = buf ? fread(buf, 1, (1 << 20) - 1, f) : 0;
	fclose(f);
	if (buf)
		buf[*len] = '\0';
	return buf;
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* One run of one source; prints its JSON line. */
static int one_run(const struct opts *o, const char *path)
{
	size_t slen = 0;
	char *src = slurp(path, &slen);
	if (!src) {
		fprintf(stderr, "sbx-drive: cannot read %s\n", path);
		return 1;
	}
	struct sbx_run run;
	struct sbx_verdict v;
	char err[256] = "";
	json_object *res = json_object_new_object(), *frames = json_object_new_array();
	struct sbx_spec spec = o->spec;
	spec.zygote = o->zygote < 0 ? sbx_zygote_for_code(src, slen) : (enum sbx_zygote)o->zygote;
	double t0 = now();
	if (sbx_start(&spec, &run, err, sizeof err) < 0) {
		json_object_object_add(res, "start_error", json_object_new_string(err));
		printf("%s\n", json_object_to_json_string_ext(res, JSON_C_TO_STRING_PLAIN));
		json_object_put(res);
		json_object_put(frames);
		free(src);
		return 1;
	}
	struct reader r = { .out = run.from_host, .log = run.log_fd };
	double *prices = calloc(o->bars ? o->bars : 1, sizeof *prices);
	for (unsigned i = 0; i < o->bars; i++)
		prices[i] = 100.0 + (double)(i % 17) * 0.5 - (double)(i % 5) * 0.25;
	char runmeta[64];
	snprintf(runmeta, sizeof runmeta, "{\"bars\":%u,\"params\":{}}", o->bars);
	if (o->cancel_after > 0) {
		usleep((useconds_t)(o->cancel_after * 1e6));
		sbx_kill(&run);
	}
	bool ok = send_frame(run.to_host, 0x01, "{\"kind\":\"auto\"}", src, slen) &&
	          send_frame(run.to_host, 0x02, NULL, prices, o->bars * sizeof *prices) &&
	          send_frame(run.to_host, 0x03, runmeta, NULL, 0);
	int want = 3; /* READY, LOADED|ERROR, OUTPUT|ERROR */
	uint16_t type;
	json_object *meta;
	uint32_t blen;
	char hash[17];
	while (ok && want > 0 && next_frame(&r, &type, &meta, &blen, hash)) {
		json_object *f = json_object_new_object();
		json_object_object_add(f, "type", json_object_new_int(type));
		json_object_object_add(f, "meta", meta ? meta : json_object_new_object());
		json_object_object_add(f, "body_len", json_object_new_int64(blen));
		json_object_object_add(f, "body_fnv", json_object_new_string(hash));
		json_object_object_add(f, "at", json_object_new_double(now() - t0));
		json_object_array_add(frames, f);
		want--;
		if (type == 0x8F && want == 1)
			want = 0; /* load failed: no RUN answer */
	}
	if (ok)
		send_frame(run.to_host, 0x04, NULL, NULL, 0);
	close(run.to_host);
	run.to_host = -1;
	/* the run ends now: collect the rest of the log then the verdict */
	for (;;) {
		char tmp[65536];
		ssize_t k = read(run.from_host, tmp, sizeof tmp);
		if (k <= 0)
			break;
	}
	drain_log(&r);
	int frc = sbx_finish(&run, &v);
	double dt = now() - t0;
	json_object_object_add(res, "file", json_object_new_string(path));
	json_object_object_add(res, "finish_rc", json_object_new_int(frc));
	json_object_object_add(res, "status", json_object_new_string(
		(const char *[]){ "OK", "RE", "SG", "TO", "ML", "SY", "OL", "XX" }[v.status < SBX_STATUS__MAX ? v.status : SBX_XX]));
	json_object_object_add(res, "code", json_object_new_string(sbx_status_code(v.status)));
	json_object_object_add(res, "exitcode", json_object_new_int(v.exit_code));
	json_object_object_add(res, "exitsig", json_object_new_int(v.exit_signal));
	json_object_object_add(res, "syscall", json_object_new_string(v.syscall_name));
	json_object_object_add(res, "time", json_object_new_double(v.cpu_seconds));
	json_object_object_add(res, "time_wall", json_object_new_double(v.wall_seconds));
	json_object_object_add(res, "max_rss", json_object_new_int64((int64_t)v.max_rss_bytes));
	json_object_object_add(res, "cg_mem", json_object_new_int64((int64_t)v.cg_mem_bytes));
	json_object_object_add(res, "message", json_object_new_string(v.message));
	json_object_object_add(res, "warnings", json_object_new_string(v.warnings));
	json_object_object_add(res, "elapsed", json_object_new_double(dt));
	json_object_object_add(res, "frames", frames);
	json_object_object_add(res, "log", json_object_new_string(r.tail));
	printf("%s\n", json_object_to_json_string_ext(res, JSON_C_TO_STRING_PLAIN));
	fflush(stdout);
	json_object_put(res);
	free(r.buf);
	free(prices);
	free(src);
	return 0;
}

/* Read a small /proc file into buf (NUL-terminated); false if it cannot be opened. */
static bool read_proc(const char *path, char *buf, size_t size)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return false;
	size_t n = fread(buf, 1, size - 1, f);
	fclose(f);
	buf[n] = '\0';
	return true;
}

/* Wait (up to 10 s) until pid has exited (a zombie, or gone): a process
 * killed while tearing down a large address space keeps its sockets open
 * for a while, and a run sent to it then would be lost, not refused. */
static void wait_exited(long pid)
{
	char path[64], st[512];
	snprintf(path, sizeof path, "/proc/%ld/stat", pid);
	for (int i = 0; i < 1000; i++) {
		if (!read_proc(path, st, sizeof st))
			return;
		const char *p = strrchr(st, ')');
		if (!p || p[1] == '\0' || p[2] == 'Z' || p[2] == 'X')
			return;
		usleep(10000);
	}
}

/* SIGKILL every child process of ours (between runs these are only the
 * zygote helpers of the library's pool) and wait until they are dead: the
 * next run must survive it (on the one-shot helper) and the pool must
 * recover (checked on the third). */
static void kill_children(void)
{
	char path[64], buf[4096];
	long pids[512];
	size_t np = 0;
	snprintf(path, sizeof path, "/proc/self/task/%d/children", (int)getpid());
	if (!read_proc(path, buf, sizeof buf))
		return;
	for (char *p = buf, *end; *p && np < sizeof pids / sizeof pids[0]; p = end) {
		long pid = strtol(p, &end, 10);
		if (end == p)
			break;
		if (pid > 0)
			pids[np++] = pid;
	}
	for (size_t k = 0; k < np; k++)
		kill((pid_t)pids[k], SIGKILL);
	for (size_t k = 0; k < np; k++)
		wait_exited(pids[k]);
}

int main(int argc, char **argv)
{
	struct opts o = { .bars = 100, .repeat = 1, .zygote = -1 };
	signal(SIGPIPE, SIG_IGN); /* a killed host closes its stdin under us */
	o.spec.mode = SBX_CONFINED;
	int i = 1;
	for (; i < argc && strncmp(argv[i], "--", 2) == 0; i++) {
		const char *a = argv[i];
		if (strcmp(a, "--trusted") == 0) o.spec.mode = SBX_TRUSTED;
		else if (strncmp(a, "--cpu=", 6) == 0) o.spec.limits.cpu_seconds = atof(a + 6);
		else if (strncmp(a, "--wall=", 7) == 0) o.spec.limits.wall_seconds = atof(a + 7);
		else if (strncmp(a, "--mem=", 6) == 0) o.spec.limits.memory_bytes = strtoull(a + 6, NULL, 10);
		else if (strncmp(a, "--output=", 9) == 0) o.spec.limits.output_bytes = strtoull(a + 9, NULL, 10);
		else if (strncmp(a, "--box=", 6) == 0) o.spec.box_id = (uint32_t)atoi(a + 6);
		else if (strncmp(a, "--bars=", 7) == 0) o.bars = (unsigned)atoi(a + 7);
		else if (strncmp(a, "--repeat=", 9) == 0) o.repeat = (unsigned)atoi(a + 9);
		else if (strcmp(a, "--prestart") == 0) o.prestart = true;
		else if (strncmp(a, "--workdir=", 10) == 0) o.spec.rw_workdir = a + 10;
		else if (strncmp(a, "--cancel-after=", 15) == 0) o.cancel_after = atof(a + 15);
		else if (strcmp(a, "--kill-helpers") == 0) o.kill_helpers = true;
		else if (strcmp(a, "--zygote=code") == 0) o.zygote = -1;
		else if (strcmp(a, "--zygote=full") == 0) o.zygote = SBX_ZYGOTE_FULL;
		else if (strcmp(a, "--zygote=numpy") == 0) o.zygote = SBX_ZYGOTE_NUMPY;
		else if (strcmp(a, "--zygote=plain") == 0) o.zygote = SBX_ZYGOTE_PLAIN;
		else if (strcmp(a, "--shm") == 0) {
			/* a memfd holding "shm-ok", handed to the host as fd 4 */
			int fd = memfd_create("sbx-drive-shm", MFD_CLOEXEC);
			if (fd < 0 || write(fd, "shm-ok", 6) != 6)
				return 2;
			o.spec.shm_fd = fd;
		}
		else { fprintf(stderr, "sbx-drive: unknown option %s\n", a); return 2; }
	}
	if (o.prestart) {
		char err[256];
		if (sbx_prestart(1, err, sizeof err) < 0)
			fprintf(stderr, "sbx-drive: prestart: %s\n", err);
	}
	int rc = 0;
	for (unsigned k = 0; k < o.repeat; k++)
		for (int j = i; j < argc; j++) {
			if (o.kill_helpers && k * (unsigned)(argc - i) + (unsigned)(j - i) == 1)
				kill_children();
			if (o.kill_helpers && k * (unsigned)(argc - i) + (unsigned)(j - i) == 2) {
				char err[256];   /* the replacement must come up */
				if (sbx_prestart(1, err, sizeof err) < 0)
					fprintf(stderr, "sbx-drive: prestart: %s\n", err);
			}
			rc |= one_run(&o, argv[j]);
		}
	return rc;
}

/*
 * verdict.c: the verdict record of a run (agenttest-sandbox(1), META FILE):
 * one `key:value` per line, written by the helper and read back by the
 * client library. The reader treats the record as input from another
 * process: bounded length, known keys only, full-consumption number parsing.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sandbox/sbx_int.h"

static const char *const status_letters[SBX_STATUS__MAX] = {
	[SBX_OK] = "OK", [SBX_RE] = "RE", [SBX_SG] = "SG", [SBX_TO] = "TO",
	[SBX_ML] = "ML", [SBX_SY] = "SY", [SBX_OL] = "OL", [SBX_XX] = "XX",
};

static const char *const status_codes[SBX_STATUS__MAX] = {
	[SBX_OK] = "ok", [SBX_RE] = "strategy_error", [SBX_SG] = "crashed",
	[SBX_TO] = "timeout", [SBX_ML] = "memory_limit",
	[SBX_SY] = "forbidden_syscall", [SBX_OL] = "output_limit",
	[SBX_XX] = "internal",
};

const char *sbx_status_code(enum sbx_status s)
{
	return (unsigned)s < SBX_STATUS__MAX ? status_codes[s] : "internal";
}

const char *sbx_status_letters(enum sbx_status s)
{
	return (unsigned)s < SBX_STATUS__MAX ? status_letters[s] : "XX";
}

enum sbx_status sbx_status_parse(const char *letters)
{
	for (int i = 0; i < SBX_STATUS__MAX; i++)
		if (strcmp(letters, status_letters[i]) == 0)
			return (enum sbx_status)i;
	return SBX_STATUS__MAX;
}

void sbx_limits_fill(struct sbx_limits *l)
{
	if (!(l->cpu_seconds > 0))
		l->cpu_seconds = SBX_DEF_CPU;
	if (!(l->wall_seconds > 0))
		l->wall_seconds = 2 * l->cpu_seconds;
	if (l->memory_bytes == 0)
		l->memory_bytes = SBX_DEF_MEMORY;
	if (l->processes == 0)
		l->processes = SBX_DEF_PROCS;
	if (l->open_files == 0)
		l->open_files = SBX_DEF_FILES;
	if (l->output_bytes == 0)
		l->output_bytes = SBX_DEF_OUTPUT;
}

void sbx_note(char *field, size_t size, const char *fmt, ...)
{
	size_t used = strnlen(field, size);
	if (used + 3 >= size)
		return;
	if (used > 0) {
		memcpy(field + used, "; ", 3);
		used += 2;
	}
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(field + used, size - used, fmt, ap); /* truncation is fine: a note */
	va_end(ap);
}

/* Copy s into dst (size bytes) replacing newlines, so a value stays on its line. */
static void one_line(char *dst, size_t size, const char *s)
{
	size_t i = 0;
	for (; s[i] && i + 1 < size; i++)
		dst[i] = (s[i] == '\n' || s[i] == '\r') ? ' ' : s[i];
	dst[i] = '\0';
}

int sbx_verdict_format(const struct sbx_verdict *v, char *buf, size_t len)
{
	char msg[sizeof v->message], warn[sizeof v->warnings];
	one_line(msg, sizeof msg, v->message);
	one_line(warn, sizeof warn, v->warnings);
	int n = snprintf(buf, len,
		"status:%s\n"
		"exitcode:%d\n"
		"exitsig:%d\n"
		"syscall:%s\n"
		"time:%.3f\n"
		"time-wall:%.3f\n"
		"max-rss:%" PRIu64 "\n"
		"cg-mem:%" PRIu64 "\n"
		"killed:%d\n"
		"limit-time:%.3f\n"
		"limit-wall:%.3f\n"
		"limit-mem:%" PRIu64 "\n"
		"limit-procs:%u\n"
		"limit-files:%u\n"
		"limit-output:%" PRIu64 "\n"
		"message:%s\n"
		"warnings:%s\n",
		sbx_status_letters(v->status), v->exit_code, v->exit_signal,
		v->syscall_name, v->cpu_seconds, v->wall_seconds,
		v->max_rss_bytes, v->cg_mem_bytes, v->killed ? 1 : 0,
		v->limits.cpu_seconds, v->limits.wall_seconds,
		v->limits.memory_bytes, v->limits.processes, v->limits.open_files,
		v->limits.output_bytes, msg, warn);
	if (n < 0 || (size_t)n >= len)
		return -1;
	return n;
}

/* Full-consumption parsers; return 0 or -1. */
static int parse_int(const char *s, int *out)
{
	char *end;
	errno = 0;
	long x = strtol(s, &end, 10);
	if (errno || end == s || *end || x < -1000000 || x > 1000000)
		return -1;
	*out = (int)x;
	return 0;
}

static int parse_u64(const char *s, uint64_t *out)
{
	char *end;
	if (*s == '-')
		return -1;
	errno = 0;
	unsigned long long x = strtoull(s, &end, 10);
	if (errno || end == s || *end)
		return -1;
	*out = x;
	return 0;
}

static int parse_double(const char *s, double *out)
{
	char *end;
	errno = 0;
	double x = strtod(s, &end);
	if (errno || end == s || *end || !isfinite(x) || x < 0)
		return -1;
	*out = x;
	return 0;
}

/* Apply one key/value pair to *v; returns 0, or -1 on a malformed value. */
static int apply(struct sbx_verdict *v, const char *key, const char *val, int *have_status)
{
	uint64_t u = 0;
	int i = 0, rc = 0;
	if (strcmp(key, "status") == 0) {
		enum sbx_status s = sbx_status_parse(val);
		if (s == SBX_STATUS__MAX)
			return -1;
		v->status = s;
		*have_status = 1;
	} else if (strcmp(key, "exitcode") == 0) {
		rc = parse_int(val, &v->exit_code);
	} else if (strcmp(key, "exitsig") == 0) {
		rc = parse_int(val, &v->exit_signal);
	} else if (strcmp(key, "syscall") == 0) {
		one_line(v->syscall_name, sizeof v->syscall_name, val);
	} else if (strcmp(key, "time") == 0) {
		rc = parse_double(val, &v->cpu_seconds);
	} else if (strcmp(key, "time-wall") == 0) {
		rc = parse_double(val, &v->wall_seconds);
	} else if (strcmp(key, "max-rss") == 0) {
		rc = parse_u64(val, &v->max_rss_bytes);
	} else if (strcmp(key, "cg-mem") == 0) {
		rc = parse_u64(val, &v->cg_mem_bytes);
	} else if (strcmp(key, "killed") == 0) {
		rc = parse_int(val, &i);
		v->killed = i != 0;
	} else if (strcmp(key, "limit-time") == 0) {
		rc = parse_double(val, &v->limits.cpu_seconds);
	} else if (strcmp(key, "limit-wall") == 0) {
		rc = parse_double(val, &v->limits.wall_seconds);
	} else if (strcmp(key, "limit-mem") == 0) {
		rc = parse_u64(val, &v->limits.memory_bytes);
	} else if (strcmp(key, "limit-procs") == 0) {
		rc = parse_u64(val, &u);
		v->limits.processes = u > 1000000 ? 0 : (unsigned)u;
	} else if (strcmp(key, "limit-files") == 0) {
		rc = parse_u64(val, &u);
		v->limits.open_files = u > 1000000 ? 0 : (unsigned)u;
	} else if (strcmp(key, "limit-output") == 0) {
		rc = parse_u64(val, &v->limits.output_bytes);
	} else if (strcmp(key, "message") == 0) {
		one_line(v->message, sizeof v->message, val);
	} else if (strcmp(key, "warnings") == 0) {
		one_line(v->warnings, sizeof v->warnings, val);
	}
	return rc;
}

int sbx_verdict_parse(const char *text, size_t len, struct sbx_verdict *v)
{
	char line[512];
	int have_status = 0;
	memset(v, 0, sizeof *v);
	v->status = SBX_XX;
	if (len > SBX_META_MAX)
		return -1;
	size_t pos = 0;
	while (pos < len) {
		const char *nl = memchr(text + pos, '\n', len - pos);
		size_t n = nl ? (size_t)(nl - (text + pos)) : len - pos;
		if (n >= sizeof line || memchr(text + pos, '\0', n))
			goto bad;
		memcpy(line, text + pos, n);
		line[n] = '\0';
		pos += n + (nl ? 1 : 0);
		if (n == 0)
			continue;
		char *colon = strchr(line, ':');
		if (!colon)
			goto bad;
		*colon = '\0';
		if (apply(v, line, colon + 1, &have_status) < 0)
			goto bad;
	}
	if (!have_status)
		goto bad;
	return 0;
bad:
	v->status = SBX_XX;
	snprintf(v->message, sizeof v->message, "malformed verdict record");
	return -1;
}

/*
 * policy: the runner's pure decisions (no I/O), unit-tested in
 * tests/unit/runner/: id syntax, verdict-to-code mapping, log tails, metric
 * finiteness, byte-for-byte comparison of two results, JSON numbers.
 */
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "evaluator/runner/runner.h"
#include "xalloc.h"

#include <json-c/json.h>

bool policy_is_uuid(const char *s)
{
	if (!s || strlen(s) != 36)
		return false;
	for (size_t i = 0; i < 36; i++) {
		char ch = s[i];
		if (i == 8 || i == 13 || i == 18 || i == 23) {
			if (ch != '-')
				return false;
		} else if (!((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f'))) {
			return false;
		}
	}
	return true;
}

const char *policy_code_for_verdict(const char *sbx_code)
{
	static const struct { const char *from, *to; } map[] = {
		{ "timeout", "timeout" },
		{ "memory_limit", "memory_limit" },
		{ "forbidden_syscall", "forbidden_syscall" },
		{ "output_limit", "output_limit" },
		{ "signal", "crashed" },
		{ "runtime_error", "crashed" },
	};
	for (size_t i = 0; sbx_code && i < sizeof map / sizeof map[0]; i++)
		if (strcmp(sbx_code, map[i].from) == 0)
			return map[i].to;
	return "internal";
}

void policy_tail(struct buf *out, const char *s, size_t n, size_t max)
{
	size_t start = n > max ? n - max : 0;
	/* do not start inside a UTF-8 sequence */
	while (start < n && ((unsigned char)s[start] & 0xC0) == 0x80)
		start++;
	buf_append(out, s + start, n - start);
}

/* Bits of a double, so -0.0 != 0.0 and NaN payloads count. */
static int same_bits(double a, double b)
{
	return memcmp(&a, &b, sizeof a) == 0;
}

bool policy_metrics_finite(const struct metrics *m)
{
	return metrics_first_non_finite(m) < 0;
}

bool policy_metrics_from_json(const char *json, struct metrics *m)
{
	json_object *o = json ? json_tokener_parse(json) : NULL;
	memset(m, 0, sizeof *m);
	if (!o || !json_object_is_type(o, json_type_object)) {
		json_object_put(o);
		return false;
	}
	for (int id = 0; id < MET__MAX; id++) {
		json_object *v;
		if (!json_object_object_get_ex(o, metric_name((enum metric_id)id), &v) || !v)
			continue;
		if (json_object_is_type(v, json_type_int))
			metrics_set(m, (enum metric_id)id, (double)json_object_get_int64(v));
		else if (json_object_is_type(v, json_type_double))
			metrics_set(m, (enum metric_id)id, strtod(json_object_get_string(v), NULL));
	}
	json_object_put(o);
	return true;
}

void policy_json_double(struct buf *b, double v)
{
	char tmp[40];
	if (!isfinite(v)) {
		buf_puts(b, "null");
		return;
	}
	/* shortest text that reads back as the same double */
	for (int prec = 1; prec <= 17; prec++) {
		snprintf(tmp, sizeof tmp, "%.*g", prec, v);
		if (strtod(tmp, NULL) == v)
			break;
	}
	/* keep it a JSON number that reads as a float */
	buf_puts(b, tmp);
	if (!strpbrk(tmp, ".eEn"))
		buf_puts(b, ".0");
}

bool policy_compare(const struct metrics *a, const double *ea, size_t na,
		    const struct metrics *b, const double *eb, size_t nb, struct buf *diff)
{
	for (int id = 0; id < MET__MAX; id++) {
		if (id == MET_RUNTIME_S)
			continue;
		bool same = a->present[id] == b->present[id] && (!a->present[id] || same_bits(a->v[id], b->v[id]));
		if (same)
			continue;
		buf_printf(diff, "{\"what\":\"metric\",\"name\":\"%s\",\"expected\":", metric_name((enum metric_id)id));
		if (a->present[id])
			policy_json_double(diff, a->v[id]);
		else
			buf_puts(diff, "null");
		buf_puts(diff, ",\"actual\":");
		if (b->present[id])
			policy_json_double(diff, b->v[id]);
		else
			buf_puts(diff, "null");
		buf_putc(diff, '}');
		return false;
	}
	if (na != nb) {
		buf_printf(diff, "{\"what\":\"equity_length\",\"expected\":%zu,\"actual\":%zu}", na, nb);
		return false;
	}
	for (size_t i = 0; i < na; i++) {
		if (!same_bits(ea[i], eb[i])) {
			buf_printf(diff, "{\"what\":\"equity\",\"step\":%zu,\"expected\":", i);
			policy_json_double(diff, ea[i]);
			buf_puts(diff, ",\"actual\":");
			policy_json_double(diff, eb[i]);
			buf_putc(diff, '}');
			return false;
		}
	}
	return true;
}

void rresult_init(struct rresult *r)
{
	memset(r, 0, sizeof *r);
}

void rresult_free(struct rresult *r)
{
	buf_free(&r->metrics_json);
	buf_free(&r->audit_json);
	buf_free(&r->resources_json);
	buf_free(&r->error_message);
	buf_free(&r->log_tail);
	buf_free(&r->verification_json);
	free(r->equity);
	memset(r, 0, sizeof *r);
}

void rresult_fail(struct rresult *r, const char *code, const char *fmt, ...)
{
	va_list ap;
	r->status = RJOB_FAILED;
	snprintf(r->error_code, sizeof r->error_code, "%s", code);
	buf_reset(&r->error_message);
	va_start(ap, fmt);
	buf_vprintf(&r->error_message, fmt, ap);
	va_end(ap);
}

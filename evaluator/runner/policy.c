/*
 * policy: the runner's pure decisions (no I/O), unit-tested in
 * tests/unit/runner/: log tails, metric
 * finiteness, byte-for-byte comparison of two results (metrics, equity,
 * trades), JSON numbers.
 */
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "evaluator/runner/runner.h"
#include "job_status.h"
#include "xalloc.h"

#include <json-c/json.h>

void policy_tail(struct buf *out, const char *s, size_t n, size_t max)
{
	size_t start = n > max ? n - max : 0;
	/* do not start inside a UTF-8 sequence */
	while (start < n && ((unsigned char)s[start] & 0xC0) == 0x80)
		start++;
	buf_append(out, s + start, n - start);
}

/* Length of the first at most max bytes of s[0..n), cut at a UTF-8 boundary. */
static size_t cap_head(const char *s, size_t n, size_t max)
{
	if (n <= max)
		return n;
	size_t k = max;
	while (k > 0 && ((unsigned char)s[k] & 0xC0) == 0x80)
		k--;
	return k;
}

/* Replace string member key of o by its head (tail = 0) or tail within max bytes. */
static void cap_member(json_object *o, const char *key, size_t max, int tail)
{
	json_object *v;
	if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string))
		return;
	const char *s = json_object_get_string(v);
	size_t n = (size_t)json_object_get_string_len(v);
	if (n <= max)
		return;
	struct buf b = BUF_INIT;
	if (tail)
		policy_tail(&b, s, n, max);
	else
		buf_append(&b, s, cap_head(s, n, max));
	json_object_object_add(o, key, json_object_new_string_len(b.data ? b.data : "", (int)b.len));
	buf_free(&b);
}

/* Keep the last lines of the traceback array that fit in max bytes together. */
static void cap_traceback(json_object *ex, size_t max)
{
	json_object *tb;
	if (!json_object_object_get_ex(ex, "traceback", &tb))
		return;
	json_object *kept = json_object_new_array();
	if (json_object_is_type(tb, json_type_array)) {
		size_t n = json_object_array_length(tb), used = 0, first = n;
		while (first > 0) {
			json_object *l = json_object_array_get_idx(tb, first - 1);
			size_t len = json_object_is_type(l, json_type_string) ? (size_t)json_object_get_string_len(l) : 0;
			if (used + len + 1 > max)
				break;
			used += len + 1;
			first--;
		}
		for (size_t i = first; i < n; i++) {
			json_object *l = json_object_array_get_idx(tb, i);
			if (json_object_is_type(l, json_type_string))
				json_object_array_add(kept, json_object_get(l));
		}
	}
	json_object_object_add(ex, "traceback", kept);
}

void policy_cap_untrusted(json_object *err)
{
	if (!err || !json_object_is_type(err, json_type_object))
		return;
	cap_member(err, "error", RUNNER_UNTRUSTED_FIELD_MAX, 0);
	cap_member(err, "detail", RUNNER_UNTRUSTED_FIELD_MAX, 0);
	cap_member(err, "log_tail", RUNNER_UNTRUSTED_FIELD_MAX, 1);
	json_object *ex;
	if (json_object_object_get_ex(err, "exception", &ex) && json_object_is_type(ex, json_type_object)) {
		cap_member(ex, "message", RUNNER_UNTRUSTED_FIELD_MAX, 0);
		cap_member(ex, "type", 128, 0);
		cap_member(ex, "phase", 64, 0);
		cap_traceback(ex, RUNNER_UNTRUSTED_FIELD_MAX);
	}
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
	buf_free(&r->artifacts_error);
	free(r->equity);
	free(r->benchmark);
	free(r->fills);
	free(r->positions);
	memset(r, 0, sizeof *r);
}

void rresult_fail(struct rresult *r, const char *code, const char *fmt, ...)
{
	va_list ap;
	r->status = RJOB_FAILED;
	va_start(ap, fmt);
	job_error_vset(r->error_code, sizeof r->error_code, &r->error_message, code, fmt, ap);
	va_end(ap);
}

/* The fields of struct fill in their order, for naming the first one that differs. */
static const struct {
	const char *name;
	size_t      off;
	bool        is_int;
} fill_fields[] = {
	{ "bar", offsetof(struct fill, bar), true },           { "ts_ms", offsetof(struct fill, ts_ms), true },
	{ "quantity", offsetof(struct fill, quantity), false }, { "price", offsetof(struct fill, price), false },
	{ "fee", offsetof(struct fill, fee), false },           { "position", offsetof(struct fill, position), false },
	{ "units", offsetof(struct fill, units), false },       { "equity", offsetof(struct fill, equity), false },
};

/* Append field f of fill x as a JSON value (an integer, or a double as policy_json_double). */
static void fill_field_json(struct buf *b, const struct fill *x, size_t f)
{
	const char *p = (const char *)x + fill_fields[f].off;
	if (fill_fields[f].is_int) {
		int64_t v;
		memcpy(&v, p, sizeof v);
		buf_printf(b, "%lld", (long long)v);
	} else {
		double v;
		memcpy(&v, p, sizeof v);
		policy_json_double(b, v);
	}
}

/* The first difference of fill records x (expected) and y (actual) at index i, as JSON. */
static void fill_diff(struct buf *diff, size_t i, const struct fill *x, const struct fill *y)
{
	size_t f = 0;
	while (f + 1 < sizeof fill_fields / sizeof fill_fields[0] &&
	       memcmp((const char *)x + fill_fields[f].off, (const char *)y + fill_fields[f].off, 8) == 0)
		f++;
	buf_printf(diff, "{\"what\":\"fill\",\"index\":%zu,\"bar\":%lld,\"field\":\"%s\",\"expected\":", i,
		   (long long)x->bar, fill_fields[f].name);
	fill_field_json(diff, x, f);
	buf_puts(diff, ",\"actual\":");
	fill_field_json(diff, y, f);
	buf_putc(diff, '}');
}

bool policy_compare_trades(const struct rtrades *a, const struct rtrades *b, struct buf *diff)
{
	if (a->has != b->has) {
		buf_printf(diff, "{\"what\":\"trades\",\"expected\":%s,\"actual\":%s}", a->has ? "true" : "false",
			   b->has ? "true" : "false");
		return false;
	}
	if (!a->has)
		return true;
	if (a->n != b->n) {
		buf_printf(diff, "{\"what\":\"positions_length\",\"expected\":%zu,\"actual\":%zu}", a->n, b->n);
		return false;
	}
	for (size_t t = 0; t < a->n; t++) {
		if (same_bits(a->positions[t], b->positions[t]))
			continue;
		buf_printf(diff, "{\"what\":\"position\",\"bar\":%zu,\"expected\":", t);
		policy_json_double(diff, a->positions[t]);
		buf_puts(diff, ",\"actual\":");
		policy_json_double(diff, b->positions[t]);
		buf_putc(diff, '}');
		return false;
	}
	if (a->fills_total != b->fills_total || a->n_fills != b->n_fills) {
		bool total = a->fills_total != b->fills_total;
		buf_printf(diff, "{\"what\":\"%s\",\"expected\":%zu,\"actual\":%zu}", total ? "fills_total" : "fills_length",
			   total ? a->fills_total : a->n_fills, total ? b->fills_total : b->n_fills);
		return false;
	}
	for (size_t i = 0; i < a->n_fills; i++) {
		if (memcmp(&a->fills[i], &b->fills[i], sizeof a->fills[i]) != 0) {
			fill_diff(diff, i, &a->fills[i], &b->fills[i]);
			return false;
		}
	}
	return true;
}

/*
 * meter.c: the token usage of an Anthropic Messages response, read from the
 * bytes as they stream through (the proxy never holds a streamed answer
 * whole: only the current SSE line is kept).
 *
 * Streaming: `message_start` carries message.usage (input and cache tokens,
 * an initial output count), each `message_delta` carries usage with the
 * cumulative output count (and, in newer API versions, cumulative input and
 * cache counts). A field seen later replaces the earlier value. Plain JSON:
 * the document's top-level "usage" (also count_tokens' "input_tokens" is
 * not usage and is ignored).
 */
#include <string.h>

#include <json-c/json.h>

#include "evaluator/runner/egress/egress.h"

#define METER_LINE_MAX (1u << 20)
#define METER_JSON_MAX (8u << 20)

void egress_meter_init(struct egress_meter *m, bool sse)
{
	memset(m, 0, sizeof *m);
	m->sse = sse;
}

/* Take the usage fields present in obj (replacing earlier values). */
static void take_usage(struct egress_meter *m, struct json_object *usage)
{
	static const char *const names[] = { "input_tokens", "output_tokens",
		"cache_creation_input_tokens", "cache_read_input_tokens" };
	int64_t *dst[] = { &m->u.input, &m->u.output, &m->u.cache_write, &m->u.cache_read };
	if (!usage || !json_object_is_type(usage, json_type_object))
		return;
	for (size_t i = 0; i < 4; i++) {
		struct json_object *v;
		if (json_object_object_get_ex(usage, names[i], &v) && json_object_is_type(v, json_type_int)) {
			int64_t x = json_object_get_int64(v);
			if (x >= 0) {
				*dst[i] = x;
				m->saw_usage = true;
			}
		}
	}
}

/* One SSE "data:" payload. */
static void sse_data(struct egress_meter *m, const char *p, size_t n)
{
	struct json_tokener *tok = json_tokener_new_ex(16);
	struct json_object *o = json_tokener_parse_ex(tok, p, (int)n);
	json_tokener_free(tok);
	if (!o)
		return;
	struct json_object *type, *x;
	if (json_object_object_get_ex(o, "type", &type) && json_object_is_type(type, json_type_string)) {
		const char *t = json_object_get_string(type);
		if (strcmp(t, "message_start") == 0 && json_object_object_get_ex(o, "message", &x)) {
			struct json_object *u;
			if (json_object_object_get_ex(x, "usage", &u))
				take_usage(m, u);
		} else if (strcmp(t, "message_delta") == 0 && json_object_object_get_ex(o, "usage", &x)) {
			take_usage(m, x);
		}
	}
	json_object_put(o);
}

/* One complete SSE line (without its newline). */
static void sse_line(struct egress_meter *m, const char *p, size_t n)
{
	if (n > 0 && p[n - 1] == '\r')
		n--;
	if (n < 5 || memcmp(p, "data:", 5) != 0)
		return;
	p += 5;
	n -= 5;
	if (n > 0 && *p == ' ') {
		p++;
		n--;
	}
	sse_data(m, p, n);
}

void egress_meter_feed(struct egress_meter *m, const char *p, size_t n)
{
	if (!m->sse) {
		if (m->overflow || m->pending.len + n > METER_JSON_MAX) {
			m->overflow = true;
			return;
		}
		buf_append(&m->pending, p, n);
		return;
	}
	while (n > 0) {
		const char *nl = memchr(p, '\n', n);
		size_t k = nl ? (size_t)(nl - p) : n;
		if (m->overflow || m->pending.len + k > METER_LINE_MAX) {
			m->overflow = true;   /* drop this line, resync at the next newline */
		} else {
			buf_append(&m->pending, p, k);
		}
		if (!nl)
			return;
		if (!m->overflow && m->pending.len > 0)
			sse_line(m, m->pending.data, m->pending.len);
		buf_reset(&m->pending);
		m->overflow = false;
		p += k + 1;
		n -= k + 1;
	}
}

void egress_meter_finish(struct egress_meter *m)
{
	if (m->sse) {
		if (m->pending.len > 0 && !m->overflow)
			sse_line(m, m->pending.data, m->pending.len);
		buf_reset(&m->pending);
		return;
	}
	if (m->overflow || m->pending.len == 0)
		return;
	struct json_tokener *tok = json_tokener_new_ex(64);
	struct json_object *o = json_tokener_parse_ex(tok, m->pending.data, (int)m->pending.len);
	json_tokener_free(tok);
	struct json_object *u;
	if (o && json_object_object_get_ex(o, "usage", &u))
		take_usage(m, u);
	json_object_put(o);
	buf_reset(&m->pending);
}

void egress_meter_free(struct egress_meter *m)
{
	buf_free(&m->pending);
}

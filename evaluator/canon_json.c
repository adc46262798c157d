/* canon_json: canonical JSON writer and strict parser (see canon_json.h). */
#include "evaluator/canon_json.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "evaluator/pyrepr.h"
#include "utf8.h"
#include "xalloc.h"

int cj_valid_utf8(const char *s, size_t len)
{
	for (size_t i = 0, k; i < len; i += k)
		if ((k = utf8_seq_len(s + i, len - i)) == 0)
			return 0;
	return 1;
}

void cj_write_string(struct buf *b, const char *s, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	buf_reserve(b, len + 2);
	buf_putc(b, '"');
	size_t run = 0; /* bytes copied verbatim in one go */
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		const char *esc = NULL;
		char u[7];
		switch (c) {
		case '"': esc = "\\\""; break;
		case '\\': esc = "\\\\"; break;
		case '\n': esc = "\\n"; break;
		case '\r': esc = "\\r"; break;
		case '\t': esc = "\\t"; break;
		case '\b': esc = "\\b"; break;
		case '\f': esc = "\\f"; break;
		default:
			if (c < 0x20) {
				u[0] = '\\'; u[1] = 'u'; u[2] = '0'; u[3] = '0';
				u[4] = hex[c >> 4]; u[5] = hex[c & 15]; u[6] = '\0';
				esc = u;
			}
		}
		if (!esc) {
			run++;
			continue;
		}
		buf_append(b, s + i - run, run);
		run = 0;
		buf_puts(b, esc);
	}
	buf_append(b, s + len - run, run);
	buf_putc(b, '"');
}

void cj_write_double(struct buf *b, double x)
{
	if (isnan(x)) {
		buf_puts(b, "NaN");
	} else if (isinf(x)) {
		buf_puts(b, x > 0 ? "Infinity" : "-Infinity");
	} else {
		char tmp[PYREPR_MAX];
		size_t n = pyrepr_double(x, tmp);
		buf_append(b, tmp, n);
	}
}

/* qsort comparator: keys by byte order, which is code point order in UTF-8. */
static int cj_keycmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int cj_write_at(struct buf *b, json_object *o, int depth, char *err, size_t errlen);

/* Write an object with sorted keys. */
static int cj_write_object(struct buf *b, json_object *o, int depth, char *err, size_t errlen)
{
	int rc = -1;
	size_t n = (size_t)json_object_object_length(o), i = 0;
	const char **keys = xcalloc(n ? n : 1, sizeof *keys);
	struct json_object_iterator it = json_object_iter_begin(o), end = json_object_iter_end(o);
	for (; !json_object_iter_equal(&it, &end) && i < n; json_object_iter_next(&it))
		keys[i++] = json_object_iter_peek_name(&it);
	qsort(keys, n, sizeof *keys, cj_keycmp);
	buf_putc(b, '{');
	for (i = 0; i < n; i++) {
		size_t kl = strlen(keys[i]);
		if (!cj_valid_utf8(keys[i], kl)) {
			snprintf(err, errlen, "object key is not valid UTF-8");
			goto out;
		}
		if (i)
			buf_putc(b, ',');
		cj_write_string(b, keys[i], kl);
		buf_putc(b, ':');
		json_object *v = NULL;
		json_object_object_get_ex(o, keys[i], &v);
		if (cj_write_at(b, v, depth + 1, err, errlen) < 0)
			goto out;
	}
	buf_putc(b, '}');
	rc = 0;
out:
	free(keys);
	return rc;
}

/* Write o at nesting level depth. */
static int cj_write_at(struct buf *b, json_object *o, int depth, char *err, size_t errlen)
{
	if (depth > CJ_MAX_DEPTH) {
		snprintf(err, errlen, "JSON nested deeper than %d levels", CJ_MAX_DEPTH);
		return -1;
	}
	switch (json_object_get_type(o)) {
	case json_type_null:
		buf_puts(b, "null");
		return 0;
	case json_type_boolean:
		buf_puts(b, json_object_get_boolean(o) ? "true" : "false");
		return 0;
	case json_type_int: {
		int64_t v = json_object_get_int64(o);
		if (v == INT64_MAX)
			buf_printf(b, "%" PRIu64, json_object_get_uint64(o));
		else
			buf_printf(b, "%" PRId64, v);
		return 0;
	}
	case json_type_double:
		cj_write_double(b, json_object_get_double(o));
		return 0;
	case json_type_string: {
		const char *s = json_object_get_string(o);
		size_t n = (size_t)json_object_get_string_len(o);
		if (!cj_valid_utf8(s, n)) {
			snprintf(err, errlen, "string is not valid UTF-8");
			return -1;
		}
		cj_write_string(b, s, n);
		return 0;
	}
	case json_type_array: {
		size_t n = json_object_array_length(o);
		buf_putc(b, '[');
		for (size_t i = 0; i < n; i++) {
			if (i)
				buf_putc(b, ',');
			if (cj_write_at(b, json_object_array_get_idx(o, i), depth + 1, err, errlen) < 0)
				return -1;
		}
		buf_putc(b, ']');
		return 0;
	}
	case json_type_object:
		return cj_write_object(b, o, depth, err, errlen);
	}
	snprintf(err, errlen, "unknown JSON type");
	return -1;
}

int cj_write(struct buf *b, json_object *o, char *err, size_t errlen)
{
	return cj_write_at(b, o, 0, err, errlen);
}

/* Value of the \uXXXX escape whose 'u' is at t[i], or -1. */
static long cj_hex4(const char *t, size_t len, size_t i)
{
	if (i >= len || t[i] != 'u' || len - i < 5)
		return -1;
	long v = 0;
	for (size_t k = 1; k <= 4; k++) {
		char c = t[i + k];
		int d = (c >= '0' && c <= '9') ? c - '0' : (c >= 'a' && c <= 'f') ? c - 'a' + 10 :
			(c >= 'A' && c <= 'F') ? c - 'A' + 10 : -1;
		if (d < 0)
			return -1;
		v = v * 16 + d;
	}
	return v;
}

/*
 * Scan JSON text for lone surrogate escapes (json-c would turn them into
 * U+FFFD, Python keeps them and cannot encode them) and integer literals (outside strings) that do not fit
 * int64 (negative) or uint64 (positive). Returns 0 if all fit.
 */
static int cj_check_ints(const char *t, size_t len, char *err, size_t errlen)
{
	size_t i = 0;
	while (i < len) {
		char c = t[i];
		if (c == '"') {
			for (i++; i < len && t[i] != '"'; i++) {
				if (t[i] != '\\')
					continue;
				i++;
				long u = cj_hex4(t, len, i);
				if (u >= 0xdc00 && u <= 0xdfff) {
					snprintf(err, errlen, "lone low surrogate \\u%04lx in a string", u);
					return -1;
				}
				if (u >= 0xd800 && u <= 0xdbff) {
					long lo = (i + 6 < len && t[i + 5] == '\\') ? cj_hex4(t, len, i + 6) : -1;
					if (lo < 0xdc00 || lo > 0xdfff) {
						snprintf(err, errlen, "lone high surrogate \\u%04lx in a string", u);
						return -1;
					}
					i += 6;
				}
			}
			i++;
			continue;
		}
		if (c == '\'') {
			snprintf(err, errlen, "invalid JSON: single-quoted string at offset %zu", i);
			return -1;
		}
		if (c != '-' && (c < '0' || c > '9')) {
			i++;
			continue;
		}
		size_t start = i;
		int frac = 0;
		if (t[i] == '-')
			i++;
		while (i < len && ((t[i] >= '0' && t[i] <= '9') || t[i] == '.' || t[i] == 'e' ||
				   t[i] == 'E' || t[i] == '+' || t[i] == '-')) {
			if (t[i] == '.' || t[i] == 'e' || t[i] == 'E')
				frac = 1;
			i++;
		}
		if (frac || i - start > 40)
			continue;
		char tmp[48];
		memcpy(tmp, t + start, i - start);
		tmp[i - start] = '\0';
		errno = 0;
		if (tmp[0] == '-')
			(void)strtoll(tmp, NULL, 10);
		else
			(void)strtoull(tmp, NULL, 10);
		if (errno == ERANGE) {
			snprintf(err, errlen, "integer %s is out of the 64-bit range", tmp);
			return -1;
		}
	}
	return 0;
}

/* Reject any string in o (keys included) that is not valid UTF-8. */
static int cj_check_strings(json_object *o, char *err, size_t errlen)
{
	switch (json_object_get_type(o)) {
	case json_type_string:
		if (!cj_valid_utf8(json_object_get_string(o), (size_t)json_object_get_string_len(o))) {
			snprintf(err, errlen, "string is not valid UTF-8 (lone surrogate?)");
			return -1;
		}
		return 0;
	case json_type_array:
		for (size_t i = 0; i < json_object_array_length(o); i++)
			if (cj_check_strings(json_object_array_get_idx(o, i), err, errlen) < 0)
				return -1;
		return 0;
	case json_type_object: {
		json_object_object_foreach(o, k, v) {
			if (!cj_valid_utf8(k, strlen(k)) || cj_check_strings(v, err, errlen) < 0) {
				snprintf(err, errlen, "string is not valid UTF-8 (lone surrogate?)");
				return -1;
			}
		}
		return 0;
	}
	default:
		return 0;
	}
}

int cj_parse(const char *text, size_t len, json_object **out, char *err, size_t errlen)
{
	int rc = -1;
	json_object *o = NULL;
	json_tokener *tok = json_tokener_new_ex(CJ_MAX_DEPTH);
	*out = NULL;
	if (!tok) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	if (len > INT32_MAX || memchr(text, '\0', len)) {
		snprintf(err, errlen, "JSON text too long or contains NUL bytes");
		goto out;
	}
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
	o = json_tokener_parse_ex(tok, text, (int)len);
	enum json_tokener_error je = json_tokener_get_error(tok);
	size_t used = json_tokener_get_parse_end(tok);
	if (je == json_tokener_continue) {
		/* A bare top-level number or literal ends only at a delimiter:
		 * feed the terminating NUL as one more chunk. */
		o = json_tokener_parse_ex(tok, "", 1);
		je = json_tokener_get_error(tok);
		used = len;
	}
	if (je != json_tokener_success) {
		snprintf(err, errlen, "invalid JSON: %s", json_tokener_error_desc(je));
		goto out;
	}
	for (size_t i = used; i < len; i++) {
		if (text[i] != ' ' && text[i] != '\t' && text[i] != '\n' && text[i] != '\r') {
			snprintf(err, errlen, "invalid JSON: trailing bytes at offset %zu", i);
			goto out;
		}
	}
	if (cj_check_ints(text, len, err, errlen) < 0 || cj_check_strings(o, err, errlen) < 0)
		goto out;
	*out = o;
	o = NULL;
	rc = 0;
out:
	json_object_put(o);
	if (tok)
		json_tokener_free(tok);
	return rc;
}

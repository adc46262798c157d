/*
 * json.c: request bodies and field validators.
 *
 * Bodies are parsed with a json-c tokener created with an explicit depth
 * (JSON_MAX_DEPTH) in strict mode with UTF-8 validation; after the value
 * only whitespace may follow. Validators are named per type, take the field
 * name, and fill a struct field_error whose message names the field; the
 * handler-facing wrappers in app.c turn it into a 400.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fcgi/app.h"

/*
 * json-c's strict mode still takes single-quoted strings: outside string
 * literals, allow only the bytes standard JSON can have there.
 */
static bool body_lexically_json(const char *s, size_t len, size_t *bad)
{
	bool in_str = false;
	for (size_t i = 0; i < len; i++) {
		char c = s[i];
		if (in_str) {
			if (c == '\\')
				i++;
			else if (c == '"')
				in_str = false;
			continue;
		}
		if (c == '"') {
			in_str = true;
			continue;
		}
		if (strchr(" \t\r\n{}[],:-+.0123456789eEtrufalsn", c) == NULL || c == '\0') {
			*bad = i;
			return false;
		}
	}
	return true;
}

/* json-c parses NaN and Infinity (any case): reject non-finite numbers. */
static bool body_finite(json_object *o)
{
	switch (json_object_get_type(o)) {
	case json_type_double:
		return isfinite(json_object_get_double(o));
	case json_type_array:
		for (size_t i = 0; i < json_object_array_length(o); i++)
			if (!body_finite(json_object_array_get_idx(o, i)))
				return false;
		return true;
	case json_type_object: {
		json_object_object_foreach(o, k, v) {
			(void)k;
			if (!body_finite(v))
				return false;
		}
		return true;
	}
	default:
		return true;
	}
}

enum body_status body_parse(const char *s, size_t len, json_object **out, char *msg, size_t msglen)
{
	enum body_status st = BODY_OK;
	json_tokener *tok = NULL;
	json_object *o = NULL;
	size_t i = 0;

	*out = NULL;
	while (i < len && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r' || s[i] == '\n'))
		i++;
	if (i == len) {
		snprintf(msg, msglen, "the request body is empty; a JSON object is required");
		return BODY_EMPTY;
	}
	if (len > INT32_MAX) {
		snprintf(msg, msglen, "the request body is too large");
		return BODY_MALFORMED;
	}
	tok = json_tokener_new_ex(JSON_MAX_DEPTH);
	if (tok == NULL)
		abort();
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_ALLOW_TRAILING_CHARS | JSON_TOKENER_VALIDATE_UTF8);
	o = json_tokener_parse_ex(tok, s, (int)len);
	size_t end = json_tokener_get_parse_end(tok);
	if (o == NULL && json_tokener_get_error(tok) == json_tokener_continue) {
		/* A bare top-level number only ends at a delimiter: give it one. */
		o = json_tokener_parse_ex(tok, " ", 1);
		end = len;
	}
	enum json_tokener_error jerr = json_tokener_get_error(tok);
	if (o == NULL) {
		if (jerr == json_tokener_error_depth) {
			snprintf(msg, msglen, "JSON nested deeper than %d levels", JSON_MAX_DEPTH);
			st = BODY_TOO_DEEP;
		} else {
			snprintf(msg, msglen, "malformed JSON: %s",
			         jerr == json_tokener_continue ? "unexpected end of input" : json_tokener_error_desc(jerr));
			st = BODY_MALFORMED;
		}
		goto out;
	}
	for (size_t e = end; e < len; e++)
		if (s[e] != ' ' && s[e] != '\t' && s[e] != '\r' && s[e] != '\n') {
			snprintf(msg, msglen, "unexpected data after the JSON value (offset %zu)", e);
			st = BODY_TRAILING;
			goto out;
		}
	size_t bad = 0;
	if (!body_lexically_json(s, end, &bad)) {
		snprintf(msg, msglen, "malformed JSON: unexpected character at offset %zu", bad);
		st = BODY_MALFORMED;
		goto out;
	}
	if (!body_finite(o)) {
		snprintf(msg, msglen, "malformed JSON: NaN and Infinity are not JSON numbers");
		st = BODY_MALFORMED;
		goto out;
	}
	if (!json_object_is_type(o, json_type_object)) {
		snprintf(msg, msglen, "the request body must be a JSON object");
		st = BODY_NOT_OBJECT;
		goto out;
	}
	*out = o;
	o = NULL;
out:
	json_object_put(o);
	json_tokener_free(tok);
	return st;
}

/* Look up field; returns 1 present, 0 absent (ok), -1 error (e filled). */
static int field_get(json_object *obj, const char *field, unsigned flags, json_object **v, struct field_error *e)
{
	*v = NULL;
	if (obj == NULL || !json_object_object_get_ex(obj, field, v) ||
	    (*v == NULL && (flags & FIELD_NULLABLE))) {
		if (flags & FIELD_REQUIRED) {
			e->code = "missing_field";
			snprintf(e->msg, sizeof e->msg, "missing required field '%s'", field);
			return -1;
		}
		return 0;
	}
	return 1;
}

/* Fill e with an invalid_field message. */
static bool field_bad(struct field_error *e, const char *field, const char *what)
{
	e->code = "invalid_field";
	snprintf(e->msg, sizeof e->msg, "field '%s' %s", field, what);
	return false;
}

bool field_string(json_object *obj, const char *field, unsigned flags, size_t min_len, size_t max_len,
                  const char **out, struct field_error *e)
{
	json_object *v;
	char what[96];
	int r = field_get(obj, field, flags, &v, e);
	if (r <= 0)
		return r == 0;
	if (!json_object_is_type(v, json_type_string))
		return field_bad(e, field, "must be a string");
	const char *s = json_object_get_string(v);
	size_t n = (size_t)json_object_get_string_len(v);
	if (strlen(s) != n)
		return field_bad(e, field, "must not contain NUL characters");
	if (n < min_len || n > max_len) {
		snprintf(what, sizeof what, "must be %zu to %zu bytes long", min_len, max_len);
		return field_bad(e, field, what);
	}
	*out = s;
	return true;
}

bool field_int(json_object *obj, const char *field, unsigned flags, int64_t min, int64_t max,
               int64_t *out, struct field_error *e)
{
	json_object *v;
	char what[96];
	int r = field_get(obj, field, flags, &v, e);
	if (r <= 0)
		return r == 0;
	if (!json_object_is_type(v, json_type_int))
		return field_bad(e, field, "must be an integer");
	int64_t x = json_object_get_int64(v);
	/* json-c clamps out-of-range integers to INT64_MIN/MAX (and uint64 beyond). */
	if (x == INT64_MIN || x == INT64_MAX || x < min || x > max) {
		snprintf(what, sizeof what, "must be an integer from %lld to %lld", (long long)min, (long long)max);
		return field_bad(e, field, what);
	}
	*out = x;
	return true;
}

bool field_number(json_object *obj, const char *field, unsigned flags, double min, double max,
                  double *out, struct field_error *e)
{
	json_object *v;
	char what[96];
	int r = field_get(obj, field, flags, &v, e);
	if (r <= 0)
		return r == 0;
	if (!json_object_is_type(v, json_type_int) && !json_object_is_type(v, json_type_double))
		return field_bad(e, field, "must be a number");
	double x = json_object_get_double(v);
	if (!isfinite(x) || x < min || x > max) {
		snprintf(what, sizeof what, "must be a number from %g to %g", min, max);
		return field_bad(e, field, what);
	}
	*out = x;
	return true;
}

bool field_bool(json_object *obj, const char *field, unsigned flags, bool *out, struct field_error *e)
{
	json_object *v;
	int r = field_get(obj, field, flags, &v, e);
	if (r <= 0)
		return r == 0;
	if (!json_object_is_type(v, json_type_boolean))
		return field_bad(e, field, "must be true or false");
	*out = json_object_get_boolean(v);
	return true;
}

bool field_object(json_object *obj, const char *field, unsigned flags, json_object **out, struct field_error *e)
{
	json_object *v;
	int r = field_get(obj, field, flags, &v, e);
	if (r <= 0)
		return r == 0;
	if (!json_object_is_type(v, json_type_object))
		return field_bad(e, field, "must be an object");
	*out = v;
	return true;
}

bool field_array(json_object *obj, const char *field, unsigned flags, size_t max_items, json_object **out,
                 struct field_error *e)
{
	json_object *v;
	char what[96];
	int r = field_get(obj, field, flags, &v, e);
	if (r <= 0)
		return r == 0;
	if (!json_object_is_type(v, json_type_array))
		return field_bad(e, field, "must be an array");
	if (json_object_array_length(v) > max_items) {
		snprintf(what, sizeof what, "must have at most %zu items", max_items);
		return field_bad(e, field, what);
	}
	*out = v;
	return true;
}

bool field_only(json_object *obj, const char *const *allowed, struct field_error *e)
{
	json_object_object_foreach(obj, key, val) {
		(void)val;
		bool ok = false;
		for (const char *const *a = allowed; *a && !ok; a++)
			ok = strcmp(*a, key) == 0;
		if (!ok) {
			e->code = "invalid_field";
			snprintf(e->msg, sizeof e->msg, "unknown field '%.64s'", key);
			return false;
		}
	}
	return true;
}

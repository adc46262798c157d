/*
 * ch_result: the window grid shared by every challenge type and the helpers
 * that build result dictionaries and error objects.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>

#include "xalloc.h"
#include "evaluator/challenges/ch_internal.h"

/* Append one span if it is long enough. */
static void ch_span_push(struct ch_span **v, size_t *n, size_t *cap, size_t s, size_t e,
    bool hold, size_t min_len)
{
	if (e - s < min_len)
		return;
	if (*n == *cap) {
		*cap = *cap ? *cap * 2 : 16;
		*v = xreallocarray(*v, *cap, sizeof **v);
	}
	(*v)[(*n)++] = (struct ch_span){ s, e, hold };
}

/* The walk-forward grid (see ch_internal.h). */
size_t ch_grid(size_t first, size_t step, size_t n, size_t hs, enum ch_mode mode,
    size_t min_len, struct ch_span **out)
{
	struct ch_span *v = NULL;
	size_t k = 0, cap = 0;

	*out = NULL;
	if (step == 0)
		return 0;
	if (mode == CH_MODE_MANTIS) {
		for (size_t s = first; s < n; s += step)
			ch_span_push(&v, &k, &cap, s, s + step < n ? s + step : n, s >= hs, min_len);
	} else {
		size_t b = hs < n ? hs : n;
		for (size_t s = first; s < b; s += step)
			ch_span_push(&v, &k, &cap, s, s + step < b ? s + step : b, false, min_len);
		for (size_t s = first > b ? first : b; s < n; s += step)
			ch_span_push(&v, &k, &cap, s, s + step < n ? s + step : n, true, min_len);
	}
	*out = v;
	return k;
}

/* A double, or null for NaN/Inf (JSON has neither). */
json_object *ch_jdouble(double v)
{
	return isfinite(v) ? json_object_new_double(v) : NULL;
}

/* Fill err and *result with msg; return code. */
enum ch_err ch_fail(const struct ch_job *j, json_object **result, enum ch_err code,
    const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	int w;

	va_start(ap, fmt);
	w = vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (w < 0)
		msg[0] = '\0';
	/* A truncated message is still a valid, shorter message. */
	if (j->err != NULL && j->errlen > 0)
		snprintf(j->err, j->errlen, "%s", msg);
	*result = json_object_new_object();
	json_object_object_add(*result, "error", json_object_new_string(msg));
	return code;
}

/* {start, end} of a window; the caller adds metric keys, in_holdout, n_samples. */
json_object *ch_window_obj(const struct ch_span *w)
{
	json_object *o = json_object_new_object();
	json_object_object_add(o, "start", json_object_new_int64((int64_t)w->start));
	json_object_object_add(o, "end", json_object_new_int64((int64_t)w->end));
	return o;
}

/* {challenge, type} */
json_object *ch_result_head(const struct ch_prepared *p)
{
	json_object *o = json_object_new_object();
	json_object_object_add(o, "challenge", json_object_new_string(p->def->name));
	json_object_object_add(o, "type", json_object_new_string(ch_type_name(p->def->type)));
	return o;
}

/* Strict-mode rejection of a non-finite prediction. */
enum ch_err ch_fail_nonfinite(const struct ch_job *j, json_object **result, size_t row,
    size_t col, float v, const struct ch_span *spans, size_t nspans, size_t coord)
{
	char where[96] = "outside every scored window";
	const char *what = isnan(v) ? "NaN" : (v > 0 ? "+Inf" : "-Inf");

	for (size_t i = 0; i < nspans; i++)
		if (coord >= spans[i].start && coord < spans[i].end) {
			snprintf(where, sizeof where, "in window %zu [%zu, %zu)", i,
			    spans[i].start, spans[i].end);
			break;
		}
	return ch_fail(j, result, CH_ERR_PREDICTION,
	    "non-finite prediction (%s) at embedding row %zu (t=%zu), column %zu, %s",
	    what, row, row + j->warmup, col, where);
}

/* Strict-mode rejection of a too narrow embedding. */
enum ch_err ch_fail_dim(const struct ch_job *j, json_object **result, size_t need)
{
	return ch_fail(j, result, CH_ERR_PREDICTION,
	    "embedding has %zu columns, %s needs at least %zu", j->dim, j->p->def->name, need);
}

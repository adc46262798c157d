/*
 * log: one JSON object per line on stderr.
 *
 * Every line has "time" (UTC, RFC 3339 with milliseconds), "level" and
 * "event"; callers add fields. A line is built in one buffer and written with
 * a single write(2), so lines from concurrent workers sharing stderr never
 * interleave (writes below PIPE_BUF are atomic on pipes, and O_APPEND files
 * take whole writes).
 */
#ifndef AGENTTEST_LOG_H
#define AGENTTEST_LOG_H

#include <stdbool.h>
#include <stddef.h>

#include "buf.h"

enum log_level {
	LOG_LVL_DEBUG,
	LOG_LVL_INFO,
	LOG_LVL_WARNING,
	LOG_LVL_ERROR,
	LOG_LVL__MAX
};

/* Parse "debug", "info", "warning"/"warn", "error" (any case). */
bool log_parse_level(const char *s, enum log_level *out);
/* Name of a level ("info", ...). */
const char *log_level_name(enum log_level l);
/* Set the minimum level written (default info). */
void log_set_level(enum log_level l);
/* True if lines at level l are written. */
bool log_enabled(enum log_level l);
/* Start a line in b: {"time":"...","level":"...","event":"<event>" (no closing brace). */
void log_begin(struct buf *b, enum log_level l, const char *event);
/* Append ,"key":"<escaped value>" to b. */
void log_str(struct buf *b, const char *key, const char *val);
/* Append ,"key":"<escaped n bytes>" to b. */
void log_strn(struct buf *b, const char *key, const char *val, size_t n);
/* Append ,"key":<integer> to b. */
void log_int(struct buf *b, const char *key, long long v);
/* Close the object, add a newline and write b to stderr in one write. */
void log_end(struct buf *b);
/* One-shot: a line with event and "msg" formatted printf-style. */
void log_msg(enum log_level l, const char *event, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Append the n bytes of s to b as JSON string content (no quotes):
 * well-formed UTF-8 characters are kept as they are, control characters
 * are written as \n or \u00XX and each byte that starts no well-formed
 * character as \ufffd, so the line is always valid JSON (and UTF-8)
 * whatever the input. */
void log_json_escape(struct buf *b, const char *s, size_t n);
/* Append the current UTC time as 2026-01-02T03:04:05.678Z. */
void log_time(struct buf *b);

#endif

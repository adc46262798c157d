#include "log.h"

#include <errno.h>
#include <stdarg.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "parse.h"
#include "utf8.h"

static enum log_level log_min = LOG_LVL_INFO;
static const char *const log_names[LOG_LVL__MAX] = { "debug", "info", "warning", "error" };

bool log_parse_level(const char *s, enum log_level *out)
{
	size_t n = strlen(s);
	for (int i = 0; i < LOG_LVL__MAX; i++)
		if (parse_ieq(s, n, log_names[i])) {
			*out = (enum log_level)i;
			return true;
		}
	if (parse_ieq(s, n, "warn")) {
		*out = LOG_LVL_WARNING;
		return true;
	}
	return false;
}

const char *log_level_name(enum log_level l)
{
	return l < LOG_LVL__MAX ? log_names[l] : "unknown";
}

void log_set_level(enum log_level l)
{
	log_min = l;
}

bool log_enabled(enum log_level l)
{
	return l >= log_min;
}

void log_time(struct buf *b)
{
	/* strftime once per second per process; the milliseconds by hand. */
	static time_t cached_sec = (time_t)-1;
	static char cached[32];
	static size_t cached_len;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	if (ts.tv_sec != cached_sec) {
		struct tm tm;
		gmtime_r(&ts.tv_sec, &tm);
		cached_len = strftime(cached, sizeof cached, "%Y-%m-%dT%H:%M:%S.", &tm);
		cached_sec = ts.tv_sec;
	}
	long ms = ts.tv_nsec / 1000000;
	char frac[5] = { (char)('0' + ms / 100), (char)('0' + ms / 10 % 10), (char)('0' + ms % 10), 'Z', 0 };
	buf_append(b, cached, cached_len);
	buf_append(b, frac, 4);
}

void log_json_escape(struct buf *b, const char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	size_t run = 0;
	buf_reserve(b, n);
	for (size_t i = 0; i < n;) {
		unsigned char c = (unsigned char)s[i];
		if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
			i++;
			continue;
		}
		size_t len = c >= 0x80 ? utf8_seq_len(s + i, n - i) : 0;
		if (len > 0) {   /* a well-formed character: kept as it is */
			i += len;
			continue;
		}
		buf_append(b, s + run, i - run);
		run = ++i;
		if (c == '"' || c == '\\') {
			char esc[2] = { '\\', (char)c };
			buf_append(b, esc, 2);
		} else if (c == '\n') {
			buf_append(b, "\\n", 2);
		} else if (c >= 0x80) {   /* a byte that starts no character */
			buf_append(b, "\\ufffd", 6);
		} else {
			char esc[6] = { '\\', 'u', '0', '0', hex[c >> 4], hex[c & 15] };
			buf_append(b, esc, 6);
		}
	}
	buf_append(b, s + run, n - run);
}

void log_begin(struct buf *b, enum log_level l, const char *event)
{
	buf_puts(b, "{\"time\":\"");
	log_time(b);
	buf_puts(b, "\",\"level\":\"");
	buf_puts(b, log_level_name(l));
	buf_puts(b, "\"");
	log_str(b, "event", event);
}

void log_strn(struct buf *b, const char *key, const char *val, size_t n)
{
	buf_puts(b, ",\"");
	buf_puts(b, key);
	buf_puts(b, "\":\"");
	log_json_escape(b, val ? val : "", val ? n : 0);
	buf_putc(b, '"');
}

void log_str(struct buf *b, const char *key, const char *val)
{
	log_strn(b, key, val, val ? strlen(val) : 0);
}

void log_int(struct buf *b, const char *key, long long v)
{
	buf_puts(b, ",\"");
	buf_puts(b, key);
	buf_puts(b, "\":");
	buf_put_i64(b, v);
}

void log_end(struct buf *b)
{
	buf_puts(b, "}\n");
	const char *p = buf_cstr(b);
	size_t left = b->len;
	while (left > 0) {
		ssize_t w = write(STDERR_FILENO, p, left);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return;
		}
		p += w;
		left -= (size_t)w;
	}
}

void log_msg(enum log_level l, const char *event, const char *fmt, ...)
{
	if (!log_enabled(l))
		return;
	struct buf b = BUF_INIT, m = BUF_INIT;
	va_list ap;
	va_start(ap, fmt);
	buf_vprintf(&m, fmt, ap);
	va_end(ap);
	log_begin(&b, l, event);
	log_strn(&b, "msg", buf_cstr(&m), m.len);
	log_end(&b);
	buf_free(&m);
	buf_free(&b);
}

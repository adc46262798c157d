/*
 * buf: one growable, binary-safe byte buffer that is always NUL-terminated.
 *
 * Used for every response body, SQL-free text building and log line. Growth
 * is geometric with overflow checks (abort on OOM, see xalloc.h). A buffer
 * can be reset and reused across requests so that the steady state makes no
 * allocation at all.
 */
#ifndef AGENTTEST_BUF_H
#define AGENTTEST_BUF_H

#include <stdarg.h>
#include <stddef.h>

struct buf {
	char  *data; /* NUL-terminated; NULL until the first append */
	size_t len;  /* bytes used, excluding the terminator */
	size_t cap;  /* bytes allocated */
};

/* A read-only view of bytes owned elsewhere. */
struct strview {
	const char *ptr;
	size_t      len;
};

#define BUF_INIT { NULL, 0, 0 }

/* Make room for at least `extra` more bytes plus the terminator. */
void buf_reserve(struct buf *b, size_t extra);
/* Append n bytes. */
void buf_append(struct buf *b, const void *p, size_t n);
/* Append a NUL-terminated string. */
void buf_puts(struct buf *b, const char *s);
/* Append one byte. */
void buf_putc(struct buf *b, char c);
/* Append printf-formatted text (never truncates). */
void buf_printf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* va_list form of buf_printf. */
void buf_vprintf(struct buf *b, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));
/* Append the decimal digits of v (no printf: hot paths use it). */
void buf_put_u64(struct buf *b, unsigned long long v);
/* Append the decimal digits of v, with a '-' if negative. */
void buf_put_i64(struct buf *b, long long v);
/* Forget the contents, keep the allocation. */
void buf_reset(struct buf *b);
/* Release the allocation; the buffer is BUF_INIT afterwards. */
void buf_free(struct buf *b);
/* Contents as a C string ("" for an empty, never-used buffer). */
const char *buf_cstr(const struct buf *b);
/* Hand the allocation to the caller (NUL-terminated) and reset b. */
char *buf_detach(struct buf *b, size_t *len);

#endif

#include "buf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xalloc.h"

void buf_reserve(struct buf *b, size_t extra)
{
	size_t need = xadd(xadd(b->len, extra), 1);
	if (need <= b->cap)
		return;
	size_t cap = b->cap ? b->cap : 64;
	while (cap < need)
		cap = xmul(cap, 2);
	b->data = xrealloc(b->data, cap);
	b->cap = cap;
}

void buf_append(struct buf *b, const void *p, size_t n)
{
	buf_reserve(b, n);
	if (n > 0)
		memcpy(b->data + b->len, p, n);
	b->len += n;
	b->data[b->len] = '\0';
}

void buf_puts(struct buf *b, const char *s)
{
	buf_append(b, s, strlen(s));
}

void buf_putc(struct buf *b, char c)
{
	buf_append(b, &c, 1);
}

void buf_vprintf(struct buf *b, const char *fmt, va_list ap)
{
	va_list ap2;
	va_copy(ap2, ap);
	buf_reserve(b, 64);
	int n = vsnprintf(b->data + b->len, b->cap - b->len, fmt, ap);
	if (n < 0) {
		va_end(ap2);
		abort();
	}
	if ((size_t)n >= b->cap - b->len) {
		buf_reserve(b, (size_t)n);
		/* ap2 was initialised by va_copy above (cppcheck does not see it) */
		// cppcheck-suppress va_list_usedBeforeStarted
		vsnprintf(b->data + b->len, b->cap - b->len, fmt, ap2);
	}
	// cppcheck-suppress va_list_usedBeforeStarted
	va_end(ap2);
	b->len += (size_t)n;
}

void buf_printf(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	buf_vprintf(b, fmt, ap);
	va_end(ap);
}

void buf_put_u64(struct buf *b, unsigned long long v)
{
	char tmp[24];
	size_t i = sizeof tmp;
	do {
		tmp[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v != 0);
	buf_append(b, tmp + i, sizeof tmp - i);
}

void buf_put_i64(struct buf *b, long long v)
{
	if (v < 0) {
		buf_putc(b, '-');
		buf_put_u64(b, 0ULL - (unsigned long long)v);
		return;
	}
	buf_put_u64(b, (unsigned long long)v);
}

void buf_reset(struct buf *b)
{
	b->len = 0;
	if (b->data)
		b->data[0] = '\0';
}

void buf_free(struct buf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
}

const char *buf_cstr(const struct buf *b)
{
	return b->data ? b->data : "";
}

char *buf_detach(struct buf *b, size_t *len)
{
	buf_reserve(b, 0);
	char *p = b->data;
	if (len)
		*len = b->len;
	b->data = NULL;
	b->len = b->cap = 0;
	return p;
}

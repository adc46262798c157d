#include "xalloc.h"

#include <sodium.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Report and abort; never returns. */
static void xalloc_die(const char *what, size_t n) __attribute__((noreturn));
static void xalloc_die(const char *what, size_t n)
{
	fprintf(stderr, "{\"level\":\"fatal\",\"msg\":\"%s failed\",\"bytes\":%zu}\n", what, n);
	abort();
}

size_t xmul(size_t a, size_t b)
{
	size_t r;
	if (__builtin_mul_overflow(a, b, &r))
		xalloc_die("size multiplication", SIZE_MAX);
	return r;
}

size_t xadd(size_t a, size_t b)
{
	size_t r;
	if (__builtin_add_overflow(a, b, &r))
		xalloc_die("size addition", SIZE_MAX);
	return r;
}

void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (p == NULL)
		xalloc_die("malloc", n);
	return p;
}

void *xcalloc(size_t count, size_t size)
{
	void *p = calloc(count ? count : 1, size ? size : 1);
	if (p == NULL)
		xalloc_die("calloc", xmul(count, size));
	return p;
}

void *xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);
	if (q == NULL)
		xalloc_die("realloc", n);
	return q;
}

void *xreallocarray(void *p, size_t count, size_t size)
{
	return xrealloc(p, xmul(count, size));
}

char *xstrdup(const char *s)
{
	return xstrndup(s, strlen(s));
}

char *xstrndup(const char *s, size_t n)
{
	char *p = xmalloc(xadd(n, 1));
	memcpy(p, s, n);
	p[n] = '\0';
	return p;
}

void xfree_secret(void *p, size_t n)
{
	if (p == NULL)
		return;
	sodium_memzero(p, n);
	free(p);
}

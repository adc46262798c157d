/*
 * xalloc: allocation that never returns NULL.
 *
 * Out of memory in a worker is not recoverable request by request: the
 * wrappers log and abort(), and the supervising process (the FastCGI master,
 * systemd for the runner) starts a fresh one. Every size computation that can
 * overflow goes through the checked helpers here, which also abort.
 */
#ifndef AGENTTEST_XALLOC_H
#define AGENTTEST_XALLOC_H

#include <stddef.h>

/* malloc(n) or abort; n == 0 allocates one byte. */
void *xmalloc(size_t n);
/* calloc(count, size) with overflow check, or abort. */
void *xcalloc(size_t count, size_t size);
/* realloc(p, n) or abort; n == 0 keeps a one-byte block. */
void *xrealloc(void *p, size_t n);
/* reallocarray: realloc(p, count * size) with overflow check, or abort. */
void *xreallocarray(void *p, size_t count, size_t size);
/* strdup(s) or abort. */
char *xstrdup(const char *s);
/* Copy of the first n bytes of s plus a NUL, or abort. */
char *xstrndup(const char *s, size_t n);
/* a * b, aborting on overflow. */
size_t xmul(size_t a, size_t b);
/* a + b, aborting on overflow. */
size_t xadd(size_t a, size_t b);
/* Zero n bytes at p in a way the compiler cannot elide, then free(p). */
void xfree_secret(void *p, size_t n);

#endif

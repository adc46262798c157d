#include "arena.h"

#include <stdalign.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "xalloc.h"

struct arena_chunk {
	struct arena_chunk *next;
	size_t              cap;  /* payload bytes */
	size_t              used; /* payload bytes handed out */
	alignas(max_align_t) unsigned char data[];
};

#define ARENA_ALIGN (alignof(max_align_t))

/* Allocate a chunk with at least `cap` payload bytes and push it. */
static struct arena_chunk *arena_push(struct arena *a, size_t cap)
{
	struct arena_chunk *c = xmalloc(xadd(sizeof *c, cap));
	c->cap = cap;
	c->used = 0;
	c->next = a->head;
	a->head = c;
	return c;
}

void arena_init(struct arena *a, size_t chunk)
{
	const char *dbg = getenv("AGENTTEST_ARENA_DEBUG");
	a->head = NULL;
	a->chunk = chunk < 256 ? 256 : chunk;
	a->debug = dbg != NULL && strcmp(dbg, "1") == 0;
}

void *arena_alloc(struct arena *a, size_t n)
{
	size_t need = xadd(n, ARENA_ALIGN - 1) & ~(ARENA_ALIGN - 1);
	if (need == 0)
		need = ARENA_ALIGN;
	if (a->debug)
		return arena_push(a, n)->data;
	struct arena_chunk *c = a->head;
	if (c == NULL || c->cap - c->used < need) {
		size_t cap = a->head ? xmul(a->head->cap, 2) : a->chunk;
		if (cap < need)
			cap = need;
		c = arena_push(a, cap);
	}
	void *p = c->data + c->used;
	c->used += need;
	return p;
}

void *arena_calloc(struct arena *a, size_t count, size_t size)
{
	size_t n = xmul(count, size);
	void *p = arena_alloc(a, n);
	memset(p, 0, n);
	return p;
}

char *arena_strndup(struct arena *a, const char *s, size_t n)
{
	char *p = arena_alloc(a, xadd(n, 1));
	if (n > 0)
		memcpy(p, s, n);
	p[n] = '\0';
	return p;
}

void arena_reset(struct arena *a)
{
	struct arena_chunk *c = a->head;
	if (c == NULL)
		return;
	while (c->next != NULL) {
		struct arena_chunk *next = c->next;
		free(c);
		c = next;
	}
	/* Keep the oldest chunk (the default size) unless debug mode. */
	if (a->debug) {
		free(c);
		a->head = NULL;
		return;
	}
	c->used = 0;
	a->head = c;
}

void arena_free(struct arena *a)
{
	arena_reset(a);
	free(a->head);
	a->head = NULL;
}

/*
 * arena: a bump allocator for memory whose lifetime is one request.
 *
 * Theory of operation. A worker owns one arena. Everything a request needs
 * that outlives a stack frame (decoded query parameters, cookie values, path
 * parameters, small strings built by handlers) is carved out of it with
 * arena_alloc(), and nothing is freed individually. When the request ends the
 * worker calls arena_reset(): the first chunk is kept (and reused by the next
 * request, so a steady state allocates nothing), any extra chunks that a large
 * request needed are returned to malloc. Chunks grow geometrically; a single
 * allocation larger than the chunk size gets its own chunk. Every size
 * computation is overflow-checked (xadd/xmul abort).
 *
 * Debug knob: AGENTTEST_ARENA_DEBUG=1 in the environment makes every
 * allocation its own malloc() block, so ASan and valgrind see each one
 * (out-of-bounds reads between neighbouring allocations become visible).
 */
#ifndef AGENTTEST_ARENA_H
#define AGENTTEST_ARENA_H

#include <stddef.h>

struct arena_chunk;

struct arena {
	struct arena_chunk *head;  /* newest chunk first; the last one is kept */
	size_t              chunk; /* default chunk payload size */
	int                 debug; /* one malloc per allocation */
};

/* Initialise an empty arena whose chunks hold at least `chunk` bytes. */
void arena_init(struct arena *a, size_t chunk);
/* n bytes aligned for any type; never NULL (aborts on OOM). */
void *arena_alloc(struct arena *a, size_t n);
/* Zeroed array of count elements of size bytes (overflow-checked). */
void *arena_calloc(struct arena *a, size_t count, size_t size);
/* Copy of n bytes of s plus a NUL terminator. */
char *arena_strndup(struct arena *a, const char *s, size_t n);
/* Free everything but the first chunk, which is kept for reuse. */
void arena_reset(struct arena *a);
/* Free everything; the arena must be arena_init()ed again before use. */
void arena_free(struct arena *a);

#endif

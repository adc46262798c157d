/*
 * heap_plug.c: in the Python zygote, before the first fork, allocate every
 * free chunk glibc's main heap still holds (issue 19).
 *
 * Why. A child allocates as soon as it runs (compiling the strategy, its
 * frames, lists, the output array). glibc serves small requests from free
 * chunks first: the holes the zygote's start-up left all over its heap.
 * Each such chunk lies on an inherited page, so nearly every allocation
 * of the child copies a page (and, when the heap is in huge pages, splits
 * a 2 MiB mapping first): the profile shows _int_malloc as the largest
 * source of copy-on-write faults in a run. Once the holes are taken here,
 * a child's allocations come from the top of the heap: fresh pages of its
 * own, many objects to a page, nothing copied.
 *
 * The chunks taken are never used or freed: the memory was already the
 * zygote's (malloc_trim(0) has returned their whole free pages to the
 * kernel, and taking a chunk writes only its header). Only the zygote's
 * own trusted code runs here; nothing of it is shared with a child but
 * by copy-on-write, as before.
 */
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "sandbox/sbx_zygote.h"

/* At most this many chunks taken per size class: a bound, far above what
 * the zygote's heap holds (a few thousand holes). */
#define PLUG_MAX_PER_SIZE 200000

size_t sbx_heap_plug(void)
{
	struct mallinfo2 mi = mallinfo2();
	uintptr_t end = (uintptr_t)sbrk(0);
	if (end == (uintptr_t)-1 || mi.arena == 0 || mi.arena > end)
		return 0;
	uintptr_t start = end - mi.arena;
	size_t taken = 0;
	/* large to small: a big hole is taken whole before small requests
	 * would nibble it; a request served from the top (or by mmap) means no
	 * hole of that size is left */
	for (size_t sz = (size_t)64 << 10; sz >= 16; sz /= 2) {
		/* the top chunk starts here until a request is served from it */
		uintptr_t top = (uintptr_t)sbrk(0) - mallinfo2().keepcost;
		for (int i = 0; i < PLUG_MAX_PER_SIZE; i++) {
			void *p = malloc(sz);
			if (!p)
				return taken;
			uintptr_t a = (uintptr_t)p;
			if (a < start || a >= top) {
				free(p);
				break;
			}
			taken += sz;
		}
	}
	return taken;
}

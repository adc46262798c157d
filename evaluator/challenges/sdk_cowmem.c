/*
 * sdk_cowmem: copy-on-write memory for the SDK's causal views, handed to
 * numpy as the data of an ordinary owned array.
 *
 * Theory of operation. A view's prices(asset) at bar t must be a writable
 * array that no write can leak out of, without copying the t+1 values (the
 * walk-forward loop asks for it at every bar). The SDK keeps the market in
 * a memfd; sdk_cow_arm() maps the byte range of rows 0..t MAP_PRIVATE
 * (copy-on-write: pages are shared with the memfd until written, then
 * copied for this mapping alone) and "arms" it for the calling thread.
 * The array numpy builds over it covers exactly rows 0..t; the rest of the
 * last page is not reachable through numpy (only by raw pointer arithmetic,
 * which reaches the whole process anyway: causality against a hostile
 * strategy is the sandbox's job, where later bars do not exist yet). The
 * pages are deliberately not zeroed: on this kind of machine one
 * copy-on-write fault costs ~60 us, more than the rest of the call. The SDK installs sdk_cow_handler() as
 * numpy's data allocator (PyDataMem_SetHandler, NEP 49) around one
 * np.empty() of exactly that many bytes: the handler's malloc hands out the
 * armed mapping, so numpy owns it (flags.owndata, base None) and frees it
 * through the handler's free, which unmaps it. Any other request returns
 * NULL (numpy raises MemoryError and the SDK falls back); the handler is
 * only installed around that one call. Costs per call: one mmap and one
 * munmap at free; a page is copied only when the strategy writes it.
 */
#include <errno.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include "evaluator/challenges/challenges.h"

/* numpy's PyDataMem_Handler (numpy/ndarraytypes.h, version 1), plain C. */
struct np_allocator {
	void *ctx;
	void *(*malloc)(void *ctx, size_t size);
	void *(*calloc)(void *ctx, size_t nelem, size_t elsize);
	void *(*realloc)(void *ctx, void *ptr, size_t new_size);
	void (*free)(void *ctx, void *ptr, size_t size);
};

struct np_handler {
	char name[127];
	uint8_t version;
	struct np_allocator allocator;
};

static _Thread_local void *armed;
static _Thread_local size_t armed_len;

/* Page size (cached). */
static size_t page(void)
{
	static size_t p;
	if (!p) {
		long v = sysconf(_SC_PAGESIZE);
		p = v > 0 ? (size_t)v : 4096;
	}
	return p;
}

/* Unmap a block this file handed out: ptr lies in the first page of its
 * mapping and the mapping covers ptr .. ptr+size rounded up to pages. */
static void unmap_block(void *ptr, size_t size)
{
	uintptr_t p = (uintptr_t)ptr, base = p - p % page();
	size_t len = (p - base) + (size ? size : 1);
	len = (len + page() - 1) / page() * page();
	munmap((void *)base, len);
}

/* Drop a mapping that was armed but never taken. */
CH_API void sdk_cow_disarm(void)
{
	if (armed)
		unmap_block(armed, armed_len);
	armed = NULL;
	armed_len = 0;
}

/*
 * Map bytes [off, off + nbytes) of fd private and writable and arm it for this thread's next sdk_cow_handler malloc of
 * exactly nbytes. Returns 0, or -errno (EINVAL for nbytes 0 or off < 0).
 */
CH_API int sdk_cow_arm(int fd, int64_t off, size_t nbytes)
{
	if (nbytes == 0 || off < 0)
		return -EINVAL;
	sdk_cow_disarm();
	size_t delta = (size_t)off % page();
	size_t len = (delta + nbytes + page() - 1) / page() * page();
	unsigned char *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd,
	    (off_t)(off - (int64_t)delta));
	if (m == MAP_FAILED)
		return -errno;
	armed = m + delta;
	armed_len = nbytes;
	return 0;
}

/* malloc: the armed mapping when the size matches, else NULL. */
static void *h_malloc(void *ctx, size_t size)
{
	(void)ctx;
	if (!armed || size != armed_len)
		return NULL;
	void *p = armed;
	armed = NULL;
	armed_len = 0;
	return p;
}

/* calloc: never served (numpy only asks for it for zeroed arrays). */
static void *h_calloc(void *ctx, size_t nelem, size_t elsize)
{
	(void)ctx;
	(void)nelem;
	(void)elsize;
	return NULL;
}

/* realloc (ndarray.resize in place): refused, numpy raises MemoryError;
 * np.resize() and every other operation make a new ordinary array. */
static void *h_realloc(void *ctx, void *ptr, size_t new_size)
{
	(void)ctx;
	(void)ptr;
	(void)new_size;
	return NULL;
}

/* free: unmap. */
static void h_free(void *ctx, void *ptr, size_t size)
{
	(void)ctx;
	if (ptr)
		unmap_block(ptr, size);
}

static struct np_handler handler = {
	.name = "agenttest_cow",
	.version = 1,
	.allocator = { NULL, h_malloc, h_calloc, h_realloc, h_free },
};

/* The handler struct for numpy's PyDataMem_SetHandler (wrap it in a
 * PyCapsule named "mem_handler"). */
CH_API void *sdk_cow_handler(void)
{
	return &handler;
}

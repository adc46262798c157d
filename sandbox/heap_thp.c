/*
 * heap_thp.c: back the Python zygote's heap with transparent huge pages
 * before it forks runs (issue 19).
 *
 * Why. A fork copies one page-table entry per present anonymous page and
 * the child's exit removes it again, with its reverse mapping: the
 * zygote's 40 MB of heap (numpy and pandas imported) made that about
 * 10,000 entries copied and zapped per run and per audit call, the
 * largest part of a run's system time. A 2 MiB page that a PMD maps is one
 * entry to copy and to zap. The child's first write into such a page
 * splits the mapping in the child only and copies just the 4 KiB written
 * (the kernel does not copy huge pages on write), so copy-on-write stays
 * exactly as private as before: nothing becomes shared writable.
 *
 * How. The helper, which sees the host's /proc (the zygote has none),
 * reads /proc/PID/maps of the zygote once it is ready and idle in its C
 * order loop, and asks the kernel with process_madvise(MADV_COLLAPSE)
 * (Linux 6.1) to turn the 2 MiB-aligned parts of its large private
 * anonymous mappings into huge pages ([heap] among them, which holds every
 * Python object because the zygote runs with PYTHONMALLOC=malloc). This is
 * synchronous and independent of the THP "enabled" setting ("never"
 * aside). No MADV_HUGEPAGE is set, so a child's own new memory still
 * faults 4 KiB pages (under the usual "madvise" setting) and costs no
 * 2 MiB zeroing. Best effort: without kernel support or a free huge page
 * the heap stays as it was.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "sandbox/sbx_zygote.h"

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25
#endif

#define HUGE_SZ    ((uintptr_t)2 << 20)
#define MAX_RANGES 64

/* 1 if a maps line's permissions and name are a private writable anonymous mapping (or [heap]). */
static int anon_private_rw(const char *perms, const char *name)
{
	if (strncmp(perms, "rw-p", 4) != 0)
		return 0;
	return name[0] == '\0' || strcmp(name, "[heap]") == 0;
}

/* Fill iov with the 2 MiB-aligned parts of pid's private anonymous
 * mappings. Returns the count or -1. */
static int huge_ranges(pid_t pid, struct iovec *iov, int max)
{
	char path[64], line[512];
	int n = 0;
	snprintf(path, sizeof path, "/proc/%d/maps", (int)pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return -1;
	while (n < max && fgets(line, sizeof line, f)) {
		uintptr_t lo, hi;
		char perms[8] = "", dev[16] = "", name[256] = "";
		unsigned long long off, ino;
		if (sscanf(line, "%lx-%lx %7s %llx %15s %llu %255s", &lo, &hi, perms, &off, dev, &ino, name) < 6 ||
		    !anon_private_rw(perms, name))
			continue;
		uintptr_t s = (lo + HUGE_SZ - 1) & ~(HUGE_SZ - 1), e = hi & ~(HUGE_SZ - 1);
		if (e > s) {
			iov[n].iov_base = (void *)s;
			iov[n++].iov_len = e - s;
		}
	}
	fclose(f);
	return n;
}

long sbx_heap_collapse(pid_t pid)
{
	struct iovec iov[MAX_RANGES];
	int n = huge_ranges(pid, iov, MAX_RANGES);
	if (n <= 0)
		return n;
	int pfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (pfd < 0)
		return 0;
	long done = 0;
	/* one range per call: a range the kernel cannot collapse (no free huge
	 * page, a pinned page) must not hide the others */
	for (int i = 0; i < n; i++) {
		long r = syscall(SYS_process_madvise, pfd, &iov[i], 1, MADV_COLLAPSE, 0);
		if (r > 0)
			done += r;
	}
	close(pfd);
	return done;
}

/*
 * sbx_zygote.h: the zygote path (zygote_sup.c in the helper, zygote_so.c
 * in the Python zygote, zygote_client.c in the client library).
 */
#ifndef AGENTTEST_SBX_ZYGOTE_H
#define AGENTTEST_SBX_ZYGOTE_H

#include <stdbool.h>
#include <stdint.h>

#include "sandbox/sbx_confine.h"

/* One run request, client -> helper on the control socket, with four fds
 * in SCM_RIGHTS: host stdin (read end), stdout and stderr (write ends) and
 * the verdict pipe (write end), plus the stream's shared memory when
 * has_shm (it becomes the host's fd 4). */
struct sbx_zreq {
	uint32_t magic;        /* SBX_ZREQ_MAGIC */
	uint32_t box_id;
	struct sbx_limits limits;
	uint32_t has_shm;
};
#define SBX_ZREQ_MAGIC 0x5a594731u  /* "ZYG1" */

/* One spawn order, helper -> Python zygote on its socket, with fds in
 * SCM_RIGHTS: stdin, stdout, stderr, sync (write), ack (read), the shared
 * memory when has_shm, then ncg cgroup.procs files opened for writing. The
 * zygote answers with an int32: the child's pid, or -errno. */
struct sbx_zspawn {
	uint32_t magic;        /* SBX_ZSPAWN_MAGIC */
	uint32_t box_id;
	struct sbx_limits limits;
	uint32_t has_cgroup;
	uint32_t ncg;          /* 0..3 */
	uint32_t has_shm;      /* 0 or 1 */
	uint32_t deferred;     /* 1: a warm child (see struct sbx_zparams) */
};
#define SBX_ZSPAWN_MAGIC 0x5a535031u  /* "ZSP1" */

/* A warm child is spawned before its run is known: it joins its cgroup and
 * mounts /proc, then waits on the ack socket for this message (with the
 * run's stdin, and the shared memory when has_shm, in SCM_RIGHTS) before
 * it confines itself with these values. */
struct sbx_zparams {
	uint32_t magic;        /* SBX_ZPARAMS_MAGIC */
	uint32_t box_id;
	struct sbx_limits limits;
	uint32_t has_shm;
};
#define SBX_ZPARAMS_MAGIC 0x5a504131u  /* "ZPA1" */
#define SBX_ZSPAWN_FDS   5             /* fds before the cgroup ones */

/* In the Python zygote (zygote_so.c, via ctypes.PyDLL): compile the
 * policy once. Returns 0 or -1. */
int sbx_zygote_init(void);
/* In the Python zygote: start one confined run. Returns the child's pid in
 * the parent (the child's parent is the helper: CLONE_PARENT), 0 in the
 * child once it is fully confined (a warm child: once it has joined its
 * cgroup and mounted /proc, see sbx_zygote_unconfined), -errno on failure.
 * Never returns in a child whose confinement failed. */
int sbx_zygote_spawn(const void *msg, size_t len, const int *fds, int nfds);
/* Most descriptors one spawn order carries (SBX_ZSPAWN_FDS + shm + 3 cgroups). */
#define SBX_ZSERVE_MAX_FDS 12
/* In the Python zygote: serve spawn orders on ctl (answering each with the
 * int32 pid or -errno) until EOF. Returns 0 in a spawned child (as
 * sbx_zygote_spawn), 1 at EOF, -1 on an error of ctl. */
int sbx_zygote_serve(int ctl);
/* In a child sbx_zygote_spawn returned 0 to: 1 if it is a warm child not
 * confined yet (only the zygote's own code may run before
 * sbx_zygote_confine), else 0. */
int sbx_zygote_unconfined(void);
/* In a warm child: wait for its run, then confine. 0 once confined (at
 * once if it was); never returns in a child whose confinement failed. */
int sbx_zygote_confine(void);

/* In the helper, once the zygote is ready and before its first fork
 * (heap_thp.c): make the 2 MiB-aligned parts of the zygote's large private
 * anonymous mappings huge pages, so that each fork and exit copies and
 * zaps one page-table entry per 2 MiB instead of 512. Returns the bytes
 * collapsed (0 when the kernel cannot) or -1 if the zygote's maps cannot
 * be read. */
long sbx_heap_collapse(pid_t pid);

/* In the Python zygote, once before the first fork (heap_plug.c): take
 * every free chunk of glibc's main heap, so that a child's allocations
 * come from fresh pages at the top instead of copying inherited ones.
 * Returns the bytes taken. */
size_t sbx_heap_plug(void);
/* The same, exported to zygote.py (zygote_so.c). */
long sbx_zygote_plug_heap(void);

/* The helper's --zygote mode: build the box, start the Python zygote in
 * it, then serve run requests from ctl_fd until it closes. Returns the
 * helper's exit status. */
int sbx_zygote_main(int ctl_fd, const struct sbx_root_opts *root, bool no_cgroup, bool seccomp_log);

#endif

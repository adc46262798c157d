"""agenttest zygote: a pre-started, pre-imported strategy host that forks
one confined child per run.

Started by `agenttest-sandbox --zygote` (sandbox/zygote_sup.c) inside the
box's read-only root and namespaces, as root, with:

    /usr/bin/python3 -s -B zygote.py SO_PATH HOST_DIR PRELOAD

and the host's environment with PYTHONMALLOC=malloc instead of
PYTHONHASHSEED (_host_environ explains why).

It imports the PRELOAD modules (comma-separated, e.g. "numpy,pandas") and
the strategy host (PRELOAD may be empty: the plain zygote), loads the C half
(SO_PATH, sandbox/zygote_so.c) with
ctypes.PyDLL, compiles the seccomp policy once, runs the host's own code on
built-in data a few times (_prewarm), freezes its heap (_settle), then
hands fd 3 (a SOCK_SEQPACKET socket to the helper) to the C order loop
sbx_zygote_serve(), so that no Python code runs in the zygote between
spawns. Each order carries the run's descriptors; the loop returns 0 only
in a spawned child, which is already fully
confined (its own namespaces, cgroup, box uid, rlimits, no_new_privs,
seccomp), and that child runs agenttest_host.serve(0, 1) and exits. A warm
child (spawned before its run is known) comes back unconfined
(sbx_zygote_unconfined()): sbx_zygote_confine() waits for the run and
confines it, and only then does it serve. The
zygote itself never executes strategy code and never reads anything a run
wrote; a run cannot change the zygote.
"""
import ctypes
import gc
import importlib
import os
import socket
import sys

# In a run, a young-generation collection only after this many new objects:
# a run is short, and every collection it does not make is one less pass.
CHILD_GC_THRESHOLD = 20000


def _fail(msg):
    sys.stderr.write("agenttest-zygote: %s\n" % msg)
    sys.stderr.flush()
    os._exit(2)


def _single_threaded():
    """True when this interpreter has no thread state but the calling one."""
    return len(sys._current_frames()) == 1


def _child(host, lib, after_fork):
    """In a child: (confine a warm child once its run comes, then) serve the run, never return.

    after_fork is False when the zygote had a single Python thread at the
    spawn (_single_threaded), which it checks before every spawn: the clone
    then happened inside one ctypes call holding the GIL, so there is no
    other thread state to reclaim and no lock another thread could hold,
    and PyOS_AfterFork_Child would only rebuild what is already right while
    costing about 150 copy-on-write page faults a run (its fix-ups and the
    at-fork hooks of threading, logging and random allocate and touch
    inherited objects). The one thing a hook did that a run needs, fresh
    `random` state, the host does itself: it seeds random and numpy from
    the run's identity before any strategy code (seeding.py).

    A warm child (spawned before its run is known) used to run the host's
    code on built-in data while it waited, so that the pages a run writes
    were copied before the run. That moved copies off the run's path but
    added its own interpreter work to every run's CPU (about 0.3 ms a child,
    issue 19); it now only waits, its clone and cgroup move done.
    """
    if after_fork:
        ctypes.pythonapi.PyOS_AfterFork_Child()
    gc.set_threshold(CHILD_GC_THRESHOLD, 10, 10)
    if lib.sbx_zygote_unconfined():
        if lib.sbx_zygote_confine() != 0:
            os._exit(2)
    code = 0
    try:
        host.serve(0, 1)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:  # noqa: B902 - report and exit non-zero
        import traceback
        traceback.print_exc()
        code = 1
    try:
        sys.stderr.flush()
    finally:
        os._exit(code)


def _prewarm(host):
    """Run the host's own code paths here, once, before the first fork.

    Only agenttest_host.warm() runs (the host's frame codec, loader and run
    loop on built-in data and its built-in buy-and-hold, never a strategy).
    CPython 3.11 specialises bytecode and fills caches the first times a
    function runs, which writes into its code object: done in the zygote,
    every child inherits the finished code instead of writing (and so
    copying) those pages in each run.
    """
    for _ in range(3):
        host.warm()


def _host_environ():
    """Give os.environ (and so every child) the host's exact environment.

    The helper starts the zygote without -E and with PYTHONMALLOC=malloc, so
    that every object lives in the one [heap] mapping that the helper makes
    huge pages, and without PYTHONHASHSEED, so that the hash secret stays
    random per zygote as it was under -E. A run must see the documented
    environment (docs/sandbox.md), which has PYTHONHASHSEED=0 and no
    PYTHONMALLOC: the allocator was chosen at start-up, the variables no
    longer matter to this interpreter.
    """
    os.environ.pop("PYTHONMALLOC", None)
    os.environ["PYTHONHASHSEED"] = "0"


def _settle(libc, lib):
    """Before a fork: leave the heap so that children touch little of it.

    gc.freeze() moves every tracked object into the permanent generation,
    which no collection in a child visits (a collection writes the GC header
    of every object it visits, and so copies its page). malloc_trim(0)
    consolidates glibc's fast bins and returns free pages to the kernel, so
    a child's first large allocation does not walk and copy the inherited
    free lists (malloc_consolidate), and fewer pages are mapped to copy.
    sbx_zygote_plug_heap() then takes every free chunk left in the heap
    (sandbox/heap_plug.c), so that a child's allocations come from fresh
    pages at its top instead of holes on inherited pages, each of which
    would be copied. Once the zygote has said it is ready, the helper makes this heap huge
    pages (sandbox/heap_thp.c): a fork copies, and a child's exit zaps, one
    page-table entry per 2 MiB instead of 512, while a child's write still
    copies only 4 KiB.
    """
    gc.collect()
    gc.freeze()
    libc.malloc_trim(0)
    lib.sbx_zygote_plug_heap()


def main():
    if len(sys.argv) != 4:
        _fail("usage: zygote.py SO HOST_DIR PRELOAD")
    so_path, host_dir, preload = sys.argv[1:4]
    for name in filter(None, preload.split(",")):
        try:
            importlib.import_module(name)
        except ImportError as exc:
            sys.stderr.write("agenttest-zygote: preload %s: %s\n" % (name, exc))
    sys.path.insert(0, host_dir)
    host = importlib.import_module("agenttest_host")
    lib = ctypes.PyDLL(so_path)
    lib.sbx_zygote_init.restype = ctypes.c_int
    lib.sbx_zygote_unconfined.restype = ctypes.c_int
    lib.sbx_zygote_confine.restype = ctypes.c_int
    lib.sbx_zygote_serve.restype = ctypes.c_int
    lib.sbx_zygote_serve.argtypes = [ctypes.c_int]
    lib.sbx_zygote_plug_heap.restype = ctypes.c_long
    if lib.sbx_zygote_init() != 0:
        _fail("cannot compile the seccomp policy")
    libc = ctypes.CDLL(None)
    libc.malloc_trim.argtypes = [ctypes.c_size_t]
    if "numpy" in sys.modules:   # the STREAM path (numpy arrays), imported once here, not per run
        import agenttest_host.stream  # noqa: F401
    ctl = socket.socket(fileno=3)
    _host_environ()
    _prewarm(host)
    _settle(libc, lib)
    # no Python code runs in the zygote from here on (the order loop is C),
    # so no Python thread can appear: decided once
    after_fork = not _single_threaded()
    ctl.send(b"R")  # ready: everything is imported
    rc = lib.sbx_zygote_serve(ctl.fileno())
    if rc == 0:
        _child(host, lib, after_fork)
    if rc < 0:
        _fail("the control socket failed")


if __name__ == "__main__":
    main()

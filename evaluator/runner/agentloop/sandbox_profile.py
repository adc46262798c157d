"""The agent sandbox profile, built on agenttest-sandbox (docs/sandbox.md).

What an agent's process gets:
  * the workspace read-write (--workdir; the only writable place, the box
    user owns it) at the fixed path /workspace, its working directory and
    HOME, so no path the agent sees names the server's directories (the
    runner reads and writes it at its real path outside);
  * the SDK and strategy host at /agenttest/host and the evaluator library
    at /agenttest/lib/libagenttest_eval.so as private read-only copies in
    the box's tmpfs at /agenttest (--copy, sandbox/own_copy.c: a bind
    mount's source path shows in /proc/self/mountinfo);
  * the dev-only dataset copy read-only at /agenttest/data (devdata.py: the
    holdout bars are not in the sandbox at all), a bind: too large to copy
    every turn. The two binds (workspace, dev data) are the only entries
    of the box's mountinfo whose root field names a server path, relative
    to the file system holding them (docs/sandbox.md);
  * no network (the helper's empty network namespace, no sockets), no other
    agent's files, no host paths besides those, an environment of exactly
    the variables below (no DATABASE_URL, no token, no key);
  * limits: memory from MANTIS_CONTAINER_MEM_PCT (clamped as the original),
    a CPU quota of AGENT_CPUS CPUs (the original's `--cpus=2`: the cgroup's
    CPU bandwidth, so an agent's processes together never take more than
    two CPUs' time), CPU time and wall clock MANTIS_ITER_WALL_TIMEOUT, 512 processes and
    threads, 256 open files; every process is killed with the box's cgroup
    when the run ends, is cancelled or its supervisor dies.

Boxes: each concurrent agent needs its own uid and cgroup; `Box` leases
the first free number from the machine-wide pool every box user shares
(sandbox/box_lease.h: one flock'd file per number, 1..BOX_MAX, in
box_dir()), so an agent never shares a number with another agent, a
runner's slot, the check service or a CLI run.
"""
import fcntl
import os

from . import config

BOX_MAX = 9999   # SBX_BOX_MAX (sandbox/sbx_int.h)
HOST_DIR = "/agenttest/host"
DATA_DIR = "/agenttest/data"
LIB_PATH = "/agenttest/lib/libagenttest_eval.so"
WORKSPACE = "/workspace"   # the workspace inside the box (cwd and HOME)


def box_dir():
    """The lease directory, as sbx_box_dir() chooses it."""
    env = os.environ.get("AGENTTEST_BOX_DIR", "")
    if env.startswith("/"):
        return env
    if os.geteuid() == 0:
        return "/run/agenttest-boxes"
    return "/tmp/agenttest-boxes-%d" % os.geteuid()


class Box:
    """A box number leased for as long as the object lives (flock), and for
    as long as a helper it was handed to (fd, inherited) runs."""

    def __init__(self):
        self.fd, self.number = None, 0
        d = box_dir()
        os.makedirs(d, mode=0o700, exist_ok=True)
        st = os.lstat(d)
        if st.st_uid != os.geteuid() or st.st_mode & 0o022:
            raise RuntimeError("box leases: %s must be owned by uid %d and not writable by others" % (d, os.geteuid()))
        for n in range(1, BOX_MAX + 1):
            fd = os.open(os.path.join(d, "%d.lock" % n), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            self.fd, self.number = fd, n
            return
        raise RuntimeError("box leases: all %d box numbers in %s are in use" % (BOX_MAX, d))

    def uid(self):
        return 60000 + self.number

    def close(self):
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


OUTPUT_BASE = 64 << 20
AGENT_CPUS = 2   # the original's docker --cpus=2


def output_limit(dev_dir):
    """The largest file the agent may write: 64 MiB plus twice its dev
    data. The SDK keeps its market copy in an unlinked workspace file
    (no memfd in the box), as large as the assets' columns it loads, so a
    29-asset challenge over 60 days needs more than the 64 MiB that was
    the flat limit (the turn died with EFBIG)."""
    total = 0
    try:
        with os.scandir(dev_dir) as it:
            for e in it:
                if e.is_file(follow_symlinks=False):
                    total += e.stat(follow_symlinks=False).st_size
    except OSError:
        pass
    return OUTPUT_BASE + 2 * total


def argv(helper, box, workspace, host_dir, lib, dev_dir, program, meta, profile="strategy",
         extra_env=None, extra_binds=()):
    """The agenttest-sandbox command line of an agent turn (workspace: its
    real path on the host, seen at WORKSPACE inside). profile "agent"
    (LLM drivers, llm.py) adds --profile=agent (the box's own network
    namespace with loopback, processes, exec, JIT: docs/agents.md), the
    extra read-only entries (src, dest) bound, (src, dest, "copy") copied
    (dest below /agenttest), and environment entries."""
    wall = config.get("MANTIS_ITER_WALL_TIMEOUT")
    env = {
        "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "HOME": WORKSPACE,
        "PYTHONPATH": HOST_DIR, "PYTHONDONTWRITEBYTECODE": "1", "PYTHONHASHSEED": "0",
        "DATASET_DIR": DATA_DIR, "AGENTTEST_EVAL_LIB": LIB_PATH,
        # the policy refuses memfd_create and shared file mappings: the SDK
        # keeps its market copy in an unlinked workspace file instead
        "AGENTTEST_NO_MEMFD": "1",
        "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
    }
    a = [helper, "--box=%d" % box.number, "--cpu=%d" % wall, "--wall=%d" % wall,
         "--mem=%d" % config.agent_memory_bytes(), "--cpus=%g" % AGENT_CPUS, "--procs=512", "--files=256",
         "--output=%d" % output_limit(dev_dir), "--meta=%s" % meta,
         "--copy=%s:%s" % (os.path.realpath(host_dir), HOST_DIR),
         "--copy=%s:%s" % (os.path.realpath(lib), LIB_PATH),
         "--bind=%s:%s" % (os.path.realpath(dev_dir), DATA_DIR),
         "--workdir=%s:%s" % (os.path.realpath(workspace), WORKSPACE)]
    a += ["--profile=agent"] if profile == "agent" else ["--netns=shared"]
    a += ["--%s=%s:%s" % ("copy" if e[2:] == ("copy",) else "bind", os.path.realpath(e[0]), e[1])
          for e in extra_binds]
    env.update(extra_env or {})
    a += ["--env=%s=%s" % kv for kv in sorted(env.items())]
    return a + ["--"] + list(program)


def read_meta(path):
    """The verdict record as a dict (empty when missing)."""
    out = {}
    try:
        with open(path) as f:
            for line in f:
                k, _, v = line.rstrip("\n").partition(":")
                out[k] = v
    except OSError:
        pass
    return out

#!/usr/bin/env bash
# Agent boxes (issue 11 item 15): what the private copies of read-only
# trees cost per turn against a bind mount. For each tree, interleaved
# runs of `/bin/true` in agenttest-sandbox with the tree as --bind and as
# --copy (sandbox/own_copy.c); medians of the CPU the helper and its child
# used (rusage of reaped children: other engineers' load does not count)
# and of wall time (which it does: the load average is printed).
#   - the library: build/release/libagenttest_eval.so at its agent-box path
#     (the host directory is always a copy, sbx_own_dst, so it is not
#     compared);
#   - the Claude Code package (node_modules/@anthropic-ai/claude-code, 48 MB
#     with its vendored tools; skipped when `npm ci` has not been run).
# Knobs: RUNS (default 20).
set -euo pipefail
cd "$(dirname "$0")/../.."
[ "$(id -u)" -eq 0 ] || { echo "bench/agent_box_copy: needs root"; exit 1; }
make --no-print-directory -s bin/agenttest-sandbox build/release/libagenttest_eval.so
RUNS=${RUNS:-20} exec /usr/bin/python3 - <<'PY'
import os, resource, subprocess, sys, time
sys.path.insert(0, "evaluator/runner")
from agentloop import sandbox_profile

runs = int(os.environ["RUNS"])
helper = os.path.abspath("bin/agenttest-sandbox")
trees = [("library", os.path.abspath("build/release/libagenttest_eval.so"), sandbox_profile.LIB_PATH),
         ("claude-code", os.path.abspath("node_modules/@anthropic-ai/claude-code"), "/agenttest/claude")]
box = sandbox_profile.Box()


def once(kind, src, dst):
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.monotonic()
    p = subprocess.run([helper, "--box=%d" % box.number, "--cpu=30", "--wall=30", "--procs=8", "--mem=2G",
                        "--%s=%s:%s" % (kind, src, dst), "--", "/bin/true"], capture_output=True)
    wall = time.monotonic() - t
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        sys.exit("bench/agent_box_copy: %s %s failed: %s" % (kind, src, p.stderr.decode()[-300:]))
    return r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime, wall


def size(path):
    if os.path.isfile(path):
        return os.path.getsize(path)
    return sum(os.path.getsize(os.path.join(t, f)) for t, _, fs in os.walk(path) for f in fs
               if not os.path.islink(os.path.join(t, f)))


print("load average before: %s" % open("/proc/loadavg").read().split()[:3])
print("%-12s %8s %14s %14s %14s %14s" % ("tree", "MB", "bind cpu ms", "copy cpu ms", "bind wall ms", "copy wall ms"))
try:
    for name, src, dst in trees:
        if not os.path.exists(src):
            print("%-12s skipped: %s missing" % (name, src))
            continue
        got = {"bind": [], "copy": []}
        for _ in range(runs):
            for kind in ("bind", "copy"):
                got[kind].append(once(kind, src, dst))
        med = {k: (sorted(c for c, _ in v)[runs // 2] * 1e3, sorted(w for _, w in v)[runs // 2] * 1e3)
               for k, v in got.items()}
        print("%-12s %8.1f %14.1f %14.1f %14.1f %14.1f" % (name, size(src) / 1e6, med["bind"][0], med["copy"][0],
                                                         med["bind"][1], med["copy"][1]))
finally:
    box.close()
print("load average after: %s" % open("/proc/loadavg").read().split()[:3])
PY

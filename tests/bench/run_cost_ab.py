"""Client of tests/bench/run_cost_ab.sh: alternate single audited 5-bar runs
between stacks A and B (A B B A ...) and print each side's CPU and minor
faults per run, and the p50/p90 wall time of its POST /runs with wait.

usage: run_cost_ab.py A_BASE A_RUN_DIR B_BASE B_RUN_DIR N AUDIT

A side's CPU is the growth, over the whole loop, of utime+stime (reaped
children included) of every process of its stack (run_cost.cpu_of): while
the other side runs, a stack is idle, so this is its runs' cost.
"""
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run_cost import BH, Client, Target, cpu_of, loadavg, stack_sessions  # noqa: E402


def main():
    a_base, a_run, b_base, b_run, n, audit = sys.argv[1:7]
    n, audit = int(n), audit == "1"
    sides = []
    for base, run_dir in ((a_base, a_run), (b_base, b_run)):
        t = Target(base, True, audit)
        c = Client(base)
        vid = t.submit(c, BH, "ab-bh")
        for _ in range(5):   # warm the zygotes and the dataset cache
            t.run(c, vid)
        sides.append({"t": t, "c": c, "vid": vid, "s": stack_sessions(run_dir), "wall": []})
    before = [cpu_of(s["s"]) for s in sides]
    load0 = loadavg()
    for i in range(n):
        for k in ((0, 1) if i % 2 == 0 else (1, 0)):
            s = sides[k]
            t0 = time.perf_counter()
            s["t"].run(s["c"], s["vid"])
            s["wall"].append(time.perf_counter() - t0)
    after = [cpu_of(s["s"]) for s in sides]
    print("%d audited 5-bar runs per side, alternating; load average %s at start, %s at end"
          % (n, load0, loadavg()))
    print("%-4s %10s %10s %10s %10s %12s %12s" % ("side", "user ms", "sys ms", "cpu ms", "faults",
                                                  "wall p50 ms", "wall p90 ms"))
    for name, b, a, side in zip("AB", before, after, sides):
        u, s, f = ((a[j] - b[j]) / n for j in range(3))
        w = sorted(side["wall"])
        p90 = statistics.quantiles(w, n=10)[-1] if len(w) >= 2 else w[0]
        print("%-4s %10.1f %10.1f %10.1f %10.0f %12.1f %12.1f" % (name, u * 1000, s * 1000, (u + s) * 1000, f,
                                                                 statistics.median(w) * 1000, p90 * 1000))


if __name__ == "__main__":
    main()

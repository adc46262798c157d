"""Client of tests/bench/run_cost.sh (issue 19): per-run CPU, runs/s with
several clients, wait and submit latency, and the same client against the
original agenttest when one is running.

usage: run_cost.py BASE RUN_DIR N_SEQ DURATION AUDIT CLIENTS [ORIG_BASE]

RUN_DIR is the stack's pid directory ($AGENTTEST_VAR/run): the CPU of a
measurement is the growth of utime+stime+cutime+cstime summed over every
live process whose session is one the stack started (the runner with its
sandbox helpers, zygotes and the runs they reaped; the pool; nginx;
MariaDB), read from /proc before and after.
"""
import getpass
import http.client
import json
import os
import re
import subprocess
import statistics
import sys
import threading
import time
import urllib.parse

TICK = os.sysconf("SC_CLK_TCK")


def stack_sessions(run_dir):
    """{session id: component name} of the processes the stack recorded (each in its own session)."""
    out = {}
    for f in os.listdir(run_dir):
        if not f.endswith(".pid"):
            continue
        try:
            pid = int(open(os.path.join(run_dir, f)).readline())
            out[int(open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()[3])] = f[:-4]
        except (OSError, ValueError, IndexError):
            pass
    return out


def cpu_by_part(sessions):
    """{component: (user s, system s, minor faults)} of every live process of these sessions,
    reaped children included."""
    out = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            f = open("/proc/%s/stat" % d).read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        name = sessions.get(int(f[3]))
        if name is None:
            continue
        u, s, m = out.get(name, (0, 0, 0))
        out[name] = (u + (int(f[11]) + int(f[13])) / TICK, s + (int(f[12]) + int(f[14])) / TICK,
                     m + int(f[7]) + int(f[8]))
    return out


def cgroup_cpu():
    """(user s, system s) of the stack's CPU-accounting group (RUN_COST_CGROUP), or None."""
    cg = os.environ.get("RUN_COST_CGROUP")
    if not cg:
        return None
    try:
        if os.path.exists(os.path.join(cg, "cpuacct.usage_user")):
            return tuple(int(open(os.path.join(cg, f)).read()) / 1e9 for f in ("cpuacct.usage_user", "cpuacct.usage_sys"))
        st = dict(line.split() for line in open(os.path.join(cg, "cpu.stat")))
        return int(st["user_usec"]) / 1e6, int(st["system_usec"]) / 1e6
    except (OSError, ValueError, KeyError):
        return None


def cpu_of(sessions):
    """(user, system, minor faults) of every live process of these sessions, reaped children included."""
    parts = cpu_by_part(sessions).values()
    return sum(p[0] for p in parts), sum(p[1] for p in parts), sum(p[2] for p in parts)


class Client:
    """One keep-alive HTTP connection."""

    def __init__(self, base):
        u = urllib.parse.urlsplit(base)
        self.host, self.port = u.hostname, u.port
        self.conn = http.client.HTTPConnection(self.host, self.port, timeout=120)

    def call(self, method, path, body=None):
        data = json.dumps(body).encode() if body is not None else None
        for _ in range(50):
            try:
                self.conn.request(method, path, body=data,
                                  headers={"Content-Type": "application/json"} if data else {})
                r = self.conn.getresponse()
                raw = r.read()
            except (http.client.HTTPException, OSError):
                self.conn.close()
                self.conn = http.client.HTTPConnection(self.host, self.port, timeout=120)
                continue
            if r.status in (429, 503):
                time.sleep(0.05)
                continue
            return r.status, json.loads(raw) if raw else None
        raise RuntimeError("%s %s: still %d" % (method, path, r.status))


BH = "def simulate(prices, params):\n    p0 = prices[0]\n    return [p / p0 for p in prices]\n"


def variant(i):
    """Buy-and-hold code that differs from every other variant (a new code hash)."""
    return BH + "# variant %d %f\n" % (i, time.time())


class Target:
    """How to submit and run against ours or the original."""

    def __init__(self, base, ours, audit):
        self.base, self.ours, self.audit = base, ours, audit

    def submit(self, c, code, name):
        st, r = c.call("POST", "/strategies/submit", {"code": code, "name": name})
        assert st in (200, 201), (st, r)
        return r["strategy_version_id"]

    def run(self, c, vid, dsv="v1"):
        if self.ours:
            t0 = time.perf_counter()
            st, r = c.call("POST", "/runs", {"strategy_version_id": vid, "dataset_version": dsv,
                                              "audit": self.audit, "wait": 60})
            assert st == 200 and r["status"] == "completed", (st, "after %.3f s" % (time.perf_counter() - t0), r)
        else:
            st, r = c.call("POST", "/runs", {"strategy_version_id": vid})
            assert st in (200, 201) and r.get("status", "completed") in ("completed", "succeeded"), (st, r)
        return r


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * (len(xs) - 1) + 0.5))]


def rate(t, n_clients, duration, submit, sessions=None):
    """(runs/s, {component: CPU ms per run}) of n_clients looping for duration s
    (each: [submit new code,] run); the CPU of the stack's components when sessions
    (stack_sessions) are given, else {}."""
    vid = t.submit(Client(t.base), BH, "cost-bh")
    counts = [0] * n_clients
    stop = time.perf_counter() + duration
    errors = []

    def loop(k):
        c = Client(t.base)
        i = 0
        try:
            while time.perf_counter() < stop:
                v = t.submit(c, variant(k * 1000000 + i), "cost-v") if submit else vid
                t.run(c, v)
                counts[k] += 1
                i += 1
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(repr(exc))

    th = [threading.Thread(target=loop, args=(k,)) for k in range(n_clients)]
    p0 = cpu_by_part(sessions) if sessions else {}
    t0 = time.perf_counter()
    for x in th:
        x.start()
    for x in th:
        x.join()
    if errors:
        raise RuntimeError(errors[0])
    runs_s = sum(counts) / (time.perf_counter() - t0)
    p1 = cpu_by_part(sessions) if sessions else {}
    n = max(1, sum(counts))
    cpu = {k: ((p1[k][0] + p1[k][1]) - (p0.get(k, (0, 0))[0] + p0.get(k, (0, 0))[1])) / n * 1000 for k in p1}
    return runs_s, cpu


def latencies(t, n):
    """(wait p50, p90, new submit p50, p90, known submit p50, p90) in ms, one client."""
    c = Client(t.base)
    vid = t.submit(c, BH, "cost-bh")
    for _ in range(3):
        t.run(c, vid)
    run, new, known = [], [], []
    for i in range(n):
        t0 = time.perf_counter()
        t.run(c, vid)
        run.append((time.perf_counter() - t0) * 1000)
        code = variant(900000000 + i)
        t0 = time.perf_counter()
        t.submit(c, code, "cost-lat")
        new.append((time.perf_counter() - t0) * 1000)
        t0 = time.perf_counter()
        t.submit(c, code, "cost-lat")
        known.append((time.perf_counter() - t0) * 1000)
    return [f(x) for x in (run, new, known) for f in (statistics.median, lambda v: pct(v, 0.9))]


def in_process_cost(n):
    """(CPU ms, wall ms) per unsandboxed in-process run of BH on the 5 bars under this
    interpreter: compile, exec, call, float64 check; no HTTP, no database, no isolation
    (the original agenttest's execution model, without its web and SQLite layers)."""
    import numpy as np
    prices = [100.0, 101.0, 102.0, 103.0, 104.0]
    c0, t0 = time.process_time(), time.perf_counter()
    for i in range(n):
        env = {"__name__": "strategy"}
        exec(compile(variant(i), "strategy.py", "exec"), env)
        eq = np.asarray(env["simulate"](prices, {}), dtype=np.float64)
        assert eq.shape == (5,) and np.all(np.isfinite(eq))
    return (time.process_time() - c0) / n * 1000, (time.perf_counter() - t0) / n * 1000


def mariadb(run_dir, sql):
    """Run sql on the stack's MariaDB (its unix socket in run_dir, the OS user's account)."""
    subprocess.run(["mariadb", "--no-defaults", "--protocol=socket", "--socket=" + os.path.join(run_dir, "mysqld.sock"),
                    "-u", getpass.getuser(), "-N", "-e", sql], check=True, stdout=subprocess.DEVNULL)


def sql_shape(text):
    """A statement with its literals and whitespace folded, so its executions group together."""
    text = re.sub(r"'(?:[^'\\]|\\.)*'", "?", text)
    text = re.sub(r"\b\d+(?:\.\d+)?(?:e[-+]?\d+)?\b", "?", text)
    return re.sub(r"\s+", " ", text).strip()


def sql_per_run(run_dir, work, n_runs):
    """MariaDB's general log over work(): (round trips per run, [(per run, statement shape)]).
    A round trip is a text query, a prepared statement's execution or a prepare."""
    path = os.path.join(run_dir, "general-%d.log" % time.monotonic_ns())
    mariadb(run_dir, "SET GLOBAL log_output = 'FILE'; SET GLOBAL general_log_file = '%s'; "
            "SET GLOBAL general_log = 1" % path)
    try:
        work()
    finally:
        mariadb(run_dir, "SET GLOBAL general_log = 0")
    shapes = {}
    for line in open(path, errors="replace"):
        m = re.match(r"^(?:\d{6}\s+[\d:]+\s+)?\s*\d+\s+(Query|Execute|Prepare|Close stmt|Reset stmt|Quit|Connect"
                     r"|Init DB|Ping)\t(.*)$", line)
        if not m or m.group(1) not in ("Query", "Execute", "Prepare", "Ping") or "general_log" in m.group(2):
            continue   # a continuation line of a multi-line statement, or no round trip of a run
        key = m.group(1) + " " + sql_shape(m.group(2)) if m.group(1) in ("Prepare", "Ping") else sql_shape(m.group(2))
        shapes[key] = shapes.get(key, 0) + 1
    os.unlink(path)
    rows = sorted(((v / n_runs, k) for k, v in shapes.items()), reverse=True)
    return sum(v for v, _ in rows), rows


def loadavg():
    return open("/proc/loadavg").read().split()[0]


def main():
    base, run_dir, n_seq, duration, audit, clients = sys.argv[1:7]
    only_cost = os.environ.get("RUN_COST_ONLY") == "1"
    orig = sys.argv[7] if len(sys.argv) > 7 else ""
    n_seq, duration, audit = int(n_seq), float(duration), audit == "1"
    clients = [int(x) for x in clients.split()]
    ours = Target(base, True, audit)
    sessions = stack_sessions(run_dir)

    print("\n1. per-run cost, %d sequential buy-and-hold runs, 1 client (CPU: whole stack)" % n_seq)
    print("%-14s %10s %10s %10s %10s %10s   %s" % ("dataset", "user ms", "sys ms", "cpu ms", "wall ms", "faults", "load"))
    c = Client(base)
    vid = ours.submit(c, BH, "cost-bh")
    for dsv, label in (("v1", "5 bars"), ("synth-v1", "10,080 bars")):
        for _ in range(3):   # warm the zygotes and the dataset cache
            ours.run(c, vid, dsv)
        p0, g0 = cpu_by_part(sessions), cgroup_cpu()
        t0 = time.perf_counter()
        for _ in range(n_seq):
            ours.run(c, vid, dsv)
        wall = (time.perf_counter() - t0) / n_seq * 1000
        p1, g1 = cpu_by_part(sessions), cgroup_cpu()
        u0, s0, f0 = (sum(p[i] for p in p0.values()) for i in range(3))
        u1, s1, f1 = (sum(p[i] for p in p1.values()) for i in range(3))
        u, s = (u1 - u0) / n_seq * 1000, (s1 - s0) / n_seq * 1000
        print("%-14s %10.1f %10.1f %10.1f %10.1f %10.0f   %s" % (label, u, s, u + s, wall, (f1 - f0) / n_seq,
                                                             loadavg()))
        if g0 and g1:
            gu, gs = (g1[0] - g0[0]) / n_seq * 1000, (g1[1] - g0[1]) / n_seq * 1000
            print("%-14s %10.1f %10.1f %10.1f   (the stack's cgroup, ns accounting)" % ("", gu, gs, gu + gs))
        # where it goes: CPU ms (user+sys) per run of each component of the stack
        print("%-14s %s" % ("", "  ".join(
            "%s %.1f" % (k, ((p1[k][0] + p1[k][1]) - (p0.get(k, (0, 0))[0] + p0.get(k, (0, 0))[1])) / n_seq * 1000)
            for k in sorted(p1))))

    for nc in (1, 4):
        per = max(1, n_seq // nc)

        def burst():
            def loop():
                cl = Client(base)
                for _ in range(per):
                    ours.run(cl, vid)
            th = [threading.Thread(target=loop) for _ in range(nc)]
            for x in th:
                x.start()
            for x in th:
                x.join()
        total, rows = sql_per_run(run_dir, burst, per * nc)
        print("\nSQL round trips per 5-bar run, %d client%s (MariaDB general log): %.1f" % (nc, "s"[:nc > 1], total))
        if os.environ.get("SQL_DETAIL") == "1":
            for v, k in rows:
                print("  %6.2f  %s" % (v, k[:150]))

    cpu, wall = in_process_cost(2000)
    print("%-14s %10s %10s %10.3f %10.3f   (baseline: unsandboxed in-process call under %s, no HTTP/DB)"
          % ("in-process", "", "", cpu, wall, sys.executable))

    if only_cost:
        return
    targets = [("ours", ours)]
    if orig:
        targets.append(("original", Target(orig, False, False)))
    res = {}
    for name, t in targets:
        res[name] = {}
        for submit in (False, True):
            for n in clients:
                res[name][(submit, n)] = rate(t, n, duration, submit, sessions if name == "ours" else None)
        res[name]["lat"] = latencies(t, max(20, n_seq // 2))

    print("\n2. runs/s, 5 bars, %.0f s per figure, then our CPU ms per run by component (load now %s)"
          % (duration, loadavg()))
    head = "%-30s" % "clients / loop" + "".join("%12s" % n for n, _ in targets)
    if orig:
        head += "%12s" % "ratio"
    print(head)
    for submit in (False, True):
        for n in clients:
            row = "%-30s" % ("%d, %s" % (n, "submit + run" if submit else "repeat one version"))
            row += "".join("%12.1f" % res[name][(submit, n)][0] for name, _ in targets)
            if orig:
                row += "%12.2f" % (res["ours"][(submit, n)][0] / res["original"][(submit, n)][0])
            # CPU ms per run of each component of our stack
            row += "   " + "  ".join("%s %.1f" % kv for kv in sorted(res["ours"][(submit, n)][1].items()))
            print(row)

    print("\n3. latency, 1 client, ms (p50 / p90) (load now %s)" % loadavg())
    labels = ("POST /runs -> result (wait)", "submit, new code", "submit, known code")
    for i, lab in enumerate(labels):
        row = "%-30s" % lab
        for name, _ in targets:
            row += "%8.1f / %-6.1f" % (res[name]["lat"][2 * i], res[name]["lat"][2 * i + 1])
        if orig:
            row += "  ratio %.2f" % (res["original"]["lat"][2 * i] / res["ours"]["lat"][2 * i])
        print(row)
    print("\nratios: ours/original for runs/s, original/ours for latency (> 1: ours is better)"
          if orig else "\n(no original agenttest on this machine: no ratios)")


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""tests/bench/paper.sh: new candle stored -> paper equity visible in the API."""
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(REPO / "tests" / "e2e")]
from conftest import Stack          # noqa: E402  (the e2e stack, scripts/stack.sh)
from runs_helpers import Api        # noqa: E402
import test_paper as tp             # noqa: E402  (its strategy and its prefetch/wait helpers)


def proc_cpu(pid):
    """user+sys seconds of process pid and its waited-for children."""
    f = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
    tck = float(os.sysconf("SC_CLK_TCK"))
    return sum(int(x) for x in f[11:15]) / tck


def main():
    bars = int(sys.argv[1])
    si = subprocess.Popen([sys.executable, str(tp.STANDIN), "--history-days", "0.05", "--lag-minutes",
                           str(bars + 5)], stdout=subprocess.PIPE, text=True)
    base = "http://127.0.0.1:%d" % int(si.stdout.readline())
    data = Path(tempfile.mkdtemp(prefix="agenttest-bench-paper-"))
    stack = Stack("bench-paper", {"MANTIS_DATA_DIR": str(data), "BINANCE_API_URL": base,
                                  "MANTIS_FETCH_BACKOFF_MS": 10}).start()
    try:
        st = {"stack": stack, "base": base, "lag": bars + 5,
              "admin": Api(stack, stack.create_token(role="admin")),
              "user": Api(stack, stack.create_token(role="user"))}
        tp.prefetch(st, 0)
        v = st["user"].submit(tp.MOMENTUM, "bench-paper")["strategy_version_id"]
        assert st["user"].run(v, dataset_version=tp.WINDOW, asset="BTC")["status"] == "completed"
        r = st["admin"].post("/defaults/promote", {"strategy_version_id": v, "dataset_version": tp.WINDOW})
        assert r.status == 200, r
        tp.wait_paper(st)
        runner = stack.pid("runner")
        lat, cpu0 = [], proc_cpu(runner)
        n0 = tp.wait_paper(st)["account"]["bars"]
        for _ in range(bars):
            last = tp.prefetch(st, 1)          # returns once the candle is stored and registered
            t0 = time.monotonic()
            tp.wait_paper(st, last_ts=last, poll=0.005)
            lat.append((time.monotonic() - t0) * 1000)
        b = tp.wait_paper(st)
        done = b["account"]["bars"] - n0
        cpu = proc_cpu(runner) - cpu0
        lat.sort()
        print("paper: %d new candles, %d bars advanced; candle stored -> equity visible: median %.0f ms, "
              "p90 %.0f ms, max %.0f ms" % (bars, done, statistics.median(lat), lat[int(0.9 * (len(lat) - 1))],
                                            lat[-1]))
        print("paper: CPU (user+sys) of the runner process and the children it waited for, prefetches included: "
              "%.2f s for %d bars; drift max %g; load average %s"
              % (cpu, done, max(abs(p["drift"]) for p in b["equity"]),
                 " ".join(open("/proc/loadavg").read().split()[:3])))
    finally:
        stack.stop()
        si.kill()
        si.wait()


if __name__ == "__main__":
    main()

"""Benchmark part (1) of the challenges issue: labels and event detection of
every challenge on 60 days of 1-minute bars (86,400; 29 assets for the
multi-asset challenges), the C core (libagenttest_eval.so through ctypes)
against the numpy reference (tests/challenges/reference.py), as ratios; then
the whole C scoring of each challenge (labels + metrics + windows + result)
in both modes against the 100 ms target.

usage: challenges_labels.py CLOSES.npz   (arrays: closes T x 29, funding T x 20)
Environment: BENCH_FULL=1 also times the reference's whole evaluation.
"""
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "challenges"))
import chlib  # noqa: E402
import reference as ref  # noqa: E402


def best(f, n):
    """Best process CPU time of n runs (the machine is shared: CPU time is
    what our code costs; wall time adds other people's load)."""
    t = []
    for _ in range(n):
        t0 = time.process_time()
        f()
        t.append(time.process_time() - t0)
    return min(t)


def row(name, c, r):
    ratio = f"{r / c:8.1f}x" if r else "       -"
    rs = f"{r * 1000:10.1f}" if r else "         -"
    print(f"{name:<34} {c * 1000:9.2f} {rs} {ratio}")


def main():
    data = np.load(sys.argv[1])
    closes, funding = data["closes"], data["funding"]
    T = closes.shape[0]
    names = ref.BREAKOUT_ASSETS
    # contiguous columns up front, so that no timing below includes the
    # strided copies the ctypes wrappers would otherwise make
    col = {a: np.ascontiguousarray(closes[:, i]) for i, a in enumerate(names)}
    fcol = [np.ascontiguousarray(funding[:, i]) for i in range(funding.shape[1])]
    print(f"T = {T} bars, {closes.shape[1]} assets; process CPU time, best of several runs")
    print(f"{'labels / events':<34} {'C ms':>9} {'numpy ms':>10} {'ratio':>9}")
    eth, btc = col["ETH"], col["BTC"]
    row("binary (ETH, h=60)", best(lambda: chlib.binary_labels(eth, 60), 20),
        best(lambda: ref.binary_labels(eth, 60), 5))
    row("hitfirst (ETH, h=100, vw=7200)", best(lambda: chlib.hitfirst_labels(eth, 100, 7200), 5),
        best(lambda: ref.hitfirst_labels(eth, 100, 7200), 2))
    row("lbfgs (ETH, h=60)", best(lambda: chlib.lbfgs_labels(eth, 60, 3600), 10),
        best(lambda: ref.lbfgs_labels(eth, 60, 3600), 3))
    row("lbfgs (BTC, h=360)", best(lambda: chlib.lbfgs_labels(btc, 360, 3600), 10),
        best(lambda: ref.lbfgs_labels(btc, 360, 3600), 3))
    ev = []
    cl = [col[a] for a in names]
    c = best(lambda: ev.append(chlib.breakout_detect(cl)), 5)
    t0 = time.process_time()
    rev = ref.detect_breakouts(closes, method="sliding")
    r = time.process_time() - t0
    assert rev == ev[-1], "breakout events differ from the reference"
    row(f"breakout events (29 assets, {len(rev)} ev)", c, r)
    t0 = time.process_time()
    assert ref.detect_breakouts(closes, method="rolling") == rev
    row("  (reference with pandas rolling)", c, time.process_time() - t0)
    row("xsec returns (29 assets, h=240)", best(lambda: chlib.xsec_returns(cl, 240), 10),
        best(lambda: ref.xsec_returns(closes, 240), 3))
    row("funding changes (20 assets, h=480)", best(lambda: chlib.xsec_returns(fcol, 480, diff=True), 10),
        best(lambda: ref.diff_returns(funding, 480), 3))

    rng = np.random.default_rng(1)
    w = 200
    fund_assets = {a: col[a] for a in ref.FUNDING_ASSETS}
    fields = {"funding_1h": {a: fcol[i] for i, a in enumerate(ref.FUNDING_ASSETS)}}
    cases = [("ETH-1H-BINARY", {"ETH": eth}, 2, None), ("ETH-HITFIRST-100M", {"ETH": eth}, 3, None),
             ("ETH-LBFGS", {"ETH": eth}, 17, None), ("BTC-LBFGS-6H", {"BTC": btc}, 17, None),
             ("MULTI-BREAKOUT", col, 58, None), ("XSEC-RANK", col, 29, None),
             ("FUNDING-XSEC", fund_assets, 20, fields)]
    hs = max(0, T - 20 * 1440)
    full = os.environ.get("BENCH_FULL") == "1"
    print()
    print(f"{'whole scoring (target < 100 ms)':<34} {'mantis ms':>9} {'strict ms':>10} "
          f"{'ref ms' if full else '':>9}")
    for name, cl, dim, fl in cases:
        emb = rng.dirichlet(np.ones(dim), T - w).astype(np.float32)
        res = {}

        def run(mode):
            res[mode] = chlib.score(name, cl, emb, w, hs, mode=mode, fields=fl)
        cm = best(lambda: run("mantis"), 3)
        cs = best(lambda: run("strict"), 3)
        ok = "error" not in res["mantis"][1]
        extra = ""
        if full:
            t0 = time.process_time()
            ref.evaluate(name, cl, emb, w, hs, fields=fl)
            extra = f"{(time.process_time() - t0) * 1000:9.0f}"
        flag = "" if ok else f"  ({res['mantis'][1]['error']})"
        print(f"{name:<34} {cm * 1000:9.2f} {cs * 1000:10.2f} {extra}{flag}")


if __name__ == "__main__":
    main()

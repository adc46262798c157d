#!/usr/bin/env bash
# Per-step platform overhead of the SDK's causal views at t = 1,000 and
# t = 86,399 (60 days of 1-minute bars would be 86,400): one walk-forward
# step as agenttest/loop.py runs it (a CausalView, the featurizer's calls
# prices(), ohlcv(), prices_matrix(), cg() on a 2-asset market, the
# predictor's output cast to float32) with a strategy that does nothing
# else, so what is timed is the platform. Variants: the owned-array
# copy-on-write views (default with the C library), the mmap-object ones
# (inside the sandbox), the same plus one write per array (one page copied),
# and, for contrast, full copies (what the original's views cost). CPU time
# (user+sys) per step, best of 5 rounds of 2,000 steps at that t; flat in t means O(1).
# Figures taken while other work loads the machine are noisy.
set -euo pipefail
cd "$(dirname "$0")/../.."
PYTHON=${PYTHON:-/usr/bin/python3}
export AGENTTEST_EVAL_LIB=${AGENTTEST_EVAL_LIB:-$PWD/build/release/libagenttest_eval.so}
[ -f "$AGENTTEST_EVAL_LIB" ] || make --no-print-directory -s "$AGENTTEST_EVAL_LIB"
PYTHONPATH=sandbox/host "$PYTHON" - <<'PY'
import os
import time

import numpy as np

from agenttest import view as V
from agenttest.data import DataProvider

T, STEPS, ROUNDS = 86400, 2000, 5
rng = np.random.default_rng(1)
mat = 100 * np.exp(np.cumsum(rng.normal(0, 1e-3, (T, 2)), axis=0))
ohlcv = {a: np.column_stack([mat[:, j]] * 4 + [np.ones(T)]) for j, a in enumerate(("BTC", "ETH"))}
cg = {"ETH": {"funding_1h": rng.normal(size=T)}}
prov = DataProvider(_arrays=(["BTC", "ETH"], mat, ohlcv, np.arange(T, dtype=np.int64), cg))
b = prov.buffers
out = np.array([0.5, 0.5])


def step_views(t, write):
    v = V.CausalView._fast(b, t)
    arrs = (v.prices("ETH"), v.ohlcv("ETH"), v.prices_matrix(), v.cg("ETH", "funding_1h"))
    if write:
        for a in arrs:
            a[-1] = 0.0
    return np.asarray(out, dtype=np.float32).ravel()


def step_copies(t, write):
    n = t + 1
    arrs = (np.array(b.closes[:n, 1]), np.array(b.ohlcv["ETH"][:n]), np.array(b.closes[:n]),
            np.array(b.cg["ETH"]["funding_1h"][:n]))
    if write:
        for a in arrs:
            a[-1] = 0.0
    return np.asarray(out, dtype=np.float32).ravel()


def per_step_us(fn, t0, write):
    best = None
    for _ in range(ROUNDS):
        c = time.process_time()
        for _i in range(STEPS):
            fn(t0, write)
        d = (time.process_time() - c) / STEPS * 1e6
        best = d if best is None else min(best, d)
    return best


print("per-step platform overhead, CPU us (user+sys), best of %d x %d steps" % (ROUNDS, STEPS))
print("%-34s %12s %12s %8s" % ("variant", "t=1,000", "t=86,399", "ratio"))
for name, fn, write, owned in (("copy-on-write, owned arrays", step_views, False, True),
                               ("  + one write per array", step_views, True, True),
                               ("copy-on-write, mmap arrays", step_views, False, False),
                               ("  + one write per array", step_views, True, False),
                               ("full copies (the original)", step_copies, False, True)):
    V.use_owned_arrays(owned)
    a, z = per_step_us(fn, 1000, write), per_step_us(fn, 86399, write)
    print("%-34s %12.2f %12.2f %8.2f" % (name, a, z, z / a))
PY

"""Golden values of OUR C numerics (tests/challenges/golden.json).

The references in reference.py are computed at test time and depend on the
CPU (numpy's SIMD log/exp, the BLAS kernel), so they are compared within
bounds. These goldens pin the C evaluator's own results bit for bit on every
machine: SHA-256 of the label arrays, sigma series, returns, breakout events
and of every challenge's whole result dictionary (both modes), on inputs
built without any transcendental function (seeded normals and uniforms,
prices by a cumulative product), so the inputs are the same bytes on every
CPU. A numerics change fails test_golden.py loudly everywhere.

glibc's libm picks its log/exp at load time (ifunc) between an FMA variant
(every x86-64 CPU with AVX2 and FMA) and an SSE2 one, and the two differ in
the last bit for a few inputs in 10^5 (log) or 10^3 (exp); see
docs/challenges.md. So there are two sets, one per variant, and the test
probes which one this process runs (libm_variant()). The SSE2 set is made
on any machine with GLIBC_TUNABLES=glibc.cpu.hwcaps=-AVX2,-FMA.

Regenerate (only when a numerics change is intended, and say so in the
commit): AGENTTEST_EVAL_LIB=build/release/libagenttest_eval.so \
    /usr/bin/python3 tests/challenges/golden.py --write   (and again with
    the GLIBC_TUNABLES above for the sse2 set)
"""
import math
import hashlib
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import chlib  # noqa: E402
import reference as ref  # noqa: E402

PATH = os.path.join(os.path.dirname(__file__), "golden.json")


def libm_variant():
    """'fma' or 'sse2': which of glibc's log variants this process uses,
    from an input where they are known to differ by one ulp."""
    v = math.log(1.048231915).hex()
    return {"0x1.81e20a1e27a51p-5": "fma", "0x1.81e20a1e27a50p-5": "sse2"}[v]


def market(T, seed, A=1, vol=0.002):
    """Prices 100·Π(1 + ε), ε ~ N(0, vol): multiplication only, so the
    bytes do not depend on numpy's dispatched exp."""
    steps = np.random.default_rng(seed).normal(0.0, vol, size=(T, A))
    return 100.0 * np.cumprod(1.0 + steps, axis=0)


def _h(*arrays):
    d = hashlib.sha256()
    for a in arrays:
        d.update(np.ascontiguousarray(a).tobytes())
    return d.hexdigest()


def _hj(obj):
    return hashlib.sha256(json.dumps(obj, sort_keys=True).encode()).hexdigest()


def logf_sample():
    """float32 inputs for the float32 logarithm: every 4099th float32 from
    2^-149 to 2, plus the edge cases (sqrt(1/2) where the range reduction
    switches, 1, subnormals, 0, inf, NaN, negative)."""
    bits = np.arange(1, np.float32(2.0).view(np.int32), 4099, dtype=np.int32)
    edge = np.array([0.70710677, np.nextafter(np.float32(0.70710677), np.float32(1)), 1.0, 1e-45,
                     1e-40, 1.1754942e-38, 0.0, np.inf, np.nan, -1.0], dtype=np.float32)
    return np.concatenate([bits.view(np.float32), edge])


def compute():
    """Every golden value, recomputed from the C library."""
    out = {"npy_logf": _h(chlib.npy_logf(logf_sample()))}
    for seed in (1, 7, 42):
        p = market(20000, seed, vol=0.003)[:, 0]
        out[f"sigma_series/{seed}"] = _h(chlib.sigma_series(p, 60, 3600))
        out[f"hitfirst_labels/{seed}"] = _h(chlib.hitfirst_labels(p, 100, 7200))
        out[f"lbfgs_labels/{seed}"] = _h(*chlib.lbfgs_labels(p, 60, 3600))
        m = market(20000, seed, A=8, vol=0.006)
        out[f"breakout_events/{seed}"] = _hj(chlib.breakout_detect(m))
        out[f"xsec_returns/{seed}"] = _h(*chlib.xsec_returns(m, 240))
    T, w = 40000, 200
    rng = np.random.default_rng(5)
    closes = {a: c for a, c in zip(ref.BREAKOUT_ASSETS, market(T, 11, A=29, vol=0.004).T)}
    fund = {a: np.random.default_rng(6 + i).normal(0, 1e-4, T).cumsum()
            for i, a in enumerate(ref.FUNDING_ASSETS)}
    for name, cfg in ref.CHALLENGES.items():
        emb = rng.random((T - w, cfg["dim"])).astype(np.float32)
        cl = {a: closes[a] for a in cfg["assets"]}
        fields = {"funding_1h": {a: fund[a] for a in cfg["assets"]}} if name == "FUNDING-XSEC" else None
        for mode in ("mantis", "strict"):
            _, res = chlib.score(name, cl, emb, w, T - 14400, mode=mode, fields=fields)
            assert "error" not in res, (name, mode, res)
            out[f"score/{name}/{mode}"] = _hj(res)
    return out


def load(variant=None):
    with open(PATH) as f:
        return json.load(f)[variant or libm_variant()]


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit("usage: golden.py --write")
    try:
        with open(PATH) as f:
            allv = json.load(f)
    except FileNotFoundError:
        allv = {}
    allv[libm_variant()] = compute()
    with open(PATH, "w") as f:
        json.dump(allv, f, indent=1, sort_keys=True)
        f.write("\n")

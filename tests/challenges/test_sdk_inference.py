"""Evaluation/inference parity (the original suite's tests 24-28, 36, 41-47,
spec/mantis.md §7.1 and §3.4): agenttest.loop.run_inference computes the
latest bar's embedding with the evaluation's schedule, so for stateless
strategies it equals the walk-forward loop's last row, bit for bit."""
import hashlib

import numpy as np
import pandas as pd
import pytest

import streamlib as sl

pytestmark = [sl.stage_only]

from agenttest import Featurizer, Predictor  # noqa: E402
from agenttest.data import DataProvider  # noqa: E402
from agenttest.loop import generate_embeddings, run_inference  # noqa: E402


def frames(n, assets=("ETH",), seed=0):
    rng = np.random.default_rng(seed)
    out = {}
    for k, a in enumerate(assets):
        c = 100 * (k + 1) * np.exp(np.cumsum(rng.normal(0, 0.002, n)))
        out[a] = pd.DataFrame({"open": c, "high": c * 1.001, "low": c * 0.999, "close": c,
                               "volume": rng.uniform(100, 1000, n)})
    return out


class Tracing(Featurizer):
    """Records what every compute saw; features depend only on the view."""

    def __init__(self, warmup=20, ci=1):
        self.warmup, self.compute_interval = warmup, ci
        self.trace = []

    def setup(self, assets, total):
        self.trace = []

    def compute(self, view):
        rec = {"t": view.t, "n": len(view.prices(view.assets[0]))}
        for a in view.assets:
            rec[a] = (len(view.prices(a)), float(view.prices(a).sum()), view.ohlcv(a).shape,
                      float(view.ohlcv(a).sum()))
            for f in view.cg_fields(a):
                rec[a + "." + f] = (len(view.cg(a, f)), float(np.nansum(view.cg(a, f))))
        rec["matrix"] = hashlib.sha256(np.ascontiguousarray(view.prices_matrix()).tobytes()).hexdigest()
        self.trace.append(rec)
        p = view.prices_matrix()
        return {"mom": p[-1] / p[max(0, len(p) - 11)] - 1.0, "last": p[-1].copy()}


class Lin(Predictor):
    def predict(self, f):
        return np.concatenate([np.tanh(f["mom"] * 100), np.log(f["last"])])


def both(prov, feat_eval, feat_inf=None, pred=Lin):
    emb, _ = generate_embeddings(feat_eval, pred(), prov)
    inf = run_inference(feat_inf or feat_eval, pred(), prov)
    return emb, inf


def test_24_43_final_embedding_parity():
    emb, inf = both(DataProvider(frames(300)), Tracing())
    assert inf.dtype == np.float32 and np.array_equal(emb[-1], inf)   # exact (tolerance 1e-7 in the original)


def test_25_41_same_view_at_the_end():
    prov = DataProvider(frames(300))
    fe, fi = Tracing(), Tracing()
    both(prov, fe, fi)
    assert fe.trace[-1] == fi.trace[-1] and fi.trace[-1]["t"] == 299 and fi.trace[-1]["n"] == 300


@pytest.mark.parametrize("n,warmup,ci,last", [(300, 30, 10, 290), (200, 10, 50, 160)])
def test_26_46_parity_with_compute_interval(n, warmup, ci, last):
    prov = DataProvider(frames(n))
    fe, fi = Tracing(warmup, ci), Tracing(warmup, ci)
    emb, inf = both(prov, fe, fi)
    assert np.array_equal(emb[-1], inf)
    assert fe.trace[-1]["t"] == fi.trace[0]["t"] == last and len(fi.trace) == 1


def test_27_parity_with_derivatives():
    data = frames(300)
    cg = {"ETH": {"funding_1h": np.linspace(0, 1, 300)}}
    prov = DataProvider(data, coinglass=cg)
    fe, fi = Tracing(), Tracing()
    emb, inf = both(prov, fe, fi)
    assert np.array_equal(emb[-1], inf) and fe.trace[-1]["ETH.funding_1h"] == fi.trace[-1]["ETH.funding_1h"]


def test_28_multi_asset_parity():
    prov = DataProvider(frames(300, assets=("ETH", "BTC")))
    fe, fi = Tracing(), Tracing()
    emb, inf = both(prov, fe, fi)
    assert np.array_equal(emb[-1], inf) and emb.shape[1] == 4
    assert fe.trace[-1]["matrix"] == fi.trace[-1]["matrix"]


def test_36_warmup_guard():
    with pytest.raises(RuntimeError, match="warmup"):
        run_inference(Tracing(warmup=50), Lin(), DataProvider(frames(30)))


def test_42_feature_bytes_identical():
    prov = DataProvider(frames(300, assets=("ETH", "BTC")))
    seen = []

    class Keep(Lin):
        def predict(self, f):
            seen.append({k: np.asarray(v).tobytes() for k, v in f.items()})
            return super().predict(f)
    generate_embeddings(Tracing(), Keep(), prov)
    last_eval = seen[-1]
    seen.clear()
    run_inference(Tracing(), Keep(), prov)
    assert seen[-1] == last_eval


def test_45_featurizer_isolation():
    prov = DataProvider(frames(300))
    f = Tracing()
    generate_embeddings(f, Lin(), prov)
    n_eval = len(f.trace)
    run_inference(f, Lin(), prov)           # setup() reset the trace
    assert len(f.trace) == 1 < n_eval


def test_47_compute_counts_with_ci_1():
    prov = DataProvider(frames(200))
    fe, fi = Tracing(10), Tracing(10)
    both(prov, fe, fi)
    assert len(fe.trace) == 190 and len(fi.trace) == 1

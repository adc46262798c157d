"""The Python SDK (sandbox/host/agenttest and the original's import names):
the original README's example as written, the original suite's ideas about
CausalView/DataProvider/the embedding loop (spec/mantis.md §7.1, adapted:
views are read-only numpy views, not copies), O(1) views, aliases, modes."""
import os
import subprocess
import time

import numpy as np
import pandas as pd
import pytest

import streamlib as sl

pytestmark = [sl.stage_only]

from agenttest import CausalView, Featurizer, Predictor  # noqa: E402
from agenttest.data import DataProvider  # noqa: E402
from agenttest.loop import generate_embeddings  # noqa: E402

README = '''from model_iteration_tool import Featurizer, Predictor, evaluate
import numpy as np

class MyFeaturizer(Featurizer):
    warmup = 200
    compute_interval = 1

    def compute(self, view):
        prices = view.prices("ETH")
        log_r = np.diff(np.log(prices[-100:]))
        return {"momentum": np.array([log_r.mean()]), "vol": np.array([log_r.std()])}

class MyPredictor(Predictor):
    def predict(self, features):
        p_up = 0.5 + 0.5 * np.tanh(features["momentum"][0] * 500)
        return np.array([p_up, 1.0 - p_up])

result = evaluate("ETH-1H-BINARY", MyFeaturizer(), MyPredictor(), days_back=30)
print(f"AUC: {result['mean_auc']:.4f}")
'''


def frames(n, seed=0, assets=("ETH",), vol=0.002):
    rng = np.random.default_rng(seed)
    out = {}
    for k, a in enumerate(assets):
        close = 100 * (k + 1) * np.exp(np.cumsum(rng.normal(0, vol, n)))
        out[a] = pd.DataFrame({"timestamp": pd.date_range("2024-01-01", periods=n, freq="1min"),
                               "open": close * (1 - vol), "high": close * (1 + vol), "low": close * (1 - vol),
                               "close": close, "volume": rng.uniform(100, 1000, n)})
    return out


@pytest.fixture(scope="module")
def prov():
    return DataProvider(frames(500, assets=("ETH", "BTC")))


def test_readme_example_runs_as_written(tmp_path_factory):
    ds = sl.synth(str(tmp_path_factory.mktemp("readme") / "synth30"), 30, assets=["ETH"])
    script = tmp_path_factory.mktemp("readme-script") / "readme.py"
    script.write_text(README)
    env = dict(os.environ, DATASET_DIR=ds, PYTHONPATH=sl.HOSTDIR)
    p = subprocess.run([sl.PYTHON, str(script)], capture_output=True, text=True, timeout=600, env=env,
                       cwd=str(script.parent))
    assert p.returncode == 0, p.stderr[-3000:]
    line = p.stdout.strip().splitlines()[-1]
    assert line.startswith("AUC: ")
    auc = float(line[5:])
    assert 0.5 < auc < 0.7      # the planted ETH momentum, seen by the README's momentum signal


def test_01_causal_view_no_future_data(prov):
    full = prov.prices("ETH")
    for t in (0, 10, 100, 499):
        p = prov.view(t).prices("ETH")
        assert len(p) == t + 1 and p[-1] == full[t]


def test_02_returned_arrays_are_writable_private_copies(prov):
    v = prov.view(100)
    p = v.prices("ETH")
    p /= p[0]                                   # research code of the original works
    v.ohlcv("ETH")[0, 0] = -1.0
    v.prices_matrix()[0, 0] = -1.0
    assert v.prices("ETH")[0] == prov.prices("ETH")[0] != 1.0
    assert v.ohlcv("ETH")[0, 0] == prov.ohlcv("ETH")[0, 0] != -1.0
    assert v.prices_matrix()[0, 0] == prov.prices_matrix()[0, 0]


def test_03_multi_asset_sorted(prov):
    v = prov.view(100)
    assert v.assets == ["BTC", "ETH"] and prov.assets == ["BTC", "ETH"]
    assert len(v.prices("BTC")) == len(v.prices("ETH")) == 101
    m = v.prices_matrix()
    assert m.shape == (101, 2)
    assert np.array_equal(m[:, 0], v.prices("BTC")) and np.array_equal(m[:, 1], v.prices("ETH"))  # test 31


class Recorder(Featurizer):
    def __init__(self, warmup, ci=1):
        self.warmup, self.compute_interval, self.calls = warmup, ci, []

    def setup(self, assets, total):
        self.calls = []

    def compute(self, view):
        self.calls.append((view.t, len(view.prices("ETH"))))
        return {"x": np.array([view.t])}


class Echo(Predictor):
    def predict(self, f):
        return np.array([0.5, 0.5])


def test_08_39_40_walk_forward_no_leakage():
    p = DataProvider(frames(2000))
    f = Recorder(50)
    emb, w = generate_embeddings(f, Echo(), p)
    assert [t for t, _ in f.calls] == list(range(50, 2000))
    assert all(n == t + 1 for t, n in f.calls)
    assert emb.shape == (1950, 2) and emb.dtype == np.float32 and w == 50


def test_09_compute_interval_caching():
    f = Recorder(10, 5)
    emb, _ = generate_embeddings(f, Echo(), DataProvider(frames(100)))
    assert len(emb) == 90 and len(f.calls) == 18


def test_14_16_immutable_and_mangled_names(prov):
    v = prov.view(50)
    for name in ("_t", "_closes", "t"):
        with pytest.raises(AttributeError):
            setattr(v, name, 1)
    for name in ("_closes", "_ohlcv", "_t"):
        with pytest.raises(AttributeError):
            getattr(v, name)


def test_15_views_not_copies_and_o1(prov):
    v = prov.view(400)
    p = v.prices("ETH")
    assert not np.shares_memory(p, prov.buffers.closes)      # a private mapping
    # owned (C library) or over an mmap object of exactly the t+1 rows
    assert (p.base is None and p.flags.owndata and p.nbytes == 401 * 8) or len(p.base) == 401 * 8
    assert v.ohlcv("ETH").shape == (401, 5)
    big = DataProvider(_arrays=(["ETH"], np.ones((200000, 1)), {"ETH": np.ones((200000, 5))},
                                np.arange(200000, dtype=np.int64), {}))

    def cost(t):
        vv = big.view(t)
        t0 = time.perf_counter()
        for _ in range(2000):
            vv.prices("ETH")
            vv.prices_matrix()
            vv.ohlcv("ETH")
        return time.perf_counter() - t0
    small, large = min(cost(10) for _ in range(3)), min(cost(199999) for _ in range(3))
    assert large < 3 * small + 0.01      # O(1): no dependence on t (a copy would be ~20000x)


def test_19_21_derivatives_layer():
    data = frames(200)
    cg = {"ETH": {"funding_1h": np.arange(300, dtype=float)}}
    p = DataProvider(data, coinglass=cg)
    v = p.view(50)
    x = v.cg("ETH", "funding_1h")
    assert len(x) == 51 and x[-1] == 50.0 and v.has_cg() and v.cg_fields("ETH") == ["funding_1h"]
    x[0] = 1
    assert v.cg("ETH", "funding_1h")[0] == 0.0 and p.cg("ETH", "funding_1h")[0] == 0.0
    with pytest.raises(KeyError, match="funding_1h"):
        v.cg("ETH", "oi")
    assert len(p.cg("ETH", "funding_1h")) == 200                      # test 35: truncated
    v2 = DataProvider(data).view(5)
    assert not v2.has_cg() and v2.cg_fields("ETH") == []


def test_29_mangled_bypass_is_in_process_only(prov):
    """In-process (SDK) the buffers are reachable, as in the original; the
    sandboxed path has no future bars to reach (test_stream.py leak tests)."""
    v = prov.view(10)
    b = object.__getattribute__(v, "_CausalView__b")
    assert b.closes.shape[0] == 500 and len(v.prices("ETH")) == 11


def test_30_33_ohlcv_rows_and_independent_views(prov):
    a, b = prov.view(50), prov.view(100)
    assert a.ohlcv("ETH").shape[0] == 51 and a.ohlcv("ETH")[-1, 3] == a.prices("ETH")[-1]
    assert len(a.prices("ETH")) == 51 and len(b.prices("ETH")) == 101 and a.t == 50 and b.t == 100
    assert a.timestamps()[-1] - a.timestamps()[0] == 50 * 60000


def test_34_provider_alignment_truncates():
    d = frames(200, assets=("ETH",))
    d["BTC"] = frames(100, seed=3)["ETH"]
    p = DataProvider(d)
    assert p.length == 100
    p.view(99)
    with pytest.raises(IndexError, match="out of range"):
        p.view(100)


def test_37_44_embedding_count_and_determinism():
    p = DataProvider(frames(200))
    e1, w = generate_embeddings(Recorder(100), Echo(), p)
    e2, _ = generate_embeddings(Recorder(100), Echo(), p)
    assert e1.shape[0] == 100 and w == 100 and np.array_equal(e1, e2)


def test_rows_of_different_lengths_raise_like_numpy():
    class Bad(Predictor):
        n = 0

        def predict(self, f):
            self.n += 1
            return np.zeros(2 if self.n < 5 else 3)
    with pytest.raises(ValueError):
        generate_embeddings(Recorder(10), Bad(), DataProvider(frames(50)))


class Mom(Featurizer):
    warmup = 61

    def compute(self, view):
        p = view.prices("ETH")
        return {"m": p[-1] / p[-61] - 1}


class MomP(Predictor):
    def predict(self, f):
        s = 0.5 + 0.5 * np.tanh(f["m"] * 300)
        return np.array([s, 1 - s])


def test_modes_aliases_and_errors():
    import mantis_model_iteration_tool as mm
    import model_iteration_tool as mit
    from agenttest import evaluate
    from model_iteration_tool.data import CausalView as CV2
    from model_iteration_tool.featurizer import Featurizer as F2
    assert F2 is Featurizer and CV2 is CausalView and mm.Featurizer is Featurizer
    assert mit.DataProvider is DataProvider and mm.DataProvider is DataProvider
    p = DataProvider(frames(6000, seed=5))
    strict = evaluate("ETH-1H-BINARY", Mom(), MomP(), provider=p)
    mantis = mit.evaluate("ETH-1H-BINARY", Mom(), MomP(), provider=p)
    assert strict["type"] == mantis["type"] == "binary" and 0 <= mantis["mean_auc"] <= 1
    # strict drops windows below 200 samples; the original counts the short tail
    assert len(mantis["windows"]) >= len(strict["windows"])
    with pytest.raises(ValueError, match="Unknown challenge"):
        evaluate("NOPE", Mom(), MomP(), provider=p)
    with pytest.raises(ValueError, match="mode"):
        evaluate("ETH-1H-BINARY", Mom(), MomP(), provider=p, mode="loose")


def test_nan_raises_in_mantis_and_is_refused_in_strict():
    import model_iteration_tool as mit
    from agenttest import evaluate
    from agenttest.evaluator import EvaluationError

    class NanP(Predictor):
        def predict(self, f):
            return np.array([np.nan, 0.5])
    p = DataProvider(frames(3000, seed=6))
    with pytest.raises(EvaluationError, match="Input contains NaN"):
        mit.evaluate("ETH-1H-BINARY", Mom(), NanP(), provider=p)
    res = evaluate("ETH-1H-BINARY", Mom(), NanP(), provider=p)
    assert "non-finite prediction" in res["error"]


def test_catalogue_from_the_sdk():
    from agenttest.evaluator import challenges
    cat = challenges()
    assert "FUNDING-XSEC" not in cat and "FUNDING-XSEC" in challenges(("funding_1h",))
    assert cat["ETH-HITFIRST-100M"]["metric_info"]["baseline"] == pytest.approx(np.log(3))

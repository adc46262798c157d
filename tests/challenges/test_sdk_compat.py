"""The original's public names in the SDK (issue 14): labels and events
against the independent numpy reference (identical), CHALLENGES,
align_to_minutes, the inferencer (bit-identical parity with the
evaluation's last row, also on the newest bars of a dataset), the
copy-on-write views (writes never leave the returned array, .base never
reaches past t) and the data-source choice."""
import io
import json
import os
import subprocess
import sys
import contextlib

import numpy as np
import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
HOST = os.path.join(ROOT, "sandbox", "host")
sys.path.insert(0, HOST)

import reference as ref  # noqa: E402
from conftest import walk  # noqa: E402
from agenttest import view as V  # noqa: E402
from agenttest.data import DataProvider  # noqa: E402
from agenttest.loop import generate_embeddings  # noqa: E402
from model_iteration_tool import evaluator as E, coinglass as CG, inferencer as I  # noqa: E402
from model_iteration_tool import data as D  # noqa: E402
from model_iteration_tool.featurizer import Featurizer, Predictor  # noqa: E402

AGENTTEST = os.path.join(ROOT, "bin", "agenttest")


def provider(T=600, A=("BTC", "ETH"), cg=True, seed=3):
    mat = walk(T, seed, A=len(A))
    ohlcv = {a: np.column_stack([mat[:, j] * 0.999, mat[:, j] * 1.001, mat[:, j] * 0.998,
                                 mat[:, j], np.arange(T, dtype=float)]) for j, a in enumerate(A)}
    fields = {a: {"funding_1h": np.sin(np.arange(T) + j), "oi": np.arange(T) * (j + 1.0)}
              for j, a in enumerate(A)} if cg else {}
    return DataProvider(_arrays=(list(A), mat, ohlcv, 60000 * np.arange(T, dtype=np.int64), fields))


# ---- names -----------------------------------------------------------------

def test_every_original_name_imports_under_both_package_names():
    import importlib
    for pkg in ("model_iteration_tool", "mantis_model_iteration_tool"):
        for mod in ("data", "featurizer", "evaluator", "coinglass", "inferencer"):
            m = importlib.import_module("%s.%s" % (pkg, mod))
            for name in m.__all__:
                assert hasattr(m, name), (pkg, mod, name)
    from mantis_model_iteration_tool.evaluator import (make_binary_labels, make_hitfirst_labels,  # noqa
        make_lbfgs_labels, make_xsec_labels, detect_breakouts, evaluate, _generate_embeddings,
        _rolling_std, CHALLENGES)
    from mantis_model_iteration_tool.inferencer import (run_inference_single, ModelSlot,  # noqa
        load_strategy, run_all_inference)
    from mantis_model_iteration_tool.coinglass import align_to_minutes  # noqa


def test_challenges_table_matches_the_spec():
    assert set(E.CHALLENGES) == set(ref.CHALLENGES)
    for name, c in ref.CHALLENGES.items():
        cfg = E.CHALLENGES[name]
        assert (cfg.name, cfg.challenge_type, cfg.primary_asset, cfg.assets, cfg.embedding_dim,
                cfg.horizon) == (name, c["type"], c["asset"], c["assets"], c["dim"], c["horizon"])
    b = E.CHALLENGES["MULTI-BREAKOUT"]
    assert (b.range_lookback, b.barrier_pct, b.min_range_pct) == (5760, 25.0, 1.0)
    assert D.BREAKOUT_ASSETS == ref.BREAKOUT_ASSETS and D.FUNDING_ASSETS == ref.FUNDING_ASSETS
    assert D.TICKER_TO_SYMBOL["ETH"] == "ETHUSDT" and len(D.TICKER_TO_SYMBOL) == 29


# ---- labels and events: identical to the numpy reference -------------------

@pytest.mark.parametrize("seed", [1, 7])
def test_labels_identical_to_reference(seed):
    p = walk(9000, seed, vol=0.003)[:, 0]
    lab, valid = E.make_binary_labels(p, 60)
    assert lab.dtype == np.int32 and valid.dtype == bool and valid.all()
    assert np.array_equal(lab, ref.binary_labels(p, 60)[0] if isinstance(ref.binary_labels(p, 60), tuple)
                          else ref.binary_labels(p, 60))
    hl, hv = E.make_hitfirst_labels(p, 100, vol_window=500)
    r = ref.hitfirst_labels(p, 100, 500)
    r = r[0] if isinstance(r, tuple) else r
    assert len(hl) == len(p) - 100 and np.array_equal(hl, r) and np.array_equal(hv, hl >= 0)
    b, idx = E.make_lbfgs_labels(p, 60, vol_window=3600)
    rb = ref.lbfgs_labels(p, 60, 3600)
    assert b.dtype == np.int32 and idx.dtype == np.int64
    assert np.array_equal(b, rb[0]) and np.array_equal(idx, rb[1])
    x = np.diff(np.log(p))      # the same input array for both: the prefix sums agree exactly
    assert np.array_equal(E._rolling_std(x, 500), ref.rolling_std(x, 500))
    # sigma: the C log is glibc's, numpy's may be a SIMD one (AVX-512 or not): <= 1 ulp
    # per log (|log p| < 5, so ~1e-15 absolute in r); through prefix sums of <= 9000
    # terms of size sigma^2 the relative error of var stays far below 1e-9
    a, r = E._sigma_series(p, 60, 3600), ref.sigma_series(p, 60, 3600)
    assert np.array_equal(np.isnan(a), np.isnan(r))
    assert np.allclose(a[~np.isnan(a)], r[~np.isnan(r)], rtol=1e-9, atol=0)
    assert len(E._rolling_std(p[:10], 20)) == 0


def test_xsec_labels_and_breakouts_identical_to_reference():
    m = walk(3000, 5, A=5)
    lab, valid = E.make_xsec_labels(m, 60)
    rl = ref.xsec_labels(m, 60)
    assert lab.shape == (2940, 5) and valid.shape == (2940,)
    assert np.array_equal(lab, rl[0]) and np.array_equal(valid, rl[1])
    mat = walk(6000, 11, vol=0.004, A=3)
    ev = E.detect_breakouts(mat, ["A", "B", "C"], 400, 25.0, 1.0, max_pending=2000)
    rv = ref.detect_breakouts(mat, 400, 25.0, 1.0, 2000, method="sliding")
    assert len(ev) > 0
    assert [(e.trigger_t, e.resolution_t, e.asset_idx, e.direction, e.label) for e in ev] == rv
    assert all(e.asset == "ABC"[e.asset_idx] for e in ev)
    assert E.detect_breakouts(mat[:300], ["A", "B", "C"], 400, 25.0, 1.0) == []
    with pytest.raises(ValueError):
        E.detect_breakouts(mat, ["A"], 400, 25.0, 1.0)


def test_align_to_minutes_is_causal_against_a_loop():
    rng = np.random.default_rng(2)
    period = 3_600_000
    ct = rng.permutation(np.arange(0, 30) * period)     # unsorted candle open times
    cv = rng.normal(size=30)
    mt = np.arange(0, 30 * 60) * 60_000 + 17
    got = CG.align_to_minutes(ct, cv, mt, period)
    for i, m in enumerate(mt):
        done = [(t, v) for t, v in zip(ct, cv) if t + period <= m]
        want = max(done)[1] if done else np.nan
        assert (np.isnan(got[i]) and np.isnan(want)) or got[i] == want


# ---- copy-on-write views -----------------------------------------------------

@pytest.fixture(params=["owned", "mmap"])
def cow_mode(request):
    prev = V.use_owned_arrays(request.param == "owned")
    yield request.param
    V.use_owned_arrays(prev)


def _all_arrays(v):
    out = {}
    for a in v.assets:
        out["prices_" + a] = v.prices(a)
        out["ohlcv_" + a] = v.ohlcv(a)
        for f in v.cg_fields(a):
            out["cg_%s_%s" % (a, f)] = v.cg(a, f)
    out["matrix"] = v.prices_matrix()
    out["ts"] = v.timestamps()
    return out


def test_writes_to_every_view_array_stay_private(cow_mode):
    prov = provider()
    b = prov.buffers
    before = {k: np.array(x) for k, x in _all_arrays(prov.view(599)).items()}
    master = (np.array(b.closes), {a: np.array(b.ohlcv[a]) for a in b.assets})
    t = 300
    v = prov.view(t)
    arrs = _all_arrays(v)
    for k, x in arrs.items():
        assert x.flags.writeable and len(x) == t + 1, k
        if cow_mode == "owned" and k != "matrix" or k == "matrix" and cow_mode == "owned":
            assert x.base is None and x.flags.owndata, k
        else:
            root = x
            while getattr(root, "base", None) is not None:
                root = root.base
            assert len(memoryview(root).cast("B")) <= (t + 1) * x.itemsize * max(1, x.size // (t + 1))
        x[...] = -7
    assert all((x == -7).all() for x in arrs.values())          # the writes took effect here
    # ... and nowhere else: the same step again, the next step, every other asset
    for tt in (t, t + 1, 599):
        for k, x in _all_arrays(prov.view(tt)).items():
            assert np.array_equal(x, before[k][:tt + 1]), (tt, k)
    # the evaluator's own copy (what scoring reads)
    assert np.array_equal(b.closes, master[0])
    assert all(np.array_equal(b.ohlcv[a], master[1][a]) for a in b.assets)
    assert np.array_equal(prov.prices("ETH"), master[0][:, 1])


def test_view_arrays_end_at_t_and_the_memory_is_returned(cow_mode):
    prov = provider(T=5000, cg=False)
    v = prov.view(1234)
    p = v.prices("ETH")
    assert len(p) == 1235 and p[-1] == prov.prices("ETH")[1234]
    if cow_mode == "owned":
        assert p.base is None
        assert p.flags.owndata and p.nbytes == 1235 * 8
    else:
        assert len(p.base) == 1235 * 8
    import resource
    r0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    for _ in range(3000):
        v.ohlcv("ETH")[:] = 1.0          # 3000 x 49 KB written privately, then released
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - r0 < 64 * 1024


# ---- inference ---------------------------------------------------------------

class Mom(Featurizer):
    warmup = 40
    compute_interval = 7

    def compute(self, view):
        m = view.prices_matrix()
        m /= m[0]                                     # writes into the view's private copy
        f = view.cg("ETH", "funding_1h")
        return {"x": np.array([m[-1].sum(), f[-5:].mean(), float(view.t)])}


class Lin(Predictor):
    def predict(self, features):
        x = features["x"]
        return np.array([np.tanh(x[0] - 2), x[1], x[2] / 1000.0])


def test_inference_bit_identical_to_the_last_evaluation_row():
    prov = provider()
    emb, _ = generate_embeddings(Mom(), Lin(), prov)
    slot = I.ModelSlot(agent_id="a", iteration=1, challenge_name="ETH-1H-BINARY",
                       strategy_path="", featurizer=Mom(), predictor=Lin(), loaded=True)
    out = I.run_inference_single(slot, prov)
    assert out.dtype == np.float32 and out.tobytes() == emb[-1].tobytes()
    assert round(float(out[2]) * 1000) == 40 + (599 - 40) // 7 * 7        # computed at the last grid point
    with pytest.raises(RuntimeError, match="warmup"):
        I.run_inference_single(slot, provider(T=30))
    with pytest.raises(RuntimeError, match="not loaded"):
        I.run_inference_single(I.ModelSlot("a", 1, "ETH-1H-BINARY", ""), prov)


STRATEGY = '''import numpy as np
from model_iteration_tool import Featurizer, Predictor, evaluate

class TechFeaturizer(Featurizer):
    warmup = 120
    compute_interval = 5
    def compute(self, view):
        p = view.prices("ETH")
        p /= p[0]
        return {"m": np.array([np.log(p[-1] / p[-60])])}

class TechPredictor(Predictor):
    def predict(self, f):
        u = 0.5 + 0.5 * np.tanh(f["m"][0] * 50)
        return np.array([u, 1 - u])

if __name__ == "__main__":
    print(evaluate("ETH-1H-BINARY", TechFeaturizer(), TechPredictor(), days_back=2)["mean_auc"])
'''


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    d = str(tmp_path_factory.mktemp("ds") / "synth3")
    subprocess.run([AGENTTEST, "data", "synth", "--out", d, "--version", "s3", "--days", "3",
                    "--seed", "4", "--assets", "ETH,BTC"], check=True, stdout=subprocess.DEVNULL)
    return d


def test_dataset_inference_equals_evaluate_at_the_same_t(dataset, tmp_path):
    f = tmp_path / "strat.py"
    f.write_text(STRATEGY)
    slot = I.load_model_slot(I.ModelSlot("a", 3, "ETH-1H-BINARY", str(f)))
    assert slot.loaded and slot.error == ""
    emb, t, prov = I.run_dataset_inference(slot, days_back=2, dataset=dataset)
    # what evaluate() embeds on the same provider (its last row is bar t)
    fe, pe = I.load_strategy(str(f))
    rows, w = E._generate_embeddings(fe, pe, DataProvider.from_dataset(dataset, ["ETH"], 2))
    assert t == prov.length - 1 == w + len(rows) - 1
    assert emb.tobytes() == rows[-1].tobytes()
    ticker, val = I.format_embedding_for_subnet("ETH-1H-BINARY", emb)
    assert ticker == "ETH" and val == [float(2 * np.clip(emb[0], 0, 1) - 1),
                                       float(2 * np.clip(emb[1], 0, 1) - 1)]
    assert I.run_all_inference([slot, I.ModelSlot("b", 1, "ETH-1H-BINARY", "/nonexistent")],
                               prov) == {"ETH": val}
    bad = I.load_model_slot(I.ModelSlot("b", 1, "ETH-1H-BINARY", "/nonexistent"))
    assert not bad.loaded and "not found" in bad.error


def test_format_embedding_per_challenge_type():
    _, h = I.format_embedding_for_subnet("ETH-HITFIRST-100M", np.array([2.0, 0.0, 1.0]))
    assert abs(sum(h) - 1) < 1e-12 and min(h) > 0
    _, l = I.format_embedding_for_subnet("ETH-LBFGS", np.arange(17) / 17.0)
    assert len(l) == 17 and abs(sum(l[:5]) - 1) < 1e-12 and all(0 < x < 1 for x in l[5:])
    _, br = I.format_embedding_for_subnet("MULTI-BREAKOUT", np.full(58, 0.3))
    assert list(br) == ref.BREAKOUT_ASSETS and br["ONDO"] == [0.3, 0.3]
    _, xs = I.format_embedding_for_subnet("XSEC-RANK", np.linspace(-2, 2, 29))
    assert list(xs) == ref.BREAKOUT_ASSETS and xs["BTC"] == -1.0 and xs["ONDO"] == 1.0
    with pytest.raises(ValueError):
        I.format_embedding_for_subnet("NOPE", np.zeros(2))


# ---- data source and the submitted file --------------------------------------

def test_data_source_prefers_the_newest_fetched_version(tmp_path, monkeypatch, dataset):
    from agenttest import datasource as S
    root = tmp_path / "datasets"
    for name, last, assets, synthetic in (("v1", 100, ["ETH"], False), ("v2", 200, ["ETH"], False),
                                          ("v3", 300, ["BTC"], False), ("v4", 900, ["ETH"], True)):
        (root / name).mkdir(parents=True)
        man = {"version": name, "assets": assets, "last_timestamp_ms": last,
               "source": {"generator": "agenttest synth"} if synthetic else {"kind": "binance"}}
        (root / name / "manifest.json").write_text(json.dumps(man))
    monkeypatch.delenv("DATASET_DIR", raising=False)
    monkeypatch.delenv("MANTIS_DATA_DIR", raising=False)
    monkeypatch.delenv("AGENTTEST_DATASET_VERSION", raising=False)
    monkeypatch.setenv("AGENTTEST_DATASETS_DIR", str(root))
    path, notice = S.select_dataset(["ETH"])
    assert path == str(root / "v2") and "fetched" in notice and "v2" in notice
    monkeypatch.setenv("DATASET_DIR", dataset)
    assert S.select_dataset(["ETH"])[0] == dataset
    monkeypatch.delenv("DATASET_DIR")
    monkeypatch.setenv("AGENTTEST_DATASETS_DIR", str(tmp_path / "empty"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("AGENTTEST_BIN", AGENTTEST)
    path, notice = S.select_dataset(["ETH"])
    assert "SYNTHETIC" in notice and os.path.exists(os.path.join(path, "manifest.json"))
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        S.announce(notice)
        S.announce(notice)
    assert err.getvalue().count("SYNTHETIC") == 1


def test_data_source_reads_the_servers_window_labels_and_pinned_versions(tmp_path, monkeypatch):
    """$MANTIS_DATA_DIR: the moving label of the smallest window covering
    days_back that holds the assets; $AGENTTEST_DATASET_VERSION pins one
    version (hash checked) and never falls back."""
    from agenttest import datasource as S
    data = tmp_path / "market"
    (data / "versions").mkdir(parents=True)
    versions = {}
    for label, window, assets, last in (("binance-1m-60d-A", 60, ["ETH", "BTC"], 100),
                                        ("binance-1m-60d-B", 60, ["ETH", "BTC"], 200),
                                        ("binance-1m-90d-A", 90, ["ETH"], 150),
                                        ("binance-1m-180d-A", 180, ["ETH", "SOL"], 120)):
        h = ("%064x" % (abs(hash(label)) % (1 << 200)))[:64]
        (data / "versions" / h).mkdir()
        (data / "versions" / h / "manifest.json").write_text(json.dumps(
            {"version": label, "assets": assets, "last_timestamp_ms": last, "dataset_hash": h,
             "source": {"kind": "binance-klines"}}))
        versions[label] = h
        lnk = data / ("binance-1m-%dd" % window)
        if lnk.is_symlink():
            lnk.unlink()
        lnk.symlink_to("versions/" + h)   # the label ends on the newest of the window
    for k in ("DATASET_DIR", "AGENTTEST_DATASET_VERSION", "AGENTTEST_DATASET_HASH"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("MANTIS_DATA_DIR", str(data))
    monkeypatch.setenv("AGENTTEST_DATASETS_DIR", str(tmp_path / "none"))
    path, notice = S.select_dataset(["ETH"], days_back=60)
    assert path == str(data / "versions" / versions["binance-1m-60d-B"])
    assert "binance-1m-60d-B" in notice and versions["binance-1m-60d-B"] in notice
    assert S.select_dataset(["ETH"], days_back=61)[0] == str(data / "versions" / versions["binance-1m-90d-A"])
    assert S.select_dataset(["SOL"], days_back=90)[0] == str(data / "versions" / versions["binance-1m-180d-A"])
    assert S.select_dataset(["ETH", "SOL"])[0] == str(data / "versions" / versions["binance-1m-180d-A"])
    # no window holds DOGE: the synthetic market, said loudly (needs the CLI to build it)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("AGENTTEST_BIN", AGENTTEST)
    assert "SYNTHETIC" in S.select_dataset(["DOGE"], days_back=60)[1]
    # a pinned version: exactly it, hash checked, no fallback
    monkeypatch.setenv("AGENTTEST_DATASET_VERSION", "binance-1m-60d-A")
    path, notice = S.select_dataset(["ETH"], days_back=60)
    assert path == str(data / "versions" / versions["binance-1m-60d-A"]) and "pinned" in notice
    monkeypatch.setenv("AGENTTEST_DATASET_HASH", "0" * 64)
    with pytest.raises(ValueError):
        S.select_dataset(["ETH"])
    monkeypatch.delenv("AGENTTEST_DATASET_HASH")
    monkeypatch.setenv("AGENTTEST_DATASET_VERSION", "binance-1m-60d-Z")
    with pytest.raises(FileNotFoundError):
        S.select_dataset(["ETH"])


def _fetched_window(tmp_path):
    """`agenttest data fetch` of 3 days of ETH and BTC with the CoinGlass
    fields from the local stand-ins (tests/lib) into tmp_path/market, under
    the window label binance-1m-60d; returns (data dir, fetch output)."""
    lib = os.path.join(ROOT, "tests", "lib")
    key = "cgSDK0123456789abcdefKEY"
    procs = [subprocess.Popen([sys.executable, os.path.join(lib, "binance_standin.py")], stdout=subprocess.PIPE,
                              text=True),
             subprocess.Popen([sys.executable, os.path.join(lib, "coinglass_standin.py"), "--key", key,
                               "--history-days", "5"], stdout=subprocess.PIPE, text=True)]
    try:
        b, c = ("http://127.0.0.1:%d" % int(p.stdout.readline()) for p in procs)
        data = tmp_path / "market"
        env = dict(os.environ, BINANCE_API_URL=b, COINGLASS_API_URL=c, COINGLASS_API_KEY=key,
                   AGENTTEST_CONFIG="/dev/null")
        env.pop("DATABASE_URL", None)
        r = subprocess.run([AGENTTEST, "data", "fetch", "--data-dir", str(data), "--window", "binance-1m-60d",
                            "--days-back", "3", "--assets", "ETH,BTC", "--no-pace", "--coinglass"],
                           capture_output=True, text=True, env=env, timeout=300)
        assert r.returncode == 0, r.stderr
        return data, json.loads(r.stdout)
    finally:
        for p in procs:
            p.kill()
            p.wait()


def test_fetch_assets_and_evaluate_read_the_newest_fetched_version(tmp_path, monkeypatch, capsys):
    """Without a provider, fetch_assets(...) and evaluate(..., days_back=N)
    read the newest fetched version of the window covering N under
    $MANTIS_DATA_DIR and say which (version and hash on stderr); with no
    fetched data, fetch_assets falls back to the synthetic market, loudly."""
    from agenttest import datasource as S
    data, got = _fetched_window(tmp_path)
    for k in ("DATASET_DIR", "AGENTTEST_DATASET_VERSION", "AGENTTEST_DATASET_HASH"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("MANTIS_DATA_DIR", str(data))
    monkeypatch.setenv("AGENTTEST_DATASETS_DIR", str(tmp_path / "none"))
    S._announced.clear()
    capsys.readouterr()
    for pkg in ("model_iteration_tool", "mantis_model_iteration_tool"):
        assert __import__(pkg + ".data", fromlist=["fetch_assets"]).fetch_assets is S.fetch_assets
    ohlcv, cg = D.fetch_assets(["ETH", "BTC"], days_back=2)
    err = capsys.readouterr().err
    assert got["version"] in err and got["dataset_hash"] in err and "SYNTHETIC" not in err, err
    vdir = got["path"]
    ts = np.fromfile(os.path.join(vdir, "ts.i64"), dtype="<i8")[-2 * 1440:]
    assert sorted(ohlcv) == ["BTC", "ETH"] and sorted(cg) == ["BTC", "ETH"]
    for a in ("ETH", "BTC"):
        df = ohlcv[a]
        assert list(df.columns) == ["timestamp", "open", "high", "low", "close", "volume"]
        assert len(df) == 2 * 1440
        assert np.array_equal(df["timestamp"].to_numpy().astype("datetime64[ms]").astype(np.int64), ts)
        for f in ("open", "close", "volume"):
            stored = np.fromfile(os.path.join(vdir, "%s.%s.f64" % (a, f)), dtype="<f8")[-2 * 1440:]
            assert np.array_equal(df[f].to_numpy(), stored, equal_nan=True), (a, f)
        funding = np.fromfile(os.path.join(vdir, "%s.funding_1h.f64" % a), dtype="<f8")[-2 * 1440:]
        assert np.array_equal(cg[a]["funding_1h"], funding, equal_nan=True)
        assert set(cg[a]) == {"oi_1h", "oi_1d", "funding_1h", "liq_long_1h", "liq_short_1h", "ls_ratio_1h"}
    prov = D.DataProvider(ohlcv, cg)   # the original's idiom
    assert prov.length == 2 * 1440 and np.array_equal(prov.prices("ETH"), ohlcv["ETH"]["close"].to_numpy())
    assert np.array_equal(prov.timestamps, ts)
    with pytest.raises(ValueError, match="1-minute"):
        D.fetch_assets(["ETH"], interval="5m")

    # evaluate without a provider scores on the same version, and says so
    ns = {}
    exec(STRATEGY.split('if __name__')[0], ns)
    S._announced.clear()
    res = E.evaluate("ETH-1H-BINARY", ns["TechFeaturizer"](), ns["TechPredictor"](), days_back=2)
    err = capsys.readouterr().err
    assert got["version"] in err and got["dataset_hash"] in err, err
    pinned = E.evaluate("ETH-1H-BINARY", ns["TechFeaturizer"](), ns["TechPredictor"](),
                        provider=DataProvider.from_dataset(vdir, ["ETH"], 2))
    assert res == pinned and "mean_auc" in res, (res, pinned)

    # nothing fetched: the synthetic market, said loudly
    monkeypatch.setenv("MANTIS_DATA_DIR", str(tmp_path / "empty"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("AGENTTEST_BIN", AGENTTEST)
    ohlcv, cg = D.fetch_assets(["ETH"], days_back=2)
    assert "SYNTHETIC" in capsys.readouterr().err and len(ohlcv["ETH"]) == 2 * 1440 and cg == {}


def test_module_level_evaluate_in_a_submitted_file_points_at_main_guard(tmp_path):
    f = tmp_path / "s.py"
    f.write_text(STRATEGY.replace('if __name__ == "__main__":\n    print(', 'print('))
    code = ("import agenttest_host, runpy, sys\n"
            "try:\n    runpy.run_path(sys.argv[1], run_name='strategy')\n"
            "except RuntimeError as e:\n    print(e)\n")
    p = subprocess.run([sys.executable, "-c", code, str(f)], capture_output=True, text=True,
                       env=dict(os.environ, PYTHONPATH=HOST), timeout=120)
    assert 'if __name__ == "__main__":' in p.stdout, p.stdout + p.stderr
    assert "libagenttest_eval.so" not in p.stdout


def test_installed_sdk_runs_the_readme_example_with_debian_python(tmp_path, dataset):
    from test_sdk import README
    dest = tmp_path / "dest"
    subprocess.run(["bash", os.path.join(ROOT, "scripts", "install-data.sh"), str(dest), "/usr/local"],
                   check=True, capture_output=True, timeout=300,
                   env=dict(os.environ, AGENTTEST_EVAL_LIB=os.path.join(ROOT, "build", "release",
                                                                         "libagenttest_eval.so")))
    site = dest / ("usr/local/lib/python%d.%d/dist-packages" % sys.version_info[:2])
    assert (dest / "usr/local/lib/agenttest/libagenttest_eval.so").exists()
    script = tmp_path / "elsewhere" / "readme.py"
    script.parent.mkdir()
    script.write_text(README)
    env = {k: v for k, v in os.environ.items() if k not in ("AGENTTEST_EVAL_LIB", "PYTHONPATH")}
    env.update(PYTHONPATH=str(site), DATASET_DIR=dataset)   # stands in for the real site dir
    p = subprocess.run(["/usr/bin/python3", str(script)], capture_output=True, text=True,
                       timeout=600, env=env, cwd=str(script.parent))
    assert p.returncode == 0, p.stderr[-2000:]
    assert p.stdout.startswith("AUC: ") and "using the dataset in $DATASET_DIR" in p.stderr

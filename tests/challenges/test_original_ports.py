"""Ports of the original test suite's ideas that concern labels, metrics,
window grids and result shapes (spec/mantis.md §7.1, numbers in the test
names), and the §7.3 gaps about them: grid positions, bucket edges through
the real function, breakout event contents, NaN and shape handling."""
import numpy as np
import pytest

import chlib
import reference as ref
from conftest import coarse, walk


def test_04_binary_labels_correctness():
    p = np.array([10, 10, 9, 11, 8, 12, 7, 13], dtype=float)
    assert chlib.binary_labels(p, 2).tolist() == [0, 1, 0, 1, 0, 1]


def test_05_hitfirst_labels_basic():
    p = walk(10000, 11)[:, 0]
    lab = chlib.hitfirst_labels(p, 100, 500)
    assert len(lab) == 9900
    v = lab[lab >= 0]
    assert len(v) > 0 and set(np.unique(v)) <= {0, 1, 2}


def test_06_lbfgs_labels_basic():
    p = walk(15000, 12)[:, 0]
    b, t = chlib.lbfgs_labels(p, 60, 3600)
    assert len(b) == len(t) > 0 and set(np.unique(b)) <= {0, 1, 2, 3, 4}
    assert (np.diff(t) > 0).all()


def test_07_xsec_labels_basic():
    m = walk(1000, 13, A=5)
    lab, valid = chlib.xsec_labels(m, 60)
    assert lab.shape == (940, 5) and valid.shape == (940,)
    assert set(lab[valid].sum(axis=1)) <= {2, 3}


def test_10_evaluate_binary_smoketest():
    rng = np.random.default_rng(14)
    p = walk(5000, 14)[:, 0]
    rc, r = chlib.score("ETH-1H-BINARY", {"ETH": p}, rng.random((4950, 2)), 50)
    assert rc == 0 and r["type"] == "binary" and len(r["windows"]) >= 1
    assert 0.0 <= r["mean_auc"] <= 1.0


def test_11_breakout_detection_contents():
    T = 1000
    osc = 100 + np.where(np.arange(T) % 2, 1.0, -1.0)
    a0, a1 = osc.copy(), osc.copy()
    a0[500:510] = 102.2
    a0[500] = 102.0
    a0[510:] = 102.6            # >= cont 102.5: continuation at 510
    a1[600:620] = 98.0          # low break at 600, rev barrier 98.5
    a1[620:] = 98.6             # >= rev: reversal at 620
    ev = chlib.breakout_detect(np.column_stack([a0, a1]), L=400)
    assert ev == [(500, 510, 0, 1, 1), (600, 620, 1, -1, 0)]
    assert ev == ref.detect_breakouts(np.column_stack([a0, a1]), L=400)
    # the ramp of the original test: a list, every event well formed
    ramp = np.column_stack([np.linspace(100, 200, 3000), np.linspace(200, 100, 3000)])
    for e in chlib.breakout_detect(ramp, L=400):
        assert e[0] < e[1] and e[3] in (1, -1) and e[4] in (0, 1)


def test_11b_breakout_expiry_and_rearm():
    T = 1200
    x = 100 + np.where(np.arange(T) % 2, 1.0, -1.0)
    x[500:] = 102.0             # breaks at 500, never resolves
    ev = chlib.breakout_detect(x.reshape(-1, 1), L=400, max_pending=50)
    assert ev == [] and ev == ref.detect_breakouts(x.reshape(-1, 1), L=400, max_pending=50)


def test_12_hitfirst_sigma_matches_first_touch():
    p = walk(3000, 15)[:, 0]
    h, vw = 100, 500
    lab = chlib.hitfirst_labels(p, h, vw)
    lp = ref.glibc_log(p + 1e-12)  # the C code's log: bitwise labels below
    r = lp[h:] - lp[:-h]
    for t in (500, 600, 1000):
        sig = np.std(r[t - vw + 1:t + 1], ddof=1)
        path = lp[t + 1:t + h + 1] - lp[t]
        up = np.where(path >= sig)[0]
        dn = np.where(path <= -sig)[0]
        ku = up[0] if len(up) else h + 1
        kd = dn[0] if len(dn) else h + 1
        want = 0 if ku < kd else (1 if kd < ku else 2)
        assert lab[t] == want


def test_13_lbfgs_bucket_edges_through_real_function():
    rng = np.random.default_rng(16)
    steps = rng.standard_t(3, 20000) * 0.002
    p = 100 * np.exp(np.cumsum(steps))
    b, t = chlib.lbfgs_labels(p, 60, 3600)
    sig = chlib.sigma_series(p, 60, 3600)
    lp = ref.glibc_log(p + 1e-12)  # the C code's log: bitwise labels below
    z = (lp[t + 60] - lp[t]) / (sig[t] + 1e-12)
    want = np.select([z <= -2, z < -1, z <= 1, z < 2], [0, 1, 2, 3], 4)
    assert np.array_equal(b, want) and set(np.unique(b)) == {0, 1, 2, 3, 4}
    # the original's inline rule, on its z grid
    grid = np.array([-3, -2, -1.5, -1, -0.5, 0, 0.5, 1, 1.5, 2, 3])
    assert np.select([grid <= -2, grid < -1, grid <= 1, grid < 2], [0, 1, 2, 3], 4).tolist() == \
        [0, 0, 1, 2, 2, 2, 2, 2, 3, 4, 4]


def perfect_then_flat(p, warmup, cut):
    lab = chlib.binary_labels(p, 60)
    T = len(p)
    up = np.full(T - warmup, 0.5, dtype=np.float32)
    for i in range(T - warmup):
        t = warmup + i
        if t < cut and t < len(lab):
            up[i] = lab[t]
    return np.column_stack([up, 1 - up])


def test_22_holdout_only_metrics():
    p = walk(10000, 17)[:, 0]
    emb = perfect_then_flat(p, 0, 8000)
    rc, all_ = chlib.score("ETH-1H-BINARY", {"ETH": p}, emb, 0, 0)
    assert rc == 0 and all_["mean_auc"] > 0.8
    rc, hold = chlib.score("ETH-1H-BINARY", {"ETH": p}, emb, 0, 8000)
    assert rc == 0 and hold["mean_auc"] < 0.6
    flags = {w["in_holdout"] for w in hold["windows"]}
    assert flags == {True, False}


def test_23_evaluate_hitfirst_smoketest():
    rng = np.random.default_rng(18)
    p = walk(12000, 18, vol=0.005)[:, 0]
    rc, r = chlib.score("ETH-HITFIRST-100M", {"ETH": p}, rng.dirichlet([1, 1, 1], 12000), 0)
    assert rc == 0 and r["type"] == "hitfirst"
    for k in ("n_valid", "up_auc", "dn_auc", "direct_log_loss"):
        assert k in r


def test_37_embedding_rows_must_match_timesteps():
    p = walk(200, 19)[:, 0]
    rc, r = chlib.score("ETH-1H-BINARY", {"ETH": p}, np.zeros((99, 2)), 100)
    assert rc == 1 and "expected 100 rows" in r["error"]
    rc, r = chlib.score("ETH-1H-BINARY", {"ETH": p}, np.zeros((0, 2)), 300)
    assert rc == 2 and r == {"error": "not enough data after warmup"}


def test_38_holdout_boundary_windows():
    rng = np.random.default_rng(20)
    p = walk(5000, 20)[:, 0]
    rc, r = chlib.score("ETH-1H-BINARY", {"ETH": p}, rng.random((5000, 2)), 0, 2500)
    assert rc == 0 and {w["in_holdout"] for w in r["windows"]} == {True, False}
    assert all(w["in_holdout"] == (w["start"] >= 2500) for w in r["windows"])


# ---- §7.3: grid positions and result shapes per type ----------------------

KEYS = {
    "ETH-1H-BINARY": ["challenge", "type", "n_timesteps", "n_evaluated", "horizon", "windows", "mean_auc"],
    "ETH-HITFIRST-100M": ["challenge", "type", "n_timesteps", "n_valid", "horizon", "windows",
                          "direct_log_loss", "up_auc", "dn_auc"],
    "ETH-LBFGS": ["challenge", "type", "n_timesteps", "n_valid", "horizon", "windows",
                  "mean_balanced_accuracy", "mean_lift"],
    "MULTI-BREAKOUT": ["challenge", "type", "n_assets", "n_events", "n_scored", "n_fallback",
                       "windows", "mean_auc"],
    "XSEC-RANK": ["challenge", "type", "n_assets", "n_timesteps", "n_usable", "horizon", "windows",
                  "mean_spearman"],
}
WKEYS = {
    "ETH-1H-BINARY": ["start", "end", "auc", "in_holdout", "n_samples"],
    "ETH-HITFIRST-100M": ["start", "end", "up_auc", "dn_auc", "in_holdout", "direct_log_loss", "n_samples"],
    "ETH-LBFGS": ["start", "end", "balanced_accuracy", "lift_over_random", "in_holdout", "n_samples"],
    "MULTI-BREAKOUT": ["start", "end", "auc", "in_holdout", "n_samples"],
    "XSEC-RANK": ["start", "end", "mean_spearman", "n_timesteps", "in_holdout", "n_samples"],
}


def market_for(name, T, seed):
    if name in ("MULTI-BREAKOUT", "XSEC-RANK"):
        A = 8 if name == "MULTI-BREAKOUT" else 29
        m = walk(T, seed, vol=0.006 if A == 8 else 0.002, A=A)
        return {ref.BREAKOUT_ASSETS[a]: m[:, a] for a in range(A)}
    return {ref.CHALLENGES[name]["asset"]: walk(T, seed, vol=0.003)[:, 0]}


@pytest.mark.parametrize("name,T,first,step", [
    ("ETH-1H-BINARY", 20000, 560, 4000), ("ETH-HITFIRST-100M", 22000, 2060, 4000),
    ("ETH-LBFGS", 22000, 560, 6000), ("XSEC-RANK", 9000, 260, 4000),
    ("MULTI-BREAKOUT", 24000, None, None)])
@pytest.mark.parametrize("mode", ["mantis", "strict"])
def test_grid_positions_and_keys(name, T, first, step, mode):
    rng = np.random.default_rng(21)
    closes = market_for(name, T, 21)
    dim = ref.CHALLENGES[name]["dim"]
    w = 100
    rc, r = chlib.score(name, closes, coarse(rng.dirichlet(np.ones(dim), T - w)), w, 0, mode=mode)
    assert rc == 0, r
    assert list(r) == KEYS[name]
    for win in r["windows"]:
        assert [k for k in win if k != "direct_log_loss"] == [k for k in WKEYS[name] if k != "direct_log_loss"]
    starts = [x["start"] for x in r["windows"]]
    if name == "MULTI-BREAKOUT":
        n = r["n_scored"]
        first, step = max(30, n // 4), max(30, n // 5)
    assert starts == [s for s in range(first, starts[-1] + 1, step)]
    assert all(x["end"] - x["start"] <= step for x in r["windows"])


# ---- §7.3: NaN and shape handling, mantis mode ---------------------------

def test_binary_nan_and_inf_raise_like_sklearn():
    rng = np.random.default_rng(22)
    p = walk(6000, 22)[:, 0]
    emb = rng.random((6000, 2)).astype(np.float32)
    emb[1000, 0] = np.nan
    assert chlib.score("ETH-1H-BINARY", {"ETH": p}, emb, 0)[1] == {"error": "Input contains NaN."}
    emb[1000, 0] = np.inf
    assert chlib.score("ETH-1H-BINARY", {"ETH": p}, emb, 0)[1] == \
        {"error": "Input contains infinity or a value too large for dtype('float32')."}
    emb[1000, 0] = 0.5
    emb[10, 0] = np.nan         # before the first window: never read
    assert chlib.score("ETH-1H-BINARY", {"ETH": p}, emb, 0)[0] == 0
    assert chlib.score("ETH-1H-BINARY", {"ETH": p}, np.zeros((6000, 0)), 0)[1] == \
        {"error": "index 0 is out of bounds for axis 1 with size 0"}


def test_hitfirst_shape_and_nan():
    rng = np.random.default_rng(23)
    p = walk(12000, 23, vol=0.004)[:, 0]
    emb = rng.dirichlet([1, 1, 1], 12000).astype(np.float32)
    rc, r = chlib.score("ETH-HITFIRST-100M", {"ETH": p}, emb[:, :2], 0)
    k = 12000 - 100 - 7199
    assert r == {"error": f"hitfirst requires embedding dim >= 3, got shape ({k}, 2)"}
    assert r == ref.evaluate("ETH-HITFIRST-100M", {"ETH": p}, emb[:, :2], 0)
    bad = emb.copy()
    bad[11000, 1] = np.inf      # clipped to 1: no error, as in the original
    rc, r = chlib.score("ETH-HITFIRST-100M", {"ETH": p}, bad, 0)
    assert rc == 0
    bad[11000, 1] = np.nan
    assert chlib.score("ETH-HITFIRST-100M", {"ETH": p}, bad, 0)[1] == {"error": "Input contains NaN."}


def test_lbfgs_nan_and_narrow_are_silent_in_mantis():
    rng = np.random.default_rng(24)
    p = walk(14000, 24)[:, 0]
    emb = rng.random((14000, 17)).astype(np.float32)
    emb[5000:5100, 3] = np.nan
    emb[6000:6100, 2] = np.inf
    for e in (emb, emb[:, :3]):
        rc, c = chlib.score("ETH-LBFGS", {"ETH": p}, e, 0)
        assert rc == 0 and c == pytest.approx(ref.evaluate("ETH-LBFGS", {"ETH": p}, e, 0), abs=1e-12)
    rc, c = chlib.score("ETH-LBFGS", {"ETH": p}, emb[:, :0], 0)
    assert c == {"error": "attempt to get argmax of an empty sequence"}


def test_breakout_nan_raises_and_too_few_assets():
    rng = np.random.default_rng(25)
    m = walk(24000, 1, vol=0.006, A=8)
    closes = {ref.BREAKOUT_ASSETS[a]: m[:, a] for a in range(8)}
    emb = rng.random((24000, 16)).astype(np.float32)
    emb[:, ::2] = np.nan
    assert chlib.score("MULTI-BREAKOUT", closes, emb, 0)[1] == {"error": "Input contains NaN."}
    few = {k: closes[k] for k in list(closes)[:4]}
    assert chlib.score("MULTI-BREAKOUT", few, emb, 0)[1] == {"error": "only 4 assets available, need >= 5"}


def test_xsec_constant_scores_give_no_windows():
    m = walk(6000, 26, A=29)
    closes = {a: m[:, i] for i, a in enumerate(ref.BREAKOUT_ASSETS)}
    rc, r = chlib.score("XSEC-RANK", closes, np.ones((6000, 29)), 0)
    assert r == {"error": "no valid walk-forward windows"}


def test_unknown_challenge():
    rc, r = chlib.score("NOPE", {"ETH": np.ones(10)}, np.zeros((10, 2)), 0)
    assert rc == 1 and r["error"].startswith("unknown challenge 'NOPE'; valid: ETH-1H-BINARY, ")
    assert "FUNDING-XSEC" in r["error"]


def test_catalog_shape_and_funding_listing():
    cat = chlib.catalog()
    assert list(cat) == [n for n in ref.CHALLENGES if n != "FUNDING-XSEC"]
    assert "FUNDING-XSEC" in chlib.catalog(["funding_1h"])
    for name, c in cat.items():
        assert list(c)[:6] == ["type", "short", "desc", "asset", "metric", "metric_info"]
        assert list(c["metric_info"]) == ["primary", "all", "direction", "label", "baseline"]
        assert c["type"] == ref.CHALLENGES[name]["type"]
        assert c["embedding_dim"] == ref.CHALLENGES[name]["dim"]
    assert abs(cat["ETH-HITFIRST-100M"]["metric_info"]["baseline"] - np.log(3)) < 1e-15
    assert cat["ETH-HITFIRST-100M"]["metric_info"]["direction"] == "lower"

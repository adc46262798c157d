"""Whole evaluations, mantis mode: the C scorer (ch_score_json through ctypes)
against reference.evaluate on seeded synthetic markets, for every challenge.
Same keys in the same order, same window grid, metrics within 1e-9."""
import math

import numpy as np
import pytest

import chlib
import reference as ref
from conftest import coarse, walk


def assert_same(c, r, path="$"):
    if isinstance(r, dict):
        assert isinstance(c, dict), path
        assert list(c) == list(r), f"{path}: keys {list(c)} != {list(r)}"
        for k in r:
            assert_same(c[k], r[k], f"{path}.{k}")
    elif isinstance(r, list):
        assert isinstance(c, list) and len(c) == len(r), f"{path}: {len(c)} != {len(r)}"
        for i, (a, b) in enumerate(zip(c, r)):
            assert_same(a, b, f"{path}[{i}]")
    elif isinstance(r, bool) or isinstance(r, str):
        assert c == r, f"{path}: {c!r} != {r!r}"
    elif isinstance(r, (int, np.integer)):
        assert c == int(r) and not isinstance(c, bool), f"{path}: {c} != {r}"
    else:
        r = float(r)
        if math.isnan(r):
            assert c is None, f"{path}: {c} != NaN"
        else:
            assert c is not None and abs(c - r) <= 1e-9, f"{path}: {c} != {r}"


def run_both(name, closes, emb, warmup, hs, fields=None, **kw):
    rc, c = chlib.score(name, closes, emb, warmup, hs, mode="mantis", fields=fields)
    r = ref.evaluate(name, closes, emb, warmup, hs, fields=fields, **kw)
    assert_same(c, r)
    assert (rc == 0) == ("error" not in c)
    return c


def momentum_probs(p, warmup, h, rng, noise=0.3):
    """A weakly informative p_up from past momentum, onto a coarse grid."""
    T = len(p)
    t = np.arange(warmup, T)
    mom = np.log(p[t]) - np.log(p[np.maximum(t - h, 0)])
    z = mom / (np.std(mom) + 1e-12) + rng.normal(0, 1 + noise, len(t))
    return coarse(1 / (1 + np.exp(-z)))


@pytest.mark.parametrize("hs", [0, 15000, 19000])
def test_binary(seed, hs):
    rng = np.random.default_rng(seed)
    p = walk(20000, seed)[:, 0]
    w = 200
    up = momentum_probs(p, w, 60, rng)
    emb = np.column_stack([up, 1 - up]).astype(np.float32)
    c = run_both("ETH-1H-BINARY", {"ETH": p}, emb, w, hs)
    if hs == 19000:  # holdout begins after the last window start (16560 + 200)
        assert c == {"error": "no walk-forward windows in holdout period"}
        return
    assert [x["start"] for x in c["windows"]] == list(range(560, 19740, 4000))


def test_binary_continuous_scores(seed):
    rng = np.random.default_rng(seed)
    p = walk(12000, seed)[:, 0]
    emb = rng.random((12000 - 100, 2)).astype(np.float32)
    run_both("ETH-1H-BINARY", {"ETH": p}, emb, 100, 8000)


@pytest.mark.parametrize("hs", [0, 16000])
def test_hitfirst(seed, hs):
    rng = np.random.default_rng(seed)
    p = walk(20000, seed, vol=0.003)[:, 0]
    w = 150
    raw = rng.dirichlet([2, 2, 3], 20000 - w)
    raw[:50, 0] = 0.0          # 0 -> 1e-12 -> logit -27.6
    raw[50:60] = [1.0, 0, 0]   # rounds to 1.0 in float32: logit +Inf -> 0
    emb = coarse(raw)
    c = run_both("ETH-HITFIRST-100M", {"ETH": p}, emb, w, hs)
    assert "error" not in c and c["n_valid"] == 20000 - 100 - 7199


def test_hitfirst_matches_fitted_logistic_regression():
    rng = np.random.default_rng(3)
    p = walk(16000, 3, vol=0.003)[:, 0]
    raw = rng.dirichlet([2, 2, 3], 16000 - 100)
    c = run_both("ETH-HITFIRST-100M", {"ETH": p}, coarse(raw), 100, 12000, fit_lr=True)
    assert "error" not in c


@pytest.mark.parametrize("name,hs", [("ETH-LBFGS", 0), ("ETH-LBFGS", 14000), ("BTC-LBFGS-6H", 12000)])
def test_lbfgs(seed, name, hs):
    rng = np.random.default_rng(seed)
    asset = "ETH" if name.startswith("ETH") else "BTC"
    p = walk(20000, seed)[:, 0]
    w = 300
    emb = rng.random((20000 - w, 17)).astype(np.float32)
    emb[::7, :5] = coarse(emb[::7, :5], 4)   # exact ties: the first maximum wins
    emb[3::11, 1] = 0.0                      # below the 1e-6 clip
    c = run_both(name, {asset: p}, emb, w, hs)
    assert "error" not in c


def breakout_market(seed, T=24000, A=8):
    m = walk(T, seed, vol=0.006, A=A)
    return {ref.BREAKOUT_ASSETS[a]: m[:, a] for a in range(A)}


@pytest.mark.parametrize("hs", [0, 12000])
def test_breakout(seed, hs):
    rng = np.random.default_rng(seed)
    closes = breakout_market(seed)
    w = 100
    emb = coarse(rng.random((24000 - w, 16)), 64)  # 8 assets x (cont, rev); ties
    c = run_both("MULTI-BREAKOUT", closes, emb, w, hs)
    assert "error" not in c and c["n_assets"] == 8 and c["n_fallback"] == 0


def test_breakout_fallback_columns(seed):
    rng = np.random.default_rng(seed)
    closes = breakout_market(seed)
    emb = rng.random((24000 - 100, 5)).astype(np.float32)  # assets 0-2 only
    c = run_both("MULTI-BREAKOUT", closes, emb, 100, 0)
    assert "error" not in c and c["n_fallback"] > 0


@pytest.mark.parametrize("hs", [0, 3000])
def test_xsec(seed, hs):
    rng = np.random.default_rng(seed)
    T = 5000
    m = walk(T, seed, A=29)
    closes = {a: m[:, i] for i, a in enumerate(ref.BREAKOUT_ASSETS)}
    w = 200
    emb = rng.normal(0, 1, (T - w, 29)).astype(np.float32)
    emb[::5, :10] = 0.0           # ties within rows
    emb[7::13, 4] = np.nan        # filtered per row in mantis mode
    c = run_both("XSEC-RANK", closes, emb, w, hs)
    assert "error" not in c


def test_xsec_zero_padding(seed):
    rng = np.random.default_rng(seed)
    m = walk(5000, seed, A=29)
    closes = {a: m[:, i] for i, a in enumerate(ref.BREAKOUT_ASSETS)}
    emb = rng.normal(0, 1, (5000 - 100, 12)).astype(np.float32)
    run_both("XSEC-RANK", closes, emb, 100, 0)


def funding_market(seed, T=5000, missing=None):
    m = walk(T, seed, A=20)
    closes = {a: m[:, i] for i, a in enumerate(ref.FUNDING_ASSETS)}
    f = np.random.default_rng(seed + 100).normal(0, 1e-5, (T, 20)).cumsum(axis=0)
    fields = {"funding_1h": {a: f[:, i] for i, a in enumerate(ref.FUNDING_ASSETS) if a != missing}}
    return closes, fields


def test_funding_xsec(seed):
    rng = np.random.default_rng(seed)
    closes, fields = funding_market(seed)
    emb = rng.normal(0, 1, (5000 - 100, 20)).astype(np.float32)
    c = run_both("FUNDING-XSEC", closes, emb, 100, 3000, fields=fields)
    assert "error" not in c


def test_funding_one_missing_asset_kills_every_row():
    rng = np.random.default_rng(5)
    closes, fields = funding_market(5, missing="SUI")
    emb = rng.normal(0, 1, (5000 - 100, 20)).astype(np.float32)
    c = run_both("FUNDING-XSEC", closes, emb, 100, 0, fields=fields)
    assert c == {"error": "no valid walk-forward windows"}


def test_mantis_row_alignment_equals_reference_on_compacted_series():
    """The original aligns assets by row (DataProvider: each asset's rows in
    order, all cut to the shortest). Gaps given as a validity mask must give
    exactly the reference evaluated on the compacted, truncated series."""
    rng = np.random.default_rng(50)
    T = 6000
    m = walk(T, 50, A=29)
    closes = {a: m[:, i] for i, a in enumerate(ref.BREAKOUT_ASSETS)}
    valid = {"SOL": np.ones(T, bool), "DOGE": np.ones(T, bool)}
    valid["SOL"][1000:1040] = False
    valid["DOGE"][:15] = False
    n = T - 40
    compact = {a: (closes[a][valid[a]] if a in valid else closes[a])[:n] for a in closes}
    emb = rng.normal(0, 1, (n - 100, 29)).astype(np.float32)
    rc, c = chlib.score("XSEC-RANK", closes, emb, 100, 3000, mode="mantis", valid=valid)
    assert_same(c, ref.evaluate("XSEC-RANK", compact, emb, 100, 3000))
    assert c["n_timesteps"] == n


def test_hitfirst_continuous_probabilities(seed):
    """Full-precision float32 probabilities (not on a grid): the C logits use
    numpy's own float32 log (ch_npy_logf), so they equal the reference's
    wherever numpy runs its SIMD log (AVX2/AVX-512 CPUs) and the AUCs are the
    same; elsewhere they may differ in the last bit, which moves an AUC only
    through a tie (at most k/(n_pos·n_neg))."""
    rng = np.random.default_rng(seed)
    p = walk(20000, seed, vol=0.003)[:, 0]
    emb = rng.dirichlet([2, 2, 3], 20000 - 100).astype(np.float32)
    run_both("ETH-HITFIRST-100M", {"ETH": p}, emb, 100, 12000)


def test_hitfirst_concentrated_probabilities_tie_like_numpy(seed):
    """Probabilities within 1e-3 of 1/3: thousands of logits one float32
    step apart, where glibc's logf and numpy's SIMD log tie differently (the
    AUCs differed by up to 1.1e-5 relative before ch_npy_logf). Bitwise-equal
    logits give the same AUCs within 1e-9 where numpy runs its SIMD log;
    where it runs glibc's logf the bound is the tie count over
    n_pos·n_neg (1e-3 is generous for a 4000-sample window)."""
    rng = np.random.default_rng(seed)
    T, w = 24000, 200
    p = walk(T, seed, vol=0.003)[:, 0]
    z = rng.random((T - w, 3)).astype(np.float32)
    e = (z / z.sum(axis=1, keepdims=True)).astype(np.float32)
    emb = (np.float32(1 / 3) + (e - np.float32(1 / 3)) * np.float32(1e-3)).astype(np.float32)
    rc, c = chlib.score("ETH-HITFIRST-100M", {"ETH": p}, emb, w, 16000, mode="mantis")
    r = ref.evaluate("ETH-HITFIRST-100M", {"ETH": p}, emb, w, 16000)
    from test_labels_metrics import _numpy_float32_log_is_simd
    if _numpy_float32_log_is_simd():
        assert_same(c, r)
    else:
        for a, b in zip(c["windows"], r["windows"]):
            for k in ("up_auc", "dn_auc"):
                assert (a[k] is None) == (b[k] != b[k]) and (a[k] is None or abs(a[k] - b[k]) <= 1e-3)

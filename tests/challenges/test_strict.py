"""Strict mode (the default): the fixes to the original's bugs listed in
docs/challenges.md, each shown against mantis mode on the same input."""
import numpy as np
import pytest

import chlib
import reference as ref
from conftest import coarse, walk

PRED = 3  # CH_ERR_PREDICTION
INPUT = 1


def test_nan_prediction_rejected_naming_window_and_row():
    rng = np.random.default_rng(30)
    p = walk(10000, 30)[:, 0]
    emb = rng.random((9900, 2)).astype(np.float32)
    emb[1000, 0] = np.nan
    rc, r = chlib.score("ETH-1H-BINARY", {"ETH": p}, emb, 100, mode="strict")
    assert rc == PRED
    assert r["error"] == ("non-finite prediction (NaN) at embedding row 1000 (t=1100), column 0, "
                          "in window 0 [560, 4560)")
    emb[1000, 0] = 0.5
    emb[20, 0] = -np.inf  # not in a window, but a scorable row: still rejected
    rc, r = chlib.score("ETH-1H-BINARY", {"ETH": p}, emb, 100, mode="strict")
    assert rc == PRED and "(-Inf) at embedding row 20 (t=120)" in r["error"]
    assert "outside every scored window" in r["error"]
    assert chlib.score("ETH-1H-BINARY", {"ETH": p}, emb, 100, mode="mantis")[0] == 0


@pytest.mark.parametrize("name,dim,col", [("ETH-HITFIRST-100M", 3, 1), ("ETH-LBFGS", 17, 4),
                                          ("XSEC-RANK", 29, 7), ("MULTI-BREAKOUT", 58, None)])
def test_non_finite_rejected_for_every_type(name, dim, col):
    rng = np.random.default_rng(31)
    T = 24000 if name == "MULTI-BREAKOUT" else 14000
    if name in ("XSEC-RANK", "MULTI-BREAKOUT"):
        m = walk(T, 1, vol=0.006 if name == "MULTI-BREAKOUT" else 0.002, A=29)
        closes = {a: m[:, i] for i, a in enumerate(ref.BREAKOUT_ASSETS)}
    else:
        closes = {"ETH": walk(T, 31, vol=0.004)[:, 0]}
    emb = rng.dirichlet(np.ones(dim), T).astype(np.float32)
    if col is None:
        emb[:, ::2] = np.inf   # every continuation column
    else:
        emb[T - 2000, col] = np.inf
    rc, r = chlib.score(name, closes, emb, 0, mode="strict")
    assert rc == PRED and r["error"].startswith("non-finite prediction (+Inf)"), r


def test_narrow_embedding_rejected():
    p = walk(12000, 32, vol=0.004)[:, 0]
    rc, r = chlib.score("ETH-HITFIRST-100M", {"ETH": p}, np.full((12000, 2), 0.3), 0, mode="strict")
    assert rc == PRED and r["error"] == "embedding has 2 columns, ETH-HITFIRST-100M needs at least 3"
    rc, r = chlib.score("ETH-LBFGS", {"ETH": p}, np.full((12000, 3), 0.3), 0, mode="strict")
    assert rc == PRED and "needs at least 5" in r["error"]


def test_tail_window_below_minimum_not_counted():
    rng = np.random.default_rng(33)
    T = 60 + 4560 + 150          # n_usable = 4710: the tail window has 150 samples
    p = walk(T, 33)[:, 0]
    emb = rng.random((T, 2)).astype(np.float32)
    _, m = chlib.score("ETH-1H-BINARY", {"ETH": p}, emb, 0, mode="mantis")
    _, s = chlib.score("ETH-1H-BINARY", {"ETH": p}, emb, 0, mode="strict")
    assert [(w["start"], w["end"]) for w in m["windows"]] == [(560, 4560), (4560, 4710)]
    assert [(w["start"], w["end"]) for w in s["windows"]] == [(560, 4560)]


def test_holdout_start_aligned_to_grid():
    rng = np.random.default_rng(34)
    p = walk(14000, 34)[:, 0]
    emb = rng.random((13900, 2)).astype(np.float32)
    _, m = chlib.score("ETH-1H-BINARY", {"ETH": p}, emb, 100, 6100, mode="mantis")
    _, s = chlib.score("ETH-1H-BINARY", {"ETH": p}, emb, 100, 6100, mode="strict")
    assert [(w["start"], w["end"], w["in_holdout"]) for w in m["windows"]] == [
        (560, 4560, False), (4560, 8560, False), (8560, 12560, True), (12560, 13840, True)]
    assert [(w["start"], w["end"], w["in_holdout"]) for w in s["windows"]] == [
        (560, 4560, False), (4560, 6000, False), (6000, 10000, True), (10000, 13840, True)]


def test_breakout_holdout_by_trigger_time():
    rng = np.random.default_rng(35)
    m = walk(30000, 35, vol=0.006, A=8)
    closes = {ref.BREAKOUT_ASSETS[a]: m[:, a] for a in range(8)}
    emb = coarse(rng.random((30000, 16)), 64)
    hs = 17000
    ev = chlib.breakout_detect(m)
    trig = np.array([e[0] for e in ev])
    dev, hold = trig[trig < hs], trig[trig >= hs]
    order = np.r_[dev, hold]      # strict order: dev events, then holdout events
    _, s = chlib.score("MULTI-BREAKOUT", closes, emb, 0, hs, mode="strict")
    assert s["n_scored"] == len(ev)
    for w in s["windows"]:
        t = order[w["start"]:w["end"]]
        assert (t >= hs).all() if w["in_holdout"] else (t < hs).all()
    assert any(w["in_holdout"] for w in s["windows"])
    # mantis: searchsorted on trigger times in resolution order; a holdout
    # window there may hold events triggered before holdout_start
    _, mm = chlib.score("MULTI-BREAKOUT", closes, emb, 0, hs, mode="mantis")
    assert mm == ref.evaluate("MULTI-BREAKOUT", closes, emb, 0, hs) or "error" in mm


def test_gap_aligned_by_timestamp_not_by_row():
    rng = np.random.default_rng(36)
    T = 12000
    p = walk(T, 36)[:, 0]
    valid = np.ones(T, bool)
    valid[3000:3100] = False    # 100 missing minutes
    emb_s = rng.random((T - 100, 2)).astype(np.float32)
    rc, s = chlib.score("ETH-1H-BINARY", {"ETH": p}, emb_s, 100, valid={"ETH": valid}, mode="strict")
    assert rc == 0 and s["n_timesteps"] == T
    # rows whose label touches the gap are not scored: window 0 covers t in [660, 4660)
    assert s["windows"][0]["n_samples"] == 4000 - 160
    # mantis squeezes the gap out (row alignment): 100 fewer bars, rows shift
    rc, m = chlib.score("ETH-1H-BINARY", {"ETH": p}, emb_s[:-100], 100, valid={"ETH": valid},
                        mode="mantis")
    assert rc == 0 and m["n_timesteps"] == T - 100 and m["windows"][0]["n_samples"] == 4000
    rc, r = chlib.score("ETH-1H-BINARY", {"ETH": p}, emb_s, 100, valid={"ETH": valid}, mode="mantis")
    assert rc == INPUT   # the mantis series is 100 bars shorter


def test_multi_asset_gap_keeps_other_assets_aligned():
    rng = np.random.default_rng(37)
    T = 6000
    m = walk(T, 37, A=29)
    closes = {a: m[:, i] for i, a in enumerate(ref.BREAKOUT_ASSETS)}
    valid = {"SOL": np.r_[np.zeros(500, bool), np.ones(T - 500, bool)]}  # listed late
    emb = rng.normal(0, 1, (T, 29)).astype(np.float32)
    rc, s = chlib.score("XSEC-RANK", closes, emb, 0, valid=valid, mode="strict")
    assert rc == 0 and s["n_timesteps"] == T
    # strict: rows before SOL's listing still count (28 assets are enough)
    assert s["windows"][0]["n_samples"] == 4000
    rc, mm = chlib.score("XSEC-RANK", closes, emb[:T - 500], 0, valid=valid, mode="mantis")
    assert rc == 0 and mm["n_timesteps"] == T - 500


def test_irregular_timestamps_regridded():
    rng = np.random.default_rng(38)
    T = 8000
    p = walk(T, 38)[:, 0]
    ts = 1_700_000_000_000 + 60000 * np.arange(T)
    ts[4000:] += 60000 * 30     # 30 minutes with no bar at all
    emb = rng.random((T + 30, 2)).astype(np.float32)
    rc, s = chlib.score("ETH-1H-BINARY", {"ETH": p}, emb, 0, ts=ts, mode="strict")
    assert rc == 0 and s["n_timesteps"] == T + 30
    ts[5] += 1000               # not on the minute grid
    rc, s = chlib.score("ETH-1H-BINARY", {"ETH": p}, emb, 0, ts=ts, mode="strict")
    assert rc == INPUT and "1-minute grid" in s["error"]


def test_funding_missing_asset_does_not_kill_every_row():
    rng = np.random.default_rng(39)
    T = 5000
    m = walk(T, 39, A=20)
    closes = {a: m[:, i] for i, a in enumerate(ref.FUNDING_ASSETS)}
    f = rng.normal(0, 1e-5, (T, 20)).cumsum(axis=0)
    fields = {"funding_1h": {a: f[:, i] for i, a in enumerate(ref.FUNDING_ASSETS) if a != "SUI"}}
    emb = rng.normal(0, 1, (T, 20)).astype(np.float32)
    assert chlib.score("FUNDING-XSEC", closes, emb, 0, fields=fields, mode="mantis")[1] == \
        {"error": "no valid walk-forward windows"}
    rc, s = chlib.score("FUNDING-XSEC", closes, emb, 0, fields=fields, mode="strict")
    assert rc == 0 and s["type"] == "funding_xsec"


@pytest.mark.parametrize("mode", ["strict", "mantis"])
def test_funding_xsec_without_the_funding_field_says_so(mode):
    """A market without funding_1h (the default synthetic one) or with it for
    none of the 20 assets is refused before scoring, naming the field; it
    used to fail as 'has 0 rows with returns for at least 5 assets'."""
    rng = np.random.default_rng(41)
    T = 5000
    m = walk(T, 41, A=20)
    closes = {a: m[:, i] for i, a in enumerate(ref.FUNDING_ASSETS)}
    emb = rng.normal(0, 1, (T, 20)).astype(np.float32)
    rc, r = chlib.score("FUNDING-XSEC", closes, emb, 0, mode=mode)
    assert rc == INPUT and r == {"error": "FUNDING-XSEC needs the funding_1h field and this dataset has none "
                                 "(its fields: open, high, low, close, volume); evaluate it on a dataset "
                                 "fetched with CoinGlass data (docs/market-data.md)"}
    other = {"oi_1h": {"BTC": np.ones(T)}}
    rc, r = chlib.score("FUNDING-XSEC", closes, emb, 0, fields=other, mode=mode)
    assert rc == INPUT and "has none (its fields: open, high, low, close, volume, oi_1h);" in r["error"]
    elsewhere = {"funding_1h": {"BCH": np.ones(T)}}
    rc, r = chlib.score("FUNDING-XSEC", dict(closes, BCH=m[:, 0]), emb, 0, fields=elsewhere, mode=mode)
    assert rc == INPUT and r == {"error": "FUNDING-XSEC needs the funding_1h field and this dataset carries it "
                                 "for none of the challenge's 20 assets"}


def test_strict_equals_mantis_on_clean_data_except_grid():
    """With no gaps, finite predictions and holdout 0, only the tail-window
    rule can differ; labels and metrics are the same computations."""
    rng = np.random.default_rng(40)
    p = walk(20000, 40, vol=0.003)[:, 0]
    for name, dim in (("ETH-1H-BINARY", 2), ("ETH-HITFIRST-100M", 3), ("ETH-LBFGS", 17)):
        emb = coarse(rng.dirichlet(np.ones(dim), 19900))
        _, m = chlib.score(name, {"ETH": p}, emb, 100, 0, mode="mantis")
        _, s = chlib.score(name, {"ETH": p}, emb, 100, 0, mode="strict")
        keep = [w for w in m["windows"] if w["end"] - w["start"] >= 200]
        assert s["windows"] == keep


def test_gap_in_volatility_window_invalidates_only_nearby_labels():
    """Strict: a missing bar makes the labels whose windows hold it invalid;
    mantis-style cumulative sums would poison every later label."""
    T = 20000
    p = walk(T, 41, vol=0.003)[:, 0].copy()
    p[9000] = np.nan
    hs = chlib.hitfirst_labels(p, 100, 7200, mode=chlib.STRICT)
    clean = chlib.hitfirst_labels(walk(T, 41, vol=0.003)[:, 0], 100, 7200, mode=chlib.STRICT)
    bad = np.where(hs != clean)[0]
    # r_h[k] is NaN for k in [8900, 9000]; sigma windows [t-7199, t] holding one
    assert (hs[8900:9000 + 7200] == -1).all() and bad.min() >= 8900 - 100
    assert (hs[9000 + 7200:] == clean[9000 + 7200:]).all() and (hs[16200:] >= 0).all()
    mh = chlib.hitfirst_labels(p, 100, 7200, mode=chlib.MANTIS)
    assert (mh[9000:] == -1).all()
    b, t = chlib.lbfgs_labels(p, 60, 3600, mode=chlib.STRICT)
    # r[k] is NaN for k in {8940, 9000}; sigma_t uses r[t-3659 .. t-60]
    want = [k for k in range(60 + 3599, T - 60)
            if k != 8940 and not (9000 <= k <= 9000 + 60 + 3599)]
    assert t.tolist() == want


def test_strict_no_windows_says_why():
    """Strict mode names the window that could not be scored and why (issue
    17 item 11); mantis mode keeps the original's words."""
    m = walk(6000, 26, A=29)
    closes = {a: m[:, i] for i, a in enumerate(ref.BREAKOUT_ASSETS)}
    same = np.ones((6000, 29), dtype=np.float32)
    assert chlib.score("XSEC-RANK", closes, same, 0, mode="mantis")[1] == {"error": "no valid walk-forward windows"}
    rc, r = chlib.score("XSEC-RANK", closes, same, 0, mode="strict")
    assert rc != 0
    assert r["error"] == ("no valid walk-forward windows: none of the 2 windows could be scored; the first, "
                          "window 1 [260, 4260): every row's predictions were identical across the 29 assets: "
                          "Spearman undefined (rank the assets: give them different scores)")
    # one asset with another score: the rows are ranked and the windows scored
    same[:, 1] = np.linspace(-1, 1, 6000, dtype=np.float32)
    assert chlib.score("XSEC-RANK", closes, same, 0, mode="strict")[0] == 0
    # too short a history: no window at all, and how long one has to be
    p = walk(300, 27)[:, 0]
    rc, r = chlib.score("ETH-1H-BINARY", {"ETH": p}, np.ones((300, 2), dtype=np.float32), 0, mode="strict")
    assert r["error"] == ("no valid walk-forward windows: 240 scored samples give no window of at least 200 "
                          "(windows start at sample 560, every 4000); evaluate more days of history")
    # one class only in every window of a binary challenge
    up = np.exp(np.linspace(0, 1, 6000)) * 100
    rc, r = chlib.score("ETH-1H-BINARY", {"ETH": up}, np.ones((6000, 2), dtype=np.float32) * 0.5, 0, mode="strict")
    assert r["error"] == ("no valid walk-forward windows: none of the 2 windows could be scored; the first, "
                          "window 1 [560, 4560): has 4000 labelled rows, all up: AUC undefined")

"""Independent numpy / scikit-learn / scipy reference of the MANTIS challenge
labels, metrics and walk-forward evaluation (mantis mode), written from
shared/spec/mantis.md §1-§2. It deliberately uses the vectorised numpy and
library calls the original uses (sliding windows, sklearn roc_auc_score and
LogisticRegression, scipy spearmanr), not the C algorithms, so that
agreement means something.
"""
import math
import warnings

import numpy as np
import pandas as pd
from numpy.lib.stride_tricks import sliding_window_view
from scipy.stats import rankdata, spearmanr
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score

EPS = 1e-12


def glibc_log(x):
    """ln(x) elementwise through Python's scalar math.log, i.e. the C
    library's log(), which is what the C evaluator calls. numpy's np.log
    takes its own AVX-512F code on CPUs that have it and differs from glibc
    by 1 ulp on about a fifth of log prices, so a reference built on np.log
    is only "the original on this CPU". The default reference is the
    original on a CPU where numpy's float64 log is glibc's (every x86-64
    CPU without AVX-512F, or NPY_DISABLE_CPU_FEATURES=AVX512F)."""
    x = np.asarray(x, dtype=np.float64)
    return np.array([math.log(v) if v > 0 else (-math.inf if v == 0 else math.nan)
                     for v in x.tolist()], dtype=np.float64).reshape(x.shape)


# The log-price function of the label reference (see glibc_log); tests that
# check the numpy-dispatched path pass log=np.log explicitly.
LOG = glibc_log

BREAKOUT_ASSETS = ["BTC", "ETH", "XRP", "SOL", "TRX", "DOGE", "ADA", "BCH", "XMR", "LINK",
                   "XLM", "ZEC", "SUI", "LTC", "AVAX", "HBAR", "SHIB", "TON", "CRO", "DOT",
                   "UNI", "MNT", "TAO", "AAVE", "PEPE", "NEAR", "ICP", "ETC", "ONDO"]
FUNDING_ASSETS = ["BTC", "ETH", "SOL", "XRP", "DOGE", "ADA", "AVAX", "LINK", "DOT", "SUI",
                  "NEAR", "AAVE", "UNI", "LTC", "HBAR", "PEPE", "TRX", "SHIB", "TAO", "ONDO"]

CHALLENGES = {
    "ETH-1H-BINARY": dict(type="binary", asset="ETH", assets=["ETH"], dim=2, horizon=60),
    "ETH-HITFIRST-100M": dict(type="hitfirst", asset="ETH", assets=["ETH"], dim=3, horizon=100),
    "ETH-LBFGS": dict(type="lbfgs", asset="ETH", assets=["ETH"], dim=17, horizon=60),
    "BTC-LBFGS-6H": dict(type="lbfgs", asset="BTC", assets=["BTC"], dim=17, horizon=360),
    "MULTI-BREAKOUT": dict(type="breakout", asset="BTC", assets=BREAKOUT_ASSETS, dim=58, horizon=0),
    "XSEC-RANK": dict(type="xsec_rank", asset="BTC", assets=BREAKOUT_ASSETS, dim=29, horizon=240),
    "FUNDING-XSEC": dict(type="funding_xsec", asset="BTC", assets=FUNDING_ASSETS, dim=20, horizon=480),
}


class EvalError(Exception):
    pass


# ---- primitives ----------------------------------------------------------

def rolling_std(x, w):
    x = np.asarray(x, dtype=np.float64)
    if len(x) < w:
        return np.empty(0)
    c1 = np.concatenate([[0.0], np.cumsum(x)])
    c2 = np.concatenate([[0.0], np.cumsum(x ** 2)])
    s1 = c1[w:] - c1[:-w]
    s2 = c2[w:] - c2[:-w]
    var = (s2 - s1 ** 2 / w) / max(w - 1, 1)
    return np.sqrt(np.maximum(var, 0.0))


def sigma_series(p, h, vw, log=None):
    T = len(p)
    out = np.full(T, np.nan)
    if T <= h:
        return out
    lp = (log or LOG)(p + EPS)
    r = lp[h:] - lp[:-h]
    sr = rolling_std(r, vw)
    sig = np.full(len(r), np.nan)
    if len(sr):
        sig[vw - 1:] = sr
    out[h:] = sig
    return out


def binary_labels(p, h):
    p = np.asarray(p, dtype=np.float64)
    if len(p) <= h:
        return np.empty(0, dtype=np.int32)
    return (p[h:] > p[:-h]).astype(np.int32)


def hitfirst_labels(p, h=100, vw=7200, log=None):
    p = np.asarray(p, dtype=np.float64)
    T = len(p)
    if T <= h:
        return np.empty(0, dtype=np.int32)
    n = T - h
    lab = np.full(n, -1, dtype=np.int32)
    lp = (log or LOG)(p + EPS)
    r = lp[h:] - lp[:-h]
    if n < vw:
        return lab
    sig = np.full(n, np.nan)
    sig[vw - 1:] = rolling_std(r, vw)
    valid = np.isfinite(sig) & (sig > 0)
    # All paths at once: path[t, k-1] = lp[t+k] - lp[t], k = 1..h.
    win = sliding_window_view(lp[1:], h)[:n]
    path = win - lp[:n, None]
    s = sig[:, None]
    up = path >= s
    dn = path <= -s
    up_any = up.any(axis=1)
    dn_any = dn.any(axis=1)
    up_k = np.where(up_any, up.argmax(axis=1), h + 1)
    dn_k = np.where(dn_any, dn.argmax(axis=1), h + 1)
    res = np.full(n, 2, dtype=np.int32)
    res[up_k < dn_k] = 0
    res[dn_k < up_k] = 1
    lab[valid] = res[valid]
    return lab


def lbfgs_labels(p, h, vw=3600, log=None):
    p = np.asarray(p, dtype=np.float64)
    T = len(p)
    if T <= h:
        return np.empty(0, dtype=np.int32), np.empty(0, dtype=np.int64)
    lp = (log or LOG)(p + EPS)
    r = lp[h:] - lp[:-h]
    sig = sigma_series(p, h, vw, log)[:T - h]
    valid = np.isfinite(sig) & (sig > 0)
    idx = np.where(valid)[0]
    z = r[idx] / (sig[idx] + EPS)
    b = np.zeros(len(z), dtype=np.int32)
    b[(z > -2) & (z < -1)] = 1
    b[(z >= -1) & (z <= 1)] = 2
    b[(z > 1) & (z < 2)] = 3
    b[z >= 2] = 4
    return b, idx.astype(np.int64)


def xsec_returns(mat, h):
    mat = np.asarray(mat, dtype=np.float64)
    T = mat.shape[0]
    if T <= h:
        return np.empty((0, mat.shape[1])), np.empty(0, dtype=bool)
    p0, p1 = mat[:-h], mat[h:]
    with np.errstate(invalid="ignore", divide="ignore"):
        ret = np.where((p0 > 0) & (p1 > 0), p1 / p0 - 1, np.nan)
    return ret, np.isfinite(ret).all(axis=1)


def diff_returns(mat, h):
    mat = np.asarray(mat, dtype=np.float64)
    T = mat.shape[0]
    if T <= h:
        return np.empty((0, mat.shape[1])), np.empty(0, dtype=bool)
    ret = mat[h:] - mat[:-h]
    return ret, np.isfinite(ret).all(axis=1)


def xsec_labels(mat, h):
    ret, _ = xsec_returns(mat, h)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        med = np.nanmedian(ret, axis=1, keepdims=True)
    lab = np.where(np.isnan(ret), -1, (ret > med).astype(np.int32)).astype(np.int32)
    return lab, (lab >= 0).all(axis=1)


def _ranges(x, L, method):
    """hi[i], lo[i] = max, min of x[i .. i+L-1] (the range of bar t = i + L)."""
    if method == "sliding":   # the original's materialised windows, O(T*L)
        win = sliding_window_view(x[:-1], L)
        return win.max(axis=1), win.min(axis=1)
    r = pd.Series(x[:-1]).rolling(L)  # NaN in the window -> NaN, as numpy's max
    return r.max().to_numpy()[L - 1:], r.min().to_numpy()[L - 1:]


def detect_breakouts(mat, L=5760, barrier_pct=25.0, min_range_pct=1.0, max_pending=43200,
                     method="rolling"):
    """Breakout events; method "sliding" (numpy windows, O(T*L), as the
    original) or "rolling" (pandas rolling max/min, for fast tests)."""
    mat = np.asarray(mat, dtype=np.float64)
    T, A = mat.shape
    events = []
    if T <= L:
        return events
    for a in range(A):
        x = mat[:, a]
        his, los = _ranges(x, L, method)
        ph = pl = None
        for t in range(L, T):
            p = x[t]
            hi, lo = his[t - L], los[t - L]
            width = hi - lo
            wide = width >= p * min_range_pct / 100
            hb = (p > hi) and wide
            lb = (p < lo) and wide
            if ph is not None:
                if t - ph[0] > max_pending:
                    ph = None
                elif p >= ph[1]:
                    events.append((ph[0], t, a, 1, 1)); ph = None
                elif p <= ph[2]:
                    events.append((ph[0], t, a, 1, 0)); ph = None
            if pl is not None:
                if t - pl[0] > max_pending:
                    pl = None
                elif p <= pl[1]:
                    events.append((pl[0], t, a, -1, 1)); pl = None
                elif p >= pl[2]:
                    events.append((pl[0], t, a, -1, 0)); pl = None
            if hb and ph is None:
                bd = width * barrier_pct / 100
                ph = (t, p + bd, p - bd)
            elif lb and pl is None:
                bd = width * barrier_pct / 100
                pl = (t, p - bd, p + bd)
    events.sort(key=lambda e: e[1])  # stable
    return events


def auc(y, s):
    return float(roc_auc_score(y, s))


def log_loss3(y, probs):
    """sklearn 1.7 semantics: clip to [eps, 1-eps] of the dtype, no renormalisation."""
    probs = np.asarray(probs)
    eps = np.finfo(probs.dtype).eps
    pc = np.clip(probs, eps, 1 - eps)
    T = np.zeros((len(y), 3), dtype=np.int64)
    T[np.arange(len(y)), y] = 1
    from scipy.special import xlogy
    loss = -xlogy(T, pc).sum(axis=1)
    return float(np.average(loss))


def balanced_accuracy(y, pred, k=5):
    rec = [np.mean(pred[y == c] == c) for c in range(k) if (y == c).any()]
    return float(np.mean(rec)) if rec else 0.0


def spearman(x, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(spearmanr(x, y)[0])


def _spearman_fast(x, y):
    """spearmanr's definition (average ranks, Pearson on ranks) without its
    per-call overhead; test_spearman checks it against scipy itself."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if (x == x[0]).all() or (y == y[0]).all():
        return float("nan")
    return float(np.corrcoef(rankdata(x), rankdata(y))[1, 0])


def slope_sign_sklearn(s, y):
    lr = LogisticRegression(C=1.0, solver="lbfgs", class_weight="balanced", max_iter=500,
                            tol=1e-4, random_state=42)
    lr.fit(np.asarray(s, dtype=np.float32).reshape(-1, 1), y)
    return float(np.sign(lr.coef_[0, 0]))


def logit32(p):
    p = np.asarray(p, dtype=np.float32)
    pc = np.clip(p, EPS, 1 - EPS)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.log(pc) - np.log(1 - pc)
    out[~np.isfinite(out)] = 0
    return out


def nanmean(v):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(np.nanmean(np.asarray(v, dtype=np.float64))) if len(v) else float("nan")


def windows(first, step, n):
    s = first
    while s < n:
        yield s, min(s + step, n)
        s += step


# ---- evaluation (mantis mode) ---------------------------------------------

def evaluate(name, closes, emb, warmup, holdout_start=0, fields=None, fit_lr=False):
    """closes: {asset: array}; emb: rows x dim float32 (row i <-> t = warmup + i)."""
    cfg = CHALLENGES[name]
    try:
        f = {"binary": _ev_binary, "hitfirst": _ev_hitfirst, "lbfgs": _ev_lbfgs,
             "breakout": _ev_breakout, "xsec_rank": _ev_xsec, "funding_xsec": _ev_xsec}
        if cfg["type"] == "hitfirst":
            return _ev_hitfirst(name, cfg, closes, emb, warmup, holdout_start, fit_lr)
        if cfg["type"] == "funding_xsec":
            return _ev_xsec(name, cfg, closes, emb, warmup, holdout_start, fields)
        return f[cfg["type"]](name, cfg, closes, emb, warmup, holdout_start)
    except EvalError as e:
        return {"error": str(e)}
    except ValueError as e:
        return {"error": str(e)}


def _head(name, cfg):
    return {"challenge": name, "type": cfg["type"]}


def _finish(res, wins, key_vals):
    if not wins:
        raise EvalError("no valid walk-forward windows")
    if not any(w["in_holdout"] for w in wins):
        raise EvalError("no walk-forward windows in holdout period")
    res["windows"] = wins
    for k, v in key_vals:
        res[k] = v
    return res


def _ev_binary(name, cfg, closes, emb, warmup, hs_abs):
    p = closes[cfg["asset"]]
    T, h = len(p), cfg["horizon"]
    lab = binary_labels(p, h)
    n_usable = (T - h) - warmup
    if n_usable <= 0:
        raise EvalError("not enough data after warmup")
    sc = emb[:n_usable, 0]
    y = lab[warmup:warmup + n_usable]
    hs = max(0, hs_abs - warmup)
    wins = []
    for s, e in windows(560, 4000, n_usable):
        yt = y[s:e]
        if len(np.unique(yt)) < 2:
            continue
        a = auc(yt, sc[s:e])
        wins.append({"start": s, "end": e, "auc": a, "in_holdout": s >= hs, "n_samples": e - s})
    res = _head(name, cfg)
    res.update({"n_timesteps": T, "n_evaluated": n_usable, "horizon": h})
    if not wins:
        raise EvalError("no valid walk-forward windows")
    hold = [w["auc"] for w in wins if w["in_holdout"]]
    if not hold:
        raise EvalError("no walk-forward windows in holdout period")
    return _finish(res, wins, [("mean_auc", nanmean(hold))])


def _ev_hitfirst(name, cfg, closes, emb, warmup, hs_abs, fit_lr):
    p = closes[cfg["asset"]]
    T, h = len(p), cfg["horizon"]
    lab = hitfirst_labels(p, h, 7200)
    n_usable = (T - h) - warmup
    if n_usable <= 0:
        raise EvalError("not enough data after warmup")
    E = emb[:n_usable]
    lr_ = lab[warmup:warmup + n_usable]
    vr = lr_ >= 0
    hs = int(np.searchsorted(np.where(vr)[0], max(0, hs_abs - warmup), side="left"))
    E = E[vr]
    y = lr_[vr]
    k = len(y)
    if k < 500:
        raise EvalError(f"only {k} valid samples, need >= 500")
    if E.shape[1] < 3:
        raise EvalError(f"hitfirst requires embedding dim >= 3, got shape {E.shape}")
    probs = np.clip(E[:, :3], EPS, 1 - EPS)
    ssum = probs.sum(axis=1, keepdims=True)
    probs = probs / np.where(ssum <= 0, 1, ssum)
    up = logit32(probs[:, 0])
    dn = logit32(probs[:, 1])
    yu = (y == 0).astype(int)
    yd = (y == 1).astype(int)

    def side(s, yy, st, en):
        tr_y, te_y = yy[:st], yy[st:en]
        if len(np.unique(tr_y)) < 2 or len(np.unique(te_y)) < 2:
            return float("nan")
        if fit_lr:
            sign = slope_sign_sklearn(s[:st], tr_y)
        else:
            mp, mn = s[:st][tr_y == 1].astype(np.float64).mean(), s[:st][tr_y == 0].astype(np.float64).mean()
            sign = np.sign(mp - mn)
        if sign == 0:
            return 0.5
        return auc(te_y, s[st:en] * np.float32(sign))

    wins = []
    for s, e in windows(2060, 4000, k):
        if e - s < 200:
            continue
        w = {"start": s, "end": e, "up_auc": side(up, yu, s, e), "dn_auc": side(dn, yd, s, e),
             "in_holdout": s >= hs}
        if len(np.unique(y[s:e])) >= 2:
            if np.isnan(probs[s:e]).any():
                raise ValueError("Input contains NaN.")
            w["direct_log_loss"] = log_loss3(y[s:e], probs[s:e])
        w["n_samples"] = e - s
        wins.append(w)
    res = _head(name, cfg)
    res.update({"n_timesteps": T, "n_valid": k, "horizon": h})
    if not wins:
        raise EvalError("no valid walk-forward windows")
    H = [w for w in wins if w["in_holdout"]]
    if not H:
        raise EvalError("no walk-forward windows in holdout period")

    def mf(key):
        v = [w[key] for w in H if key in w and np.isfinite(w[key])]
        return float(np.mean(v)) if v else float("nan")
    return _finish(res, wins, [("direct_log_loss", mf("direct_log_loss")), ("up_auc", mf("up_auc")),
                               ("dn_auc", mf("dn_auc"))])


def _ev_lbfgs(name, cfg, closes, emb, warmup, hs_abs):
    p = closes[cfg["asset"]]
    T, h = len(p), cfg["horizon"]
    b, t = lbfgs_labels(p, h, 3600)
    keep = (t >= warmup) & (t - warmup < len(emb))
    b, t = b[keep], t[keep]
    k = len(b)
    if k < 500:
        raise EvalError(f"only {k} valid samples")
    hs = int(np.searchsorted(t, hs_abs, side="left"))
    E = emb[t - warmup][:, :5]
    if E.shape[1] == 0:
        raise ValueError("attempt to get argmax of an empty sequence")
    E = np.clip(E, 1e-6, None)
    E = E / E.sum(axis=1, keepdims=True)
    pred = np.argmax(E, axis=1)
    wins = []
    for s, e in windows(560, 6000, k):
        if e - s < 200 or len(np.unique(b[s:e])) < 2:
            continue
        ba = balanced_accuracy(b[s:e], pred[s:e])
        wins.append({"start": s, "end": e, "balanced_accuracy": ba, "lift_over_random": ba - 0.2,
                     "in_holdout": s >= hs, "n_samples": e - s})
    res = _head(name, cfg)
    res.update({"n_timesteps": T, "n_valid": k, "horizon": h})
    if not wins:
        raise EvalError("no valid walk-forward windows")
    H = [w for w in wins if w["in_holdout"]]
    if not H:
        raise EvalError("no walk-forward windows in holdout period")
    return _finish(res, wins, [("mean_balanced_accuracy", nanmean([w["balanced_accuracy"] for w in H])),
                               ("mean_lift", nanmean([w["lift_over_random"] for w in H]))])


def _available(cfg, closes):
    return [a for a in cfg["assets"] if a in closes]


def _ev_breakout(name, cfg, closes, emb, warmup, hs_abs):
    av = _available(cfg, closes)
    if len(av) < 5:
        raise EvalError(f"only {len(av)} assets available, need >= 5")
    mat = np.column_stack([closes[a] for a in av])
    ev = detect_breakouts(mat)
    if len(ev) < 50:
        raise EvalError(f"only {len(ev)} breakout events detected, need >= 50")
    sc, ys, trig, nfb = [], [], [], 0
    for (tr, rs, a, d, l) in ev:
        r = tr - warmup
        if 0 <= r < len(emb):
            c = 2 * a
            if c < emb.shape[1]:
                sc.append(float(emb[r, c]))
            else:
                sc.append(0.5); nfb += 1
            ys.append(l); trig.append(tr)
    n = len(sc)
    if n < 30:
        raise EvalError(f"only {n} scored events, need >= 30")
    sc, ys, trig = np.array(sc), np.array(ys), np.array(trig)
    hs = int(np.searchsorted(trig, hs_abs, side="left"))
    chunk, min_train = max(30, n // 5), max(30, n // 4)
    wins = []
    for s, e in windows(min_train, chunk, n):
        if e - s < 20 or len(np.unique(ys[s:e])) < 2:
            continue
        wins.append({"start": s, "end": e, "auc": auc(ys[s:e], sc[s:e]), "in_holdout": s >= hs,
                     "n_samples": e - s})
    res = _head(name, cfg)
    res.update({"n_assets": len(av), "n_events": len(ev), "n_scored": n, "n_fallback": nfb})
    if not wins:
        raise EvalError("no valid walk-forward windows for breakout")
    H = [w["auc"] for w in wins if w["in_holdout"]]
    if not H:
        raise EvalError("no walk-forward windows in holdout period")
    return _finish(res, wins, [("mean_auc", nanmean(H))])


def _row_spearman(E, R, V):
    """Spearman rho per valid row over the assets with finite score and target
    (>= 5), NaN otherwise: whole rows at once where everything is finite."""
    E = np.asarray(E, dtype=np.float64)
    out = np.full(len(E), np.nan)
    fin = np.isfinite(E) & np.isfinite(R)
    full = V & fin.all(axis=1)
    if full.any():
        rx = rankdata(E[full], axis=1)
        ry = rankdata(R[full], axis=1)
        rx -= rx.mean(axis=1, keepdims=True)
        ry -= ry.mean(axis=1, keepdims=True)
        with np.errstate(invalid="ignore", divide="ignore"):
            out[full] = (rx * ry).sum(axis=1) / np.sqrt((rx * rx).sum(axis=1) * (ry * ry).sum(axis=1))
    for i in np.where(V & ~full)[0]:
        m = fin[i]
        if m.sum() >= 5:
            out[i] = _spearman_fast(E[i][m], R[i][m])
    return out


def _ev_xsec(name, cfg, closes, emb, warmup, hs_abs, fields=None):
    fund = cfg["type"] == "funding_xsec"
    av = _available(cfg, closes)
    if len(av) < 5:
        raise EvalError(f"only {len(av)} {'funding ' if fund else ''}assets available, need >= 5")
    h = cfg["horizon"]
    T = len(closes[av[0]])
    if T <= h:
        raise EvalError("not enough funding data for horizon" if fund else "not enough data for horizon")
    if fund:
        f = (fields or {}).get("funding_1h", {})
        mat = np.column_stack([f.get(a, np.full(T, np.nan)) for a in av])
        ret, valid = diff_returns(mat, h)
    else:
        ret, valid = xsec_returns(np.column_stack([closes[a] for a in av]), h)
    N = len(av)
    n = T - h
    n_usable = min(n - warmup, len(emb))
    if n_usable <= 0:
        raise EvalError("not enough data")
    E = emb[:n_usable, :N]
    if E.shape[1] < N:
        E = np.hstack([E, np.zeros((E.shape[0], N - E.shape[1]), dtype=E.dtype)])
    R = ret[warmup:warmup + n_usable]
    V = valid[warmup:warmup + n_usable]
    hs = max(0, hs_abs - warmup)
    rho = _row_spearman(E, R, V)
    wins = []
    for s, e in windows(260, 4000, n_usable):
        if e - s < 50 or V[s:e].sum() < 50:
            continue
        rhos = [r for r in rho[s:e] if np.isfinite(r)]
        if len(rhos) < 20:
            continue
        wins.append({"start": s, "end": e, "mean_spearman": float(np.mean(rhos)),
                     "n_timesteps": len(rhos), "in_holdout": s >= hs, "n_samples": int(V[s:e].sum())})
    res = _head(name, cfg)
    res.update({"n_assets": N, "n_timesteps": T, "n_usable": n_usable, "horizon": h})
    if not wins:
        raise EvalError("no valid walk-forward windows")
    H = [w["mean_spearman"] for w in wins if w["in_holdout"]]
    if not H:
        raise EvalError("no walk-forward windows in holdout period")
    return _finish(res, wins, [("mean_spearman", nanmean(H))])

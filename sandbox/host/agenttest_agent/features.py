"""Feature families of the built-in research agent.

Every feature is named "<family>_<window>" (cross-asset features carry the
asset's own column, see below) and exists twice:

  * vectorised (`compute_matrix`): the whole dev history at once through
    prefix sums, value at bar t from bars 0..t only; this is what the agent
    researches with;
  * per bar (`BAR_SOURCE`): plain numpy on the tail of the causal view's
    arrays, pasted verbatim into every iteration_N.py so that the file the
    trusted evaluator scores is self-contained. The same source is executed
    here (`bar_features`) so a unit test can hold the two to each other.

Families (the names operators use in messages): momentum (log return over
w bars), rsi (RSI over w bars, centred at 0), bollinger (z-score of the
close against its w-bar mean), volatility (log std of 1-bar log returns over
w, and its change against 4w), volume (volume-weighted mean 1-bar return
over w), cross (the equal-weight market's w-bar return, and the asset's
return relative to it; multi-asset challenges only).
"""
import numpy as np

FAMILIES = ("momentum", "rsi", "bollinger", "volatility", "volume", "cross")

# family -> (feature kinds, candidate windows)
KINDS = {
    "momentum": (("ret",), (15, 30, 60, 120, 240)),
    "rsi": (("rsi",), (14, 60)),
    "bollinger": (("bbz",), (20, 60, 240)),
    "volatility": (("vol", "volchg"), (30, 60, 240)),
    "volume": (("vwret",), (30, 60)),
    "cross": (("mkt", "rel"), (60, 240)),
}
KIND_FAMILY = {k: f for f, (ks, _w) in KINDS.items() for k in ks}
KIND_FAMILY["dir"] = "breakout-side"   # side of a break (not searched)
DIRECTIONAL = ("ret", "rsi", "bbz", "vwret", "mkt", "rel")
WARMUP = 1000        # > 4 * the largest window + 1 (volchg of 240)
MAX_WINDOW = 240

# Per-bar source shared with the generated strategies. c: closes (>= 4w+1
# of them), v: volumes; all_c: closes of every asset (cross family), a
# list of arrays; returns the value of feature `kind` with window `w`.
BAR_SOURCE = '''
def _bar_feature(kind, w, c, v, all_c):
    lc = np.log(c[-(4 * w + 1):] + 1e-12)
    lr = np.diff(lc)
    if kind == "ret":
        return float(lc[-1] - lc[-1 - w])
    if kind == "rsi":
        x = lr[-w:]
        g = float(np.sum(np.maximum(x, 0.0)))
        l = float(np.sum(np.maximum(-x, 0.0)))
        return g / (g + l) - 0.5 if g + l > 0 else 0.0
    if kind == "bbz":
        x = c[-w:]
        s = float(np.std(x))
        return float((x[-1] - np.mean(x)) / s) if s > 0 else 0.0
    if kind == "vol":
        return float(np.log(np.std(lr[-w:]) + 1e-12))
    if kind == "volchg":
        return float(np.log(np.std(lr[-w:]) + 1e-12) - np.log(np.std(lr[-4 * w:]) + 1e-12))
    if kind == "vwret":
        vv = v[-w:]
        s = float(np.sum(vv))
        return float(np.sum(vv * lr[-w:]) / s) if s > 0 else 0.0
    if kind == "dir":
        return 1.0 if c[-1] >= np.mean(c[-w:]) else -1.0
    if kind in ("mkt", "rel"):
        m = float(np.mean([np.log(x[-1] + 1e-12) - np.log(x[-1 - w] + 1e-12) for x in all_c]))
        return m if kind == "mkt" else float(lc[-1] - lc[-1 - w]) - m
    raise KeyError(kind)
'''

_ns = {"np": np}
exec(compile(BAR_SOURCE, "<agenttest_agent.features>", "exec"), _ns)  # noqa: S102 (our own constant)
bar_feature = _ns["_bar_feature"]


def parse(name):
    """'ret_60' -> ('ret', 60); raises ValueError on anything else."""
    kind, _, w = name.rpartition("_")
    if kind not in KIND_FAMILY or not w.isdigit() or not 1 <= int(w) <= MAX_WINDOW:
        raise ValueError("unknown feature %r" % (name,))
    return kind, int(w)


def family_of(name):
    """The family a feature name belongs to."""
    return KIND_FAMILY[parse(name)[0]]


def candidates(family, multi_asset):
    """Every feature name of a family (none of 'cross' for one asset)."""
    if family == "cross" and not multi_asset:
        return []
    kinds, windows = KINDS[family]
    return ["%s_%d" % (k, w) for k in kinds for w in windows]


def _roll_sum(x, w):
    """s[t] = x[t-w+1] + ... + x[t] (NaN for t < w-1), from a prefix sum."""
    s = np.full(len(x), np.nan)
    cs = np.concatenate(([0.0], np.cumsum(x)))
    s[w - 1:] = cs[w:] - cs[:-w]
    return s


def _roll_std(x, w):
    """Population std of x over the w values ending at t."""
    m = _roll_sum(x, w) / w
    m2 = _roll_sum(x * x, w) / w
    return np.sqrt(np.maximum(m2 - m * m, 0.0))


def _series(kind, w, c, v, lcs):
    """Vectorised feature: value at t from bars <= t (NaN before it exists)."""
    lc = np.log(c + 1e-12)
    lr = np.concatenate(([np.nan], np.diff(lc)))
    lr0 = np.nan_to_num(lr)
    T = len(c)
    out = np.full(T, np.nan)
    if kind == "ret":
        out[w:] = lc[w:] - lc[:-w]
    elif kind == "rsi":
        g = _roll_sum(np.maximum(lr0, 0.0), w)
        l = _roll_sum(np.maximum(-lr0, 0.0), w)
        with np.errstate(invalid="ignore", divide="ignore"):
            out = np.where(g + l > 0, g / (g + l) - 0.5, 0.0)
        out[:w] = np.nan
    elif kind == "bbz":
        s = _roll_std(c, w)
        m = _roll_sum(c, w) / w
        with np.errstate(invalid="ignore", divide="ignore"):
            out = np.where(s > 0, (c - m) / s, 0.0)
        out[:w - 1] = np.nan
    elif kind == "vol":
        out = np.log(_roll_std(lr0, w) + 1e-12)
        out[:w] = np.nan
    elif kind == "volchg":
        out = np.log(_roll_std(lr0, w) + 1e-12) - np.log(_roll_std(lr0, 4 * w) + 1e-12)
        out[:4 * w] = np.nan
    elif kind == "vwret":
        s = _roll_sum(v, w)
        num = _roll_sum(v * lr0, w)
        with np.errstate(invalid="ignore", divide="ignore"):
            out = np.where(s > 0, num / s, 0.0)
        out[:w] = np.nan
    elif kind == "dir":
        out = np.where(c >= _roll_sum(c, w) / w, 1.0, -1.0)
        out[:w - 1] = np.nan
    elif kind in ("mkt", "rel"):
        m = np.full(T, np.nan)
        m[w:] = np.mean([x[w:] - x[:-w] for x in lcs], axis=0)
        if kind == "mkt":
            out = m
        else:
            out[w:] = lc[w:] - lc[:-w] - m[w:]
    return out


def compute_matrix(names, closes, volumes, ci=1):
    """Features (T x len(names)) of one asset; closes/volumes: dicts asset ->
    array, with the asset under key None. With ci > 1 the value at t is the
    one computed at the last grid point warmup + k*ci <= t, as the
    evaluation loop recomputes features only there."""
    c, v = closes[None], volumes[None]
    lcs = [np.log(x + 1e-12) for k, x in closes.items() if k is not None]
    X = np.column_stack([_series(*parse(n), c, v, lcs) for n in names]) if names else \
        np.zeros((len(c), 0))
    if ci > 1:
        T = len(c)
        idx = np.arange(T)
        g = np.where(idx >= WARMUP, WARMUP + ((idx - WARMUP) // ci) * ci, idx)
        X = X[g]
    return X

"""The original's label and event functions (evaluator.make_*_labels,
detect_breakouts, _rolling_std, _sigma_series) over the C challenge core
(libagenttest_eval.so through ctypes): the same arrays, dtypes and shapes
as the original's numpy code, computed by the code the server scores with.

`mode` is "mantis" (the original's arithmetic, bit for bit; the default of
the original's import names) or "strict" (NaN-robust, see docs/challenges.md).
"""
import ctypes as C
from dataclasses import dataclass

import numpy as np

from .evaluator import _library

__all__ = ["EPS", "rolling_std", "sigma_series", "make_binary_labels", "make_hitfirst_labels",
           "make_lbfgs_labels", "make_xsec_labels", "detect_breakouts", "BreakoutEvent"]

EPS = 1e-12
_DP = C.POINTER(C.c_double)
_I32P = C.POINTER(C.c_int32)
_I64P = C.POINTER(C.c_int64)
_U8P = C.POINTER(C.c_uint8)


class _Event(C.Structure):
    _fields_ = [("trigger_t", C.c_int64), ("resolution_t", C.c_int64),
                ("asset", C.c_int32), ("direction", C.c_int32),
                ("label", C.c_int32), ("pad_", C.c_int32)]


@dataclass
class BreakoutEvent:
    """One resolved breakout (the original's record): direction 1 up, -1
    down; label 1 continuation, 0 reversal."""
    trigger_t: int
    resolution_t: int
    asset_idx: int
    asset: str
    direction: int
    label: int


_bound = False


def _lib():
    global _bound
    lib = _library()
    if not _bound:
        for name, res, args in (
                ("ch_rolling_std", C.c_size_t, [_DP, C.c_size_t, C.c_size_t, C.c_int, _DP]),
                ("ch_sigma_series", None, [_DP, C.c_size_t, C.c_size_t, C.c_size_t, C.c_int, _DP]),
                ("ch_binary_labels", C.c_size_t, [_DP, C.c_size_t, C.c_size_t, C.c_int, _I32P]),
                ("ch_hitfirst_labels", C.c_size_t,
                 [_DP, C.c_size_t, C.c_size_t, C.c_size_t, C.c_int, _I32P]),
                ("ch_lbfgs_labels", C.c_size_t,
                 [_DP, C.c_size_t, C.c_size_t, C.c_size_t, C.c_int, _I32P, _I64P]),
                ("ch_xsec_labels", C.c_size_t,
                 [C.POINTER(_DP), C.c_size_t, C.c_size_t, C.c_size_t, _I32P, _U8P]),
                ("ch_breakout_detect", C.c_size_t,
                 [C.POINTER(_DP), C.c_size_t, C.c_size_t, C.c_size_t, C.c_double, C.c_double,
                  C.c_size_t, C.c_int, C.POINTER(C.POINTER(_Event))])):
            f = getattr(lib, name)
            f.restype = res
            f.argtypes = args
        _bound = True
    return lib


def _mode(mode):
    m = _library().ch_mode_parse(str(mode).encode())
    if m < 0:
        raise ValueError("mode must be 'strict' or 'mantis', got %r" % (mode,))
    return m


def _vec(x):
    a = np.ascontiguousarray(np.asarray(x, dtype=np.float64).ravel())
    return a, a.ctypes.data_as(_DP)


def _cols(pm):
    pm = np.asarray(pm, dtype=np.float64)
    if pm.ndim != 2:
        raise ValueError("prices_matrix must be 2-D (T x assets), got shape %s" % (pm.shape,))
    cols = [np.ascontiguousarray(pm[:, j]) for j in range(pm.shape[1])]
    ptrs = (_DP * max(len(cols), 1))(*[c.ctypes.data_as(_DP) for c in cols])
    return pm.shape, cols, ptrs


def rolling_std(x, window, mode="mantis"):
    """Sample std (ddof 1) of every length-`window` window of x by prefix
    sums: len(x) - window + 1 values, empty when len(x) < window."""
    a, p = _vec(x)
    w = int(window)
    if w < 1 or len(a) < w:
        return np.array([], dtype=np.float64)
    out = np.empty(len(a) - w + 1)
    n = _lib().ch_rolling_std(p, len(a), w, _mode(mode), out.ctypes.data_as(_DP))
    return out[:n]


def sigma_series(prices, horizon, vol_window, mode="mantis"):
    """Causal sigma of horizon-bar log returns (T values, NaN where undefined)."""
    a, p = _vec(prices)
    out = np.empty(len(a))
    _lib().ch_sigma_series(p, len(a), int(horizon), int(vol_window), _mode(mode),
                           out.ctypes.data_as(_DP))
    return out


def make_binary_labels(prices, horizon, mode="mantis"):
    """(labels int32, valid bool) of length T - horizon: 1 when
    prices[t + horizon] > prices[t]; empty when T <= horizon."""
    a, p = _vec(prices)
    n = max(len(a) - int(horizon), 0)
    out = np.empty(max(n, 1), dtype=np.int32)
    n = _lib().ch_binary_labels(p, len(a), int(horizon), _mode(mode), out.ctypes.data_as(_I32P))
    lab = out[:n]
    return (lab, lab >= 0) if mode == "strict" else (lab, np.ones(n, dtype=bool))


def make_hitfirst_labels(prices, horizon, vol_window=7200, mode="mantis"):
    """(labels int32, valid bool) of length T - horizon: 0 up barrier first,
    1 down first, 2 neither, -1 where sigma is undefined."""
    a, p = _vec(prices)
    n = max(len(a) - int(horizon), 0)
    out = np.empty(max(n, 1), dtype=np.int32)
    n = _lib().ch_hitfirst_labels(p, len(a), int(horizon), int(vol_window), _mode(mode),
                                  out.ctypes.data_as(_I32P))
    lab = out[:n]
    return lab, lab >= 0


def make_lbfgs_labels(prices, horizon, vol_window=3600, mode="mantis"):
    """(buckets int32 in 0..4, valid_idx int64 ascending) of the times with
    a defined sigma: z = r / sigma bucketed at -2, -1, 1, 2."""
    a, p = _vec(prices)
    cap = max(len(a), 1)
    b = np.empty(cap, dtype=np.int32)
    ts = np.empty(cap, dtype=np.int64)
    n = _lib().ch_lbfgs_labels(p, len(a), int(horizon), int(vol_window), _mode(mode),
                               b.ctypes.data_as(_I32P), ts.ctypes.data_as(_I64P))
    return b[:n].copy(), ts[:n].copy()


def make_xsec_labels(prices_matrix, horizon):
    """(labels (T-h) x N int32, valid (T-h,) bool): 1 above the row's median
    simple h-bar return, 0 otherwise, -1 where the return is NaN."""
    (T, N), cols, ptrs = _cols(prices_matrix)
    n = max(T - int(horizon), 0)
    lab = np.empty((max(n, 1), N), dtype=np.int32)
    valid = np.empty(max(n, 1), dtype=np.uint8)
    n = _lib().ch_xsec_labels(ptrs, N, T, int(horizon), lab.ctypes.data_as(_I32P),
                              valid.ctypes.data_as(_U8P))
    return lab[:n], valid[:n].astype(bool)


def detect_breakouts(prices_matrix, assets, range_lookback, barrier_pct, min_range_pct,
                     max_pending=43200, mode="mantis"):
    """Resolved breakouts of every column of prices_matrix (T x A), sorted
    by resolution time: a list of BreakoutEvent; [] when T <= range_lookback.
    ValueError when the column count differs from len(assets)."""
    (T, A), cols, ptrs = _cols(prices_matrix)
    assets = list(assets)
    if A != len(assets):
        raise ValueError("prices_matrix has %d columns but %d assets given" % (A, len(assets)))
    if T <= int(range_lookback):
        return []
    lib = _lib()
    ev = C.POINTER(_Event)()
    n = lib.ch_breakout_detect(ptrs, A, T, int(range_lookback), float(barrier_pct),
                               float(min_range_pct), int(max_pending), _mode(mode), C.byref(ev))
    try:
        return [BreakoutEvent(int(ev[i].trigger_t), int(ev[i].resolution_t), int(ev[i].asset),
                              assets[ev[i].asset], int(ev[i].direction), int(ev[i].label))
                for i in range(n)]
    finally:
        if ev:
            lib.ch_free(ev)

"""ctypes binding of libagenttest_eval.so (the C challenge core) for the tests.

Only what the tests need: the array-level label/metric helpers and scoring
through ch_score_json. The library path comes from $AGENTTEST_EVAL_LIB or
build/release/libagenttest_eval.so under the repository root.
"""
import ctypes as C
import json
import os

import numpy as np

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
LIB_PATH = os.environ.get("AGENTTEST_EVAL_LIB",
                          os.path.join(ROOT, "build", "release", "libagenttest_eval.so"))
lib = C.CDLL(LIB_PATH)

STRICT, MANTIS = 0, 1
MODES = {"strict": STRICT, "mantis": MANTIS}

DP = C.POINTER(C.c_double)
FP = C.POINTER(C.c_float)
I32P = C.POINTER(C.c_int32)
I64P = C.POINTER(C.c_int64)
U8P = C.POINTER(C.c_uint8)


class Event(C.Structure):
    _fields_ = [("trigger_t", C.c_int64), ("resolution_t", C.c_int64),
                ("asset", C.c_int32), ("direction", C.c_int32),
                ("label", C.c_int32), ("pad_", C.c_int32)]


class Market(C.Structure):
    _fields_ = [("T", C.c_size_t), ("ts", I64P), ("n_assets", C.c_size_t),
                ("names", C.POINTER(C.c_char_p)),
                ("open", C.POINTER(DP)), ("high", C.POINTER(DP)), ("low", C.POINTER(DP)),
                ("close", C.POINTER(DP)), ("volume", C.POINTER(DP)),
                ("valid", C.POINTER(U8P)),
                ("n_fields", C.c_size_t), ("field_names", C.POINTER(C.c_char_p)),
                ("fields", C.POINTER(DP))]


def _sig(name, res, args):
    f = getattr(lib, name)
    f.restype = res
    f.argtypes = args
    return f


_sig("ch_rolling_std", C.c_size_t, [DP, C.c_size_t, C.c_size_t, C.c_int, DP])
_sig("ch_sigma_series", None, [DP, C.c_size_t, C.c_size_t, C.c_size_t, C.c_int, DP])
_sig("ch_binary_labels", C.c_size_t, [DP, C.c_size_t, C.c_size_t, C.c_int, I32P])
_sig("ch_hitfirst_labels", C.c_size_t, [DP, C.c_size_t, C.c_size_t, C.c_size_t, C.c_int, I32P])
_sig("ch_lbfgs_labels", C.c_size_t, [DP, C.c_size_t, C.c_size_t, C.c_size_t, C.c_int, I32P, I64P])
_sig("ch_xsec_returns", C.c_size_t, [C.POINTER(DP), C.c_size_t, C.c_size_t, C.c_size_t, DP, U8P])
_sig("ch_diff_returns", C.c_size_t, [C.POINTER(DP), C.c_size_t, C.c_size_t, C.c_size_t, DP, U8P])
_sig("ch_xsec_labels", C.c_size_t, [C.POINTER(DP), C.c_size_t, C.c_size_t, C.c_size_t, I32P, U8P])
_sig("ch_breakout_detect", C.c_size_t, [C.POINTER(DP), C.c_size_t, C.c_size_t, C.c_size_t,
                                        C.c_double, C.c_double, C.c_size_t, C.c_int,
                                        C.POINTER(C.POINTER(Event))])
_sig("ch_np_sum", C.c_double, [DP, C.c_size_t])
_sig("ch_nanmean", C.c_double, [DP, C.c_size_t])
_sig("ch_roc_auc", C.c_double, [DP, U8P, C.c_size_t])
_sig("ch_log_loss3", C.c_double, [FP, I32P, C.c_size_t])
_sig("ch_balanced_accuracy", C.c_double, [I32P, I32P, C.c_size_t, C.c_int])
_sig("ch_spearman", C.c_double, [DP, DP, C.c_size_t])
_sig("ch_logit_slope_sign", C.c_int, [DP, U8P, C.c_size_t])
_sig("ch_npy_logf", C.c_float, [C.c_float])
_sig("ch_score_json", C.c_void_p, [C.c_char_p, C.c_int, C.POINTER(Market), FP, C.c_size_t,
                                   C.c_size_t, C.c_size_t, C.c_long, C.POINTER(C.c_int)])
_sig("ch_free", None, [C.c_void_p])
_sig("ch_count", C.c_size_t, [])
_sig("ch_catalog_json", C.c_void_p, [C.POINTER(C.c_char_p), C.c_size_t])


def catalog(fields=()):
    arr = (C.c_char_p * max(len(fields), 1))(*[f.encode() for f in fields])
    p = lib.ch_catalog_json(arr, len(fields))
    text = C.string_at(p).decode()
    lib.ch_free(p)
    return json.loads(text)


def _d(a):
    a = np.ascontiguousarray(a, dtype=np.float64)
    return a, a.ctypes.data_as(DP)


def _cols(cols):
    arrs = [np.ascontiguousarray(c, dtype=np.float64) for c in cols]
    ptrs = (DP * len(arrs))(*[a.ctypes.data_as(DP) for a in arrs])
    return arrs, ptrs


def rolling_std(x, w, mode=MANTIS):
    x, px = _d(x)
    out = np.empty(max(len(x) - w + 1, 1))
    n = lib.ch_rolling_std(px, len(x), w, mode, out.ctypes.data_as(DP))
    return out[:n]


def sigma_series(p, h, vw, mode=MANTIS):
    p, pp = _d(p)
    out = np.empty(len(p))
    lib.ch_sigma_series(pp, len(p), h, vw, mode, out.ctypes.data_as(DP))
    return out


def binary_labels(p, h, mode=MANTIS):
    p, pp = _d(p)
    out = np.empty(max(len(p), 1), dtype=np.int32)
    n = lib.ch_binary_labels(pp, len(p), h, mode, out.ctypes.data_as(I32P))
    return out[:n]


def hitfirst_labels(p, h=100, vw=7200, mode=MANTIS):
    p, pp = _d(p)
    out = np.empty(max(len(p), 1), dtype=np.int32)
    n = lib.ch_hitfirst_labels(pp, len(p), h, vw, mode, out.ctypes.data_as(I32P))
    return out[:n]


def lbfgs_labels(p, h, vw=3600, mode=MANTIS):
    p, pp = _d(p)
    b = np.empty(max(len(p), 1), dtype=np.int32)
    t = np.empty(max(len(p), 1), dtype=np.int64)
    n = lib.ch_lbfgs_labels(pp, len(p), h, vw, mode, b.ctypes.data_as(I32P), t.ctypes.data_as(I64P))
    return b[:n], t[:n]


def _columns(mat):
    """A T x A matrix or a list of A columns -> list of columns."""
    if isinstance(mat, (list, tuple)):
        return list(mat)
    return [mat[:, a] for a in range(mat.shape[1])]


def xsec_returns(mat, h, diff=False):
    """mat: T x A (or a list of columns). Returns (ret (T-h) x A, valid bool)."""
    cols = _columns(mat)
    T, A = len(cols[0]), len(cols)
    arrs, ptrs = _cols(cols)
    ret = np.empty((max(T - h, 1), A))
    valid = np.empty(max(T - h, 1), dtype=np.uint8)
    f = lib.ch_diff_returns if diff else lib.ch_xsec_returns
    n = f(ptrs, A, T, h, ret.ctypes.data_as(DP), valid.ctypes.data_as(U8P))
    return ret[:n], valid[:n].astype(bool)


def xsec_labels(mat, h):
    T, A = mat.shape
    arrs, ptrs = _cols([mat[:, a] for a in range(A)])
    lab = np.empty((max(T - h, 1), A), dtype=np.int32)
    valid = np.empty(max(T - h, 1), dtype=np.uint8)
    n = lib.ch_xsec_labels(ptrs, A, T, h, lab.ctypes.data_as(I32P), valid.ctypes.data_as(U8P))
    return lab[:n], valid[:n].astype(bool)


def breakout_detect(mat, L=5760, barrier_pct=25.0, min_range_pct=1.0, max_pending=43200,
                    mode=MANTIS):
    """mat: T x A (or a list of columns). Returns a list of (trigger_t,
    resolution_t, asset, direction, label)."""
    cols = _columns(mat)
    T, A = len(cols[0]), len(cols)
    arrs, ptrs = _cols(cols)
    ev = C.POINTER(Event)()
    n = lib.ch_breakout_detect(ptrs, A, T, L, barrier_pct, min_range_pct, max_pending, mode,
                               C.byref(ev))
    out = [(ev[i].trigger_t, ev[i].resolution_t, ev[i].asset, ev[i].direction, ev[i].label)
           for i in range(n)]
    lib.ch_free(ev)
    return out


def np_sum(x):
    x, px = _d(x)
    return lib.ch_np_sum(px, len(x))


def nanmean(x):
    x, px = _d(x)
    return lib.ch_nanmean(px, len(x))


def roc_auc(y, s):
    s, ps = _d(s)
    y = np.ascontiguousarray(y, dtype=np.uint8)
    return lib.ch_roc_auc(ps, y.ctypes.data_as(U8P), len(y))


def log_loss3(y, probs):
    probs = np.ascontiguousarray(probs, dtype=np.float32)
    y = np.ascontiguousarray(y, dtype=np.int32)
    return lib.ch_log_loss3(probs.ctypes.data_as(FP), y.ctypes.data_as(I32P), len(y))


def balanced_accuracy(y, pred, k=5):
    y = np.ascontiguousarray(y, dtype=np.int32)
    pred = np.ascontiguousarray(pred, dtype=np.int32)
    return lib.ch_balanced_accuracy(y.ctypes.data_as(I32P), pred.ctypes.data_as(I32P), len(y), k)


def spearman(x, y):
    x, px = _d(x)
    y, py = _d(y)
    return lib.ch_spearman(px, py, len(x))


def npy_logf(x):
    """ch_npy_logf elementwise over a float32 array."""
    f = lib.ch_npy_logf
    return np.array([f(v) for v in np.asarray(x, dtype=np.float32).tolist()], dtype=np.float32)


def slope_sign(s, y):
    s, ps = _d(s)
    y = np.ascontiguousarray(y, dtype=np.uint8)
    return lib.ch_logit_slope_sign(ps, y.ctypes.data_as(U8P), len(y))


def score(challenge, closes, emb, warmup, holdout_start=0, mode="mantis", valid=None,
          ts=None, fields=None, ohlcv=None):
    """Score `emb` (rows x dim float32) for challenge on closes {asset: array}.

    valid: {asset: bool array}; fields: {field_name: {asset: array}}.
    Returns (rc, result dict)."""
    names = list(closes)
    keep = []
    T = len(next(iter(closes.values()))) if closes else 0
    m = Market()
    m.T = T
    m.n_assets = len(names)
    bnames = (C.c_char_p * len(names))(*[n.encode() for n in names])
    m.names = bnames
    carrs, cptrs = _cols([closes[n] for n in names])
    m.close = cptrs
    keep += [bnames, carrs, cptrs]
    if ts is not None:
        tsa = np.ascontiguousarray(ts, dtype=np.int64)
        m.ts = tsa.ctypes.data_as(I64P)
        keep.append(tsa)
    if valid is not None:
        varrs = [np.ascontiguousarray(valid.get(n, np.ones(T, bool)), dtype=np.uint8) for n in names]
        vptrs = (U8P * len(names))(*[v.ctypes.data_as(U8P) for v in varrs])
        m.valid = vptrs
        keep += [varrs, vptrs]
    if fields:
        fnames = list(fields)
        fn = (C.c_char_p * len(fnames))(*[f.encode() for f in fnames])
        cols, ptrs = [], []
        for f in fnames:
            for n in names:
                if n in fields[f]:
                    a = np.ascontiguousarray(fields[f][n], dtype=np.float64)
                    cols.append(a)
                    ptrs.append(a.ctypes.data_as(DP))
                else:
                    ptrs.append(DP())
        fp = (DP * len(ptrs))(*ptrs)
        m.n_fields = len(fnames)
        m.field_names = fn
        m.fields = fp
        keep += [fn, cols, fp]
    emb = np.ascontiguousarray(emb, dtype=np.float32)
    if emb.ndim == 1:
        emb = emb.reshape(-1, 1)
    rows, dim = emb.shape
    rc = C.c_int(0)
    p = lib.ch_score_json(challenge.encode(), MODES.get(mode, mode), C.byref(m),
                          emb.ctypes.data_as(FP), rows, dim, warmup, holdout_start, C.byref(rc))
    text = C.string_at(p).decode()
    lib.ch_free(p)
    return rc.value, json.loads(text)

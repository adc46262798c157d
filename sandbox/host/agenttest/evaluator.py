"""In-process evaluation: the embedding loop here, labels, windows and
metrics in C (libagenttest_eval.so through ctypes), so a local result is the
number the server computes for the same data, code and mode.

Library lookup: $AGENTTEST_EVAL_LIB, the development tree's
build/release/libagenttest_eval.so, PREFIX/lib/agenttest of an installed SDK
(`make install`), /usr/lib/agenttest, /usr/local/lib/agenttest.
"""
import ctypes as C
import json
import math
import os
import sys

import numpy as np

from .data import DataProvider
from .loop import generate_embeddings

__all__ = ["evaluate", "challenges", "score_embeddings", "EvaluationError"]

_DP = C.POINTER(C.c_double)
_U8P = C.POINTER(C.c_uint8)
_lib = None


class EvaluationError(ValueError):
    """The predictions are unusable (mantis mode raises this where the original raised)."""


class _Market(C.Structure):
    _fields_ = [("T", C.c_size_t), ("ts", C.POINTER(C.c_int64)), ("n_assets", C.c_size_t),
                ("names", C.POINTER(C.c_char_p)),
                ("open", C.POINTER(_DP)), ("high", C.POINTER(_DP)), ("low", C.POINTER(_DP)),
                ("close", C.POINTER(_DP)), ("volume", C.POINTER(_DP)),
                ("valid", C.POINTER(_U8P)),
                ("n_fields", C.c_size_t), ("field_names", C.POINTER(C.c_char_p)),
                ("fields", C.POINTER(_DP))]


def _library():
    global _lib
    if _lib is not None:
        return _lib
    here = os.path.dirname(os.path.abspath(__file__))
    cands = [os.environ.get("AGENTTEST_EVAL_LIB"),
             os.path.join(here, "..", "..", "..", "build", "release", "libagenttest_eval.so"),
             # installed: PREFIX/lib/python3*/dist-packages/agenttest -> PREFIX/lib/agenttest
             os.path.join(here, "..", "..", "..", "agenttest", "libagenttest_eval.so"),
             os.path.join(here, "..", "..", "..", "..", "agenttest", "libagenttest_eval.so"),
             "/usr/lib/agenttest/libagenttest_eval.so", "/usr/local/lib/agenttest/libagenttest_eval.so"]
    path = next((c for c in cands if c and os.path.exists(c)), None)
    if path is None:
        raise RuntimeError("libagenttest_eval.so not found (run `make build`, or `make install`, "
                           "or set AGENTTEST_EVAL_LIB; docs/sdk.md)")
    lib = C.CDLL(os.path.abspath(path))
    lib.ch_score_json.restype = C.c_void_p
    lib.ch_score_json.argtypes = [C.c_char_p, C.c_int, C.POINTER(_Market), C.POINTER(C.c_float),
                                  C.c_size_t, C.c_size_t, C.c_size_t, C.c_long, C.POINTER(C.c_int)]
    lib.ch_catalog_json.restype = C.c_void_p
    lib.ch_catalog_json.argtypes = [C.POINTER(C.c_char_p), C.c_size_t]
    lib.ch_free.argtypes = [C.c_void_p]
    lib.ch_free.restype = None
    lib.ch_mode_parse.argtypes = [C.c_char_p]
    lib.ch_mode_parse.restype = C.c_int
    _lib = lib
    return lib


def _take_string(lib, ptr):
    try:
        return C.string_at(ptr).decode("utf-8")
    finally:
        lib.ch_free(ptr)


def challenges(fields=()):
    """The challenge catalogue (GET /api/challenges shape), listing the
    challenges that need an extra field only when `fields` holds it."""
    lib = _library()
    arr = (C.c_char_p * max(len(fields), 1))(*[f.encode() for f in fields])
    return json.loads(_take_string(lib, lib.ch_catalog_json(arr, len(fields))))


def _market(provider, keep):
    """A ch_market over the provider's arrays; `keep` collects the buffers."""
    b = provider.buffers
    A = len(b.assets)
    cols = {k: (_DP * max(A, 1))() for k in ("open", "high", "low", "close", "volume")}
    for j, a in enumerate(b.assets):
        blk = b.ohlcv[a]
        for k, name in enumerate(("open", "high", "low", "close", "volume")):
            c = np.ascontiguousarray(blk[:, k], dtype=np.float64)
            keep.append(c)
            cols[name][j] = c.ctypes.data_as(_DP)
    names = (C.c_char_p * max(A, 1))(*[a.encode() for a in b.assets])
    fnames = sorted({f for fl in b.cg.values() for f in fl})
    fptr = (_DP * max(len(fnames) * A, 1))()
    for fi, f in enumerate(fnames):
        for j, a in enumerate(b.assets):
            col = b.cg.get(a, {}).get(f)
            if col is not None:
                full = np.full(b.length, np.nan)
                full[:len(col)] = col[:b.length]
                keep.append(full)
                fptr[fi * A + j] = full.ctypes.data_as(_DP)
    fn = (C.c_char_p * max(len(fnames), 1))(*[f.encode() for f in fnames])
    m = _Market()
    m.T = b.length
    if b.ts is not None and len(b.ts) == b.length:
        ts = np.ascontiguousarray(b.ts, dtype=np.int64)
        keep.append(ts)
        m.ts = ts.ctypes.data_as(C.POINTER(C.c_int64))
    m.n_assets = A
    m.names = names
    for k, arr in cols.items():
        setattr(m, k, arr)
    m.n_fields = len(fnames)
    m.field_names = fn
    m.fields = fptr
    keep.extend([names, fn, fptr, cols])
    return m


def _nan_for_null(x):
    if x is None:
        return math.nan
    if isinstance(x, dict):
        return {k: _nan_for_null(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_nan_for_null(v) for v in x]
    return x


def score_embeddings(challenge, provider, emb, warmup, holdout_start=0, mode="strict"):
    """Score an embedding matrix (rows for t = warmup ..) with the C core.
    Returns (rc, result dict); rc is 0 (ok), 2 (evaluation refused) or 3
    (unusable predictions), as enum ch_err."""
    lib = _library()
    m = lib.ch_mode_parse(str(mode).encode())
    if m < 0:
        raise ValueError("mode must be 'strict' or 'mantis', got %r" % (mode,))
    emb = np.ascontiguousarray(emb, dtype=np.float32)
    if emb.ndim != 2:
        emb = emb.reshape(len(emb), -1) if emb.size else np.zeros((0, 0), np.float32)
    keep = []
    market = _market(provider, keep)
    rc = C.c_int(0)
    ptr = lib.ch_score_json(challenge.encode(), m, C.byref(market),
                            emb.ctypes.data_as(C.POINTER(C.c_float)), emb.shape[0], emb.shape[1],
                            int(warmup), int(holdout_start), C.byref(rc))
    if not ptr:
        raise RuntimeError("scoring failed")
    return rc.value, _nan_for_null(json.loads(_take_string(lib, ptr)))


def evaluate(challenge, featurizer, predictor, provider=None, days_back=90, interval="1m",
             holdout_start=0, mode="strict", warmup=None):
    """Walk-forward evaluation of featurizer/predictor on `challenge`.

    provider None loads the challenge's assets for the last days_back days
    of the dataset agenttest.datasource.select_dataset picks ($DATASET_DIR,
    the pinned or the newest fetched version of a window covering days_back
    under $MANTIS_DATA_DIR, the newest fetched version, else the synthetic
    market; a notice on stderr names the version and hash). holdout_start is a
    bar index (0: every window is holdout, as in the original). Returns the
    result dictionary, or {"error": msg} when the evaluation is refused; in
    mode "mantis" unusable predictions raise EvaluationError as the
    original's evaluate() raised."""
    if "agenttest_host" in sys.modules:
        raise RuntimeError(
            "evaluate() was called while the server was loading this strategy file: the server "
            "runs the file's classes itself and has no local evaluator. Put the call under\n"
            "    if __name__ == \"__main__\":\n        evaluate(...)\n"
            "so it runs only when you run the file yourself (docs/sdk.md).")
    cat = challenges(fields=("funding_1h",))
    if challenge not in cat:
        raise ValueError("Unknown challenge %r. Valid: %s" % (challenge, sorted(cat)))
    if interval != "1m":
        raise ValueError("only 1-minute bars are supported")
    if provider is None:
        from .datasource import announce, select_dataset
        path, notice = select_dataset(cat[challenge]["assets"], days_back)
        announce(notice)
        provider = DataProvider.from_dataset(path, cat[challenge]["assets"], days_back)
    emb, w = generate_embeddings(featurizer, predictor, provider, warmup)
    rc, res = score_embeddings(challenge, provider, emb, w, holdout_start, mode)
    if rc == 3 and mode == "mantis":
        raise EvaluationError(res.get("error", "invalid predictions"))
    return res

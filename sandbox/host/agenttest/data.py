"""Market data for the SDK: DataProvider (the original's constructor from a
mapping asset -> DataFrame) and loading an agenttest dataset directory.

DataProvider keeps the original's semantics: assets sorted alphabetically,
every asset cut to the shortest (rows, not timestamps, as the original),
views through `view(t)`; `prices(asset)` and `prices_matrix()` return full
copies (for labels). A provider built from a dataset directory
(`DataProvider.from_dataset`) is aligned by timestamp (gaps are NaN).
"""
import json
import os
import shutil
import subprocess

import numpy as np

from .view import CausalView, MarketBuffers

__all__ = ["DataProvider", "CausalView", "load_dataset", "default_dataset_dir"]

FIELDS = ("open", "high", "low", "close", "volume")


def _col(df, name, n):
    if name in getattr(df, "columns", ()):
        return np.asarray(df[name], dtype=np.float64)[:n]
    if name == "volume":
        return np.zeros(n)
    raise KeyError("column %r missing" % name)


def _timestamps(df, n):
    try:
        if "timestamp" in df.columns:
            s = df["timestamp"]
            if np.issubdtype(np.asarray(s).dtype, np.datetime64):
                return np.asarray(s, dtype="datetime64[ms]").astype(np.int64)[:n]
            return np.asarray(s, dtype=np.int64)[:n]
        idx = getattr(df, "index", None)
        if idx is not None and np.issubdtype(np.asarray(idx).dtype, np.datetime64):
            return np.asarray(idx, dtype="datetime64[ms]").astype(np.int64)[:n]
    except (TypeError, ValueError):
        return None
    return None


class DataProvider:
    """Aligned market data (see the module comment)."""

    def __init__(self, data=None, coinglass=None, _arrays=None):
        if _arrays is not None:
            assets, closes, ohlcv, ts, cg = _arrays
        else:
            data = dict(data or {})
            assets = sorted(data)
            n = min((len(data[a]) for a in assets), default=0)
            closes = np.empty((n, len(assets)), dtype=np.float64)
            ohlcv = {}
            ts = None
            for j, a in enumerate(assets):
                df = data[a]
                block = np.empty((n, 5), dtype=np.float64)
                for k, f in enumerate(FIELDS):
                    block[:, k] = _col(df, f, n)
                ohlcv[a] = block
                closes[:, j] = block[:, 3]
                if ts is None:
                    ts = _timestamps(df, n)
            cg = {}
            for a, fields in (coinglass or {}).items():
                cg[a] = {f: np.asarray(v, dtype=np.float64)[:n] for f, v in dict(fields).items()}
        self._buffers = MarketBuffers(assets, closes, ohlcv, ts, cg)

    @classmethod
    def from_dataset(cls, path, assets=None, days_back=None):
        """Provider over an agenttest dataset directory (the last days_back days)."""
        return cls(_arrays=load_dataset(path, assets, days_back))

    @property
    def buffers(self):
        return self._buffers

    @property
    def assets(self):
        return list(self._buffers.assets)

    @property
    def length(self):
        return self._buffers.length

    @property
    def timestamps(self):
        return self._buffers.ts

    def view(self, t):
        """The causal view at bar t (IndexError outside [0, length))."""
        return CausalView(self._buffers, t)

    def prices(self, asset):
        """Full close series of `asset` (a copy; for labels only)."""
        return np.array(self._buffers.closes[:, self._buffers.index[asset]])

    def ohlcv(self, asset):
        return np.array(self._buffers.ohlcv[asset])

    def prices_matrix(self):
        if not self._buffers.assets:
            raise ValueError("no assets")
        return np.array(self._buffers.closes)

    def cg(self, asset, field):
        return np.array(self._buffers.cg[asset][field])

    def cg_fields(self, asset):
        return sorted(self._buffers.cg.get(asset, {}))


def load_dataset(path, assets=None, days_back=None):
    """Read a dataset directory (docs/datasets.md) into the provider's arrays:
    (assets sorted, closes T x A, {asset: T x 5}, ts, {asset: {field: col}}),
    keeping the last days_back days when given."""
    with open(os.path.join(path, "manifest.json"), "rb") as f:
        man = json.loads(f.read(4 << 20))
    T = int(man["bars"])
    fields = list(man["fields"])
    names = sorted(man["assets"] if assets is None else [a for a in assets if a in man["assets"]])
    start = 0
    if days_back is not None:
        keep = int(days_back * 86400000 // int(man["interval_ms"]))
        start = max(0, T - keep)
    ts = np.fromfile(os.path.join(path, "ts.i64"), dtype="<i8")[start:]
    n = T - start

    def col(a, f):
        p = os.path.join(path, "%s.%s.f64" % (a, f))
        if f not in fields:
            return np.zeros(n) if f == "volume" else np.full(n, np.nan)
        return np.fromfile(p, dtype="<f8")[start:]

    closes = np.empty((n, len(names)), dtype=np.float64)
    ohlcv, cg = {}, {}
    for j, a in enumerate(names):
        block = np.empty((n, 5), dtype=np.float64)
        c = col(a, "close")
        for k, f in enumerate(FIELDS):
            block[:, k] = c if k == 3 or (f not in fields and f != "volume") else col(a, f)
        ohlcv[a] = block
        closes[:, j] = block[:, 3]
        extra = [f for f in fields if f not in FIELDS]
        if extra:
            cg[a] = {f: col(a, f) for f in extra}
    return names, closes, ohlcv, ts, cg


def _agenttest_bin():
    for c in (os.environ.get("AGENTTEST_BIN"),
              os.path.join(os.path.dirname(__file__), "..", "..", "..", "bin", "agenttest"),
              shutil.which("agenttest")):
        if c and os.access(c, os.X_OK):
            return os.path.abspath(c)
    return None


def default_dataset_dir():
    """$DATASET_DIR, else a cached copy of the embedded synthetic market
    (60 days, seed 1) generated with `agenttest data synth` on first use."""
    d = os.environ.get("DATASET_DIR")
    if d:
        return d
    cache = os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"),
                         "agenttest", "synth-60d-seed1")
    if os.path.exists(os.path.join(cache, "manifest.json")):
        return cache
    exe = _agenttest_bin()
    if exe is None:
        raise RuntimeError("no market data: set DATASET_DIR to an agenttest dataset "
                           "or put the agenttest CLI on PATH")
    os.makedirs(os.path.dirname(cache), exist_ok=True)
    tmp = cache + ".tmp%d" % os.getpid()
    subprocess.run([exe, "data", "synth", "--out", tmp, "--version", "sdk-synth-60d-seed1",
                    "--days", "60", "--seed", "1"], check=True, stdout=subprocess.DEVNULL)
    try:
        os.rename(tmp, cache)
    except OSError:
        # another process (a second test worker) made the cache first: keep its copy
        shutil.rmtree(tmp, ignore_errors=True)
        if not os.path.exists(os.path.join(cache, "manifest.json")):
            raise
    return cache

"""Causal views over append-only market buffers (shared by the SDK and the
strategy host's streaming mode).

A `MarketBuffers` holds, for T bars and the assets in alphabetical order:
a T x A close matrix (row-major, so `prices_matrix()` is one slice), one
T x 5 OHLCV block per asset, the int64 timestamps and optional derivative
(CoinGlass-style) columns. Inside the sandbox these arrays live in the
runner's shared memory and only the bars streamed so far exist; in the SDK
they are the provider's arrays.

`CausalView(buffers, t)` hands out read-only numpy views of rows 0..t: every
call is O(1) (a slice, never a copy of the history). The arrays it returns
cannot be written (numpy raises ValueError), and the view itself is
immutable.
"""
import numpy as np

__all__ = ["MarketBuffers", "CausalView"]


def _readonly(a):
    a = a.view()
    a.flags.writeable = False
    return a


class MarketBuffers:
    """The arrays behind the views (see the module comment)."""

    __slots__ = ("assets", "index", "closes", "ohlcv", "ts", "cg", "length")

    def __init__(self, assets, closes, ohlcv, ts=None, cg=None, length=None):
        self.assets = tuple(assets)
        self.index = {a: i for i, a in enumerate(self.assets)}
        self.closes = _readonly(closes)
        self.ohlcv = {a: _readonly(ohlcv[a]) for a in self.assets}
        self.ts = _readonly(ts) if ts is not None else None
        self.cg = {a: {f: _readonly(c) for f, c in fields.items()} for a, fields in (cg or {}).items()}
        self.length = closes.shape[0] if length is None else length


class CausalView:
    """What a featurizer's compute() sees at bar t (bars 0..t, nothing later)."""

    __slots__ = ("_CausalView__b", "_CausalView__t", "_CausalView__n")

    def __init__(self, buffers, t):
        if not 0 <= t < buffers.length:
            raise IndexError("t=%d out of range [0, %d)" % (t, buffers.length))
        object.__setattr__(self, "_CausalView__b", buffers)
        object.__setattr__(self, "_CausalView__t", int(t))
        object.__setattr__(self, "_CausalView__n", int(t) + 1)

    @classmethod
    def _fast(cls, buffers, t, _new=object.__new__):
        """A view at t without the bounds check (the caller guarantees
        0 <= t < length): the streaming host builds one per compute call."""
        v = _new(cls)
        _SET_B(v, buffers)
        _SET_T(v, t)
        _SET_N(v, t + 1)
        return v

    def __setattr__(self, name, value):
        raise AttributeError("CausalView is read-only")

    def __delattr__(self, name):
        raise AttributeError("CausalView is read-only")

    @property
    def t(self):
        """The current bar index."""
        return self.__t

    @property
    def assets(self):
        """Asset names, sorted alphabetically (a fresh list)."""
        return list(self.__b.assets)

    def prices(self, asset):
        """Closes 0..t of `asset` (read-only view, length t+1)."""
        b = self.__b
        return b.closes[:self.__n, b.index[asset]]

    def ohlcv(self, asset):
        """(t+1) x 5 read-only view: open, high, low, close, volume."""
        return self.__b.ohlcv[asset][:self.__n]

    def prices_matrix(self):
        """(t+1) x A read-only view of closes, columns in sorted asset order."""
        b = self.__b
        if not b.assets:
            raise ValueError("no assets")
        return b.closes[:self.__n]

    def timestamps(self):
        """Bar open times 0..t (int64 ms since the epoch, read-only view)."""
        ts = self.__b.ts
        if ts is None:
            raise KeyError("this market has no timestamps")
        return ts[:self.__n]

    def cg(self, asset, field):
        """Derivatives field `field` of `asset`, rows 0..t (read-only view)."""
        fields = self.__b.cg.get(asset, {})
        if field not in fields:
            raise KeyError("no derivatives field %r for %s; available: %s"
                           % (field, asset, sorted(fields)))
        return fields[field][:self.__n]

    def cg_fields(self, asset):
        """Names of the derivatives fields of `asset` (empty if none)."""
        return sorted(self.__b.cg.get(asset, {}))

    def has_cg(self):
        """True if any derivatives data is loaded."""
        return any(self.__b.cg.values())

    def __repr__(self):
        return "CausalView(t=%d, assets=%d)" % (self.__t, len(self.__b.assets))


_SET_B = CausalView._CausalView__b.__set__
_SET_T = CausalView._CausalView__t.__set__
_SET_N = CausalView._CausalView__n.__set__

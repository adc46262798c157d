"""Causal views over append-only market buffers (shared by the SDK and the
strategy host's streaming mode).

A `MarketBuffers` holds, for T bars and the assets in alphabetical order:
a T x A close matrix (row-major, so the rows 0..t of `prices_matrix()` are
one prefix), one T x 5 OHLCV block per asset, optionally one contiguous
close column per asset, the int64 timestamps and optional derivative
(CoinGlass-style) columns. All of them live in one memory file (a memfd):
inside the sandbox it is the runner's shared memory, where only the bars
streamed so far exist; in the SDK the provider copies its arrays into a
memfd of its own once.

Theory of operation (writable causal views in O(1)). `CausalView(buffers,
t)` hands out arrays that are private copy-on-write mappings
(mmap MAP_PRIVATE, Python's ACCESS_COPY) of the prefix of a region, rows
0..t only: one mmap(2) per call, whatever t is, and no byte of the history
is copied until the strategy writes; then the kernel copies only the pages
written, into this mapping alone. So `p = view.prices("ETH"); p /= p[0]`
works as with the original's owned copies, and a write never reaches the
shared data, a later call, another asset or the evaluator's arrays. The
array's `.base` chain ends at an mmap object whose length is exactly the
t+1 rows (nothing later is reachable through it). The mapping is unmapped
when the last array over it is freed. The view object itself is immutable.
"""
import mmap
import os

import numpy as np

__all__ = ["MarketBuffers", "CausalView"]

_PAGE = mmap.ALLOCATIONGRANULARITY


def _readonly(a):
    a = a.view()
    a.flags.writeable = False
    return a


def _align(n):
    return (n + _PAGE - 1) // _PAGE * _PAGE


class _Region:
    """Where one array lives in the memory file: byte offset, element type
    and the shape of one row (() for a column)."""

    __slots__ = ("off", "dtype", "row", "row_bytes", "count")

    def __init__(self, off, dtype, row=()):
        self.off = int(off)
        self.dtype = np.dtype(dtype)
        self.row = tuple(row)
        self.count = int(np.prod(self.row)) if self.row else 1
        self.row_bytes = self.count * self.dtype.itemsize


class _NumpyCow:
    """Owned-array variant of _cow (sdk_cowmem.c in libagenttest_eval.so):
    the same private mapping, handed to numpy as an owned array through a
    NEP 49 data allocator installed around one np.empty(), so flags.owndata
    is set and .base is None, as the original's copies. Available where
    the C library loads and numpy >= 1.22 (never inside the sandbox)."""

    def __init__(self):
        import ctypes as C
        from .evaluator import _library
        major, minor = (int(x) for x in np.__version__.split(".")[:2])
        if (major, minor) < (1, 22) or major > 1:
            raise RuntimeError("numpy %s: data allocator API not used" % np.__version__)
        lib = _library()
        lib.sdk_cow_arm.argtypes = [C.c_int, C.c_int64, C.c_size_t]
        lib.sdk_cow_arm.restype = C.c_int
        lib.sdk_cow_disarm.argtypes = []
        lib.sdk_cow_disarm.restype = None
        lib.sdk_cow_handler.argtypes = []
        lib.sdk_cow_handler.restype = C.c_void_p
        api = C.pythonapi
        api.PyCapsule_New.restype = C.py_object
        api.PyCapsule_New.argtypes = [C.c_void_p, C.c_char_p, C.c_void_p]
        api.PyCapsule_GetPointer.restype = C.c_void_p
        api.PyCapsule_GetPointer.argtypes = [C.py_object, C.c_char_p]
        from numpy.core import multiarray
        table = api.PyCapsule_GetPointer(multiarray._ARRAY_API, None)
        slot = C.c_void_p.from_address(table + 304 * C.sizeof(C.c_void_p)).value  # PyDataMem_SetHandler
        self._set = C.PYFUNCTYPE(C.py_object, C.py_object)(slot)
        self._name = b"mem_handler"
        self._cap = api.PyCapsule_New(lib.sdk_cow_handler(), self._name, None)
        self._arm = lib.sdk_cow_arm
        self._disarm = lib.sdk_cow_disarm
        self._empty = np.empty

    def __call__(self, fd, reg, n):
        nbytes = n * reg.row_bytes
        rc = self._arm(fd, reg.off, nbytes)
        if rc != 0:
            raise OSError(-rc, os.strerror(-rc))
        old = self._set(self._cap)
        try:
            a = self._empty((n,) + reg.row, dtype=reg.dtype)
        finally:
            self._set(old)
            self._disarm()
        return a


def _mmap_cow(fd, reg, n):
    """A writable private mapping of rows 0..n-1 of region `reg` (n >= 1):
    O(1), copy-on-write, `.base` ends with those rows. The SDK's regions are
    page-aligned (the mapping is exactly the rows); a region of the runner's
    layout may start inside a page, whose earlier bytes (older data of the
    region before) then precede the rows in the mapping."""
    start = reg.off - reg.off % _PAGE
    delta = reg.off - start
    mm = mmap.mmap(fd, delta + n * reg.row_bytes, access=mmap.ACCESS_COPY, offset=start)
    a = np.frombuffer(mm, dtype=reg.dtype, count=n * reg.count, offset=delta)
    return a.reshape((n,) + reg.row) if reg.row else a


def _pick_cow():
    try:
        return _NumpyCow()
    except (RuntimeError, OSError, AttributeError, ImportError, ValueError):
        return _mmap_cow


def _cow_first(fd, reg, n):
    """First call: choose the owned-array variant when it loads, else mmap."""
    global _cow
    _cow = _pick_cow()
    return _cow(fd, reg, n)


_cow = _cow_first


def use_owned_arrays(enable=True):
    """Choose how views hand out their private mappings: as numpy-owned
    arrays (the default where the C library loads) or as arrays over an
    mmap object. Returns the previous choice (True for owned)."""
    global _cow
    prev = _cow is not _mmap_cow
    _cow = _pick_cow() if enable else _mmap_cow
    return prev


def _unlinked_file():
    """A read-write file of the working directory that has no name (O_TMPFILE,
    else created and unlinked at once)."""
    try:
        return os.open(".", os.O_TMPFILE | os.O_RDWR | os.O_CLOEXEC, 0o600)
    except (OSError, AttributeError):
        name = ".agenttest-market-%d" % os.getpid()
        fd = os.open(name, os.O_CREAT | os.O_EXCL | os.O_RDWR | os.O_CLOEXEC, 0o600)
        os.unlink(name)
        return fd


class _MemFile:
    """A memfd holding the provider's arrays, page-aligned regions; closed
    when the buffers are collected."""

    def __init__(self, arrays):
        sizes = [_align(max(a.nbytes, 1)) for a in arrays]
        total = max(sum(sizes), _PAGE)
        self.offsets = []
        off = 0
        for s in sizes:
            self.offsets.append(off)
            off += s
        if os.environ.get("AGENTTEST_NO_MEMFD"):
            # Inside an agent's sandbox memfd_create and shared file mappings
            # are refused: keep the copy in an unlinked file of the working
            # directory (the workspace), written with pwrite and mapped
            # privately; the views map it copy-on-write as they map a memfd.
            self.fd = _unlinked_file()
            os.ftruncate(self.fd, total)
            for a, o in zip(arrays, self.offsets):
                os.pwrite(self.fd, np.ascontiguousarray(a).reshape(-1).tobytes(), o)
            self.map = mmap.mmap(self.fd, total, access=mmap.ACCESS_COPY)
            return
        self.fd = os.memfd_create("agenttest-market", os.MFD_CLOEXEC)
        os.ftruncate(self.fd, total)
        self.map = mmap.mmap(self.fd, total, flags=mmap.MAP_SHARED,
                             prot=mmap.PROT_READ | mmap.PROT_WRITE)
        for a, o in zip(arrays, self.offsets):
            dst = np.frombuffer(self.map, dtype=a.dtype, count=a.size, offset=o)
            dst[:] = a.reshape(-1)

    def array(self, i, a):
        """The shared (master) copy of array number i, read-only."""
        return _readonly(np.frombuffer(self.map, dtype=a.dtype, count=a.size,
                                       offset=self.offsets[i]).reshape(a.shape))

    def __del__(self):
        try:
            os.close(self.fd)
        except (OSError, AttributeError, TypeError):
            pass


class MarketBuffers:
    """The arrays behind the views (see the module comment).

    Built from numpy arrays (the SDK: copied once into a memfd), or, with
    `shared=(fd, regions)`, over a memory file someone else lays out (the
    streaming host: regions {"closes", "ohlcv": {asset}, "cg": {asset:
    {field}}} of absolute byte offsets, the arrays already mapped)."""

    __slots__ = ("assets", "index", "closes", "ohlcv", "ts", "cg", "length",
                 "fd", "r_closes", "r_close", "r_ohlcv", "r_cg", "r_ts", "_mem")

    def __init__(self, assets, closes, ohlcv, ts=None, cg=None, length=None, shared=None):
        self.assets = tuple(assets)
        self.index = {a: i for i, a in enumerate(self.assets)}
        cg = {a: dict(fields) for a, fields in (cg or {}).items()}
        self.length = closes.shape[0] if length is None else length
        A = len(self.assets)
        if shared is None:
            closes = np.ascontiguousarray(closes, dtype=np.float64).reshape(-1, A) if A else \
                np.zeros((self.length, 0))
            arrs = [closes]
            arrs += [np.ascontiguousarray(closes[:, j]) for j in range(A)]
            arrs += [np.ascontiguousarray(ohlcv[a], dtype=np.float64) for a in self.assets]
            flat_cg = [(a, f) for a in sorted(cg) for f in sorted(cg[a])]
            arrs += [np.ascontiguousarray(cg[a][f], dtype=np.float64) for a, f in flat_cg]
            has_ts = ts is not None
            if has_ts:
                arrs.append(np.ascontiguousarray(ts, dtype=np.int64))
            mem = _MemFile(arrs)
            self._mem = mem
            self.fd = mem.fd
            o = mem.offsets
            self.closes = mem.array(0, arrs[0])
            self.r_closes = _Region(o[0], np.float64, (A,))
            self.r_close = {a: _Region(o[1 + j], np.float64) for j, a in enumerate(self.assets)}
            base = 1 + A
            self.ohlcv = {a: mem.array(base + j, arrs[base + j]) for j, a in enumerate(self.assets)}
            self.r_ohlcv = {a: _Region(o[base + j], np.float64, (5,)) for j, a in enumerate(self.assets)}
            base += A
            self.cg, self.r_cg = {}, {}
            for k, (a, f) in enumerate(flat_cg):
                self.cg.setdefault(a, {})[f] = mem.array(base + k, arrs[base + k])
                self.r_cg.setdefault(a, {})[f] = _Region(o[base + k], np.float64)
            base += len(flat_cg)
            self.ts = mem.array(base, arrs[base]) if has_ts else None
            self.r_ts = _Region(o[base], np.int64) if has_ts else None
        else:
            fd, reg = shared
            self._mem = None
            self.fd = fd
            self.closes = _readonly(closes)
            self.ohlcv = {a: _readonly(ohlcv[a]) for a in self.assets}
            self.ts = _readonly(ts) if ts is not None else None
            self.cg = {a: {f: _readonly(c) for f, c in fields.items()} for a, fields in cg.items()}
            self.r_closes = _Region(reg["closes"], np.float64, (A,))
            self.r_close = None
            self.r_ohlcv = {a: _Region(reg["ohlcv"][a], np.float64, (5,)) for a in self.assets}
            self.r_cg = {a: {f: _Region(off, np.float64) for f, off in fields.items()}
                         for a, fields in dict(reg.get("cg") or {}).items()}
            self.r_ts = _Region(reg["ts"], np.int64) if reg.get("ts") is not None else None


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
        """Closes 0..t of `asset`: a writable private array of length t+1
        (copy-on-write, O(1)); KeyError for an unknown asset."""
        b = self.__b
        j = b.index[asset]
        if b.r_close is not None:
            return _cow(b.fd, b.r_close[asset], self.__n)
        return _cow(b.fd, b.r_closes, self.__n)[:, j]

    def ohlcv(self, asset):
        """(t+1) x 5 writable private array: open, high, low, close, volume."""
        b = self.__b
        return _cow(b.fd, b.r_ohlcv[asset], self.__n)

    def prices_matrix(self):
        """(t+1) x A writable private array of closes, columns in sorted asset order."""
        b = self.__b
        if not b.assets:
            raise ValueError("no assets")
        return _cow(b.fd, b.r_closes, self.__n)

    def timestamps(self):
        """Bar open times 0..t (int64 ms since the epoch, writable private array)."""
        b = self.__b
        if b.r_ts is None:
            raise KeyError("this market has no timestamps")
        return _cow(b.fd, b.r_ts, self.__n)

    def cg(self, asset, field):
        """Derivatives field `field` of `asset`, rows 0..t (writable private
        array); KeyError listing the available fields when absent."""
        fields = self.__b.r_cg.get(asset, {})
        if field not in fields:
            raise KeyError("no derivatives field %r for %s; available: %s"
                           % (field, asset, sorted(fields)))
        return _cow(self.__b.fd, fields[field], self.__n)

    def cg_fields(self, asset):
        """Names of the derivatives fields of `asset` (empty if none)."""
        return sorted(self.__b.r_cg.get(asset, {}))

    def has_cg(self):
        """True if any derivatives data is loaded."""
        return any(self.__b.r_cg.values())

    def __repr__(self):
        return "CausalView(t=%d, assets=%d)" % (self.__t, len(self.__b.assets))


_SET_B = CausalView._CausalView__b.__set__
_SET_T = CausalView._CausalView__t.__set__
_SET_N = CausalView._CausalView__n.__set__

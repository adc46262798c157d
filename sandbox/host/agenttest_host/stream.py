"""Lockstep streaming of a signal strategy (Featurizer/Predictor) against the
runner, over shared memory (the STREAM request of docs/protocol.md).

Theory of operation. The runner creates a memfd, lays out preallocated,
append-only data columns (timestamps, a T x A close matrix, a T x 5 OHLCV
block per asset, derivative columns), then a control page and an embedding
slot at its end, and passes the fd into the sandbox (fd 4). The STREAM
frame carries the layout (meta) and the strategy source (body). We map the
control page and the slot read-write and say so (seq_h = SEQ_MAPPED); the
runner seals the memfd against every later write or writable mapping and
answers seq_r = SEQ_SEALED; only then do we map the data (read-only for
good: no mprotect or new mapping can make it writable), load the code,
answer STREAMING {warmup, compute_interval}, then loop:

    wait until seq_r == k           (the runner wrote bars 0..t, then t, then seq_r)
    compute(view at t) when due, predict(features) every step
    write the float32 row into the slot, its length, then seq_h = k

The runner writes bar t+1 only after it has read row t back, so no future
bar exists in this process. Waiting spins for spin_us on the sequence word
and then yields and naps in 50 us steps (_poll: the sandbox refuses shared
futex waits); after publishing seq_h we wake the runner with FUTEX_WAKE
when its "sleeping" flag is up; a full barrier (an uncontended lock round
trip, a locked instruction) separates our store of seq_h from our load of
the runner's flag. The runner ends with cmd = DONE;
we answer STREAM_DONE {steps, compute_calls, strategy_s} and return to the
request loop. A strategy exception sets status = 1, sends an ERROR frame,
then publishes seq_h.
"""
import ctypes
import json
import linecache
import mmap
import os
import sys
import threading
import time

import numpy as np

from . import frames, seeding
from .errors import error_meta, STRATEGY_FILE
from .wire import C as _W

STREAM, STREAMING, STREAM_DONE = frames.STREAM, frames.STREAMING, frames.STREAM_DONE

# control page (u32 word indexes; i64 index for t and the counters), wire.h
W_SEQ_R, W_CMD, Q_T, W_RSLEEP = _W["CTL_SEQ_R"], _W["CTL_CMD"], _W["CTL_T"], _W["CTL_RSLEEP"]
W_SEQ_H, W_STATUS, W_DIM = _W["CTL_SEQ_H"], _W["CTL_STATUS"], _W["CTL_DIM"]
Q_STRAT_NS, Q_COMPUTES = _W["CTL_STRATEGY_NS"], _W["CTL_COMPUTES"]
CMD_STEP, CMD_DONE = _W["CMD_STEP"], _W["CMD_DONE"]
SEQ_MAPPED, SEQ_SEALED = _W["SEQ_MAPPED"], _W["SEQ_SEALED"]
SLOT_OFFSET = _W["STREAM_SLOT_OFF"]
MAGIC = _W["STREAM_MAGIC"].encode("ascii")

_SYS_FUTEX = {"x86_64": 202, "aarch64": 98}.get(os.uname().machine)
FUTEX_WAKE = 1


class _Futex:
    """FUTEX_WAKE on words of the shared mapping (ok is False when
    unavailable: then the runner notices seq_h on its own timed waits)."""

    def __init__(self, mm):
        self.ok = False
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            self._sys = libc.syscall
            self._sys.restype = ctypes.c_long
            self._words = {w: ctypes.c_uint32.from_buffer(mm, w * 4) for w in (W_SEQ_R, W_SEQ_H)}
            self._addr = {w: ctypes.addressof(v) for w, v in self._words.items()}
            self.ok = _SYS_FUTEX is not None
        except (OSError, AttributeError, TypeError, ValueError):
            self.ok = False

    def wake(self, word):
        self._sys(_SYS_FUTEX, ctypes.c_void_p(self._addr[word]), FUTEX_WAKE, 1, None, None, 0)


def _load_classes(source):
    from agenttest.featurizer import find_signal_classes
    code = compile(bytes(source), STRATEGY_FILE, "exec", dont_inherit=True)
    text = bytes(source).decode("utf-8", "replace")
    linecache.cache[STRATEGY_FILE] = (len(text), None, text.splitlines(True), STRATEGY_FILE)
    env = {"__name__": "strategy", "__file__": STRATEGY_FILE, "__builtins__": __builtins__}
    seeding.seed_all(seeding.seed_for(source))   # before the code runs (seeding.py)
    exec(code, env)
    fcls, pcls = find_signal_classes(env)
    return fcls(), pcls()


def _buffers(mm_data, meta, fd):
    from agenttest.view import MarketBuffers
    T = int(meta["T"])
    assets = list(meta["assets"])
    A = len(assets)

    def arr(off, dtype, shape):
        return np.frombuffer(mm_data, dtype=dtype, count=int(np.prod(shape)),
                             offset=int(off)).reshape(shape)

    closes = arr(meta["closes"], "<f8", (T, A))
    ohlcv = {a: arr(meta["ohlcv"][a], "<f8", (T, 5)) for a in assets}
    ts = arr(meta["ts"], "<i8", (T,))
    cg = {a: {f: arr(off, "<f8", (T,)) for f, off in fields.items()}
          for a, fields in dict(meta.get("cg") or {}).items()}
    # views map rows 0..t of these regions copy-on-write from the same fd
    return MarketBuffers(assets, closes, ohlcv, ts, cg, length=T, shared=(fd, meta))


def run(chan, meta, body):
    """Serve one STREAM request (see the module comment); the data fd stays
    open until the request ends (the views map it copy-on-write)."""
    try:
        _run(chan, meta, body)
    finally:
        try:
            os.close(int(meta["fd"]))
        except (OSError, KeyError, TypeError, ValueError):
            pass


def _run(chan, meta, body):
    t0 = time.perf_counter()
    try:
        fd = int(meta["fd"])
        size, ctl_off, max_dim = int(meta["size"]), int(meta["ctl_offset"]), int(meta["max_dim"])
        mm = mmap.mmap(fd, size - ctl_off, flags=mmap.MAP_SHARED, prot=mmap.PROT_READ | mmap.PROT_WRITE,
                       offset=ctl_off)
        if mm[:8] != MAGIC:
            raise frames.ProtocolError("bad shared memory")
        u32 = memoryview(mm).cast("I")
        q = memoryview(mm).cast("q")
        slot = np.frombuffer(mm, dtype=np.float32, count=max_dim, offset=SLOT_OFFSET)
        fx = _Futex(mm)
        _publish(u32, SEQ_MAPPED, fx)
        _poll(u32, SEQ_SEALED)
        mm_data = mmap.mmap(fd, ctl_off, flags=mmap.MAP_SHARED, prot=mmap.PROT_READ)
        bufs = _buffers(mm_data, meta, fd)
    except (OSError, ValueError, KeyError, TypeError, ImportError, frames.ProtocolError) as exc:
        chan.send(frames.ERROR, {"code": "internal", "type": type(exc).__name__,
                                 "message": "STREAM setup failed: %s" % exc, "traceback": [],
                                 "phase": "protocol"})
        return
    try:
        feat, pred = _load_classes(body)
        warmup = int(getattr(feat, "warmup", 0))
        ci = int(getattr(feat, "compute_interval", 1))
        feat.setup(list(bufs.assets), bufs.length)
    except BaseException as exc:  # noqa: B902
        if isinstance(exc, KeyboardInterrupt):
            raise
        chan.send(frames.ERROR, error_meta(exc, "load", "strategy_error"))
        return
    chan.send(STREAMING, {"warmup": warmup, "compute_interval": ci,
                          "load_s": time.perf_counter() - t0})
    _loop(chan, u32, q, slot, max_dim, bufs, feat, pred, ci, fx, float(meta.get("spin_us", 50)) * 1e-6)


def _publish(u32, seq, fx):
    """Publish seq_h = seq and wake the runner if it sleeps on it (a lock
    round trip is the full barrier between the store and the flag's load)."""
    u32[W_SEQ_H] = seq
    fence = threading.Lock()
    fence.acquire()
    fence.release()
    if u32[W_RSLEEP] and fx.ok:
        fx.wake(W_SEQ_H)


def _poll(u32, seq):
    """Wait for the runner's step once the spin budget is spent: yield the
    CPU a few hundred times, then nap 50 us at a time. The host never sleeps
    on a futex: the sandbox refuses shared futex waits (a shared futex on a
    read-only file page is keyed by the file, so it would connect concurrent
    boxes); a plain FUTEX_WAKE of the runner stays allowed."""
    yields = 0
    while u32[W_SEQ_R] != seq:
        if yields < 256:
            os.sched_yield()
            yields += 1
        else:
            time.sleep(50e-6)


def _fail(chan, u32, seq, fx, exc, phase, code):
    meta = error_meta(exc, phase, code) if code != "bad_output" else {
        "code": code, "type": "OutputError", "message": str(exc), "traceback": [], "phase": phase}
    u32[W_STATUS] = 1
    chan.send(frames.ERROR, meta)
    u32[W_SEQ_H] = seq
    if fx.ok:
        fx.wake(W_SEQ_H)


def _loop(chan, u32, q, slot, max_dim, bufs, feat, pred, ci, fx, spin_s):
    from agenttest.view import CausalView
    new_view = CausalView._fast
    ndarray = np.ndarray
    perf = time.perf_counter
    perf_ns = time.perf_counter_ns
    fence_lock = threading.Lock()
    acquire, release = fence_lock.acquire, fence_lock.release
    futex_ok = fx.ok
    compute, predict = feat.compute, pred.predict
    asarray, f32 = np.asarray, np.float32
    phase = "compute"
    seq = 0
    cache = None
    cache_t = -999999
    strat_ns = 0
    computes = 0
    steps = 0
    while True:
        seq = (seq + 1) & 0xFFFFFFFF
        # ---- wait for the runner's step
        if u32[W_SEQ_R] != seq:
            deadline = perf() + spin_s
            n = 0
            while u32[W_SEQ_R] != seq:
                n += 1
                if n & 31 == 0 and perf() > deadline:
                    _poll(u32, seq)
                    break
        if u32[W_CMD] == CMD_DONE:
            break
        t = q[Q_T]
        try:
            a = perf_ns()
            if cache is None or (t - cache_t) >= ci:
                phase = "compute"
                cache = compute(new_view(bufs, t))
                cache_t = t
                computes += 1
            phase = "predict"
            out = predict(cache)
            strat_ns += perf_ns() - a
            q[Q_STRAT_NS] = strat_ns
            phase = "output"
            if type(out) is ndarray and out.ndim == 1 and out.dtype.kind == "f":
                row = out          # the slot assignment casts to float32 (as asarray would)
            else:
                row = asarray(out, dtype=f32).ravel()
                if row.dtype != f32:
                    raise TypeError("dtype %s" % row.dtype)
        except BaseException as exc:  # noqa: B902
            if isinstance(exc, KeyboardInterrupt):
                raise
            code = "bad_output" if phase == "output" else "strategy_error"
            if code == "bad_output":
                exc = ValueError("predict() output at t=%d is not an array of numbers (%s)" % (t, exc))
            _fail(chan, u32, seq, fx, exc, phase, code)
            return
        n = row.shape[0]
        if n > max_dim:
            _fail(chan, u32, seq, fx, ValueError("embedding at t=%d has %d values, more than the maximum %d"
                                                 % (t, n, max_dim)), "output", "bad_output")
            return
        slot[:n] = row
        u32[W_DIM] = n
        u32[W_SEQ_H] = seq
        steps += 1
        acquire()
        release()
        if u32[W_RSLEEP] and futex_ok:
            fx.wake(W_SEQ_H)
    q[Q_STRAT_NS] = strat_ns
    q[Q_COMPUTES] = computes
    chan.send(STREAM_DONE, {"steps": steps, "compute_calls": computes, "strategy_s": strat_ns / 1e9})

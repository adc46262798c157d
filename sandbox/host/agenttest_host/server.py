"""The host's request loop: load a strategy, hold the prices, run on prefixes.

Strategy kinds (docs/strategies.md):
  simulate(prices, params) -> equity per bar   (the original agenttest contract)
  positions(prices, params) -> target exposure per bar (the engine does the rest)
`prices` is a list of floats, `params` a dict; both are fresh for every call.
The output goes back as raw float64; the evaluator validates it.
"""
import json
import marshal
import os
import struct
import sys
import time

from . import check, frames, seeding
from .errors import error_meta, STRATEGY_FILE

KINDS = ("simulate", "positions")

# The metas of the frames every run sends (READY, LOADED, OUTPUT) are
# formatted here rather than by json.dumps: a run forked from the zygote
# copies every page its first use of the JSON encoder touches (about forty),
# and these metas are fixed shapes of ints, known strings and finite floats,
# whose repr is the JSON json.dumps would write. The READY prefix is built
# once at import, in the zygote. "numpy" is the version the interpreter has
# loaded, null in one that preloaded nothing (the plain zygote, a one-shot
# host), where a strategy's own import loads it.
_READY_PREFIX = ('{"protocol":%d,"python":%s,"numpy":%s,"pid":' % (
    frames.PROTOCOL, json.dumps(sys.version.split()[0]),
    json.dumps(getattr(sys.modules.get("numpy"), "__version__", None)))).encode("ascii")


def _seconds(x):
    """A duration as JSON: finite (perf_counter differences), so repr is JSON."""
    return repr(float(x)).encode("ascii")


class Strategy:
    """A loaded strategy: its entry point and kind."""

    def __init__(self, kind, fn, source):
        self.kind = kind
        self.fn = fn
        self.source = source


_CODE_TYPE = type(compile("", STRATEGY_FILE, "exec"))


def _given_code(meta, body):
    """The source of a LOAD and, when the meta names `code_len`, the code
    object the runner sends after it: what the run's first host compiled from
    this very source and sent back (COMPILED) before any strategy code ran in
    it, so an audit host skips the compiler (docs/protocol.md). A malformed
    one is the runner's fault: ProtocolError."""
    n = meta.get("code_len")
    if n is None:
        return bytes(body), None
    if type(n) is not int or not 0 <= n < len(body):
        raise frames.ProtocolError("LOAD code_len out of range")
    try:
        code = marshal.loads(body[n:])
    except (EOFError, ValueError, TypeError) as exc:
        raise frames.ProtocolError("LOAD code is not marshalled code") from exc
    if type(code) is not _CODE_TYPE:
        raise frames.ProtocolError("LOAD code is not a code object")
    return bytes(body[:n]), code


def _load(meta, source, code, chan):
    """Compile (unless code is given) and execute the source; pick the entry
    point for `kind`. With `want_code` in the meta, the compiled code goes
    back as COMPILED before the source executes."""
    want = meta.get("kind", "auto")
    if code is None:
        code = compile(source, STRATEGY_FILE, "exec", dont_inherit=True)
    if meta.get("want_code") is True:
        chan.send(frames.COMPILED, None, marshal.dumps(code))
    import linecache
    text = source.decode("utf-8", "replace")
    linecache.cache[STRATEGY_FILE] = (len(text), None, text.splitlines(True), STRATEGY_FILE)
    env = {"__name__": "strategy", "__file__": STRATEGY_FILE, "__builtins__": __builtins__}
    seeding.seed_all(seeding.seed_for(source))
    exec(code, env)
    if want == "auto":
        kind = next((k for k in KINDS if callable(env.get(k))), None)
    elif want in KINDS:
        kind = want if callable(env.get(want)) else None
    else:
        raise ValueError("unknown strategy kind %r" % (want,))
    if kind is None:
        names = " or ".join("%s(prices, params)" % k for k in (KINDS if want == "auto" else (want,)))
        raise ValueError("Strategy must define %s" % names)
    return Strategy(kind, env[kind], source)


class OutputError(Exception):
    """The strategy's return value cannot be turned into a float64 series."""


def _to_float64(result):
    """Return value → contiguous little-endian float64 1-D array, or for a
    list of Python floats the very same bytes (see below)."""
    if type(result) is list and all(type(x) is float for x in result):
        # A list of exact floats (what most strategies return) is float64
        # already: packed as it is, the bytes are those np.asarray would
        # give (NaN payloads, signed zeros and infinities included), without
        # numpy's conversion machinery, whose first use copies about thirty
        # pages in a run forked from the zygote (issue 19).
        return struct.pack("<%dd" % len(result), *result)
    if result is None:
        raise OutputError("returned None instead of a sequence of numbers")
    import numpy as np   # loaded already unless the host runs on the plain zygote
    try:
        arr = np.asarray(result, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise OutputError("output is not a sequence of numbers (%s)" % exc) from None
    if arr.ndim != 1:
        raise OutputError("output must be one-dimensional, got shape %s" % (arr.shape,))
    return np.ascontiguousarray(arr, dtype="<f8")


def _prices(body):
    """A DATA body as a read-only sequence of float64 (little-endian on the
    wire, the evaluator's own order: it refuses to build elsewhere). A
    memoryview, not a numpy array: slicing it and .tolist() give the same
    Python floats, bit for bit, without numpy in the process."""
    return memoryview(body).toreadonly().cast("d")


def _run(chan, strat, prices, meta):
    """Call the strategy on prices[:bars] with params; send OUTPUT or ERROR."""
    t0 = time.perf_counter()
    bars = meta.get("bars")
    params = meta.get("params", {})
    if not isinstance(bars, int) or prices is None or not 0 <= bars <= len(prices):
        raise frames.ProtocolError("RUN needs 0 <= bars <= the prices sent")
    plist = prices[:bars].tolist()
    last = meta.get("last")
    if last is not None:
        if not isinstance(last, float) or bars < 1:
            raise frames.ProtocolError("RUN 'last' must be a float and bars >= 1")
        plist[-1] = last
    try:
        seeding.seed_all(seeding.seed_for(strat.source, params))
        result = strat.fn(plist, params)
    except BaseException as exc:  # noqa: B902 - SystemExit is a strategy error too
        if isinstance(exc, KeyboardInterrupt):
            raise
        chan.send(frames.ERROR, error_meta(exc, "run", "strategy_error"))
        return
    try:
        arr = _to_float64(result)
    except OutputError as exc:
        chan.send(frames.ERROR, {"code": "bad_output", "type": "OutputError", "message": str(exc),
                                 "traceback": [], "phase": "run"})
        return
    host_s = time.perf_counter() - t0
    chan.send(frames.OUTPUT, b'{"bars":%d,"host_s":%s}' % (memoryview(arr).nbytes // 8, _seconds(host_s)), arr)


_WARM_SOURCE = b"def simulate(prices, params):\n    p0 = prices[0]\n    return [p / p0 for p in prices]\n"


def warm():
    """Go through a run's code paths once on built-in data.

    Called by the zygote before its first fork (zygote.py, _prewarm): the
    frame codec, the compiler, a strategy call and the float64 conversion
    specialise their bytecode and fill their caches there once, instead of
    writing (and so copying) those pages in every run. Only this module's
    code and _WARM_SOURCE run; the frames go through a private pipe, and
    what the load leaves (linecache) is removed.
    """
    r, w = os.pipe()
    try:
        chan = frames.Channel(r, w)
        code = compile(_WARM_SOURCE, STRATEGY_FILE, "exec", dont_inherit=True)
        chan.send(frames.LOAD, {"kind": "auto", "code_len": len(_WARM_SOURCE), "want_code": True},
                  _WARM_SOURCE + marshal.dumps(code))
        _ftype, meta, body = chan.recv()
        source, code = _given_code(meta, body)
        strat = _load(meta, source, code, chan)
        chan.recv()  # the COMPILED frame
        prices = _prices(struct.pack("<8d", *(100.0 + i for i in range(8))))
        for bars in (8, 4):
            _run(chan, strat, prices, {"bars": bars, "params": {}})
            chan.recv()
    finally:
        os.close(r)
        os.close(w)
        import linecache
        linecache.cache.pop(STRATEGY_FILE, None)


def serve(in_fd=0, out_fd=1):
    """Speak the protocol on in_fd/out_fd until BYE or EOF.

    The protocol descriptor is moved away from fd 1 first: whatever the
    strategy prints (print, os.write(1, ...)) lands on stderr, never in a frame.
    """
    proto_out = os.dup(out_fd)
    os.set_inheritable(proto_out, False)
    if out_fd == 1:
        os.dup2(2, 1)
    sys.stdout = sys.stderr
    chan = frames.Channel(in_fd, proto_out)
    chan.send(frames.READY, _READY_PREFIX + b"%d}" % os.getpid())
    strat = None
    prices = None
    while True:
        frame = chan.recv()
        if frame is None:
            return
        ftype, meta, body = frame
        if ftype == frames.BYE:
            return
        if ftype == frames.LOAD:
            t0 = time.perf_counter()
            source, code = _given_code(meta, body)
            try:
                strat = _load(meta, source, code, chan)
            except BaseException as exc:  # noqa: B902
                if isinstance(exc, KeyboardInterrupt):
                    raise
                chan.send(frames.ERROR, error_meta(exc, "load", "strategy_error"))
                continue
            chan.send(frames.LOADED, b'{"kind":"%s","load_s":%s}' % (strat.kind.encode("ascii"),
                                                                     _seconds(time.perf_counter() - t0)))
        elif ftype == frames.DATA:
            if len(body) % 8:
                raise frames.ProtocolError("DATA body is not float64")
            prices = _prices(body)
        elif ftype == frames.CHECK:  # parse only, never run (check.py)
            chan.send(frames.CHECKED, check.check(body))
        elif ftype == frames.STREAM:  # lockstep signal streaming (stream.py)
            from . import stream
            stream.run(chan, meta, body)
        elif ftype == frames.RUN:
            if strat is None:
                chan.send(frames.ERROR, {"code": "internal", "type": "ProtocolError",
                                         "message": "RUN before a successful LOAD",
                                         "traceback": [], "phase": "run"})
                continue
            _run(chan, strat, prices, meta)
        else:
            chan.send(frames.ERROR, {"code": "internal", "type": "ProtocolError",
                                     "message": "unknown request type 0x%02x" % ftype,
                                     "traceback": [], "phase": "protocol"})

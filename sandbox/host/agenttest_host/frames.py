"""Frame codec of docs/protocol.md (host side).

Header: magic b"ATP1", u16 type, u16 flags (0), u32 meta_len, u32 body_len,
little-endian; then meta (UTF-8 JSON object) and body (bytes). The values
both ends share come from wire.h (wire.py), the C side's definition too.
"""
import json
import os
import struct

from .wire import C as _W

MAGIC = _W["FRAME_MAGIC"].encode("ascii")
HEADER = struct.Struct("<4sHHII")
assert HEADER.size == _W["FRAME_HEADER_LEN"]
PROTOCOL = _W["PROTOCOL_VERSION"]

LOAD, DATA, RUN, BYE = _W["LOAD"], _W["DATA"], _W["RUN"], _W["BYE"]
READY, LOADED, OUTPUT, ERROR = _W["READY"], _W["LOADED"], _W["OUTPUT"], _W["ERROR"]
COMPILED = _W["COMPILED"]
CHECK, CHECKED = _W["CHECK"], _W["CHECKED"]  # syntax/contract check of a submission (check.py)
STREAM, STREAMING, STREAM_DONE = _W["STREAM"], _W["STREAMING"], _W["STREAM_DONE"]  # stream.py

MAX_META = _W["FRAME_MAX_META"]
MAX_BODY = _W["FRAME_MAX_BODY"]


class ProtocolError(Exception):
    """The evaluator sent something the protocol does not allow."""


class Channel:
    """Blocking reader/writer of frames on two raw file descriptors.

    Reads go straight to os.readv on the descriptor, with no io file object
    in between: in a run forked from the zygote every object the host
    touches first costs a copied page, and a buffered-less FileIO was about
    thirty of them (issue 19). A small read-ahead of our own takes what the
    runner wrote in one go (a DATA and its RUN, each with header, meta and
    body) with one system call instead of one per part, and a frame goes
    out in one writev: every call the other side waits on is a wake-up.
    """

    READ_AHEAD = 4096

    def __init__(self, in_fd, out_fd):
        self._in = in_fd
        self._out = out_fd
        self._buf = bytearray(self.READ_AHEAD)
        self._view = memoryview(self._buf)
        self._off = 0
        self._len = 0

    def _read_exact(self, n):
        out = bytearray(n)
        view = memoryview(out)
        got = min(n, self._len - self._off)
        if got:
            view[:got] = self._view[self._off:self._off + got]
            self._off += got
        while got < n:
            if n - got >= self.READ_AHEAD:
                k = os.readv(self._in, [view[got:]])
                if not k:
                    return None
                got += k
                continue
            k = os.readv(self._in, [self._view])
            if not k:
                return None
            take = min(k, n - got)
            view[got:got + take] = self._view[:take]
            got += take
            self._off, self._len = take, k
        return out

    def recv(self):
        """Next frame as (type, meta dict, body bytearray), or None at EOF."""
        raw = self._read_exact(HEADER.size)
        if raw is None:
            return None
        magic, ftype, flags, meta_len, body_len = HEADER.unpack(raw)
        if magic != MAGIC or flags != 0:
            raise ProtocolError("bad frame header")
        if meta_len > MAX_META or body_len > MAX_BODY:
            raise ProtocolError("frame too large")
        meta = {}
        if meta_len:
            m = self._read_exact(meta_len)
            if m is None:
                return None
            meta = json.loads(bytes(m).decode("utf-8"))
            if not isinstance(meta, dict):
                raise ProtocolError("meta is not a JSON object")
        body = self._read_exact(body_len) if body_len else bytearray()
        if body is None:
            return None
        return ftype, meta, body

    def _write_all(self, parts):
        views = [memoryview(p).cast("B") for p in parts]
        while views:
            k = os.writev(self._out, views)
            while views and k >= len(views[0]):
                k -= len(views[0])
                views.pop(0)
            if views:
                views[0] = views[0][k:]

    def send(self, ftype, meta=None, body=b""):
        """Send one frame; meta is a dict (encoded as JSON here) or the bytes
        of a JSON object the caller already encoded."""
        if isinstance(meta, bytes):
            m = meta
        else:
            m = json.dumps(meta, separators=(",", ":"), allow_nan=False).encode("utf-8") if meta else b""
        blen = memoryview(body).nbytes
        head = HEADER.pack(MAGIC, ftype, 0, len(m), blen) + m
        self._write_all((head, body) if blen else (head,))

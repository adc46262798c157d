"""The strategy host's compiled-code hand-over (issue 19, docs/protocol.md):
an audited run's first host sends the code it compiled (COMPILED) before any
strategy code runs, and an audit host given that code (LOAD code_len) runs
it instead of compiling the source; what the runner sends malformed is a
protocol error, never run. Drives the real host (agenttest_host) over pipes.
"""
import marshal
import pathlib
import struct
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
HOST_DIR = ROOT / "sandbox" / "host"
sys.path.insert(0, str(HOST_DIR))

from agenttest_host import frames  # noqa: E402

SOURCE = b"def positions(prices, params):\n    return [1.0] * len(prices)\n"


class Host:
    """The host as a child process, spoken to with the host's own codec."""

    def __init__(self):
        self.p = subprocess.Popen([sys.executable, str(HOST_DIR / "agenttest_host")],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.chan = frames.Channel(self.p.stdout.fileno(), self.p.stdin.fileno())
        ftype, meta, _ = self.chan.recv()
        assert ftype == frames.READY, ftype

    def send(self, ftype, meta, body=b""):
        self.chan.send(ftype, meta, body)

    def recv(self):
        return self.chan.recv()

    def close(self):
        try:
            self.p.stdin.close()
        except BrokenPipeError:
            pass
        rc = self.p.wait(timeout=30)
        err = self.p.stderr.read().decode("utf-8", "replace")
        self.p.stdout.close()
        self.p.stderr.close()
        return rc, err


@pytest.fixture
def host():
    h = Host()
    yield h
    h.close()


def compiled(source):
    return compile(source, "strategy.py", "exec", dont_inherit=True)


def test_want_code_sends_the_compiled_code_before_loaded(host):
    host.send(frames.LOAD, {"kind": "auto", "want_code": True}, SOURCE)
    ftype, _meta, body = host.recv()
    assert ftype == frames.COMPILED
    assert marshal.loads(bytes(body)) == compiled(SOURCE)
    ftype, meta, _ = host.recv()
    assert ftype == frames.LOADED and meta["kind"] == "positions"


def test_the_code_goes_back_before_any_strategy_code_runs(host):
    # module code that fails at once: COMPILED still comes first, then the
    # load's error; sent after exec, there would be no COMPILED at all
    source = b"raise RuntimeError('module code ran')\n"
    host.send(frames.LOAD, {"kind": "auto", "want_code": True}, source)
    ftype, _meta, body = host.recv()
    assert ftype == frames.COMPILED and marshal.loads(bytes(body)) == compiled(source)
    ftype, meta, _ = host.recv()
    assert ftype == frames.ERROR and "module code ran" in meta["message"]


def test_without_want_code_there_is_no_compiled_frame(host):
    host.send(frames.LOAD, {"kind": "auto"}, SOURCE)
    ftype, _meta, _ = host.recv()
    assert ftype == frames.LOADED


def test_given_code_runs_instead_of_the_source(host):
    # the code object comes from other source: the host runs what it was
    # given (the audit hosts skip the compiler), the source is only text
    other = b"def positions(prices, params):\n    return [0.5] * len(prices)\n"
    host.send(frames.LOAD, {"kind": "auto", "code_len": len(SOURCE)}, SOURCE + marshal.dumps(compiled(other)))
    ftype, meta, _ = host.recv()
    assert ftype == frames.LOADED and meta["kind"] == "positions"
    host.send(frames.DATA, {"bars": 3}, struct.pack("<3d", 100.0, 101.0, 102.0))
    host.send(frames.RUN, {"bars": 3, "params": {}})
    ftype, _meta, body = host.recv()
    assert ftype == frames.OUTPUT
    assert struct.unpack("<3d", bytes(body)) == (0.5, 0.5, 0.5)


@pytest.mark.parametrize("meta_extra, tail", [
    ({"code_len": len(SOURCE) + 100}, b""),          # beyond the body
    ({"code_len": len(SOURCE)}, b""),                # no code after the source
    ({"code_len": len(SOURCE)}, b"\x00garbage"),     # not marshal data
    ({"code_len": len(SOURCE)}, marshal.dumps(("not", "code"))),
    ({"code_len": "12"}, b"x"),                      # not an integer
])
def test_malformed_given_code_is_a_protocol_error_never_run(meta_extra, tail):
    h = Host()
    h.send(frames.LOAD, {"kind": "auto", **meta_extra}, SOURCE + tail)
    assert h.recv() is None          # no LOADED, no ERROR blaming the strategy
    rc, err = h.close()
    assert rc != 0 and "ProtocolError" in err, (rc, err)

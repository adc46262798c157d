"""The wire constants have one definition (sandbox/host/agenttest_host/wire.h):
the host's parser (wire.py) reads exactly what a C compiler sees in the same
header, the host modules use those values, and a header line the parser
cannot read refuses to import instead of yielding a wrong protocol.
"""
import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
HOST = ROOT / "sandbox" / "host"
HEADER = HOST / "agenttest_host" / "wire.h"
sys.path.insert(0, str(HOST))

from agenttest_host import frames, stream, wire  # noqa: E402


def c_values(tmp_path, names):
    """Every WIRE_<name> as the C compiler evaluates it, via a generated program."""
    lines = ['#include <stdio.h>', '#include "sandbox/host/agenttest_host/wire.h"', "int main(void) {"]
    for n in names:
        lines.append('  _Generic((WIRE_%s), char *: printf("%s s %%s\\n", (const char *)(WIRE_%s)),'
                     ' default: printf("%s i %%lld\\n", (long long)(WIRE_%s)));' % (n, n, n, n, n))
    lines.append("  return 0;\n}")
    src = tmp_path / "wire_dump.c"
    exe = tmp_path / "wire_dump"
    src.write_text("\n".join(lines) + "\n")
    subprocess.run([os.environ.get("CC", "cc"), "-std=c11", "-I", str(ROOT), "-o", str(exe), str(src)], check=True)
    out = {}
    for line in subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout.splitlines():
        name, kind, value = line.split(" ", 2)
        out[name] = value if kind == "s" else int(value)
    return out


def test_parser_reads_what_c_sees(tmp_path):
    parsed = wire.load(str(HEADER))
    defined = [l.split()[1][len("WIRE_"):] for l in HEADER.read_text().splitlines()
               if l.startswith("#define WIRE_")]
    assert sorted(parsed) == sorted(defined) and len(parsed) >= 30
    assert c_values(tmp_path, sorted(parsed)) == parsed


def test_host_modules_use_the_header():
    w = wire.C
    assert frames.MAGIC == w["FRAME_MAGIC"].encode() and frames.HEADER.size == w["FRAME_HEADER_LEN"]
    assert (frames.LOAD, frames.BYE, frames.CHECK, frames.READY, frames.ERROR) == \
        (w["LOAD"], w["BYE"], w["CHECK"], w["READY"], w["ERROR"])
    assert (stream.STREAM, stream.STREAMING, stream.STREAM_DONE) == (w["STREAM"], w["STREAMING"], w["STREAM_DONE"])
    assert (stream.W_SEQ_R, stream.W_SEQ_H, stream.Q_T, stream.SLOT_OFFSET) == \
        (w["CTL_SEQ_R"], w["CTL_SEQ_H"], w["CTL_T"], w["STREAM_SLOT_OFF"])
    assert stream.MAGIC == w["STREAM_MAGIC"].encode()
    # requests and replies keep to their halves of the type space
    for name in ("LOAD", "DATA", "RUN", "BYE", "CHECK", "STREAM"):
        assert 0x01 <= w[name] <= 0x7F
    for name in ("READY", "LOADED", "OUTPUT", "CHECKED", "ERROR", "STREAMING", "STREAM_DONE"):
        assert 0x80 <= w[name] <= 0xFF


@pytest.mark.parametrize("line", [
    "#define WIRE_X (1u << 4)",
    "#define WIRE_X 16u",
    "#define WIRE_X 4096 * 2",
    "#define WIRE_X",
    '#define WIRE_X "tab\there"',
])
def test_unreadable_lines_refuse(tmp_path, line):
    h = tmp_path / "wire.h"
    h.write_text("#define WIRE_OK 1\n%s\n" % line)
    with pytest.raises(ImportError):
        wire.load(str(h))


def test_duplicate_refused(tmp_path):
    h = tmp_path / "wire.h"
    h.write_text("#define WIRE_A 1\n#define WIRE_A 2\n")
    with pytest.raises(ImportError):
        wire.load(str(h))
    h.write_text("#define WIRE_A 0x10 /* a comment */\n#define NOT_WIRE 3\n")
    assert wire.load(str(h)) == {"A": 16}

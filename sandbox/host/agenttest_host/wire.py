"""The wire constants shared with the trusted C side, read from wire.h.

wire.h (next to this file) is the one definition: the C side includes it,
this module parses its `#define WIRE_NAME value` lines once at import.
`C["STREAM"]` is WIRE_STREAM. A line that starts with `#define WIRE_` but
is not an integer or string literal refuses to import, so a malformed
header stops the host at once instead of speaking a wrong protocol.
"""
import os
import re

_DEFINE = re.compile(r'#define\s+WIRE_([A-Z0-9_]+)\s+(0x[0-9a-fA-F]+|[0-9]+|"[ -~]*")\s*(/\*.*\*/)?$')


def load(path):
    """The WIRE_* constants of the header at path, as {name: int or str}."""
    out = {}
    with open(path, encoding="ascii") as f:
        for line in f:
            s = line.strip()
            if not s.startswith("#define WIRE_"):
                continue
            m = _DEFINE.match(s)
            if not m:
                raise ImportError("wire.h: not a literal constant: %r" % s)
            name, value = m.group(1), m.group(2)
            if name in out:
                raise ImportError("wire.h: WIRE_%s defined twice" % name)
            out[name] = value[1:-1] if value.startswith('"') else int(value, 0)
    return out


C = load(os.path.join(os.path.dirname(os.path.abspath(__file__)), "wire.h"))

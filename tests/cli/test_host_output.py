"""What the strategy host sends back does not depend on the shortcuts it
takes to copy fewer pages in a forked run (issue 19): a list of Python
floats is packed without numpy into the very bytes numpy would give, every
other return value still goes through numpy, the per-run frame metas are
the JSON the encoder would write, and the RNG seeds keep their checked-in
values (docs/strategies.md: the same code and params draw the same numbers
in every release).
"""
import json
import math
import pathlib
import struct
import sys

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "sandbox" / "host"))

from agenttest_host import frames, seeding, server  # noqa: E402


def numpy_bytes(values):
    return np.ascontiguousarray(np.asarray(values, dtype=np.float64), dtype="<f8").tobytes()


QUIET_NAN_WITH_PAYLOAD = struct.unpack("<d", struct.pack("<Q", 0x7FF8000000000ABC))[0]


@pytest.mark.parametrize("values", [
    [100.0, 101.5, 99.25],
    [],
    [-0.0, 0.0, math.inf, -math.inf, math.nan, QUIET_NAN_WITH_PAYLOAD],
    [5e-324, 1.7976931348623157e308, 1 / 3],
])
def test_a_list_of_floats_is_packed_as_numpy_would(values):
    out = server._to_float64(values)
    assert isinstance(out, bytes)
    assert out == numpy_bytes(values)


@pytest.mark.parametrize("value", [
    [1, 2.0],                 # an int among the floats
    [True, 1.0],
    (1.0, 2.0),               # a tuple
    [np.float64(1.0), 2.0],   # a numpy scalar
    np.array([1.0, 2.0]),
    type("L", (list,), {})([1.0]),   # a list subclass
])
def test_anything_else_still_goes_through_numpy(value):
    out = server._to_float64(value)
    assert isinstance(out, np.ndarray) and out.dtype == np.dtype("<f8")
    assert out.tobytes() == numpy_bytes(value)


@pytest.mark.parametrize("value", [None, [[1.0]], ["x"]])
def test_bad_outputs_are_still_refused(value):
    with pytest.raises(server.OutputError):
        server._to_float64(value)


def test_frame_metas_are_the_json_the_encoder_writes():
    ready = json.loads(server._READY_PREFIX + b"%d}" % 1)
    assert ready == {"protocol": frames.PROTOCOL, "python": sys.version.split()[0],
                     "numpy": np.__version__, "pid": 1}
    for x in (0.0, 1e-07, 1.2345e-05, 0.5, 3.0):
        assert server._seconds(x) == json.dumps(x).encode()


SOURCE = b"def simulate(prices, params):\n    return prices\n"


def test_seeds_keep_their_values():
    # computed with hashlib's SHA-256 and json.dumps before the host used
    # CPython's own SHA-256 and skipped the encoder for empty params
    assert seeding.seed_for(SOURCE) == 3848312296204396127
    assert seeding.seed_for(SOURCE, {}) == 3848312296204396127
    assert seeding.seed_for(SOURCE, {"lookback": 20, "band": [0.5, 1.5]}) == 13300735226475201918


def test_prices_are_the_floats_numpy_gave():
    # DATA is a memoryview now: its slices' tolist() are the same floats,
    # bit for bit, as the numpy array's were
    raw = struct.pack("<6d", 100.0, -0.0, math.inf, QUIET_NAN_WITH_PAYLOAD, 5e-324, 1 / 3)
    view = server._prices(bytearray(raw))
    arr = np.frombuffer(raw, dtype="<f8")
    for bars in range(7):
        got, want = view[:bars].tolist(), arr[:bars].tolist()
        assert struct.pack("<%dd" % bars, *got) == struct.pack("<%dd" % bars, *want)
    with pytest.raises(TypeError):
        view[0] = 1.0   # read-only


HOST_ALONE = r"""
import sys
sys.path.insert(0, sys.argv[1])
from agenttest_host import seeding, server
print(server._READY_PREFIX.decode(), "numpy" in sys.modules)
seeding.seed_all(seeding.seed_for(b"code"))
import numpy as np   # after the seed: seeded as it arrives
print(repr(np.random.random()))
"""

PRELOADED = r"""
import sys
import numpy as np
sys.path.insert(0, sys.argv[1])
from agenttest_host import seeding
seeding.seed_all(seeding.seed_for(b"code"))
print(repr(np.random.random()))
"""


def test_the_host_alone_loads_no_numpy_and_seeds_it_when_it_arrives():
    import subprocess
    host = str(ROOT / "sandbox" / "host")
    out = subprocess.run([sys.executable, "-c", HOST_ALONE, host], check=True, capture_output=True,
                         text=True).stdout.splitlines()
    assert out[0].endswith('"numpy":null,"pid": False'), out
    pre = subprocess.run([sys.executable, "-c", PRELOADED, host], check=True, capture_output=True,
                         text=True).stdout.splitlines()
    assert out[1] == pre[0], (out, pre)

"""Issue 19: the runner sends a run to the plain zygote (no numpy) when its
source imports only a few standard modules, to the full one (numpy and
pandas preloaded) when it names pandas, else to the small one (numpy alone)
(sandbox/zygote_kind.c). The choice changes the cost, never a result: the
same computation gives the same equity bytes on any zygote, and a module
reached in a way the routing cannot see still works on a smaller one.
"""
import secrets

import pytest

from runs_helpers import Api

PD = "'pan' + 'das'"

# Equity with a constant exposure K per bar (so the causality audit's
# last-bar check holds); K tells which zygote the run forked from: 0.75 if
# pandas was not preloaded at load time (small zygote), 0.25 if it was.
PROBE = f'''
import sys
import numpy as np
PRELOADED = {PD} in sys.modules
K = 0.25 if PRELOADED else 0.75
def simulate(prices, params):
    p = np.asarray(prices, dtype=float)
    r = np.concatenate(([0.0], p[1:] / p[:-1] - 1.0))
    return list(np.cumprod(1.0 + K * r))
'''

# Float-heavy, deterministic (no RNG: the run's seed depends on its source,
# and the variants below differ in a comment)
NUMPY_WORK = '''
import numpy as np
def simulate(prices, params):
    p = np.asarray(prices, dtype=float)
    r = np.concatenate(([0.0], np.diff(np.log(p))))
    k = 1.0 / 3.0 + np.tanh(np.float64(0.7)) / 9.0
    return list(np.exp(np.cumsum(np.log1p(k * np.expm1(r)))))
'''

PANDAS_WORK = f'''
pd = __import__({PD})
def simulate(prices, params):
    s = pd.Series(prices, dtype=float)
    r = s.pct_change().fillna(0.0)
    return list((1.0 + r * (1.0 / 3.0)).cumprod())
'''


# The same idea without numpy: K tells whether numpy was loaded at load
# time (it is not on the plain zygote; the name is spelled in pieces so
# that the routing sees no mention of it).
PLAIN_PROBE = '''
import sys
K = 0.25 if "num" + "py" in sys.modules else 0.75
def simulate(prices, params):
    e = [1.0]
    for a, b in zip(prices, prices[1:]):
        e.append(e[-1] * (1.0 + K * (b / a - 1.0)))
    return e
'''

# Float work with the standard library only (no RNG, as above; a constant
# exposure, so the audit's last-bar check holds)
STDLIB_WORK = '''
import math
from statistics import fmean
K = 1.0 / 3.0 + math.tanh(0.7) / 9.0 + math.sqrt(fmean([2.0, 3.0])) * 1e-3
def simulate(prices, params):
    e = [1.0]
    for i in range(1, len(prices)):
        e.append(e[-1] * (1.0 + K * math.expm1(math.log(prices[i] / prices[i - 1]))))
    return e
'''


@pytest.fixture(scope="module")
def dana(stack):
    return Api(stack, stack.create_token(role="user"))


def run_equity(api, code, name):
    v = api.submit(code, name + "-" + secrets.token_hex(4))
    r = api.run(v["strategy_version_id"], dataset_version="v1", audit=True)
    r = r if r["status"] in ("completed", "failed") else api.wait_run(r["run_id"])
    assert r["status"] == "completed", (r.get("error"), r.get("audit"))
    assert r["audit"]["passed"] is True, r["audit"]
    body = api.get(f"/runs/{r['run_id']}/equity", headers={"Accept": "application/json"}).json()
    csv = api.get(f"/runs/{r['run_id']}/equity").body
    return body["equity"], csv


def test_numpy_code_runs_on_the_small_zygote(dana):
    eq, _ = run_equity(dana, PROBE, "probe-small")
    # the 5 bars of v1 are 100..104: with K = 0.75, E1 = 1.0075
    assert eq[1] == pytest.approx(1.0075, abs=1e-12), eq


def test_pandas_code_runs_on_the_full_zygote(dana):
    eq, _ = run_equity(dana, PROBE + "import pandas  # preloaded on the full zygote\n", "probe-full")
    assert eq[1] == pytest.approx(1.0025, abs=1e-12), eq


def test_same_result_on_either_zygote(dana):
    _, small = run_equity(dana, NUMPY_WORK, "work-small")
    _, full = run_equity(dana, NUMPY_WORK + "# pandas: this comment sends it to the full zygote\n", "work-full")
    assert small == full and small.startswith(b"step,equity\n"), (small, full)


def test_pandas_imported_at_run_time_on_the_small_zygote(dana):
    _, small = run_equity(dana, PANDAS_WORK, "rt-small")
    _, full = run_equity(dana, PANDAS_WORK + "# pandas\n", "rt-full")
    assert small == full and len(small.splitlines()) == 6, (small, full)


def test_standard_library_code_runs_on_the_plain_zygote(dana):
    eq, _ = run_equity(dana, PLAIN_PROBE, "probe-plain")
    assert eq[1] == pytest.approx(1.0075, abs=1e-12), eq
    eq, _ = run_equity(dana, PLAIN_PROBE + "# numpy: this comment sends it to the small zygote\n", "probe-np")
    assert eq[1] == pytest.approx(1.0025, abs=1e-12), eq


def test_same_result_on_the_plain_zygote(dana):
    _, plain = run_equity(dana, STDLIB_WORK, "std-plain")
    _, small = run_equity(dana, STDLIB_WORK + "# numpy: this comment sends it to the small zygote\n", "std-small")
    assert plain == small and len(plain.splitlines()) == 6, (plain, small)

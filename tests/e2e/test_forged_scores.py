"""Issue 11 item 1: a simulate() curve is scored only when trading the asset
explains it: the red team's six lines that ignore the prices and grow the
equity 0.09 % a bar are refused (bad_output, the bar named); an honest
curve is scored as the engine recomputes it."""
import secrets

import pytest

from runs_helpers import Api, BUY_AND_HOLD

FORGED = '''
def simulate(prices, params):
    e, out = 1.0, []
    for _ in prices:
        out.append(e)
        e *= 1.0009
    return out
'''

# twice the asset's move: explained only with leverage 2 (the default limit is 1)
LEVERED = '''
def simulate(prices, params):
    out = [1.0]
    for i in range(1, len(prices)):
        out.append(out[-1] * (1 + 2 * (prices[i] / prices[i - 1] - 1)))
    return out
'''


@pytest.fixture(scope="module")
def mallory(stack):
    return Api(stack, stack.create_token(role="user"))


def run_code(api, code, **fields):
    v = api.submit(code, "forged-" + secrets.token_hex(4))
    r = api.run(v["strategy_version_id"], dataset_version="v1", **fields)
    return api.wait_run(r["run_id"]) if r["status"] not in ("completed", "failed") else r


def test_self_reported_growth_is_refused(mallory):
    r = run_code(mallory, FORGED)
    assert r["status"] == "failed", r
    # refused by the audit's last-bar check (the growth does not depend on
    # the bar's price: a gain k > 0 that trading cannot explain) or, on bars
    # where the asset moved less than 0.09 %, by the implied-exposure check
    assert r["error"]["code"] in ("lookahead_detected", "bad_output"), r["error"]
    assert r["metrics"] is None


def test_more_than_the_leverage_limit_is_refused(mallory):
    r = run_code(mallory, LEVERED)
    assert r["status"] == "failed" and r["error"]["code"] == "bad_output", r
    assert "more than trading it at max_leverage 1" in r["error"]["message"], r["error"]


HOLD_POSITIONS = "def positions(prices, params):\n    return [1.0] * len(prices)\n"


def test_honest_curve_is_scored_as_recomputed(mallory):
    """Buy and hold as a simulate curve scores what the positions engine
    gives for holding the asset from bar 0 without fees."""
    r = run_code(mallory, BUY_AND_HOLD)
    assert r["status"] == "completed", r
    p = run_code(mallory, HOLD_POSITIONS, fee_bps=0)
    assert p["status"] == "completed", p
    for k in ("total_return", "sharpe", "max_drawdown"):
        assert r["metrics"][k] == pytest.approx(p["metrics"][k], rel=1e-9, abs=1e-12), k


# Issue 11 item 3: looks ahead on the first (full-length) call and replays
# that answer, cut to length, to every later call. With the audit's calls in
# the host that made the full run, every prefix matched (score 1.2e104,
# drawdown 0); each audit call in a fresh host has nothing to replay.
REPLAY = '''
_seen = []
def positions(prices, params):
    if not _seen:
        n = len(prices)
        _seen.append([1.0 if i + 2 < n and prices[i + 2] > prices[i + 1] else -1.0
                      for i in range(n)])
    return _seen[0][:len(prices)]
'''


def test_audit_calls_cannot_replay_the_full_run(mallory):
    r = run_code(mallory, REPLAY, fee_bps=0)
    assert r["status"] == "failed", r.get("metrics")
    assert r["error"]["code"] == "lookahead_detected", r["error"]
    assert r["metrics"] is None

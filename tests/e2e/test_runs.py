"""POST /runs, GET /runs[/{id}], cancel, equity, verify, against a real
runner: queueing, waiting, the original's metric vectors, both strategy
kinds, failure codes, determinism, pagination and ownership."""
import json
import math
import secrets
import time

import pytest

from helpers import assert_error, stack_sql
from runs_helpers import Api, BUY_AND_HOLD, example, metrics_without_runtime, sleeper

RUN_KEYS = {"run_id", "strategy_version_id", "dataset_version", "dataset_hash", "config_hash", "status",
            "artifacts", "artifacts_error", "metrics", "code_hash", "params", "error", "audit", "queued_at", "started_at",
            "completed_at", "runtime_s", "resources"}


@pytest.fixture(scope="module")
def alice(stack):
    return Api(stack, stack.create_token(role="user"))


@pytest.fixture(scope="module")
def bob(stack):
    return Api(stack, stack.create_token(role="user"))


@pytest.fixture(scope="module")
def bh(alice):
    return alice.submit(BUY_AND_HOLD, "buy-and-hold")


def submit(api, code, prefix="s"):
    return api.submit(code, f"{prefix}-{secrets.token_hex(4)}")["strategy_version_id"]


def test_buy_and_hold_on_v1_matches_the_original(alice, bh):
    run = alice.run(bh["strategy_version_id"], dataset_version="v1", expect=200)
    assert RUN_KEYS <= set(run)
    assert run["status"] == "completed", run
    m = run["metrics"]
    # spec/agenttest.md §3.6, the demo row: 100..104
    assert m["total_return"] == pytest.approx(0.04, rel=1e-12)
    assert m["cagr"] == pytest.approx(34.833746, rel=1e-6)
    assert m["max_drawdown"] == 0
    assert m["volatility"] == pytest.approx(0.00207383, rel=1e-5)
    assert m["sharpe"] == pytest.approx(1734.2307, rel=1e-6)
    assert m["score"] == pytest.approx(34.833746, rel=1e-6)
    assert run["config_hash"] == "5b9b970e1810a692fa1683f23e450cdfdff1dac62aff136afc113a4d17f748f3"
    assert run["code_hash"] == bh["code_hash"]
    assert run["params"] == {}
    assert run["error"] is None
    assert run["audit"]["requested"] is True and run["audit"]["passed"] is True
    assert run["resources"]["verdict"] == "ok"
    assert run["resources"]["limits"]["memory_bytes"] > 0
    assert run["runtime_s"] >= 0 and run["queued_at"] and run["completed_at"]


def test_run_is_asynchronous_without_wait(alice, bh):
    r = alice.post("/runs", {"strategy_version_id": bh["strategy_version_id"]})
    assert r.status == 202, r
    body = r.json()
    assert body["status"] in ("queued", "running", "completed")
    assert r.header("Location") == f"/runs/{body['run_id']}"
    done = alice.wait_run(body["run_id"])
    assert done["status"] == "completed"
    assert done["dataset_version"] == "synth-v1"   # DATASET_VERSION of the stack


def test_positions_strategy_completes_with_engine_metrics(alice):
    vid = submit(alice, example("sma_positions.py"), "sma")
    run = alice.run(vid, params={"fast": 5, "slow": 20})
    assert run["status"] == "completed", run
    m = run["metrics"]
    for k in ("turnover", "average_exposure", "fees_paid", "liquidation_events"):
        assert m[k] is not None, k
    assert all(math.isfinite(v) for v in m.values() if isinstance(v, float))
    # fee and leverage are part of the configuration of a positions run
    other = alice.run(vid, params={"fast": 5, "slow": 20}, fee_bps=0)
    assert other["config_hash"] != run["config_hash"]
    assert other["metrics"]["fees_paid"] == 0


def test_same_job_twice_is_bit_identical(alice, bh, stack):
    a = alice.run(bh["strategy_version_id"])
    b = alice.run(bh["strategy_version_id"])
    assert a["status"] == b["status"] == "completed"
    assert (a["dataset_hash"], a["code_hash"], a["config_hash"]) == (b["dataset_hash"], b["code_hash"], b["config_hash"])
    assert metrics_without_runtime(a) == metrics_without_runtime(b)
    ea = alice.get(f"/runs/{a['run_id']}/equity").body
    eb = alice.get(f"/runs/{b['run_id']}/equity").body
    assert ea == eb and ea.startswith(b"step,equity\n")
    assert ea.count(b"\n") == 10080 + 1


def test_verify_reexecutes_and_records(alice, bh):
    run = alice.run(bh["strategy_version_id"], dataset_version="v1")
    r = alice.post(f"/runs/{run['run_id']}/verify", {"wait": 30})
    assert r.status == 200, r
    body = r.json()
    assert body["verification"]["identical"] is True
    assert body["verification"]["first_difference"] is None
    again = alice.get(f"/runs/{run['run_id']}").json()
    assert again["verification"]["verification_run_id"] == body["verification_run_id"]
    # the re-execution is a run of its own, never on the leaderboard
    v = alice.get(f"/runs/{body['verification_run_id']}").json()
    assert v["verify_of"] == run["run_id"] and v["status"] == "completed"
    board = alice.get("/leaderboard?dataset_version=v1&all=1&limit=1000").json()
    assert body["verification_run_id"] not in [row["run_id"] for row in board]


def test_verify_needs_a_completed_run(alice):
    vid = submit(alice, "def simulate(prices, params):\n    raise ValueError('boom')\n", "boom")
    run = alice.run(vid, dataset_version="v1")
    assert_error(alice.post(f"/runs/{run['run_id']}/verify"), 409, "conflict")


def test_equity_as_json(alice, bh):
    run = alice.run(bh["strategy_version_id"], dataset_version="v1")
    r = alice.get(f"/runs/{run['run_id']}/equity", headers={"Accept": "application/json"})
    assert r.status == 200 and r.content_type == "application/json"
    assert r.json()["equity"] == pytest.approx([1.0, 1.01, 1.02, 1.03, 1.04])
    # the runner's buy-and-hold benchmark of the asset (close[t] / close[0],
    # IEEE division like the strategy's own p / p0): bit for bit this curve
    assert r.json()["benchmark"] == r.json()["equity"]
    csv = alice.get(f"/runs/{run['run_id']}/equity").body.decode()
    assert csv.splitlines()[:3] == ["step,equity", "0,1.0", "1,1.01"]


@pytest.mark.parametrize("code,error", [
    ("def simulate(prices, params):\n    raise KeyError('x')\n", "strategy_error"),
    ("def simulate(prices, params):\n    return [1.0]\n", "bad_output"),
    ("def simulate(prices, params):\n    return [float('nan')] * len(prices)\n", "bad_output"),
    ("def simulate(prices, params):\n    return [2.0] * len(prices)\n", "bad_output"),
    ("def simulate(prices, params):\n    return None\n", "bad_output"),
    ("import os\ndef simulate(prices, params):\n    os._exit(3)\n", "crashed"),
    ("import ctypes\ndef simulate(prices, params):\n    ctypes.string_at(0)\n", "crashed"),
    ("import socket\ndef simulate(prices, params):\n    socket.socket().connect(('1.1.1.1', 80))\n",
     "forbidden_syscall"),
])
def test_broken_strategies_fail_with_their_code(alice, code, error):
    vid = submit(alice, code, "broken")
    run = alice.run(vid, dataset_version="v1")
    assert run["status"] == "failed", run
    assert run["error"]["code"] == error, run["error"]
    assert run["metrics"] is None
    assert isinstance(run["error"]["message"], str) and run["error"]["message"]
    # the leaderboard keeps working
    assert alice.get("/leaderboard?dataset_version=v1").status == 200


def test_strategy_error_keeps_the_log_tail(alice):
    code = "import sys\ndef simulate(prices, params):\n    print('about to fail', file=sys.stderr)\n    raise RuntimeError('nope')\n"
    run = alice.run(submit(alice, code, "noisy"), dataset_version="v1")
    assert run["error"]["code"] == "strategy_error"
    assert "nope" in run["error"]["message"] + run["error"]["log_tail"]


def test_strategy_error_shows_the_users_frames(alice):
    # as the CLI prints it: the strategy's own frames with line numbers, no
    # host internals or server paths, bounded
    code = "def helper(p):\n    return p['window']\n\ndef simulate(prices, params):\n    return helper(params)\n"
    run = alice.run(submit(alice, code, "keyerror"), dataset_version="v1")
    e = run["error"]
    assert e["code"] == "strategy_error" and "KeyError" in e["message"]
    tail = e["log_tail"]
    assert 'File "strategy.py", line 5, in simulate' in tail, tail
    assert 'File "strategy.py", line 2, in helper' in tail and "KeyError: 'window'" in tail
    assert "agenttest_host" not in tail and "/agenttest/" not in tail and "/usr/lib" not in tail
    assert len(tail.encode()) <= 4096


def test_lookahead_strategy_fails_the_audit(alice):
    run = alice.run(submit(alice, example("momentum_lookahead.py"), "peek"))
    assert run["status"] == "failed"
    assert run["error"]["code"] == "lookahead_detected"
    assert run["audit"]["passed"] is False


# The audit runs two cuts side by side when a zygote helper is idle to
# spare (evaluator/runner/drive/backtest.c, bt_audit); v1 has 5 bars, so
# the cuts are 1, 2 and 3, one fresh host each after the full run's.
AUDIT_SLEEPER = (
    "import time\n"
    "def positions(prices, params):\n"
    "    time.sleep(0.6)\n"
    "    return [1.0] * len(prices)\n"
)


def test_audit_cuts_run_side_by_side(alice):
    # four hosts one after another sleep 2.4 s at least; the full run, then
    # the three cuts two at a time, 1.8 s (sleeping needs no CPU, so a
    # loaded machine does not change this)
    vid = submit(alice, AUDIT_SLEEPER, "sleepy-audit")
    times = []
    for _ in range(2):   # the first may find a runner whose spare zygote still imports
        run = alice.run(vid, dataset_version="v1")
        assert run["status"] == "completed", run
        a = run["audit"]["report"]
        assert a["passed"] is True and a["cuts"] == [1, 2, 3] and a["strategy_calls"] == 3, a
        times.append(run["runtime_s"])
    assert min(times) < 2.2, times


# Buy and hold as a curve, refusing a single price: a simulate curve starts
# at exactly 1.0 in the full run and in every cut, so a cut at bar 1 could
# only compare 1.0 with 1.0 (or fail a strategy that needs two prices).
SIMULATE_TWO_PRICES_AT_LEAST = (
    "def simulate(prices, params):\n"
    "    if len(prices) < 2:\n"
    "        raise ValueError('needs two prices')\n"
    "    return [p / prices[0] for p in prices]\n"
)


def test_simulate_audit_cuts_start_at_the_second_bar(alice):
    vid = submit(alice, SIMULATE_TWO_PRICES_AT_LEAST, "sim-two-prices")
    run = alice.run(vid, dataset_version="v1")
    assert run["status"] == "completed", run
    a = run["audit"]["report"]
    # each cut: the four last-bar calls and the prefix call
    assert a["passed"] is True and a["cuts"] and min(a["cuts"]) >= 2, a
    assert a["strategy_calls"] == 5 * len(a["cuts"]), a


# Looks ahead at every bar, so every cut fails; the one-bar cut answers last
# (it sleeps), the three-bar cut, which the second worker takes first, at once.
LOOKAHEAD_SLOW_FIRST_CUT = (
    "import time\n"
    "def positions(prices, params):\n"
    "    n = len(prices)\n"
    "    if n == 1:\n"
    "        time.sleep(0.5)\n"
    "    return [1.0 if i + 1 < n and prices[i + 1] > prices[i] else 0.0 for i in range(n)]\n"
)


def test_audit_failure_is_the_first_failing_cut_whatever_ends_first(alice):
    # as if the cuts ran in order: the lowest failing cut decides, and only
    # the calls up to it count, however the two workers interleave
    vid = submit(alice, LOOKAHEAD_SLOW_FIRST_CUT, "peek-slow")
    for _ in range(2):
        run = alice.run(vid, dataset_version="v1")
        assert run["status"] == "failed" and run["error"]["code"] == "lookahead_detected", run
        a = run["audit"]["report"]
        assert (a["passed"], a["fail_cut"], a["first_diff"], a["check"], a["strategy_calls"]) == \
            (False, 1, 0, "prefix", 1), a
        assert "at bar 0 " in run["error"]["message"], run["error"]


def test_a_failing_full_run_stops_the_cut_host_started_beside_it(alice):
    # the second worker starts its first cut's host while the full run runs;
    # when the full run fails, that host stops and the full run's error is
    # the run's, with no audit
    code = ("import time\n"
            "def positions(prices, params):\n"
            "    if len(prices) == 5:\n"
            "        time.sleep(0.5)\n"
            "        raise ValueError('the full run fails')\n"
            "    return [1.0] * len(prices)\n")
    vid = submit(alice, code, "full-fails")
    for _ in range(2):
        run = alice.run(vid, dataset_version="v1")
        assert run["status"] == "failed", run
        assert run["error"]["code"] == "strategy_error", run["error"]
        assert "the full run fails" in run["error"]["message"], run["error"]
        assert run["audit"]["report"]["performed"] is False, run["audit"]
        assert run["runtime_s"] < 5, run["runtime_s"]


def test_cancel_during_the_audit_kills_both_cut_hosts(alice):
    # the full run answers at once, every cut sleeps 30 s, two at a time:
    # a cancel must reach both hosts, not only the one registered last
    code = ("import time\n"
            "def positions(prices, params):\n"
            "    if len(prices) < 5:\n"
            "        time.sleep(30)\n"
            "    return [1.0] * len(prices)\n")
    run = alice.run(submit(alice, code, "sleepy-cuts"), dataset_version="v1", wait=0)
    alice.wait_status(run["run_id"], "running")
    time.sleep(1.0)   # both cut hosts are asleep by now
    t0 = time.monotonic()
    r = alice.post(f"/runs/{run['run_id']}/cancel?wait=10")
    assert r.status == 202, r
    done = alice.wait_run(run["run_id"], timeout=15)
    assert done["status"] == "cancelled", done
    assert time.monotonic() - t0 < 12, time.monotonic() - t0


def test_unknown_version_dataset_and_missing_fields(alice, bob, bh):
    assert_error(alice.post("/runs", {"strategy_version_id": 999999999}), 404, "not_found")
    assert_error(alice.post("/runs", {"strategy_version_id": bh["strategy_version_id"], "dataset_version": "nope"}),
                 404, "not_found")
    assert_error(alice.post("/runs", {}), 400, "missing_field")
    assert_error(alice.post("/runs", {"strategy_version_id": "1"}), 400, "invalid_field")
    assert_error(alice.post("/runs", {"strategy_version_id": bh["strategy_version_id"], "params": [1]}),
                 400, "invalid_field")
    assert_error(alice.post("/runs", {"strategy_version_id": bh["strategy_version_id"], "wait": 61}),
                 400, "invalid_field")
    assert_error(alice.post("/runs", {"strategy_version_id": bh["strategy_version_id"], "asset": "NOPE"}),
                 400, "invalid_field")
    # another user's version does not exist for bob
    assert_error(bob.post("/runs", {"strategy_version_id": bh["strategy_version_id"]}), 404, "not_found")
    # a server path needs the admin role
    assert_error(alice.post("/runs", {"strategy_path": "/etc/passwd"}), 403, "forbidden")


def test_dataset_version_may_be_a_window_label(stack, alice, bh):
    """POST /runs reads the version, the dataset and the queued count in one
    statement; a market-data window label (dataset_labels) still resolves to
    the version it points at, which the run pins, and a registered version
    of the same name wins over a label."""
    versions = [row[0] for row in stack_sql(stack, "SELECT version FROM datasets ORDER BY id")]
    assert "v1" in versions
    label = "e2e-label-" + secrets.token_hex(4)
    stack_sql(stack, "INSERT INTO dataset_labels (label, dataset_id) SELECT '%s', id FROM datasets "
                     "WHERE version = 'v1'" % label)
    run = alice.run(bh["strategy_version_id"], dataset_version=label, expect=200)
    assert run["status"] == "completed" and run["dataset_version"] == "v1"
    others = [v for v in versions if v != "v1"]
    if others:   # a label named like a registered version does not shadow it
        stack_sql(stack, "INSERT IGNORE INTO dataset_labels (label, dataset_id) SELECT '%s', id FROM datasets "
                         "WHERE version = 'v1'" % others[0])
        try:
            r = alice.post("/runs", {"strategy_version_id": bh["strategy_version_id"], "dataset_version": others[0]})
            assert r.status in (200, 202) and r.json()["dataset_version"] == others[0], r
        finally:
            stack_sql(stack, "DELETE FROM dataset_labels WHERE label = '%s'" % others[0])
    stack_sql(stack, "DELETE FROM dataset_labels WHERE label = '%s'" % label)


def test_asset_selection(alice, bh):
    a = alice.run(bh["strategy_version_id"], asset="ETH")
    b = alice.run(bh["strategy_version_id"], asset="BTC")
    assert a["status"] == b["status"] == "completed"
    assert a["asset"] == "ETH"
    assert a["metrics"]["total_return"] != b["metrics"]["total_return"]


def test_config_hash_names_the_asset_used(alice, bh):
    # the same dataset, code and config hashes promise the same metrics: a
    # run on another asset has another config_hash, and every run shows the
    # asset it used (the dataset's first by default, never null)
    first = alice.get("/datasets/synth-v1").json()["assets"][0]
    other = "DOGE" if first != "DOGE" else "ETH"
    d = alice.run(bh["strategy_version_id"])
    f = alice.run(bh["strategy_version_id"], asset=first)
    o = alice.run(bh["strategy_version_id"], asset=other)
    assert d["asset"] == first and f["asset"] == first and o["asset"] == other
    assert d["config_hash"] == f["config_hash"] != o["config_hash"]
    assert d["metrics"]["total_return"] == f["metrics"]["total_return"] != o["metrics"]["total_return"]
    assert alice.get(f"/runs/{d['run_id']}").json()["asset"] == first


def test_trusted_is_refused(alice, bh):
    r = alice.post("/runs", {"strategy_version_id": bh["strategy_version_id"], "trusted": True})
    assert_error(r, 400, "invalid_field")
    assert "sandbox" in r.json()["error"]
    assert alice.run(bh["strategy_version_id"], trusted=False)["status"] == "completed"


def test_get_run_is_owner_scoped(alice, bob, bh, stack):
    run = alice.run(bh["strategy_version_id"], dataset_version="v1")
    assert_error(bob.get(f"/runs/{run['run_id']}"), 404, "not_found")
    assert_error(bob.get(f"/runs/{run['run_id']}/equity"), 404, "not_found")
    assert_error(bob.post(f"/runs/{run['run_id']}/cancel"), 404, "not_found")
    assert_error(bob.post(f"/runs/{run['run_id']}/verify"), 404, "not_found")
    admin = Api(stack, stack.create_token(role="admin"))
    assert admin.get(f"/runs/{run['run_id']}").status == 200
    assert_error(alice.get("/runs/not-a-uuid"), 404, "not_found")
    assert_error(alice.get("/runs/00000000-0000-4000-8000-000000000000"), 404, "not_found")


def test_list_filters_and_cursor_pagination(alice, bob, bh):
    vid = bh["strategy_version_id"]
    ids = [alice.run(vid, dataset_version="v1", wait=0)["run_id"] for _ in range(5)]
    for i in ids:
        alice.wait_run(i)
    seen, cursor = [], None
    while True:
        path = f"/runs?strategy_version_id={vid}&dataset_version=v1&limit=2" + (f"&cursor={cursor}" if cursor else "")
        page = alice.get(path).json()
        assert len(page["runs"]) <= 2
        seen += [r["run_id"] for r in page["runs"]]
        cursor = page["next_cursor"]
        if not cursor:
            break
    assert len(seen) == len(set(seen))
    assert set(ids) <= set(seen)
    assert seen.index(ids[-1]) < seen.index(ids[0])   # newest first
    r = alice.get("/runs?status=completed&limit=200")
    assert r.status == 200, r
    done = r.json()["runs"]
    assert all(r["status"] == "completed" for r in done)
    # each row carries the run's runtime, the same number as the run itself
    mine = {r["run_id"]: r for r in done if r["run_id"] in ids}
    assert set(mine) == set(ids)
    for i in ids:
        assert mine[i]["runtime_s"] == alice.get(f"/runs/{i}").json()["runtime_s"] > 0
    assert not set(ids) & {r["run_id"] for r in bob.get("/runs?limit=200").json()["runs"]}
    assert_error(alice.get("/runs?status=bogus"), 400, "invalid_field")
    assert_error(alice.get("/runs?limit=0"), 400, "invalid_field")


def test_cancel_a_running_run_kills_its_sandbox(alice):
    vid = submit(alice, sleeper(30), "sleepy")
    run = alice.run(vid, dataset_version="v1", wait=0)
    alice.wait_status(run["run_id"], "running")
    t0 = time.monotonic()
    r = alice.post(f"/runs/{run['run_id']}/cancel?wait=10")
    assert r.status == 202, r
    done = alice.wait_run(run["run_id"], timeout=10)
    assert done["status"] == "cancelled", done
    assert time.monotonic() - t0 < 15   # far below the strategy's 30 s: the cancel killed it
    assert_error(alice.post(f"/runs/{run['run_id']}/cancel"), 409, "conflict")
    assert_error(alice.get(f"/runs/{run['run_id']}/equity"), 409, "conflict")


def test_params_reach_the_strategy_and_the_hash(alice):
    code = ("def simulate(prices, params):\n"
            "    k = float(params.get('k', 1.0))\n"
            "    p0 = prices[0]\n"
            "    return [1.0 + k * (p / p0 - 1.0) for p in prices]\n")
    vid = submit(alice, code, "scaled")
    one = alice.run(vid, dataset_version="v1", params={"k": 1})
    # k < 1: a simulate curve must stay within the leverage limit (1 by default, issue 11)
    two = alice.run(vid, dataset_version="v1", params={"k": 0.5})
    assert two["metrics"]["total_return"] == pytest.approx(0.5 * one["metrics"]["total_return"])
    assert one["config_hash"] != two["config_hash"]
    assert two["params"] == {"k": 0.5}
    assert json.dumps(one["params"]) == '{"k": 1}'


def test_queued_run_limit_answers_429_with_retry_after(alice):
    """RUNS_MAX_QUEUED (default 100) queued runs per user; the next is 429."""
    vid = submit(alice, sleeper(20), "blocker")
    ids = []
    try:
        for _ in range(2):   # occupy both runner slots
            ids.append(alice.run(vid, dataset_version="v1", wait=0, audit=False)["run_id"])
        for i in ids:
            alice.wait_status(i, "running")
        refused = None
        for _ in range(110):
            r = alice.post("/runs", {"strategy_version_id": vid, "dataset_version": "v1", "audit": False})
            if r.status == 429:
                refused = r
                break
            assert r.status == 202, r
            ids.append(r.json()["run_id"])
        assert refused is not None, "no 429 after 110 queued runs"
        body = assert_error(refused, 429, "rate_limited")
        assert int(refused.header("Retry-After")) >= 1
        assert "queued" in body["error"]
        assert len(ids) - 2 == 100
    finally:
        for i in ids:
            alice.post(f"/runs/{i}/cancel")
        for i in ids[:2]:
            assert alice.wait_run(i, timeout=15)["status"] == "cancelled"


def test_verify_counts_against_the_queued_run_limit(stack):
    """Issue 11 item 7: 150 verifies were all accepted past the limit of 100;
    a verification is a queued run of its owner like any other."""
    carol = Api(stack, stack.create_token(role="user"))
    done = carol.run(submit(carol, BUY_AND_HOLD, "verified"), dataset_version="v1", audit=False)
    assert done["status"] == "completed", done
    vid = submit(carol, sleeper(20), "blocker")
    ids = []
    try:
        for _ in range(2):   # occupy both runner slots
            ids.append(carol.run(vid, dataset_version="v1", wait=0, audit=False)["run_id"])
        for i in ids:
            carol.wait_status(i, "running")
        refused = None
        for _ in range(110):
            r = carol.post(f"/runs/{done['run_id']}/verify", {})
            if r.status == 429:
                refused = r
                break
            assert r.status in (200, 202), r
            ids.append(r.json()["verification_run_id"])
        assert refused is not None, "no 429 after 110 queued verifications"
        assert_error(refused, 429, "rate_limited")
        assert int(refused.header("Retry-After")) >= 1
        assert len(ids) - 2 == 100
    finally:
        for i in ids:
            carol.post(f"/runs/{i}/cancel")
        for i in ids[:2]:
            assert carol.wait_run(i, timeout=15)["status"] == "cancelled"


def test_positions_fully_long_without_fees_is_buy_and_hold(alice):
    """Next-bar execution of a constant exposure of 1 reproduces buy-and-hold."""
    vid = submit(alice, "def positions(prices, params):\n    return [1.0] * len(prices)\n", "long")
    run = alice.run(vid, dataset_version="v1", fee_bps=0)
    assert run["status"] == "completed", run
    eq = alice.get(f"/runs/{run['run_id']}/equity?format=json").json()["equity"]
    assert eq == pytest.approx([1.0, 1.01, 1.02, 1.03, 1.04], rel=1e-12)
    # the benchmark is the market's, whatever the strategy did
    bench = alice.get(f"/runs/{run['run_id']}/equity?format=json").json()["benchmark"]
    assert bench == [1.0, 1.01, 1.02, 1.03, 1.04]
    assert run["metrics"]["total_return"] == pytest.approx(0.04, rel=1e-12)
    assert run["metrics"]["fees_paid"] == 0
    # with the default 10 bps the entry trade is charged in the first bar's
    # growth factor: E1 = 1 + r1 - 0.001 (docs of evaluator/engine.h)
    paid = alice.run(vid, dataset_version="v1")
    assert paid["metrics"]["total_return"] == pytest.approx((1 + 0.01 - 0.001) * (104 / 101) - 1, rel=1e-9)

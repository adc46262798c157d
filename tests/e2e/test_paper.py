"""Paper trading of the promoted default of a window label (docs/paper-trading.md):
with the Binance stand-in serving new minutes on demand (its clock lag), each
prefetch of the window advances the default one bar per new candle; its
equity equals the whole-series backtest over the same bars and an
independent recomputation of the engine's formula bit for bit; a runner
killed mid-stream loses and doubles no bar; a gap pauses the account.

Own stack, own stand-in, own data directory: independent of other files."""
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest
from helpers import assert_error
from runs_helpers import Api
from test_forward_scores import _sql
from test_runner_recovery import start_runner, stop_runners

REPO = Path(__file__).resolve().parents[2]
STANDIN = REPO / "tests" / "lib" / "binance_standin.py"
WINDOW = "binance-1m-60d"
MINUTE = 60000
FEE_BPS = 10.0

# causal: long after an up bar, short half after a down bar, flat at the first
MOMENTUM = (
    "def positions(prices, params):\n"
    "    w = [0.0]\n"
    "    for t in range(1, len(prices)):\n"
    "        w.append(1.0 if prices[t] > prices[t - 1] else -0.5)\n"
    "    return w\n"
)


def rule(prices, t):
    """The strategy's decision at bar t, recomputed here."""
    if t == 0:
        return 0.0
    return 1.0 if prices[t] > prices[t - 1] else -0.5


def _post(base, path):
    urllib.request.urlopen(urllib.request.Request(base + path, data=b"", method="POST"), timeout=5).read()


@pytest.fixture(scope="module")
def paper(stack_factory):
    """A stack fetching one asset from a stand-in with ~70 minutes of history,
    its clock 30 minutes behind (lowering the lag serves new minutes)."""
    si = subprocess.Popen([sys.executable, str(STANDIN), "--history-days", "0.05", "--lag-minutes", "30"],
                          stdout=subprocess.PIPE, text=True)
    base = "http://127.0.0.1:%d" % int(si.stdout.readline())
    data = Path(tempfile.mkdtemp(prefix="agenttest-e2e-paper-"))
    stack = stack_factory("paper", MANTIS_DATA_DIR=str(data), BINANCE_API_URL=base, MANTIS_FETCH_BACKOFF_MS=10)
    st = {"stack": stack, "base": base, "lag": 30,
          "admin": Api(stack, stack.create_token(role="admin")),
          "user": Api(stack, stack.create_token(role="user"))}
    yield st
    stop_runners(stack)
    si.kill()
    si.wait()


def prefetch(st, minutes=1):
    """Serve `minutes` more minutes, prefetch the window, return its new version's last bar."""
    st["lag"] -= minutes
    _post(st["base"], "/admin/lag?minutes=%d" % st["lag"])
    deadline = time.time() + 120
    while True:
        r = st["admin"].post("/api/data-cache/prefetch", {"days_back": 60, "assets": ["BTC"]})
        if r.status == 202:
            break
        assert r.status == 409 and time.time() < deadline, r   # the previous one still finishing
        time.sleep(0.2)
    while time.time() < deadline:
        s = st["user"].get("/api/data-cache/status?days_back=60").json()
        if s["status"] in ("completed", "failed", "cancelled"):
            break
        time.sleep(0.2)
    assert s["status"] == "completed", "prefetch %s: %s (%s)" % (s["status"], s.get("error"), s)
    d = st["user"].get("/datasets/" + s["dataset_version"])
    assert d.status == 200, d
    return d.json()["last_ts"]


def wait_paper(st, last_ts=None, state=None, timeout=90, poll=0.2):
    """GET /defaults/paper until the account reached last_ts (or state)."""
    deadline = time.time() + timeout
    while True:
        r = st["user"].get("/defaults/paper?dataset_version=" + WINDOW + "&limit=100000")
        assert r.status == 200, r
        b = r.json()
        a = b["account"]
        if (last_ts is None or a["last_ts"] >= last_ts) and (state is None or a["state"] == state):
            return b
        assert time.time() < deadline, "paper account never reached %s/%s: %s" % (last_ts, state, a)
        time.sleep(poll)


def check_curve(b, fee_bps=FEE_BPS, up=1.0, down=-0.5):
    """Contiguous bars, equity == backtest == the engine's formula recomputed here (fee_bps
    charged on |dw|; the decision after an up bar `up`, else `down`), fills consistent."""
    a, pts = b["account"], b["equity"]
    assert len(pts) == a["bars"] == (a["last_ts"] - a["start_ts"]) // MINUTE
    assert [p["ts"] for p in pts] == [a["start_ts"] + MINUTE * (i + 1) for i in range(len(pts))]
    # the strategy's decisions from the prices the account saw (the start bar's
    # price is the one before the first point: recover the decision there from
    # what the account held over the first bar)
    fee = fee_bps / 10000.0
    E, held, last = 1.0, 0.0, None
    fills = []
    for i, p in enumerate(pts):
        w = p["held"]
        if i > 0:
            prev = [pts[i - 2]["price"] if i >= 2 else None, pts[i - 1]["price"]]
            if prev[0] is not None:
                assert pts[i - 1]["decided"] == (up if prev[1] > prev[0] else down)
            assert w == pts[i - 1]["decided"]
        r = 0.0 if last is None else p["price"] / last - 1.0
        if last is None:
            # the first bar's return needs the start price: the backtest gives it
            r = None
        trade = abs(w - held)
        if r is not None:
            g = 1.0 + w * r - fee * trade
            E = E * g
            assert p["equity"] == E, (i, p, E)
        else:
            E = p["equity"]
        if trade > 0:
            fills.append((p["ts"], held, w))
        held, last = w, p["price"]
        assert p["backtest"] == p["equity"] and p["drift"] == 0.0, p
    assert [(f["ts"], f["from"], f["to"]) for f in b["fills"]] == fills
    # the metrics are those of the forward curve [1, points...] and of the account's trading
    m = b["metrics"]
    assert m["n_bars"] == len(pts) + 1
    if pts:
        assert abs(m["total_return"] - (pts[-1]["equity"] - 1.0)) <= 1e-15 * pts[-1]["equity"], m
        assert abs(m["turnover"] - sum(abs(f["to"] - f["from"]) for f in b["fills"])) <= 1e-12, m
        assert abs(m["fees_paid"] - sum(f["fee"] for f in b["fills"])) <= 1e-12, m
    if pts:
        assert a["equity"] == pts[-1]["equity"]


def promote(st, code, name, **run_fields):
    """Submit `code`, run it on the window (BTC, `run_fields`: the engine's), promote it: (version, run)."""
    v = st["user"].submit(code, name)["strategy_version_id"]
    run = st["user"].run(v, dataset_version=WINDOW, asset="BTC", **run_fields)
    assert run["status"] == "completed" and run["audit"]["passed"], run
    r = st["admin"].post("/defaults/promote", {"strategy_version_id": v, "dataset_version": WINDOW})
    assert r.status == 200, r
    return v, run


def test_paper_requires_a_label_and_an_account(paper):
    user = paper["user"]
    assert_error(user.get("/defaults/paper"), 400, "missing_field")
    assert_error(user.get("/defaults/paper?dataset_version=" + WINDOW), 404, "not_found")
    assert_error(user.get("/defaults/paper?dataset_version=%s&limit=0" % WINDOW), 400, "invalid_field")
    assert_error(user.get("/defaults/paper?dataset_version=" + "x" * 65), 400, "invalid_field")


def test_promoted_default_advances_one_bar_per_new_candle(paper):
    st = paper
    prefetch(st, 0)
    v, run = promote(st, MOMENTUM, "paper-momentum")
    b = wait_paper(st)
    a = b["account"]
    assert a["state"] == "active" and a["bars"] == 0 and a["kind"] == "positions" and a["asset"] == "BTC"
    assert a["strategy_version_id"] == v and a["run_id"] == run["run_id"]
    start = a["start_ts"]
    seen, published = start, []
    for _ in range(3):
        last = prefetch(st, 1)
        assert last > seen
        b = wait_paper(st, last_ts=last)
        # one bar per new candle (a real minute may have closed one more)
        assert b["account"]["last_ts"] == last and b["account"]["bars"] == (last - start) // MINUTE
        check_curve(b)
        paper_pts = [(p["ts"], p["price"], p["held"], p["decided"], p["equity"]) for p in b["equity"]]
        assert paper_pts[:len(published)] == published   # the past is never recomputed
        seen, published = last, paper_pts
    assert b["account"]["state"] == "active"
    assert any(f for f in b["fills"])   # the rule changes position on this data
    # Prometheus: the account's equity and bars (GET /metrics from loopback)
    m = st["stack"].get("/metrics")
    assert m.status == 200, m
    lines = {ln.split(" ")[0]: ln.split(" ")[1] for ln in m.body.decode().splitlines() if ln.startswith("agenttest_paper_")}
    key = '{dataset_version="%s",state="active"}' % WINDOW
    assert float(lines["agenttest_paper_equity" + key]) == b["account"]["equity"]
    assert int(lines["agenttest_paper_bars" + key]) == b["account"]["bars"]


# MOMENTUM's decisions, each call made slow (a busy loop): a step over a few bars
# lasts seconds, so the runner holding it can be killed in the middle of it
SLOW_MOMENTUM = (
    "def positions(prices, params):\n"
    "    s = 0\n"
    "    for i in range(2000000):\n"
    "        s += i\n"
    "    w = [0.0]\n"
    "    for t in range(1, len(prices)):\n"
    "        w.append(1.0 if prices[t] > prices[t - 1] else -0.5)\n"
    "    return w\n"
)


def _settled_steps(st, account_id, timeout=120):
    """Ids of the account's steps once none is queued or running (all ended)."""
    deadline = time.time() + timeout
    while True:
        rows = _sql(st["stack"], "SELECT id, status FROM paper_steps WHERE account_id = " + str(int(account_id)))
        if all(r[1] not in ("queued", "running") for r in rows):
            return {r[0] for r in rows}
        assert time.time() < deadline, "paper steps of account %s never ended: %s" % (account_id, rows)
        time.sleep(0.05)


def _running_step(st, account_id, timeout=120, besides=()):
    """(step id, lease owner pid) of the account's step once a runner holds it (not one of `besides`)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        rows = _sql(st["stack"], "SELECT id, lease_owner FROM paper_steps WHERE account_id = " + str(int(account_id))
                    + " AND status = 'running' AND lease_owner IS NOT NULL")
        rows = [r for r in rows if r[0] not in besides]
        if rows:
            return rows[0][0], int(rows[0][1].split(":")[1])
        time.sleep(0.05)
    raise AssertionError("no running paper step of account %s" % account_id)


def test_restart_mid_stream_loses_and_doubles_no_bar(paper):
    """A runner SIGKILLed while it holds a step (several bars decided, none written): the
    step is claimed again by the other runner after the lease, which starts from the last
    written bar; the curve has every bar once."""
    st = paper
    stack = st["stack"]
    start_runner(stack, "paper-runner-b")
    prefetch(st, 0)
    v, _ = promote(st, SLOW_MOMENTUM, "paper-slow-momentum")
    a0 = wait_paper(st, timeout=180)["account"]
    assert a0["strategy_version_id"] == v and a0["bars"] == 0, a0
    # the promotion's own step (the first decision) must have ended first: the step killed
    # below is the one serving the new bars, not that one (else the new bars' step runs on
    # the other runner and writes every bar while the killed one waits out its lease). Had
    # it been still queued here, a later snapshot would have missed it once claimed, and
    # the kill could hit it instead (CI, stop 26).
    earlier = _settled_steps(st, a0["id"])
    last = prefetch(st, 6)
    step, pid = _running_step(st, a0["id"], besides=earlier)
    os.kill(pid, signal.SIGKILL)   # mid-step: the bars it decided are in no committed row
    b = wait_paper(st, last_ts=last, timeout=240)
    check_curve(b)
    assert b["account"]["bars"] == (last - a0["start_ts"]) // MINUTE, b["account"]
    (attempts, status), = _sql(stack, "SELECT attempts, status FROM paper_steps WHERE id = %s", step)
    assert status == "completed" and int(attempts) == 2, (attempts, status)   # redone once, by the other runner
    last = prefetch(st, 2)
    b = wait_paper(st, last_ts=last, timeout=180)
    check_curve(b)
    assert b["account"]["state"] == "active"


CUMULATIVE = (
    "def simulate(prices, params):\n"
    "    e = [1.0]\n"
    "    for t in range(1, len(prices)):\n"
    "        e.append(e[-1] * prices[t] / prices[t - 1])\n"
    "    return e\n"
)
# passes the audit (a prefix keeps prices[0]), but its exposure depends on the
# window's first price, which moves with every version: its past changes
STARTDEP = (
    "def simulate(prices, params):\n"
    "    k = 0.1 + (prices[0] * 1e6) % 1.0 * 0.8\n"
    "    e = [1.0]\n"
    "    for t in range(1, len(prices)):\n"
    "        e.append(e[-1] * (1.0 + k * (prices[t] / prices[t - 1] - 1.0)))\n"
    "    return e\n"
)


def test_simulate_forward_rule_appends_and_flags_changed_points(paper):
    """simulate: re-run on the grown series, only new points published; a
    strategy whose published past changes is flagged (causality violation)."""
    st = paper
    prefetch(st, 0)
    v, _ = promote(st, CUMULATIVE, "paper-cumulative")
    a0 = wait_paper(st)["account"]
    assert a0["strategy_version_id"] == v and a0["kind"] == "simulate" and a0["bars"] == 0
    last = prefetch(st, 2)
    b = wait_paper(st, last_ts=last)
    published = [(p["ts"], p["equity"]) for p in b["equity"]]
    last = prefetch(st, 1)
    b = wait_paper(st, last_ts=last)
    assert [(p["ts"], p["equity"]) for p in b["equity"]][:len(published)] == published   # never rewritten
    assert b["account"]["bars"] == (last - a0["start_ts"]) // MINUTE and b["account"]["causality_violations"] == 0
    E = b["equity"][0]["equity"]   # the first growth needs the start bar's price
    for i, p in enumerate(b["equity"]):
        assert p["held"] is None and p["decided"] is None
        assert abs(p["equity"] - p["backtest"]) <= 1e-12 * p["equity"], p   # growth ratios of two windows
        if i:
            E *= p["price"] / b["equity"][i - 1]["price"]
            assert abs(p["equity"] - E) <= 1e-12 * E, (i, p, E)
    # the window-start-dependent one: its re-runs change the growth it published
    promote(st, STARTDEP, "paper-startdep")
    for _ in range(2):
        last = prefetch(st, 1)
        b = wait_paper(st, last_ts=last)
    acc = b["account"]
    assert acc["causality_violations"] >= 1 and acc["first_violation_ts"] is not None, acc
    assert acc["first_violation_ts"] <= acc["last_ts"]
    # back to the positions default for the gap test (a fresh account from the last bar)
    promote(st, MOMENTUM, "paper-momentum")
    wait_paper(st)


# MOMENTUM three times over: 3.0 after an up bar, -1.5 after a down bar
LEVERED = MOMENTUM.replace("1.0 if", "3.0 if").replace("else -0.5", "else -1.5")


def test_paper_trades_with_the_runs_fees_and_leverage_bound(paper):
    """The account takes fee_bps and max_leverage from the run it was promoted on: exposures
    above the bound are clamped to it as in the backtest, the fee is the run's."""
    st = paper
    prefetch(st, 0)
    v, _ = promote(st, LEVERED, "paper-levered", fee_bps=25, max_leverage=2)
    a0 = wait_paper(st)["account"]
    assert a0["strategy_version_id"] == v and a0["fee_bps"] == 25 and a0["max_leverage"] == 2, a0
    last = prefetch(st, 3)
    b = wait_paper(st, last_ts=last)
    check_curve(b, fee_bps=25, up=2.0, down=-1.5)   # 3.0 clamped to 2; -1.5 within the bound
    assert any(p["held"] == 2.0 for p in b["equity"]) or any(p["decided"] == 2.0 for p in b["equity"]), b["equity"]
    # back to the positions default for the gap test (a fresh account from the last bar)
    promote(st, MOMENTUM, "paper-momentum")
    wait_paper(st)


def test_a_gap_pauses_the_account(paper):
    st = paper
    a = wait_paper(st)["account"]
    # the next two minutes after what the window holds now never arrive
    hole_from = a["last_ts"] + MINUTE
    _post(st["base"], "/admin/gap?symbol=BTCUSDT&from=%d&to=%d" % (hole_from, hole_from + MINUTE))
    prefetch(st, 4)
    b = wait_paper(st, state="paused")
    acc = b["account"]
    assert "gap" in acc["pause_reason"] and str(hole_from) in acc["pause_reason"], acc
    assert acc["pinned_version"] is None, acc   # a paused account reads no more: no pin (sql/030)
    assert acc["last_ts"] < hole_from
    assert all(p["ts"] < hole_from for p in b["equity"])
    check_curve(b)
    # a later refresh does not fill across the gap either (a paused account gets no step)
    prefetch(st, 1)
    again = wait_paper(st, state="paused")
    assert again["account"]["last_ts"] == acc["last_ts"] and len(again["equity"]) == len(b["equity"])

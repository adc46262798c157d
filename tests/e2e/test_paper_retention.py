"""Paper accounts and dataset retention (docs/paper-trading.md, "Dataset
versions and retention"; sql/030): an account pins the version its steps
read, so retention keeping one version per window (MANTIS_DATA_KEEP_VERSIONS=1)
never retires the version the account reads, and retires it once the account
has moved on; a step whose version is missing on disk fails with the reason
recorded, the account stays active and is advanced on the label's next version
from its last stored bar, without a lost or a doubled bar.

Own stack, own Binance stand-in, own data directory: independent of other files."""
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from runs_helpers import Api
from test_paper import MINUTE, MOMENTUM, STANDIN, WINDOW, _post, check_curve, wait_paper
from test_runner_recovery import stop_runners

ALWAYS_LONG = (
    "def positions(prices, params):\n"
    "    return [1.0 for _ in prices]\n"
)


@pytest.fixture(scope="module")
def pin(stack_factory):
    """A stack keeping one version per window, fed by a stand-in 30 minutes behind."""
    si = subprocess.Popen([sys.executable, str(STANDIN), "--history-days", "0.05", "--lag-minutes", "30"],
                          stdout=subprocess.PIPE, text=True)
    base = "http://127.0.0.1:%d" % int(si.stdout.readline())
    data = Path(tempfile.mkdtemp(prefix="agenttest-e2e-paper-pin-"))
    stack = stack_factory("paper-pin", MANTIS_DATA_DIR=str(data), BINANCE_API_URL=base, MANTIS_FETCH_BACKOFF_MS=10,
                          MANTIS_DATA_KEEP_VERSIONS=1)
    st = {"stack": stack, "base": base, "lag": 30, "data": data,
          "admin": Api(stack, stack.create_token(role="admin")),
          "user": Api(stack, stack.create_token(role="user"))}
    yield st
    stop_runners(stack)
    si.kill()
    si.wait()
    shutil.rmtree(data, ignore_errors=True)


def prefetch(st, minutes=1):
    """Serve `minutes` more minutes, prefetch the window: (its new version, that version's last bar)."""
    st["lag"] -= minutes
    _post(st["base"], "/admin/lag?minutes=%d" % st["lag"])
    deadline = time.time() + 120
    while True:
        r = st["admin"].post("/api/data-cache/prefetch", {"days_back": 60, "assets": ["BTC"]})
        if r.status == 202:
            break
        assert r.status == 409 and time.time() < deadline, r
        time.sleep(0.2)
    while time.time() < deadline:
        s = st["user"].get("/api/data-cache/status?days_back=60").json()
        if s["status"] in ("completed", "failed", "cancelled"):
            break
        time.sleep(0.2)
    assert s["status"] == "completed", s
    d = st["user"].get("/datasets/" + s["dataset_version"])
    assert d.status == 200, d
    return s["dataset_version"], d.json()["last_ts"]


def version_dir(st, version):
    """The directory of a registered version (its bytes, by hash)."""
    d = st["user"].get("/datasets/" + version)
    assert d.status == 200, d
    return st["data"] / "versions" / d.json()["dataset_hash"]


def registered(st, version):
    r = st["user"].get("/datasets/" + version)
    assert r.status in (200, 404), r
    return r.status == 200


def test_retention_keeps_the_version_the_account_reads(pin):
    st = pin
    v0, _ = prefetch(st, 0)
    sv = st["user"].submit(MOMENTUM, "pin-momentum")["strategy_version_id"]
    run = st["user"].run(sv, dataset_version=WINDOW, asset="BTC")   # pins v0 (a run)
    assert run["status"] == "completed", run
    r = st["admin"].post("/defaults/promote", {"strategy_version_id": sv, "dataset_version": WINDOW})
    assert r.status == 200, r
    deadline = time.time() + 90
    while (a := wait_paper(st)["account"])["last_step"] is None:   # the promotion's first step
        assert time.time() < deadline, a
        time.sleep(0.2)
    assert a["pinned_version"] == v0 and a["last_step"]["status"] == "completed", a
    versions = [v0]
    for _ in range(3):
        before = a["pinned_version"]
        ver, last = prefetch(st, 1)
        # retention kept one version (the new one) plus what is pinned: the
        # version the account read when the prefetch ran is among them
        assert registered(st, before) and version_dir(st, before).is_dir(), before
        b = wait_paper(st, last_ts=last)
        a = b["account"]
        assert a["pinned_version"] == ver and a["last_step"]["dataset_version"] == ver, a
        assert a["state"] == "active" and a["last_ts"] == last
        check_curve(b)
        versions.append(ver)
    # the version pinned by the account only (versions[1]) went once the
    # account read a newer one and a later prefetch ran; the run's v0 stays
    assert not registered(st, versions[1])
    assert registered(st, v0)


def test_a_version_missing_on_disk_fails_the_step_and_the_next_version_continues(pin):
    st = pin
    b0 = wait_paper(st)
    a0 = b0["account"]
    assert a0["state"] == "active"
    missing = a0["pinned_version"]
    # a candidate with a qualifying run, run before the files go (its nomination queues a step)
    cv = st["user"].submit(ALWAYS_LONG, "pin-always-long")["strategy_version_id"]
    run = st["user"].run(cv, dataset_version=WINDOW, asset="BTC")
    assert run["status"] == "completed" and run["audit"]["passed"], run
    # the bytes of the version the label (and the account) point at vanish from disk
    shutil.rmtree(version_dir(st, missing))
    r = st["admin"].post("/defaults/candidates", {"strategy_version_id": cv, "dataset_version": WINDOW})
    assert r.status == 201, r
    deadline = time.time() + 90
    while True:
        a = st["user"].get("/defaults/paper?dataset_version=" + WINDOW).json()["account"]
        s = a["last_step"]
        if s["status"] == "failed":
            break
        assert time.time() < deadline, a
        time.sleep(0.2)
    assert s["error_code"] == "dataset_missing" and s["dataset_version"] == missing, s
    assert missing in s["error_message"] and str(a0["last_ts"]) in s["error_message"], s
    assert str(st["data"]) not in s["error_message"], s   # no server path in the API
    # the account is not paused and did not move: the label still points at the missing version
    assert a["state"] == "active" and a["last_ts"] == a0["last_ts"] and a["bars"] == a0["bars"], a
    # the next version: the step starts again from the last stored bar
    ver, last = prefetch(st, 2)
    b = wait_paper(st, last_ts=last)
    a = b["account"]
    assert a["state"] == "active" and a["pinned_version"] == ver, a
    assert a["last_step"]["status"] == "completed" and a["last_step"]["dataset_version"] == ver, a
    assert a["bars"] == a0["bars"] + (last - a0["last_ts"]) // MINUTE
    check_curve(b)   # contiguous bars, each once, equity == backtest == the engine's formula
    assert [p["ts"] for p in b["equity"]][:len(b0["equity"])] == [p["ts"] for p in b0["equity"]]
    assert [p["equity"] for p in b["equity"]][:len(b0["equity"])] == [p["equity"] for p in b0["equity"]]

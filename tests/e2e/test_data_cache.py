"""GET /api/data-cache reports what `agenttest data fetch` stored under
MANTIS_DATA_DIR, in the original's shape (spec/mantis.md §5.3); a fetched
version, registered, evaluates end to end through POST /api/evaluations."""
import concurrent.futures
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pytest
from runs_helpers import BUY_AND_HOLD, REMOTE, Api
from test_challenges import MOMENTUM, wait_done
from test_runner_recovery import start_runner

REPO = Path(__file__).resolve().parents[2]
BIN = Path(os.environ.get("AGENTTEST_BIN", REPO / "bin"))
STANDIN = REPO / "tests" / "lib" / "binance_standin.py"


def test_data_cache_reports_fetched_windows(stack_factory):
    data = Path(tempfile.mkdtemp(prefix="agenttest-e2e-data-"))
    stack = stack_factory("datacache", MANTIS_DATA_DIR=str(data))
    r = stack.get("/api/data-cache")
    assert r.status == 200, r
    body = r.json()
    assert sorted(body, key=int) == ["60", "90", "120", "180", "365"]
    assert all(body[k] == {"cached": False} for k in body)

    si = subprocess.Popen([sys.executable, str(STANDIN), "--gap-symbol", "ETHUSDT"], stdout=subprocess.PIPE, text=True)
    try:
        port = int(si.stdout.readline())
        env = dict(os.environ, BINANCE_API_URL="http://127.0.0.1:%d" % port, AGENTTEST_CONFIG="/dev/null",
                   MANTIS_DATA_DIR=str(data))
        f = subprocess.run([str(BIN / "agenttest"), "data", "fetch", "--days-back", "60", "--assets", "BTC,ETH",
                            "--no-pace", "--parallel", "2"], env=env, capture_output=True, text=True, timeout=300)
        assert f.returncode == 0, f.stderr
        fetched = json.loads(f.stdout)
    finally:
        si.kill()
        si.wait()

    w = stack.get("/api/data-cache").json()["60"]
    assert w["cached"] is True and w["source"] == "binance"
    assert w["assets"] == 2 and w["expected_assets"] == 29
    assert w["dataset_hash"] == fetched["dataset_hash"] and w["version"] == fetched["version"]
    assert w["has_coinglass"] is False and w["complete"] is False  # 2 of 29 assets
    assert w["coinglass_assets"] == 0 and w["coinglass_key_set"] is False
    assert 0 <= w["age_hours"] < 1
    btc, eth = w["per_asset"]["BTC"], w["per_asset"]["ETH"]
    assert btc["rows"] == btc["expected"] == fetched["bars"] and btc["pct"] == 100.0
    assert eth["rows"] == fetched["quality"]["ETH"]["rows"] < eth["expected"]
    want = 29 * 60 * 1440
    assert abs(w["row_pct"] - 100.0 * (btc["rows"] + eth["rows"]) / want) < 1e-9
    assert stack.get("/api/data-cache").json()["90"] == {"cached": False}

    # `complete` is 90 % of 29 assets x days x 1440 rows, at the boundary: a
    # 90-day window of 29 assets laid out as a fetch stores it (the label,
    # the version's manifest and its quality report), each asset with
    # exactly 90 % of its minutes, then one row fewer.
    names = ["A%02d" % i for i in range(29)]
    fake = "f" * 64
    vdir = data / "versions" / fake
    vdir.mkdir(parents=True)
    (vdir / "manifest.json").write_text(json.dumps(
        {"dataset_hash": fake, "version": "binance-1m-90d-test", "assets": names, "bars": 90 * 1440,
         "fields": ["open", "high", "low", "close", "volume"]}))
    os.symlink("versions/" + fake, data / "binance-1m-90d")
    quality = data / "versions" / (fake + ".quality.json")
    for short, complete in ((0, True), (1, False)):
        rows = {a: {"rows": 116640, "expected": 90 * 1440} for a in names}   # 0.9 x 90 x 1440
        rows["A07"]["rows"] -= short
        quality.write_text(json.dumps(rows))
        w = stack.get("/api/data-cache").json()["90"]
        assert w["cached"] is True and w["assets"] == 29 and w["complete"] is complete, (short, w["row_pct"])
        assert w["per_asset"]["A07"] == {"rows": 116640 - short, "expected": 129600,
                                         "pct": 100.0 * (116640 - short) / 129600}


def test_fetched_data_evaluates_end_to_end(stack, tmp_path):
    """A fetched version, registered, scores through POST /api/evaluations."""
    data = tmp_path / "data"
    si = subprocess.Popen([sys.executable, str(STANDIN)], stdout=subprocess.PIPE, text=True)
    try:
        port = int(si.stdout.readline())
        env = dict(os.environ, BINANCE_API_URL="http://127.0.0.1:%d" % port, AGENTTEST_CONFIG="/dev/null")
        f = subprocess.run([str(BIN / "agenttest"), "data", "fetch", "--days-back", "8", "--assets", "BTC,ETH",
                            "--data-dir", str(data), "--no-pace"], env=env, capture_output=True, text=True,
                           timeout=300)
        assert f.returncode == 0, f.stderr
        fetched = json.loads(f.stdout)
    finally:
        si.kill()
        si.wait()
    reg = stack.cli("dataset", "register", fetched["path"], "--version", fetched["version"])
    assert reg.returncode == 0, reg.stderr
    api = Api(stack, stack.create_token(role="user"))
    r = api.post("/api/evaluations", {"challenge": "ETH-1H-BINARY", "code": MOMENTUM, "days_back": 7,
                                      "holdout_days": 2, "dataset_version": fetched["version"]})
    assert r.status == 202, r
    e = wait_done(api, r.json()["id"])
    assert e["status"] == "completed", e
    assert e["dataset_version"] == fetched["version"]
    assert e["result"]["eval_holdout_minutes"] == 2 * 1440
    assert 0.0 <= e["score"] <= 1.0


def test_cli_fetch_registers_and_moves_the_label_like_the_prefetch(stack, tmp_path):
    """With DATABASE_URL configured, `agenttest data fetch` registers its
    version (the prefetch job's code, market/register.c) and points the
    window's label at it; a refresh registers the new version and moves the
    label; the label then evaluates on the newest version through POST
    /api/evaluations, with no `dataset register` step."""
    import secrets
    window = "clireg-" + secrets.token_hex(4)
    si, base = _standin("--lag-minutes", "90")
    try:
        env = dict(stack.cli_env(), BINANCE_API_URL=base)
        args = [str(BIN / "agenttest"), "data", "fetch", "--data-dir", str(tmp_path / "data"), "--window", window,
                "--no-pace"]

        def run(*extra):
            f = subprocess.run(args + list(extra), env=env, capture_output=True, text=True, timeout=300)
            assert f.returncode == 0, f.stderr
            return json.loads(f.stdout)
        first = run("--days-back", "8", "--assets", "BTC,ETH")
        assert first["registered"] is True and "notice" not in first, first
        reg = stack.get("/datasets/" + first["version"])
        assert reg.status == 200 and reg.json()["dataset_hash"] == first["dataset_hash"], reg
        assert _sql(stack, "SELECT d.version FROM dataset_labels l JOIN datasets d ON d.id = l.dataset_id "
                           "WHERE l.label = '%s'" % window).split() == [first["version"]]
        _standin_post(base, "/admin/lag?minutes=0")
        new = run("--refresh")
        assert new["registered"] is True and new["rows_added"] > 0 and new["version"] != first["version"], new
        rows = _sql(stack, "SELECT version, dataset_hash, bars, window_label FROM datasets WHERE version LIKE '%s-%%' "
                           "ORDER BY id" % window).splitlines()
        assert [r.split("\t") for r in rows] == [
            [first["version"], first["dataset_hash"], str(first["bars"]), window],
            [new["version"], new["dataset_hash"], str(new["bars"]), window]], rows
        assert _sql(stack, "SELECT d.version FROM dataset_labels l JOIN datasets d ON d.id = l.dataset_id "
                           "WHERE l.label = '%s'" % window).split() == [new["version"]]
    finally:
        si.kill()
        si.wait()
    api = Api(stack, stack.create_token(role="user"))
    r = api.post("/api/evaluations", {"challenge": "ETH-1H-BINARY", "code": MOMENTUM, "days_back": 7,
                                      "holdout_days": 2, "dataset_version": window})
    assert r.status == 202, r
    e = wait_done(api, r.json()["id"])
    assert e["status"] == "completed", e
    assert e["dataset_version"] == new["version"]
    assert 0.0 <= e["score"] <= 1.0


# ---- the prefetch job (POST /api/data-cache/prefetch, status, delete) ------

TWO = ["BTC", "ETH"]


def _standin(*args):
    """Start the Binance stand-in; returns (process, base URL)."""
    si = subprocess.Popen([sys.executable, str(STANDIN), *args], stdout=subprocess.PIPE, text=True)
    return si, "http://127.0.0.1:%d" % int(si.stdout.readline())


def _standin_post(base, path):
    import urllib.request
    urllib.request.urlopen(urllib.request.Request(base + path, data=b"", method="POST"), timeout=5).read()


def _wait_prefetch(api, days, timeout=120):
    deadline = time.time() + timeout
    while time.time() < deadline:
        s = api.get("/api/data-cache/status?days_back=%d" % days).json()
        if s["status"] in ("completed", "failed", "cancelled"):
            return s
        time.sleep(0.3)
    raise AssertionError("prefetch of %d days not done: %s" % (days, s))


@pytest.fixture(scope="module")
def prefetch_stack(stack_factory):
    """A stack whose runner fetches from a stand-in with 2 days of history
    (so a 60-day window is 3 pages per asset) into its own data directory,
    keeping 2 versions per window."""
    si, base = _standin("--history-days", "2")
    data = Path(tempfile.mkdtemp(prefix="agenttest-e2e-prefetch-"))
    stack = stack_factory("prefetch", MANTIS_DATA_DIR=str(data), BINANCE_API_URL=base, MANTIS_DATA_KEEP_VERSIONS=2)
    yield stack, base, data
    for p in getattr(stack, "extra_runners", []):
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(timeout=40)
            except subprocess.TimeoutExpired:
                p.kill()
    si.kill()
    si.wait()


def test_prefetch_one_job_per_window_durable_status(prefetch_stack):
    stack, base, data = prefetch_stack
    admin = Api(stack, stack.create_token(role="admin"))
    user = Api(stack, stack.create_token(role="user"))
    s = user.get("/api/data-cache/status").json()
    assert s["running"] is False and s["status"] is None and s["finished_at"] is None

    # the first pages are slow, so the first job is still running when the second asks
    _standin_post(base, "/admin/faults?list=slow,slow")
    with concurrent.futures.ThreadPoolExecutor(2) as ex:
        rs = list(ex.map(lambda _: admin.post("/api/data-cache/prefetch", {"days_back": 60, "assets": TWO}),
                         range(2)))
    assert sorted(r.status for r in rs) == [202, 409], rs
    ok = next(r.json() for r in rs if r.status == 202)
    busy = next(r.json() for r in rs if r.status == 409)
    assert ok["status"] == "started" and ok["days_back"] == 60 and ok["window"] == "binance-1m-60d"
    assert busy["status"] == "already_running" and busy["code"] == "conflict" and busy["id"] == ok["id"]
    # any worker answers the same durable status while it runs
    s = user.get("/api/data-cache/status?days_back=60").json()
    assert s["id"] == ok["id"] and s["running"] is True and s["total_steps"] == 2
    # another window is not blocked
    r90 = admin.post("/api/data-cache/prefetch", {"days_back": 90, "assets": TWO})
    assert r90.status == 202, r90

    done = _wait_prefetch(user, 60)
    assert done["status"] == "completed", done
    assert done["running"] is False and done["error"] is None and done["error_code"] is None
    assert done["progress"] == done["assets_done"] == done["total_steps"] == 2
    assert 2 * 2 * 1440 - 4 <= done["rows_fetched"] <= 2 * 2 * 1440 + 4
    assert done["dataset_version"].startswith("binance-1m-60d-")
    assert isinstance(done["finished_at"], float) and abs(done["finished_at"] - time.time()) < 300
    # the label, the cache report and the datasets registry agree
    w = user.get("/api/data-cache").json()["60"]
    assert w["cached"] is True and w["dataset_hash"] == done["dataset_hash"] and w["assets"] == 2
    reg = user.get("/datasets/" + done["dataset_version"])
    assert reg.status == 200 and reg.json()["dataset_hash"] == done["dataset_hash"], reg
    # the window is free again
    assert _wait_prefetch(user, 90)["status"] == "completed"


def _wait_status(api, days, pred, timeout=90):
    """Poll GET /api/data-cache/status?days_back=days until pred(status)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        s = api.get("/api/data-cache/status?days_back=%d" % days).json()
        if pred(s):
            return s
        assert s["status"] in ("queued", "running"), s
        time.sleep(0.2)
    raise AssertionError("status of %d days never got there: %s" % (days, s))


def test_prefetch_progress_is_visible_mid_fetch_and_increases(prefetch_stack):
    """The stand-in holds ETH and SOL until the test releases them: while the
    prefetch waits, GET /api/data-cache/status shows 1 of 3 assets and BTC's
    candles; releasing SOL moves it to 2 with more candles; releasing ETH
    completes it (progress strictly between 0 and the total, increasing)."""
    stack, base, data = prefetch_stack
    admin = Api(stack, stack.create_token(role="admin"))
    _standin_post(base, "/admin/hold?symbols=ETHUSDT,SOLUSDT")
    try:
        r = admin.post("/api/data-cache/prefetch", {"days_back": 240, "assets": ["BTC", "ETH", "SOL"]})
        assert r.status == 202, r
        one = _wait_status(admin, 240, lambda s: s["assets_done"] >= 1)
        assert one["running"] is True and one["total_steps"] == 3, one
        assert one["progress"] == one["assets_done"] == 1, one
        assert 1440 <= one["rows_fetched"] <= 2 * 1440 + 4, one   # BTC's two days, nothing of ETH or SOL
        assert one["step"] == "fetching 1m candles: 1/3 assets, %d candles" % one["rows_fetched"], one
        time.sleep(1.0)   # held: nothing moves
        still = admin.get("/api/data-cache/status?days_back=240").json()
        assert (still["progress"], still["rows_fetched"], still["running"]) == (1, one["rows_fetched"], True), still
        _standin_post(base, "/admin/release?symbols=SOLUSDT")
        two = _wait_status(admin, 240, lambda s: s["assets_done"] >= 2)
        assert two["running"] is True and two["progress"] == 2 < two["total_steps"], two
        assert two["rows_fetched"] >= one["rows_fetched"] + 1440, (one, two)
    finally:
        _standin_post(base, "/admin/release")
    done = _wait_prefetch(admin, 240)
    assert done["status"] == "completed", done
    assert done["progress"] == done["total_steps"] == 3 and done["step"] == "done", done
    assert done["rows_fetched"] >= two["rows_fetched"] + 1440, (two, done)


def test_prefetch_validation_and_access(prefetch_stack):
    stack = prefetch_stack[0]
    admin = Api(stack, stack.create_token(role="admin"))
    user = Api(stack, stack.create_token(role="user"))
    for body, field in (({"days_back": 59}, "days_back"), ({"days_back": 366}, "days_back"),
                        ({"days_back": "60"}, "days_back"), ({"assets": ["NOPE"]}, "assets"),
                        ({"assets": []}, "assets"), ({"assets": ["BTC", "BTC"]}, "assets"),
                        ({"coinglass_key": "bad key!"}, "coinglass_key"), ({"coinglass_key": ""}, "coinglass_key"),
                        ({"coinglass_key": "k" * 257}, "coinglass_key"), ({"coinglass_key": 7}, "coinglass_key")):
        r = admin.post("/api/data-cache/prefetch", body)
        assert r.status == 400 and r.json()["code"] in ("invalid_field", "bad_request"), (body, r)
        assert field in r.json()["detail"], (body, r)
    assert user.post("/api/data-cache/prefetch", {}).status == 403
    assert user.post("/api/data-cache/delete", {"days_back": 60}).status == 403
    assert user.get("/api/data-cache/status?days_back=7").status == 400


DATA_CACHE_ROUTES = [("GET", "/api/data-cache", None), ("POST", "/api/data-cache/prefetch", {"days_back": 60}),
                     ("GET", "/api/data-cache/status", None), ("POST", "/api/data-cache/delete", {"days_back": 60}),
                     ("GET", "/api/coinglass-key", None), ("POST", "/api/coinglass-key", {"key": "k0123456789"}),
                     ("DELETE", "/api/coinglass-key", None)]


@pytest.mark.parametrize("method,path,body", DATA_CACHE_ROUTES)
def test_data_cache_routes_need_a_credential(prefetch_stack, method, path, body):
    """Every data-cache and coinglass-key route: no credential or a bad token
    from a remote address is 401 and changes nothing."""
    stack = prefetch_stack[0]
    user = Api(stack, stack.create_token(role="user"))
    before = user.get("/api/data-cache/status").json(), user.get("/api/coinglass-key").json()
    for token in (None, "x" * 43):
        r = stack.request(method, path, json_body=body, token=token, source=REMOTE)
        assert r.status == 401 and r.json()["code"] == "unauthorized", (token, r)
    assert (user.get("/api/data-cache/status").json(), user.get("/api/coinglass-key").json()) == before


def test_delete_refuses_pinned_versions_and_running_prefetches(prefetch_stack):
    stack, base, data = prefetch_stack
    admin = Api(stack, stack.create_token(role="admin"))
    user = Api(stack, stack.create_token(role="user"))
    # a version pinned by an evaluation cannot be deleted
    r = admin.post("/api/data-cache/prefetch", {"days_back": 120, "assets": TWO})
    assert r.status == 202, r
    v = _wait_prefetch(user, 120)
    assert v["status"] == "completed", v
    # the window's moving label is accepted and pins the version it points at
    e = user.post("/api/evaluations", {"challenge": "ETH-1H-BINARY", "code": MOMENTUM, "days_back": 1,
                                       "holdout_days": 0.5, "dataset_version": "binance-1m-120d"})
    assert e.status == 202, e
    assert e.json()["dataset_version"] == v["dataset_version"], e
    sv = user.submit(BUY_AND_HOLD, "bh-window-label")["strategy_version_id"]
    run = user.run(sv, dataset_version="binance-1m-120d", wait=0, audit=False)
    assert run["dataset_version"] == v["dataset_version"], run
    d = admin.post("/api/data-cache/delete", {"days_back": 120})
    assert d.status == 409 and d.json()["code"] == "conflict", d
    assert (data / "binance-1m-120d").is_symlink()
    assert user.get("/datasets/" + v["dataset_version"]).status == 200
    wait_done(user, e.json()["id"])
    user.wait_run(run["run_id"])

    # a window with a prefetch queued or running cannot be deleted
    _standin_post(base, "/admin/faults?list=slow,slow")
    r = admin.post("/api/data-cache/prefetch", {"days_back": 180, "assets": ["BTC", "SOL"]})
    assert r.status == 202, r
    d = admin.post("/api/data-cache/delete", {"days_back": 180})
    assert d.status == 409 and d.json()["status"] == "already_running", d
    v = _wait_prefetch(user, 180)
    assert v["status"] == "completed", v
    vdir = data / "versions" / v["dataset_hash"]
    assert vdir.is_dir()

    # unpinned: the label, the version, its report and its registration go
    d = admin.post("/api/data-cache/delete", {"days_back": 180})
    assert d.status == 200, d
    assert d.json() == {"status": "deleted", "days_back": 180, "window": "binance-1m-180d",
                        "deleted": [v["dataset_version"]], "kept": []}
    assert not (data / "binance-1m-180d").exists() and not vdir.exists()
    assert not (data / "versions" / (v["dataset_hash"] + ".quality.json")).exists()
    assert not (data / "versions" / (v["dataset_hash"] + ".midstate")).exists()
    assert user.get("/datasets/" + v["dataset_version"]).status == 404
    assert user.get("/api/data-cache").json()["180"] == {"cached": False}
    gone = user.post("/api/evaluations", {"challenge": "ETH-1H-BINARY", "code": MOMENTUM, "days_back": 1,
                                          "holdout_days": 0.5, "dataset_version": "binance-1m-180d"})
    assert gone.status == 404 and gone.json()["code"] == "not_found", gone
    # the other windows are untouched
    assert user.get("/api/data-cache").json()["120"]["cached"] is True


def test_coinglass_key_encrypted_masked_admin_only(prefetch_stack):
    stack = prefetch_stack[0]
    admin = Api(stack, stack.create_token(role="admin"))
    user = Api(stack, stack.create_token(role="user"))
    key = "cg0123456789abcdef0123456789wxyz"
    assert user.get("/api/coinglass-key").json() == {"set": False, "masked": None}
    for bad in ("", "has space", "semi;colon", "x" * 257):
        r = admin.post("/api/coinglass-key", {"key": bad})
        assert r.status == 400 and r.json()["code"] == "invalid_field", (bad, r)
    assert admin.post("/api/coinglass-key", {}).json()["code"] == "missing_field"
    assert admin.post("/api/coinglass-key", {"key": key, "x": 1}).status == 400
    assert user.post("/api/coinglass-key", {"key": key}).status == 403
    r = admin.post("/api/coinglass-key", {"key": key})
    assert r.status == 200 and r.json() == {"set": True, "masked": "cg01...wxyz"}, r
    assert user.get("/api/coinglass-key").json() == {"set": True, "masked": "cg01...wxyz"}
    assert all(w["coinglass_key_set"] is True for w in user.get("/api/data-cache").json().values() if w["cached"])
    assert user.req("DELETE", "/api/coinglass-key").status == 403
    r = admin.req("DELETE", "/api/coinglass-key")
    assert r.status == 200 and r.json() == {"set": False}, r
    assert user.get("/api/coinglass-key").json() == {"set": False, "masked": None}
    assert admin.req("DELETE", "/api/coinglass-key").json() == {"set": False}
    # the key never reaches a log
    for f in (stack.var / "log").glob("*.log"):
        assert key not in f.read_text(errors="replace"), f


def _versions(stack, window):
    """Registered versions of a window, oldest first: [(version, hash)]."""
    rows = [json.loads(line) for line in stack.cli("dataset", "list").stdout.splitlines()]
    return [(r["version"], r["dataset_hash"]) for r in rows if r["version"].startswith(window + "-")]


def test_cli_prefetch_queues_jobs_like_the_api(prefetch_stack):
    """`agenttest data prefetch` (what the systemd timer runs) queues the same jobs."""
    stack, base, data = prefetch_stack
    user = Api(stack, stack.create_token(role="user"))
    _standin_post(base, "/admin/faults?list=slow,slow")
    r = stack.cli("data", "prefetch", "--days-back", "60,90", "--assets", "BTC,ETH")
    lines = [json.loads(x) for x in r.stdout.splitlines()]
    assert [(x["days_back"], x["status"]) for x in lines] == [(60, "started"), (90, "started")], lines
    again = stack.cli("data", "prefetch", "--days-back", "60", "--assets", "BTC,ETH")
    assert json.loads(again.stdout) == {"days_back": 60, "window": "binance-1m-60d", "status": "already_running",
                                        "id": lines[0]["id"]}
    for days in (60, 90):
        assert _wait_prefetch(user, days)["status"] == "completed"
    bad = stack.cli("data", "prefetch", "--days-back", "59", check=False)
    assert bad.returncode == 2 and json.loads(bad.stderr)["code"] == "invalid_field"
    bad = stack.cli("data", "prefetch", "--assets", "NOPE", check=False)
    assert bad.returncode == 2 and json.loads(bad.stderr)["code"] == "invalid_field"


def test_retention_keeps_the_newest_and_the_pinned(prefetch_stack):
    """MANTIS_DATA_KEEP_VERSIONS=2: a new version retires the older unpinned ones."""
    stack, base, data = prefetch_stack
    admin = Api(stack, stack.create_token(role="admin"))
    user = Api(stack, stack.create_token(role="user"))
    window = "binance-1m-60d"

    def prefetch(lag):
        _standin_post(base, "/admin/lag?minutes=%d" % lag)   # a distinct last candle: a distinct version
        r = admin.post("/api/data-cache/prefetch", {"days_back": 60, "assets": ["BTC", "DOGE"]})
        assert r.status == 202, r
        done = _wait_prefetch(user, 60)
        assert done["status"] == "completed", done
        return done["dataset_version"], done["dataset_hash"]

    try:
        older = _versions(stack, window)
        assert older, "the earlier tests left versions of the window"
        a = prefetch(3)
        b = prefetch(2)
        # keep 2: b and the newest other (a); everything older goes, and its
        # files too unless another window's version holds the same bytes
        assert _versions(stack, window) == [a, b]
        in_use = {json.loads(line)["dataset_hash"] for line in stack.cli("dataset", "list").stdout.splitlines()}
        for _, h in older:
            assert (data / "versions" / h).exists() == (h in in_use), h
        # a pinned version survives retention
        e = user.post("/api/evaluations", {"challenge": "ETH-1H-BINARY", "code": MOMENTUM, "days_back": 1,
                                           "holdout_days": 0.5, "dataset_version": a[0]})
        assert e.status == 202, e
        c = prefetch(1)
        assert _versions(stack, window) == [a, b, c]
        assert (data / "versions" / a[1]).is_dir()
        assert os.readlink(data / window) == "versions/" + c[1]
        wait_done(user, e.json()["id"])
    finally:
        _standin_post(base, "/admin/lag?minutes=0")


def test_runner_killed_mid_prefetch_leaves_no_half_version_and_retries(prefetch_stack):
    """Last in this module: it kills the stack's own runner (another takes over)."""
    stack, base, data = prefetch_stack
    admin = Api(stack, stack.create_token(role="admin"))
    _standin_post(base, "/admin/faults?list=slow,slow,slow,slow")
    r = admin.post("/api/data-cache/prefetch", {"days_back": 365, "assets": ["BTC", "XRP"]})
    assert r.status == 202, r
    deadline = time.time() + 30
    while admin.get("/api/data-cache/status?days_back=365").json()["status"] != "running":
        assert time.time() < deadline, "prefetch never started"
        time.sleep(0.1)
    before = set(os.listdir(data / "versions"))
    start_runner(stack, "runner-b")
    os.kill(stack.pid("runner"), signal.SIGKILL)
    done = _wait_prefetch(admin, 365, timeout=90)
    assert done["status"] == "completed" and done["attempts"] == 2, done
    after = set(os.listdir(data / "versions"))
    # exactly the new version, its report and its midstates; no staging entry of the killed attempt
    assert after - before == {done["dataset_hash"], done["dataset_hash"] + ".quality.json",
                              done["dataset_hash"] + ".midstate"}, after - before
    assert not [n for n in os.listdir(data) if n.startswith(".")]
    assert os.readlink(data / "binance-1m-365d") == "versions/" + done["dataset_hash"]


CG_STANDIN = REPO / "tests" / "lib" / "coinglass_standin.py"
CG_KEY = "cgE2E0123456789abcdefKEY9876"
sys.path.insert(0, str(REPO / "tests" / "lib"))
import coinglass_standin as cgs  # noqa: E402  (the stand-in's value functions)


def _cg_standin(*args):
    si = subprocess.Popen([sys.executable, str(CG_STANDIN), "--key", CG_KEY, *args], stdout=subprocess.PIPE, text=True)
    return si, "http://127.0.0.1:%d" % int(si.stdout.readline())


def _column(vdir, name):
    import array
    a = array.array("q" if name.endswith(".i64") else "d")
    a.frombytes((vdir / name).read_bytes())
    return a


def _causal(open_ms, period):
    """The candle index visible at minute open_ms: the last one closed by then."""
    return (open_ms - period) // period


def _check_cg_columns(vdir):
    """Every stored CoinGlass value of TWO in version vdir is the stand-in's
    causal value: zeros kept, missing ones NaN, every minute checked."""
    man = json.loads((vdir / "manifest.json").read_text())
    assert man["fields"] == ["open", "high", "low", "close", "volume", "oi_1h", "oi_1d", "funding_1h",
                             "liq_long_1h", "liq_short_1h", "ls_ratio_1h"]
    ts = _column(vdir, "ts.i64")
    H, D = 3600000, 86400000
    zeros = missing = 0
    for asset in TWO:
        sym = asset + "USDT"
        f = _column(vdir, "%s.funding_1h.f64" % asset)
        oi1d = _column(vdir, "%s.oi_1d.f64" % asset)
        ls = _column(vdir, "%s.ls_ratio_1h.f64" % asset)
        liq_short = _column(vdir, "%s.liq_short_1h.f64" % asset)
        liq_long = _column(vdir, "%s.liq_long_1h.f64" % asset)
        oi1h = _column(vdir, "%s.oi_1h.f64" % asset)
        for i, m in enumerate(ts):
            want = cgs.funding(sym, _causal(m, H))
            if want is None:
                assert f[i] != f[i], (asset, m, f[i])  # missing stays missing (NaN)
                missing += 1
            else:
                assert f[i] == float("%.8f" % want), (asset, m, f[i], want)
                zeros += want == 0.0
            assert oi1d[i] == float("%.2f" % cgs.oi(asset, _causal(m, D))), (asset, m)
            assert ls[i] == cgs.ls(sym, _causal(m, H))
            assert liq_short[i] == cgs.liq(asset, _causal(m, H))[1]
            assert liq_long[i] == cgs.liq(asset, _causal(m, H))[0]
            assert oi1h[i] == float("%.2f" % cgs.oi(asset, _causal(m, H))), (asset, m)
    assert zeros > 0 and missing > 0, (zeros, missing)
    assert len(ts) > 41 * 1440  # every minute above checked: both pages stored
    # the first minute of an hour sees the hour before the last one only
    assert ts[0] % 60000 == 0


def test_prefetch_with_coinglass_key_stores_the_derivatives_fields(stack_factory):
    """With a CoinGlass key set the prefetch job fetches the §4.3 fields from
    a CoinGlass stand-in (after a 429, an error code and a 500 it retries;
    43 days, so the hourly fields take two pages),
    stores them beside the candles, causally aligned, a zero funding rate
    kept and a missing one NaN; a stand-in that keeps rate-limiting fails
    the job naming the asset and the range; the key never reaches a log."""
    bsi, bbase = _standin("--history-days", "43")  # > 1000 hourly rows with the 2-day lookback: 2 pages
    csi, cbase = _cg_standin("--faults", "429,code,500")
    data = Path(tempfile.mkdtemp(prefix="agenttest-e2e-cg-"))
    try:
        stack = stack_factory("prefetch-cg", MANTIS_DATA_DIR=str(data), BINANCE_API_URL=bbase,
                              COINGLASS_API_URL=cbase)
        admin = Api(stack, stack.create_token(role="admin"))
        # without a key: candles only
        r = admin.post("/api/data-cache/prefetch", {"days_back": 90, "assets": ["ETH"]})
        assert r.status == 202, r
        assert _wait_prefetch(admin, 90)["status"] == "completed"
        w90 = admin.get("/api/data-cache").json()["90"]
        assert w90["has_coinglass"] is False and w90["coinglass_assets"] == 0
        stats = json.loads(subprocess.run(["curl", "-s", cbase + "/admin/stats"], capture_output=True,
                                          text=True).stdout)
        assert stats["requests"] == 0

        assert admin.post("/api/coinglass-key", {"key": CG_KEY}).status == 200
        r = admin.post("/api/data-cache/prefetch", {"days_back": 60, "assets": TWO})
        assert r.status == 202, r
        done = _wait_prefetch(admin, 60, timeout=180)
        assert done["status"] == "completed", done
        stats = json.loads(subprocess.run(["curl", "-s", cbase + "/admin/stats"], capture_output=True,
                                          text=True).stdout)
        assert stats["faults_served"] == ["429", "code", "500"] and stats["bad_key"] == 0, stats
        # per asset: 2 pages for each of the 5 hourly fields, 1 for oi_1d; plus the 3 retried
        assert stats["requests"] == 3 + 2 * (5 * 2 + 1), stats

        w = admin.get("/api/data-cache").json()["60"]
        assert w["has_coinglass"] is True and w["coinglass_assets"] == 2 and w["coinglass_key_set"] is True
        _check_cg_columns(data / "versions" / done["dataset_hash"])

        # the next prefetch of the window takes the rows fetched before from the
        # CoinGlass cache and asks only for what came after them: one request
        # per asset and field, none reaching back into the window
        n_before = len(stats["log"])
        r = admin.post("/api/data-cache/prefetch", {"days_back": 60, "assets": TWO})
        assert r.status == 202, r
        again = _wait_prefetch(admin, 60, timeout=180)
        assert again["status"] == "completed", again
        stats = json.loads(subprocess.run(["curl", "-s", cbase + "/admin/stats"], capture_output=True,
                                          text=True).stdout)
        new = stats["log"][n_before:]
        assert len(new) == 2 * 6, new
        assert sorted((k, s, i) for k, s, i, _ in new) == sorted(
            (k, a + ("USDT" if k in ("funding", "ls") else ""), i) for a in TWO
            for k, i in (("oi", "1h"), ("oi", "1d"), ("funding", "1h"), ("liq", "1h"), ("liq", "1h"),
                         ("ls", "1h"))), new
        now_ms = time.time() * 1000
        assert all(start > now_ms - 3 * 86400000 for *_, start in new), new
        assert (data / "coinglass-cache").is_dir()
        # the cached and the fetched rows together are what a full fetch gives
        _check_cg_columns(data / "versions" / again["dataset_hash"])

        # a CoinGlass that keeps rate-limiting fails the job, naming asset, field and range
        _standin_post(cbase, "/admin/forever?fault=429")
        r = admin.post("/api/data-cache/prefetch", {"days_back": 120, "assets": ["BTC"]})
        assert r.status == 202, r
        s = _wait_prefetch(admin, 120)
        assert s["status"] == "failed" and s["error_code"] == "rate_limited", s
        assert "CoinGlass BTC oi_1h" in s["error"] and ".." in s["error"], s
        assert admin.get("/api/data-cache").json()["120"] == {"cached": False}

        for f in list((stack.var / "log").glob("*.log")) + list(data.rglob("*.json")):
            assert CG_KEY not in f.read_text(errors="replace"), f
    finally:
        for p in (bsi, csi):
            p.kill()
            p.wait()


def _sql(stack, query):
    """One query on the stack's own MariaDB (its socket), rows as tab-separated text."""
    from urllib.parse import parse_qs, urlsplit
    u = urlsplit(stack.info["DATABASE_URL"])
    sock = parse_qs(u.query)["socket"][0]
    r = subprocess.run(["mariadb", "--socket=" + sock, "-u", u.username or "root", "-N", "-B", u.path.strip("/"),
                        "-e", query], capture_output=True, text=True, timeout=30, check=True)
    return r.stdout


def test_prefetch_body_coinglass_key_is_used_for_that_prefetch_sealed_then_erased(stack_factory):
    """POST /api/data-cache/prefetch {coinglass_key}: the key (checked like
    /api/coinglass-key) is used by that prefetch, also stored as the server's
    key when none is (the original's rule), and while the job waits it is in
    its row only sealed; the finish erases it; it is in no log."""
    key = CG_KEY  # the one the stand-in accepts
    bsi, bbase = _standin("--history-days", "1")
    csi, cbase = _cg_standin("--history-days", "2")
    subprocess.run(["kill", "-STOP", str(csi.pid)], check=True)  # holds the first job on its CoinGlass step
    data = Path(tempfile.mkdtemp(prefix="agenttest-e2e-cgbody-"))
    try:
        stack = stack_factory("prefetch-cgbody", MANTIS_DATA_DIR=str(data), BINANCE_API_URL=bbase,
                              COINGLASS_API_URL=cbase)
        admin = Api(stack, stack.create_token(role="admin"))
        user = Api(stack, stack.create_token(role="user"))
        assert admin.get("/api/coinglass-key").json()["set"] is False
        assert user.post("/api/data-cache/prefetch", {"days_back": 60, "coinglass_key": key}).status == 403
        r = admin.post("/api/data-cache/prefetch", {"days_back": 60, "assets": ["ETH"], "coinglass_key": key})
        assert r.status == 202, r
        job = r.json()["id"]
        # none was stored: the body's key is now the server's key too
        assert admin.get("/api/coinglass-key").json() == {"set": True, "masked": CG_KEY[:4] + "..." + CG_KEY[-4:]}
        row = _sql(stack, "SELECT LENGTH(coinglass_nonce), LENGTH(coinglass_sealed), "
                          "INSTR(coinglass_sealed, '%s') FROM data_prefetches WHERE id = '%s'" % (key, job))
        assert row.split() == ["24", str(len(key) + 16), "0"], row  # sealed, not the plaintext
        subprocess.run(["kill", "-CONT", str(csi.pid)], check=True)
        done = _wait_prefetch(admin, 60, timeout=120)
        assert done["status"] == "completed", (done["error_code"], done["error"])
        assert admin.get("/api/data-cache").json()["60"]["has_coinglass"] is True
        assert _sql(stack, "SELECT coinglass_nonce IS NULL AND coinglass_sealed IS NULL FROM data_prefetches "
                           "WHERE id = '%s'" % job).strip() == "1"

        # a stored key that the stand-in refuses: the body's key is the one this prefetch uses
        assert admin.post("/api/coinglass-key", {"key": "storedButWrong0123456789"}).status == 200
        r = admin.post("/api/data-cache/prefetch", {"days_back": 90, "assets": ["ETH"], "coinglass_key": key})
        assert r.status == 202, r
        done = _wait_prefetch(admin, 90, timeout=120)
        assert done["status"] == "completed", done
        assert admin.get("/api/data-cache").json()["90"]["has_coinglass"] is True
        stats = json.loads(subprocess.run(["curl", "-s", cbase + "/admin/stats"], capture_output=True,
                                          text=True).stdout)
        assert stats["bad_key"] == 0 and stats["requests"] > 0, stats
        # the stored key stays the one the admin set
        assert admin.get("/api/coinglass-key").json()["masked"] == "stor...6789"
        # without a body key the stored (wrong) one is used: 401 fails the job
        r = admin.post("/api/data-cache/prefetch", {"days_back": 120, "assets": ["ETH"]})
        assert r.status == 202, r
        s = _wait_prefetch(admin, 120, timeout=120)
        assert s["status"] == "failed" and s["error_code"] == "fetch_failed" and "HTTP 401" in s["error"], s
        for f in list((stack.var / "log").glob("*.log")) + [p for p in data.rglob("*") if p.is_file()]:
            assert key.encode() not in f.read_bytes(), f
    finally:
        for p in (bsi, csi):
            p.kill()
            p.wait()


def test_prefetch_job_pings_the_endpoint_list_and_falls_back(stack_factory):
    """No BINANCE_API_URL, BINANCE_API_URLS = a refused port, a stand-in whose
    ping answers 503, a working stand-in: the runner's prefetch job pings
    them in order and fetches everything from the third. With the working
    one gone too, the next prefetch fails loudly (fetch_failed, each
    endpoint named with why) and stores nothing."""
    import socket
    with socket.socket() as so:
        so.bind(("127.0.0.1", 0))
        down = "http://127.0.0.1:%d" % so.getsockname()[1]
    sick, sick_url = _standin("--ping-status", "503", "--history-days", "1")
    good, good_url = _standin("--history-days", "1")
    data = Path(tempfile.mkdtemp(prefix="agenttest-e2e-ping-"))
    try:
        stack = stack_factory("prefetch-ping", MANTIS_DATA_DIR=str(data),
                              BINANCE_API_URLS=",".join([down, sick_url + "/", good_url]))
        admin = Api(stack, stack.create_token(role="admin"))
        r = admin.post("/api/data-cache/prefetch", {"days_back": 60, "assets": ["BTC"]})
        assert r.status == 202, r
        done = _wait_prefetch(admin, 60)
        assert done["status"] == "completed", done
        assert 1440 - 2 <= done["rows_fetched"] <= 1440 + 2, done
        stats = lambda u: json.loads(subprocess.run(["curl", "-s", u + "/admin/stats"], capture_output=True,
                                                    text=True).stdout)
        s, g = stats(sick_url), stats(good_url)
        assert s["ping"] == 1 and s["klines"] == 0, s
        assert g["ping"] == 1 and g["klines"] >= 2, g

        good.kill()
        good.wait()
        before = set(os.listdir(data / "versions"))
        r = admin.post("/api/data-cache/prefetch", {"days_back": 90, "assets": ["BTC"]})
        assert r.status == 202, r
        failed = _wait_prefetch(admin, 90)
        assert failed["status"] == "failed" and failed["error_code"] == "fetch_failed", failed
        assert "no Binance endpoint answered" in failed["error"], failed
        for url, why in ((down, " ("), (sick_url, " (HTTP 503)"), (good_url, " (")):
            assert url + why in failed["error"], (url, failed["error"])
        assert stats(sick_url)["klines"] == 0
        assert set(os.listdir(data / "versions")) == before
        assert admin.get("/api/data-cache").json()["90"] == {"cached": False}
    finally:
        for p in (sick, good):
            p.kill()
            p.wait()


def test_prefetch_twice_with_the_newest_candle_late_registers_one_version(stack_factory):
    """The runner's prefetch job takes its window from the last bar served
    (docs/market-data.md, "The window"): the stand-in's clock stands still
    about 3 minutes behind the runner's (the newest candles served late), and
    two prefetches of the window run with a minute boundary of the runner's
    clock between them. Both end on the same bar, so both store the same
    60 days x 1440 bars (the same hash) and the second registers the same
    version; when the first bar followed the runner's clock the second one
    stored another hash under the same label and failed with `conflict`."""
    minute, day = 60000, 86400000
    clock = int(time.time() * 1000) // minute * minute - 3 * minute + 30000
    last = clock // minute * minute
    si, base = _standin("--clock-ms", str(clock))
    data = Path(tempfile.mkdtemp(prefix="agenttest-e2e-late-"))
    try:
        stack = stack_factory("prefetch-late", MANTIS_DATA_DIR=str(data), BINANCE_API_URL=base)
        admin = Api(stack, stack.create_token(role="admin"))
        done = []
        for k in range(2):
            if k:
                time.sleep(60 - time.time() % 60 + 0.3)   # the runner's clock passes a minute
            r = admin.post("/api/data-cache/prefetch", {"days_back": 60, "assets": ["BTC"]})
            assert r.status == 202, r
            done.append(_wait_prefetch(admin, 60, timeout=240))
            assert done[-1]["status"] == "completed", (k, done[-1]["error_code"], done[-1]["error"])
        a, b = done
        assert (b["dataset_version"], b["dataset_hash"]) == (a["dataset_version"], a["dataset_hash"]), (a, b)
        v = admin.get("/datasets/" + a["dataset_version"])
        assert v.status == 200 and v.json()["dataset_hash"] == a["dataset_hash"], v
        assert v.json()["bars"] == 60 * 1440, v.json()
        w = admin.get("/api/data-cache").json()["60"]
        assert w["dataset_hash"] == a["dataset_hash"], w
        ts = np.fromfile(str(data / "versions" / a["dataset_hash"] / "ts.i64"), dtype="<i8")
        assert ts[0] == last - 60 * day + minute and ts[-1] == last and len(ts) == 60 * 1440
    finally:
        si.kill()
        si.wait()


def test_agent_pins_a_fetched_version_through_retention(stack_factory, tmp_path):
    """An agent created on a fetched version (POST /api/agents
    {dataset_version}) pins it: with MANTIS_DATA_KEEP_VERSIONS=1 the
    registering refreshes that follow retire every older unpinned version of
    the window, never the agent's (its row and its files stay)."""
    import secrets
    stack = stack_factory("datacache-agents", AGENTTEST_RUNNER_SLOTS=0)  # the agent stays queued
    window = "agpin-" + secrets.token_hex(4)
    data = tmp_path / "data"
    si, base = _standin("--lag-minutes", "90")
    try:
        env = dict(stack.cli_env(), BINANCE_API_URL=base, MANTIS_DATA_KEEP_VERSIONS="1")

        def fetch(*extra):
            f = subprocess.run([str(BIN / "agenttest"), "data", "fetch", "--data-dir", str(data), "--window", window,
                                "--no-pace", *extra], env=env, capture_output=True, text=True, timeout=300)
            assert f.returncode == 0, f.stderr
            out = json.loads(f.stdout)
            assert out["registered"] is True, out
            return out

        pinned = fetch("--days-back", "2", "--assets", "BTC,ETH")
        user = Api(stack, stack.create_token(role="user"))
        r = user.post("/api/agents", {"challenge": "ETH-1H-BINARY", "goal": "pin test", "min_iterations": 1,
                                      "max_iterations": 1, "dataset_version": pinned["version"]})
        assert r.status == 201, r
        agent = user.get("/api/agents/" + r.json()["id"]).json()
        assert agent["config"]["dataset_version"] == pinned["version"], agent["config"]
        _standin_post(base, "/admin/lag?minutes=60")
        second = fetch("--refresh")
        assert second["retired"] == 0, second   # the only older version is the agent's
        _standin_post(base, "/admin/lag?minutes=30")
        third = fetch("--refresh")
        assert third["retired"] == 1, third     # the second goes, the agent's stays
        registered = _sql(stack, "SELECT version FROM datasets WHERE version LIKE '%s-%%' ORDER BY id" % window)
        assert registered.split() == [pinned["version"], third["version"]], registered
        assert (data / "versions" / pinned["dataset_hash"]).is_dir()
        assert not (data / "versions" / second["dataset_hash"]).exists()
        assert os.readlink(data / window) == "versions/" + third["dataset_hash"]
    finally:
        si.kill()
        si.wait()


def test_cli_fetch_refuses_a_label_registered_with_another_hash(stack, tmp_path):
    """A CLI fetch whose version label (window + last bar) is already
    registered with other bytes: conflict, exit 1; the registration and the
    window's label stay on the first version; the second stays on disk."""
    import secrets
    tag = "clidup-" + secrets.token_hex(4)
    si, base = _standin("--lag-minutes", "90")
    try:
        env = dict(stack.cli_env(), BINANCE_API_URL=base)

        def run(data, assets):
            return subprocess.run([str(BIN / "agenttest"), "data", "fetch", "--data-dir", str(data), "--window",
                                   window, "--days-back", "1", "--assets", assets, "--no-pace"], env=env,
                                  capture_output=True, text=True, timeout=300)
        # both fetches must end on the same last bar: redone (in a window of its own) when a
        # minute boundary passed between them
        for attempt in range(3):
            window = "%s-%d" % (tag, attempt)
            minute = int(time.time() // 60)
            a = run(tmp_path / ("a%d" % attempt), "BTC,ETH")
            b = run(tmp_path / ("b%d" % attempt), "BTC")   # same label, other bytes
            if int(time.time() // 60) == minute:
                break
        else:
            pytest.fail("every attempt straddled a minute boundary")
        assert a.returncode == 0, a.stderr
        first = json.loads(a.stdout)
        assert first["registered"] is True
        assert b.returncode == 1 and b.stdout == "", (b.returncode, b.stdout)
        err = json.loads(b.stderr)
        assert err["code"] == "conflict" and first["version"] in err["error"], err
        rows = _sql(stack, "SELECT version, dataset_hash FROM datasets WHERE version LIKE '%s-%%'" % window)
        assert [r.split("\t") for r in rows.splitlines()] == [[first["version"], first["dataset_hash"]]], rows
        assert _sql(stack, "SELECT d.dataset_hash FROM dataset_labels l JOIN datasets d ON d.id = l.dataset_id "
                           "WHERE l.label = '%s'" % window).split() == [first["dataset_hash"]]
        other = os.readlink(tmp_path / ("b%d" % attempt) / window)
        assert other != "versions/" + first["dataset_hash"] and (tmp_path / ("b%d" % attempt) / other).is_dir()
    finally:
        si.kill()
        si.wait()

"""GET /api/data-cache reports what `agenttest data fetch` stored under
MANTIS_DATA_DIR, in the original's shape (spec/mantis.md §5.3); a fetched
version, registered, evaluates end to end through POST /api/evaluations."""
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from runs_helpers import Api
from test_challenges import MOMENTUM, wait_done

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
    assert 0 <= w["age_hours"] < 1
    btc, eth = w["per_asset"]["BTC"], w["per_asset"]["ETH"]
    assert btc["rows"] == btc["expected"] == fetched["bars"] and btc["pct"] == 100.0
    assert eth["rows"] == fetched["quality"]["ETH"]["rows"] < eth["expected"]
    want = 29 * 60 * 1440
    assert abs(w["row_pct"] - 100.0 * (btc["rows"] + eth["rows"]) / want) < 1e-9
    assert stack.get("/api/data-cache").json()["90"] == {"cached": False}


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

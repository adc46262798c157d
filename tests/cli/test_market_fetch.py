"""`agenttest data fetch` against the local Binance stand-in
(tests/lib/binance_standin.py): a fetch through every fault ends complete
(same bytes as a clean fetch) or fails loudly naming the asset and range;
gaps are recorded, not filled; the still-open candle is never stored; a
refresh adds only the new candles; a fetch killed mid-way leaves no version."""
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.join(ROOT, os.environ.get("AGENTTEST_BIN", "bin"), "agenttest")
STANDIN = os.path.join(ROOT, "tests", "lib", "binance_standin.py")
ASSETS = "BTC,ETH,SOL"


class Standin:
    def __init__(self, *args):
        self.p = subprocess.Popen([sys.executable, STANDIN, *args], stdout=subprocess.PIPE, text=True)
        self.port = int(self.p.stdout.readline())
        self.url = "http://127.0.0.1:%d" % self.port

    def stats(self):
        return json.load(urllib.request.urlopen(self.url + "/admin/stats"))

    def lag(self, minutes):
        urllib.request.urlopen(urllib.request.Request(self.url + "/admin/lag?minutes=%d" % minutes, method="POST"))

    def stop(self):
        self.p.kill()
        self.p.wait()


@pytest.fixture
def standin_factory():
    made = []

    def make(*args):
        s = Standin(*args)
        made.append(s)
        return s
    yield make
    for s in made:
        s.stop()


def fetch(standin, data_dir, *extra, check=True, timeout=120):
    env = dict(os.environ, BINANCE_API_URL=standin.url + "/", AGENTTEST_CONFIG="/dev/null")
    env.pop("MANTIS_DATA_DIR", None)
    args = [BIN, "data", "fetch", "--data-dir", str(data_dir), "--backoff-ms", "50", "--timeout-ms", "1000", *extra]
    r = subprocess.run(args, capture_output=True, text=True, env=env, timeout=timeout)
    if check:
        assert r.returncode == 0, r.stderr
        return json.loads(r.stdout)
    return r


def columns(path, asset, field="close"):
    return np.fromfile(os.path.join(path, "%s.%s.f64" % (asset, field)), dtype="<f8")


def test_every_fault_ends_complete_and_identical(standin_factory, tmp_path):
    faulty = standin_factory("--faults", "429,418,500,502,slow,empty,nonlist,badjson", "--fault-after", "2",
                             "--fault-every", "2", "--slow-s", "1.5")
    out = fetch(faulty, tmp_path / "a", "--days-back", "6", "--assets", ASSETS, "--no-pace", "--parallel", "1")
    st = faulty.stats()
    assert st["faults_served"] == ["429", "418", "500", "502", "slow", "empty", "nonlist", "badjson"]
    for a in ASSETS.split(","):
        q = out["quality"][a]
        assert q["rows"] == q["expected"] == out["bars"], (a, q)
        assert q["n_gaps"] == 0
    clean = standin_factory()
    ref = fetch(clean, tmp_path / "b", "--days-back", "6", "--assets", ASSETS, "--no-pace")
    if ref["first_timestamp_ms"] == out["first_timestamp_ms"] and ref["last_timestamp_ms"] == out["last_timestamp_ms"]:
        assert ref["dataset_hash"] == out["dataset_hash"]
    v = subprocess.run([BIN, "data", "verify", os.path.join(str(tmp_path / "a"), "binance-1m-6d")],
                       capture_output=True, text=True)
    assert v.returncode == 0, v.stdout + v.stderr


@pytest.mark.parametrize("status,code,words", [("500", "fetch_failed", "failed after"),
                                                ("429", "rate_limited", "giving up"),
                                                ("400", "fetch_failed", "refused")])
def test_persistent_failure_fails_loudly(standin_factory, tmp_path, status, code, words):
    s = standin_factory("--forever", status)
    r = fetch(s, tmp_path, "--days-back", "1", "--assets", "BTC", "--rate-wait-ms", "10", check=False)
    assert r.returncode == 1 and r.stdout == ""
    err = json.loads(r.stderr)
    assert err["code"] == code
    assert err["detail"].startswith("BTC: ") and words in err["detail"]
    assert any(ch.isdigit() for ch in err["detail"])  # the time range
    assert not (tmp_path / "binance-1m-1d").exists()
    vd = tmp_path / "versions"
    assert not vd.exists() or [e for e in os.listdir(vd) if not e.startswith(".")] == []


def test_gap_recorded_not_filled_and_no_open_candle(standin_factory, tmp_path):
    s = standin_factory("--gap-symbol", "ETHUSDT")
    out = fetch(s, tmp_path, "--days-back", "2", "--assets", "BTC,ETH")
    done = int(time.time() * 1000)
    q = out["quality"]["ETH"]
    assert q["n_gaps"] >= 2 and all(g[1] == 10 for g in q["gaps"][1:-1] or q["gaps"])
    assert q["rows"] == q["expected"] - sum(g[1] for g in q["gaps"])
    assert out["quality"]["BTC"]["n_gaps"] == 0
    path = out["path"]
    ts = np.fromfile(os.path.join(path, "ts.i64"), dtype="<i8")
    assert (np.diff(ts) == 60000).all()  # a complete grid: rows never shift
    eth = columns(path, "ETH")
    for start, n in q["gaps"]:
        i = (start - ts[0]) // 60000
        assert np.isnan(eth[i:i + n]).all()
        assert not np.isnan(eth[i - 1]) if i > 0 else True
    assert np.isnan(eth).sum() == sum(g[1] for g in q["gaps"])
    # the still-open candle is never stored: the last bar had closed
    assert out["last_timestamp_ms"] + 60000 <= done


def test_refresh_adds_only_new_candles(standin_factory, tmp_path):
    s = standin_factory("--lag-minutes", "30")
    first = fetch(s, tmp_path, "--days-back", "1", "--assets", ASSETS)
    same = fetch(s, tmp_path, "--refresh", "--window", "binance-1m-1d")
    assert same["rows_added"] == 0
    s.lag(0)
    n0 = s.stats()["klines"]
    new = fetch(s, tmp_path, "--refresh", "--window", "binance-1m-1d")
    pages = s.stats()["klines"] - n0
    assert pages <= 3 * 2, pages  # one page (plus at most a boundary page) per asset, not the day again
    added_bars = new["bars"] - first["bars"]
    assert 29 <= added_bars <= 32
    assert new["rows_added"] == 3 * added_bars
    assert new["dataset_hash"] != first["dataset_hash"]
    assert os.path.isdir(first["path"])  # the older version stays
    assert os.readlink(tmp_path / "binance-1m-1d") == "versions/" + new["dataset_hash"]
    for a in ASSETS.split(","):
        for f in ("open", "close", "volume"):
            old_c, new_c = columns(first["path"], a, f), columns(new["path"], a, f)
            assert np.array_equal(old_c, new_c[:len(old_c)], equal_nan=True)
        assert new["quality"][a]["rows"] == new["bars"]


def test_killed_fetch_leaves_no_version(standin_factory, tmp_path):
    s = standin_factory("--faults", "slow,slow,slow,slow,slow,slow", "--slow-s", "0.5")
    env = dict(os.environ, BINANCE_API_URL=s.url, AGENTTEST_CONFIG="/dev/null")
    p = subprocess.Popen([BIN, "data", "fetch", "--data-dir", str(tmp_path), "--days-back", "3", "--assets", ASSETS],
                         env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    time.sleep(1.2)
    p.send_signal(signal.SIGKILL)
    p.wait()
    assert not (tmp_path / "binance-1m-3d").exists()
    vd = tmp_path / "versions"
    assert not vd.exists() or [e for e in os.listdir(vd) if not e.startswith(".")] == []
    # and the next fetch completes
    out = fetch(s, tmp_path, "--days-back", "3", "--assets", ASSETS, "--no-pace")
    assert all(out["quality"][a]["rows"] == out["bars"] for a in ASSETS.split(","))

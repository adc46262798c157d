"""`agenttest data fetch` against the local Binance stand-in
(tests/lib/binance_standin.py): a fetch through every fault ends complete
(same bytes as a clean fetch) or fails loudly naming the asset and range;
gaps are recorded, not filled; the still-open candle is never stored; a
refresh adds only the new candles; a fetch killed mid-way leaves no version."""
import json
import os
import pty
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
    env.pop("DATABASE_URL", None)  # store only (registration: tests/e2e/test_data_cache.py)
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
    # no DATABASE_URL: stored only, and the output says so
    assert out["registered"] is False and "agenttest dataset register " + out["path"] in out["notice"], out
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


def _arrivals(standin):
    """Arrival times (s) of the stand-in's klines requests, in order."""
    return [p[2] for p in standin.stats()["pages"]]


@pytest.mark.parametrize("status", ["429", "418"])
def test_rate_limit_waits_retry_after_and_gives_up_after_five_in_a_row(standin_factory, tmp_path, status):
    """A 429 or 418 with Retry-After: 1 is retried after at least that second,
    not after --rate-wait-ms (here 60 s: the fetch would outlive its deadline);
    five in a row (the original's count, spec/mantis.md §4.1) give up with
    rate_limited naming the asset and the range."""
    s = standin_factory("--forever", status)
    t0 = time.time()
    r = fetch(s, tmp_path, "--days-back", "1", "--assets", "BTC", "--rate-wait-ms", "60000", check=False, timeout=100)
    assert time.time() - t0 < 60, "Retry-After was not used"
    assert r.returncode == 1 and r.stdout == "", r.stdout
    err = json.loads(r.stderr)
    assert err["code"] == "rate_limited" and err["detail"].startswith("BTC: ") and "giving up" in err["detail"], err
    st = s.stats()
    assert st["statuses"] == {status: 5}, st
    gaps = [b - a for a, b in zip(_arrivals(s), _arrivals(s)[1:])]
    assert len(gaps) == 4 and all(g >= 0.95 for g in gaps), gaps


def test_rate_limit_without_retry_after_waits_rate_wait_ms(standin_factory, tmp_path):
    """A 429 without Retry-After waits --rate-wait-ms (here 2.5 s) before the
    next try, 5 in a row give up."""
    s = standin_factory("--forever", "429", "--no-retry-after")
    r = fetch(s, tmp_path, "--days-back", "1", "--assets", "BTC", "--rate-wait-ms", "2500", check=False)
    assert r.returncode == 1 and json.loads(r.stderr)["code"] == "rate_limited", r.stderr
    t = _arrivals(s)
    assert len(t) == 5, t
    gaps = [b - a for a, b in zip(t, t[1:])]
    assert all(g >= 2.4 for g in gaps), gaps


def test_server_errors_back_off_doubling_then_fail(standin_factory, tmp_path):
    """A 5xx is retried with exponential backoff (--backoff-ms 200: at least
    200, 400, 800, 1600 ms between tries), 5 retries, then fetch_failed."""
    s = standin_factory("--forever", "503")
    r = fetch(s, tmp_path, "--days-back", "1", "--assets", "BTC", "--backoff-ms", "200", check=False)
    assert r.returncode == 1 and json.loads(r.stderr)["code"] == "fetch_failed", r.stderr
    t = _arrivals(s)
    assert len(t) == 6, t   # the request and its 5 retries
    gaps = [b - a for a, b in zip(t, t[1:])]
    assert all(g >= 0.2 * 2 ** i * 0.95 for i, g in enumerate(gaps)), gaps


def test_empty_pages_after_a_full_one_fail_loudly(standin_factory, tmp_path):
    """A full page of 1000, then only empty pages (every retry): the server
    had more, so the fetch fails naming the asset and range instead of
    keeping the first 1000 candles of a 1440-candle day."""
    s = standin_factory("--faults", ",".join(["empty"] * 7), "--fault-after", "1")
    r = fetch(s, tmp_path, "--days-back", "1", "--assets", "BTC", check=False)
    assert r.returncode == 1 and r.stdout == "", r.stdout
    err = json.loads(r.stderr)
    assert err["code"] == "fetch_failed" and err["detail"].startswith("BTC: fetching "), err
    assert "empty pages right after a full one" in err["detail"], err
    assert s.stats()["faults_served"] == ["empty"] * 6  # the page and its 5 retries
    assert not (tmp_path / "binance-1m-1d").exists()


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


def test_quality_report_per_asset_with_a_refused_duplicate(standin_factory, tmp_path):
    """The quality report of a version, per asset: rows, expected rows,
    coverage, gaps (start, length), duplicates refused, first/last
    timestamp; in the output and in <hash>.quality.json beside the version.
    BTC's second page repeats the candle before it (the stand-in's `dup`):
    the repeat is refused and counted, and BTC stays complete."""
    s = standin_factory("--gap-symbol", "ETHUSDT", "--faults", "dup", "--fault-after", "1")
    out = fetch(s, tmp_path, "--days-back", "2", "--assets", "BTC,ETH", "--parallel", "1", "--no-pace")
    assert s.stats()["faults_served"] == ["dup"]
    q = out["quality"]
    keys = {"rows", "expected", "coverage", "n_gaps", "gaps", "duplicates_refused", "out_of_order_refused",
            "open_candles_dropped", "first_timestamp_ms", "last_timestamp_ms"}
    assert set(q) == {"BTC", "ETH"} and all(set(q[a]) == keys for a in q), q
    btc, eth = q["BTC"], q["ETH"]
    assert btc["duplicates_refused"] == 1 and eth["duplicates_refused"] == 0, q
    assert btc["rows"] == btc["expected"] == out["bars"] and btc["coverage"] == 1.0 and btc["gaps"] == [], btc
    assert eth["expected"] == out["bars"] and eth["rows"] == out["bars"] - sum(n for _, n in eth["gaps"])
    assert eth["coverage"] == eth["rows"] / eth["expected"] < 1, eth
    assert eth["n_gaps"] == len(eth["gaps"]) >= 2 and all(n == 10 for _, n in eth["gaps"]), eth
    for a in q:
        assert q[a]["first_timestamp_ms"] == out["first_timestamp_ms"], q[a]
        assert q[a]["last_timestamp_ms"] == out["last_timestamp_ms"], q[a]
    ts = np.fromfile(os.path.join(out["path"], "ts.i64"), dtype="<i8")
    assert len(np.unique(ts)) == len(ts) == out["bars"]
    stored = json.load(open(os.path.join(str(tmp_path), "versions", out["dataset_hash"] + ".quality.json")))
    assert stored == q


def test_a_minute_passing_mid_fetch_keeps_one_version_per_label(standin_factory, tmp_path):
    """A recent listing (--history-days, shorter than the window) fetched while the
    stand-in's clock passes a minute between the first page and the next: that fetch
    ends one candle later than its first page saw. A second fetch in that minute ends
    at the same candle, so it gets the same version label, and it must get the same
    bytes: the prefetch job refuses a label registered with another hash (`conflict`,
    tests/e2e/test_paper.py's prefetch(st, 0) failed so when the stand-in's oldest
    candle slid with its wall clock, one candle between the two fetches)."""
    minute = 60000
    clock = (int(time.time() * 1000) // minute - 1) * minute + 30000   # half-way into a minute
    s = standin_factory("--history-days", "0.05", "--lag-minutes", "5", "--clock-ms", str(clock),
                        "--faults", "tick", "--fault-after", "1")   # the minute passes before page 2
    a = fetch(s, tmp_path, "--days-back", "1", "--assets", "BTC", "--backoff-ms", "1")
    assert s.stats()["faults_served"] == ["tick"]
    first_page_last = (clock - 5 * minute) // minute * minute
    assert a["last_timestamp_ms"] == first_page_last + minute, a   # the page after the tick added one
    assert a["bars"] == 73 and a["quality"]["BTC"]["n_gaps"] == 0, a   # 72 minutes of listing, then one
    b = fetch(s, tmp_path, "--days-back", "1", "--assets", "BTC", "--backoff-ms", "1")
    assert b["version"] == a["version"], (a, b)
    assert (b["first_timestamp_ms"], b["bars"]) == (a["first_timestamp_ms"], a["bars"]), (a, b)
    assert b["dataset_hash"] == a["dataset_hash"], (a, b)
    # lowering the lag is the server's clock moving on: the listing's window moves with it
    s.lag(3)
    c = fetch(s, tmp_path, "--days-back", "1", "--assets", "BTC", "--backoff-ms", "1")
    assert c["last_timestamp_ms"] == a["last_timestamp_ms"] + 2 * minute, c
    assert c["first_timestamp_ms"] == a["first_timestamp_ms"] + 2 * minute and c["bars"] == 73, c


def test_newest_candle_served_late_keeps_the_window_of_the_last_bar(standin_factory, tmp_path):
    """Binance serves the newest closed candles late: the stand-in's clock stands
    still (--clock-ms) about 3 minutes behind ours, so a fetch, and a second one
    after our clock passed a minute boundary, both end on the same last bar. The
    window is a function of that last bar (docs/market-data.md, "The window"):
    first bar = last - days_back days + 1 interval, the same version label and
    the same bytes. (It used to start from our clock, one candle later in the
    second fetch: the same label with another hash, a prefetch `conflict`.) ETH's
    last 5 candles are missing: the window ends at the newest candle of any asset
    and ETH's missing tail is a gap; both assets start at the window's first bar,
    fetched although it lies before our clock's start (the newest candles being
    late)."""
    minute, day = 60000, 86400000
    clock = int(time.time() * 1000) // minute * minute - 3 * minute + 30000
    last = clock // minute * minute
    s = standin_factory("--clock-ms", str(clock))
    urllib.request.urlopen(urllib.request.Request(
        s.url + "/admin/gap?symbol=ETHUSDT&from=%d&to=%d" % (last - 4 * minute, last), method="POST"))
    a = fetch(s, tmp_path, "--days-back", "1", "--assets", "BTC,ETH", "--no-pace")
    time.sleep(60 - time.time() % 60 + 0.3)   # our clock passes a minute: the clock's start moves on
    b = fetch(s, tmp_path, "--days-back", "1", "--assets", "BTC,ETH", "--no-pace")
    assert (b["first_timestamp_ms"], b["last_timestamp_ms"], b["bars"]) == \
        (a["first_timestamp_ms"], a["last_timestamp_ms"], a["bars"]), (a, b)
    assert (b["version"], b["dataset_hash"]) == (a["version"], a["dataset_hash"]), (a, b)
    assert a["last_timestamp_ms"] == last and a["first_timestamp_ms"] == last - day + minute, a
    assert a["bars"] == day // minute == 1440, a
    btc, eth = a["quality"]["BTC"], a["quality"]["ETH"]
    assert btc["rows"] == btc["expected"] == 1440 and btc["n_gaps"] == 0, btc
    assert eth["first_timestamp_ms"] == last - day + minute and eth["last_timestamp_ms"] == last - 5 * minute, eth
    assert eth["gaps"] == [[last - 4 * minute, 5]] and eth["rows"] == 1435, eth
    ts = np.fromfile(os.path.join(a["path"], "ts.i64"), dtype="<i8")
    assert ts[0] == last - day + minute and ts[-1] == last and len(ts) == 1440


def test_refresh_adds_only_new_candles(standin_factory, tmp_path):
    s = standin_factory("--lag-minutes", "30")
    # "nothing new" holds only while the stand-in's clock stays in one
    # minute: a boundary passed between (or during) the two fetches closes
    # a candle, so such an attempt is redone in a fresh directory
    for attempt in range(3):
        d = tmp_path / ("attempt%d" % attempt)
        minute = int(time.time() // 60)
        first = fetch(s, d, "--days-back", "1", "--assets", ASSETS)
        same = fetch(s, d, "--refresh", "--window", "binance-1m-1d")
        if int(time.time() // 60) == minute:
            break
    else:
        pytest.fail("every attempt straddled a minute boundary")
    assert same["rows_added"] == 0
    s.lag(0)
    n0 = s.stats()["klines"]
    new = fetch(s, d, "--refresh", "--window", "binance-1m-1d")
    pages = s.stats()["klines"] - n0
    assert pages <= 3 * 2, pages  # one page (plus at most a boundary page) per asset, not the day again
    added_bars = new["bars"] - first["bars"]
    assert 29 <= added_bars <= 32
    assert new["rows_added"] == 3 * added_bars
    assert new["dataset_hash"] != first["dataset_hash"]
    assert os.path.isdir(first["path"])  # the older version stays
    assert os.readlink(d / "binance-1m-1d") == "versions/" + new["dataset_hash"]
    for a in ASSETS.split(","):
        for f in ("open", "close", "volume"):
            old_c, new_c = columns(first["path"], a, f), columns(new["path"], a, f)
            assert np.array_equal(old_c, new_c[:len(old_c)], equal_nan=True)
        assert new["quality"][a]["rows"] == new["bars"]


def test_refresh_refuses_an_overlap_that_differs_from_the_stored_candles(standin_factory, tmp_path):
    """The refresh re-fetches the last stored minutes: a candle there that the
    stored version lacks (upstream history changed) fails the refresh loudly,
    naming the asset and minute, and leaves the label and versions alone."""
    first_si = standin_factory("--lag-minutes", "30")
    now = int(time.time() * 1000)
    urllib.request.urlopen(urllib.request.Request(
        first_si.url + "/admin/gap?symbol=BTCUSDT&from=%d&to=%d" % (now - 35 * 60000, now - 33 * 60000),
        method="POST"))
    first = fetch(first_si, tmp_path, "--days-back", "1", "--assets", "BTC,ETH", "--no-pace")
    assert first["quality"]["BTC"]["n_gaps"] == 1 and first["quality"]["ETH"]["n_gaps"] == 0
    other = standin_factory("--lag-minutes", "30")  # the same candles, without the gap
    r = fetch(other, tmp_path, "--refresh", "--window", "binance-1m-1d", "--no-pace", check=False)
    assert r.returncode == 1 and r.stdout == "", r.stdout
    err = json.loads(r.stderr)
    assert err["code"] == "upstream_mismatch", err
    assert err["detail"].startswith("BTC: the candle at ") and "differs" in err["detail"], err
    assert os.readlink(tmp_path / "binance-1m-1d") == "versions/" + first["dataset_hash"]
    assert sorted(e for e in os.listdir(tmp_path / "versions") if not e.startswith(".")) == \
        sorted([first["dataset_hash"], first["dataset_hash"] + ".midstate", first["dataset_hash"] + ".quality.json"])


def _verify(path):
    r = subprocess.run([BIN, "data", "verify", path], capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, AGENTTEST_CONFIG="/dev/null"))
    return r.returncode, (json.loads(r.stdout) if r.returncode == 0 else json.loads(r.stderr))


def test_refresh_resumes_the_hashes_same_bytes_as_a_full_write(standin_factory, tmp_path):
    """A version is stored with its files' SHA-256 midstates
    (<hash>.midstate); a refresh copies each stored column and hashes only
    the new bars, giving the same dataset hash as a refresh that writes and
    hashes everything (midstate file removed) and a version that verifies. A
    midstate file that does not match the manifest is ignored. A stored file
    corrupted after the fact is never blessed with a fresh hash: carried over
    by its midstate, the refreshed version fails verification; rewritten from
    its values (no midstate, or an asset whose new candles fill bars of the
    old grid, which happens when the first fetch's assets ended in different
    minutes), the refresh refuses the stored version loudly."""
    import shutil
    s = standin_factory("--lag-minutes", "20")
    base = tmp_path / "base"
    first = fetch(s, base, "--days-back", "1", "--assets", ASSETS, "--no-pace")
    mid = base / "versions" / (first["dataset_hash"] + ".midstate")
    assert mid.is_file() and mid.stat().st_size == 24 + (1 + 3 * 5) * 104, mid.stat()
    dirs = {k: tmp_path / k for k in ("fast", "full", "badmid", "rot", "rotfull")}
    for k, d in dirs.items():
        shutil.copytree(base, d, symlinks=True)
    (dirs["full"] / "versions" / mid.name).unlink()
    raw = bytearray((dirs["badmid"] / "versions" / mid.name).read_bytes())
    raw[24 + 104 * 3] ^= 1   # the state of BTC.low.f64: no longer its manifest hash
    (dirs["badmid"] / "versions" / mid.name).write_bytes(bytes(raw))
    (dirs["rotfull"] / "versions" / mid.name).unlink()
    for k in ("rot", "rotfull"):
        col = dirs[k] / "versions" / first["dataset_hash"] / "BTC.close.f64"
        data = bytearray(col.read_bytes())
        data[8 * 100] ^= 0x40
        os.chmod(col, 0o644)
        col.write_bytes(bytes(data))
    s.lag(0)
    refresh = ("--refresh", "--window", "binance-1m-1d", "--no-pace")
    for attempt in range(3):
        minute = int(time.time() // 60)
        out = {k: fetch(s, d, *refresh) for k, d in dirs.items() if not k.startswith("rot")}
        out.update({k: fetch(s, dirs[k], *refresh, check=False) for k in ("rot", "rotfull")})
        if int(time.time() // 60) == minute:
            break
        for k, d in dirs.items():   # a minute closed between them: redo from the base version
            if os.readlink(d / "binance-1m-1d") == "versions/" + first["dataset_hash"]:
                continue
            os.unlink(d / "binance-1m-1d")
            os.symlink("versions/" + first["dataset_hash"], d / "binance-1m-1d")
    assert out["fast"]["rows_added"] > 0
    assert out["fast"]["dataset_hash"] == out["full"]["dataset_hash"] == out["badmid"]["dataset_hash"], out
    for k in ("fast", "full", "badmid"):
        rc, v = _verify(out[k]["path"])
        assert rc == 0 and v["dataset_hash"] == out[k]["dataset_hash"], (k, v)
        assert (dirs[k] / "versions" / (out[k]["dataset_hash"] + ".midstate")).is_file()
    r = out["rotfull"]
    assert r.returncode != 0 and "fails verification" in r.stderr and "BTC.close.f64" in r.stderr, r.stderr
    assert os.readlink(dirs["rotfull"] / "binance-1m-1d") == "versions/" + first["dataset_hash"]
    r = out["rot"]
    if r.returncode == 0:
        rc, v = _verify(json.loads(r.stdout)["path"])
        assert rc == 1 and v["code"] == "hash_mismatch" and "BTC.close.f64" in v["error"], v
    else:
        assert "fails verification" in r.stderr and "BTC.close.f64" in r.stderr, r.stderr


def test_pacing_connection_reuse_and_parallel_assets(standin_factory, tmp_path):
    """Paced: 50 ms at least between one asset's pages; one connection per
    worker, reused page after page; --parallel N fetches N assets at once."""
    s = standin_factory()
    out = fetch(s, tmp_path / "paced", "--days-back", "3", "--assets", ASSETS, "--parallel", "1")
    pages = s.stats()["pages"]
    assert len(pages) >= 3 * 5 and len({port for _, port, _ in pages}) == 1, pages  # one keep-alive connection
    for a in ASSETS.split(","):
        times = [t for sym, _, t in pages if sym == a + "USDT"]
        assert len(times) >= 5 and min(b - t for t, b in zip(times, times[1:])) >= 0.045, (a, times)
    assert all(out["quality"][a]["rows"] == out["bars"] for a in ASSETS.split(","))
    par = standin_factory("--faults", "slow,slow,slow", "--slow-s", "0.4")
    fetch(par, tmp_path / "parallel", "--days-back", "3", "--assets", ASSETS, "--parallel", "3", "--no-pace")
    st = par.stats()
    assert st["max_in_flight"] == 3 and len({port for _, port, _ in st["pages"]}) == 3, st["max_in_flight"]


def test_interval_option(standin_factory, tmp_path):
    """--interval 5m: 5-minute candles on a 5-minute grid, labelled
    binance-5m-<days>d; an interval Binance lacks is a usage error."""
    s = standin_factory()
    out = fetch(s, tmp_path, "--days-back", "1", "--assets", "BTC", "--interval", "5m", "--no-pace")
    assert out["window"] == "binance-5m-1d" and 287 <= out["bars"] <= 288, out
    ts = np.fromfile(os.path.join(out["path"], "ts.i64"), dtype="<i8")
    assert len(ts) == out["bars"] and (np.diff(ts) == 300000).all() and (ts % 300000 == 0).all()
    assert out["quality"]["BTC"]["rows"] == out["quality"]["BTC"]["expected"] == out["bars"]
    assert all(sym == "BTCUSDT" for sym, _, _ in s.stats()["pages"])
    r = fetch(s, tmp_path, "--days-back", "1", "--assets", "BTC", "--interval", "7m", check=False)
    assert r.returncode == 2 and json.loads(r.stderr)["code"] == "bad_request", r.stderr


def test_killed_fetch_leaves_no_version(standin_factory, tmp_path):
    s = standin_factory("--faults", "slow,slow,slow,slow,slow,slow", "--slow-s", "0.5")
    env = dict(os.environ, BINANCE_API_URL=s.url, AGENTTEST_CONFIG="/dev/null")
    env.pop("DATABASE_URL", None)
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


def test_progress_bar_on_a_terminal_only(standin_factory, tmp_path):
    """stderr a terminal: a bar redrawn with \\r, assets done and candles
    fetched, ending full on the last asset; stderr a pipe: no bar at all."""
    s = standin_factory()
    env = dict(os.environ, BINANCE_API_URL=s.url, AGENTTEST_CONFIG="/dev/null")
    env.pop("DATABASE_URL", None)
    env.pop("MANTIS_DATA_DIR", None)
    master, slave = pty.openpty()
    p = subprocess.Popen([BIN, "data", "fetch", "--data-dir", str(tmp_path / "tty"), "--days-back", "2",
                          "--assets", ASSETS, "--no-pace", "--parallel", "1"],
                         env=env, stdout=subprocess.PIPE, stderr=slave)
    os.close(slave)
    out, _ = p.communicate(timeout=120)
    got = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the terminal's other side is closed and drained
            break
        if not chunk:
            break
        got += chunk
    os.close(master)
    assert p.returncode == 0, got
    o = json.loads(out)
    frames = [f for f in got.decode().replace("\r\n", "\n").split("\r") if f.strip()]
    assert len(frames) >= 4, frames  # redrawn page after page, not once at the end
    done = [int(f.split("] ")[1].split("/")[0]) for f in frames]
    assert done == sorted(done) and done[0] < 3
    assert frames[-1].strip() == "[%s] 3/3 assets, %d candles" % ("#" * 30, 3 * o["bars"]), frames[-1]
    r = fetch(s, tmp_path / "pipe", "--days-back", "2", "--assets", ASSETS, "--no-pace", check=False)
    assert r.returncode == 0 and r.stderr == "", r.stderr


CG_STANDIN = os.path.join(ROOT, "tests", "lib", "coinglass_standin.py")
CG_KEY = "cgCLI0123456789abcdefKEY777"
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))
import coinglass_standin as cgs  # noqa: E402  (the stand-in's value functions)


def _cg_stats(url):
    return json.load(urllib.request.urlopen(url + "/admin/stats"))


def _check_cg(path, assets):
    """Every stored funding_1h / oi_1d / liq_long_1h value is the stand-in's
    causal one (a value visible once its candle closed); zeros kept, NaN
    where the stand-in has none."""
    ts = np.fromfile(os.path.join(path, "ts.i64"), dtype="<i8")
    H, D = 3600000, 86400000
    zeros = missing = 0
    for a in assets:
        f, oi, liq = columns(path, a, "funding_1h"), columns(path, a, "oi_1d"), columns(path, a, "liq_long_1h")
        for i, m in enumerate(ts):
            want = cgs.funding(a + "USDT", (m - H) // H)
            if want is None:
                assert np.isnan(f[i]), (a, m)
                missing += 1
            else:
                assert f[i] == float("%.8f" % want), (a, m, f[i], want)
                zeros += want == 0.0
            assert oi[i] == float("%.2f" % cgs.oi(a, (m - D) // D)), (a, m)
            assert liq[i] == cgs.liq(a, (m - H) // H)[0], (a, m)
    assert zeros > 0 and missing > 0


def test_fetch_and_refresh_with_the_coinglass_layer(standin_factory, tmp_path):
    """--coinglass: the key from COINGLASS_API_KEY, the fields stored beside
    the candles; a refresh keeps them and asks CoinGlass only for the hours
    after its cache (one request per asset and field); no key: a usage error."""
    s = standin_factory("--lag-minutes", "150")
    cg = subprocess.Popen([sys.executable, CG_STANDIN, "--key", CG_KEY, "--history-days", "3"],
                          stdout=subprocess.PIPE, text=True)
    try:
        cgurl = "http://127.0.0.1:%d" % int(cg.stdout.readline())
        d = tmp_path / "cg"
        env = dict(os.environ, COINGLASS_API_URL=cgurl)
        env.pop("COINGLASS_API_KEY", None)
        os.environ.pop("COINGLASS_API_KEY", None)
        # no key in the environment and no database to read a stored one from
        r = subprocess.run([BIN, "data", "fetch", "--data-dir", str(d), "--days-back", "1", "--coinglass"],
                           capture_output=True, text=True, timeout=60,
                           env=dict(env, AGENTTEST_CONFIG="/dev/null", DATABASE_URL="mariadb://nobody@localhost/x?socket=/nonexistent"))
        assert r.returncode != 0 and json.loads(r.stderr)["code"] in ("invalid_config", "missing_field"), r.stderr
        assert _cg_stats(cgurl)["requests"] == 0

        old = dict(os.environ)
        os.environ.update(COINGLASS_API_URL=cgurl, COINGLASS_API_KEY=CG_KEY)
        try:
            first = fetch(s, d, "--days-back", "1", "--assets", "BTC,ETH", "--coinglass", "--no-pace")
            st = _cg_stats(cgurl)
            assert st["bad_key"] == 0 and st["requests"] == 2 * 6, st  # one page per asset and field
            assert first["coinglass"] is True
            man = json.load(open(os.path.join(first["path"], "manifest.json")))
            assert man["fields"][5:] == ["oi_1h", "oi_1d", "funding_1h", "liq_long_1h", "liq_short_1h", "ls_ratio_1h"]
            _check_cg(first["path"], ["BTC", "ETH"])

            s.lag(0)
            new = fetch(s, d, "--refresh", "--window", "binance-1m-1d", "--coinglass", "--no-pace")
            assert new["rows_added"] > 0 and new["coinglass"] is True
            log = _cg_stats(cgurl)["log"][st["requests"]:]
            assert len(log) == 2 * 6, log
            assert all(start > first["last_timestamp_ms"] - 2 * 86400000 for *_, start in log), log
            _check_cg(new["path"], ["BTC", "ETH"])
            # the directories the fetcher created are group-writable and setgid, so the pool
            # (group agenttest under systemd) can delete versions the runner (root) wrote
            import stat
            for p in (d, d / "versions", new["path"], first["path"]):
                mode = os.stat(p).st_mode
                assert mode & stat.S_IWGRP and mode & stat.S_ISGID, (p, oct(mode))
        finally:
            os.environ.clear()
            os.environ.update(old)
        for root, _, files in os.walk(d):
            for name in files:
                with open(os.path.join(root, name), "rb") as fh:
                    assert CG_KEY.encode() not in fh.read(), name
    finally:
        cg.kill()
        cg.wait()


def test_coinglass_rate_limit_gives_up_on_the_third_429_in_a_row(standin_factory, tmp_path):
    """A CoinGlass that keeps answering 429 (Retry-After: 1): the fetch waits
    and tries again, and the 3rd 429 in a row (the original's 3 attempts)
    fails it with rate_limited naming the asset, the field and the range;
    no version is stored."""
    s = standin_factory()
    cg = subprocess.Popen([sys.executable, CG_STANDIN, "--key", CG_KEY, "--forever", "429"],
                          stdout=subprocess.PIPE, text=True)
    try:
        cgurl = "http://127.0.0.1:%d" % int(cg.stdout.readline())
        old = dict(os.environ)
        os.environ.update(COINGLASS_API_URL=cgurl, COINGLASS_API_KEY=CG_KEY)
        try:
            r = fetch(s, tmp_path, "--days-back", "1", "--assets", "BTC", "--coinglass", "--no-pace", check=False)
        finally:
            os.environ.clear()
            os.environ.update(old)
        assert r.returncode == 1 and r.stdout == "", r.stdout
        err = json.loads(r.stderr)
        assert err["code"] == "rate_limited", err
        assert "CoinGlass BTC oi_1h: rate limited 3 times in a row fetching " in err["detail"], err
        assert _cg_stats(cgurl)["requests"] == 3
        assert not (tmp_path / "binance-1m-1d").exists()
    finally:
        cg.kill()
        cg.wait()


def test_unreachable_database_is_an_error_and_keeps_the_stored_version(standin_factory, tmp_path):
    """DATABASE_URL configured but unreachable: the registration fails loudly
    (unavailable, exit 3, naming the stored version and its path), and the
    version stays stored under the data directory with its label."""
    s = standin_factory()
    env = dict(os.environ, BINANCE_API_URL=s.url, AGENTTEST_CONFIG="/dev/null",
               DATABASE_URL="mariadb://nobody@localhost/x?socket=/nonexistent")
    env.pop("MANTIS_DATA_DIR", None)
    r = subprocess.run([BIN, "data", "fetch", "--data-dir", str(tmp_path), "--days-back", "1", "--assets", "BTC",
                        "--no-pace"], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 3 and r.stdout == "", (r.returncode, r.stdout)
    err = json.loads(r.stderr)
    assert err["code"] == "unavailable" and "but not registered" in err["error"], err
    target = os.readlink(tmp_path / "binance-1m-1d")
    assert target.startswith("versions/") and target[len("versions/"):] in err["error"], (target, err)
    v = subprocess.run([BIN, "data", "verify", str(tmp_path / "binance-1m-1d")], capture_output=True, text=True)
    assert v.returncode == 0, v.stdout + v.stderr


def _refused_url():
    """http://127.0.0.1:PORT where nothing listens (connection refused)."""
    import socket
    with socket.socket() as so:
        so.bind(("127.0.0.1", 0))
        return "http://127.0.0.1:%d" % so.getsockname()[1]


def _fetch_with_list(urls, data_dir):
    """`agenttest data fetch` with no BINANCE_API_URL and BINANCE_API_URLS=urls."""
    env = dict(os.environ, BINANCE_API_URLS=",".join(urls), AGENTTEST_CONFIG="/dev/null")
    for k in ("BINANCE_API_URL", "MANTIS_DATA_DIR", "DATABASE_URL"):
        env.pop(k, None)
    return subprocess.run([BIN, "data", "fetch", "--data-dir", str(data_dir), "--days-back", "1", "--assets", "BTC",
                           "--no-pace"], capture_output=True, text=True, env=env, timeout=120)


def test_base_url_ping_and_fallback_uses_the_first_endpoint_that_answers(standin_factory, tmp_path):
    """No BINANCE_API_URL: the endpoints of BINANCE_API_URLS are pinged in
    order; one refusing connections and one answering 5xx are passed over,
    the third is used; every candle comes from it."""
    down = _refused_url()
    sick = standin_factory("--ping-status", "503")
    good = standin_factory()
    r = _fetch_with_list([down, sick.url + "/", good.url], tmp_path)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["quality"]["BTC"]["rows"] == out["bars"] > 1000
    s, g = sick.stats(), good.stats()
    assert s["ping"] == 1 and s["klines"] == 0, s
    assert g["ping"] == 1 and g["klines"] >= 2, g


def test_base_url_all_endpoints_down_fails_naming_each(standin_factory, tmp_path):
    """Every endpoint of the list down: the fetch fails (fetch_failed, exit 1)
    naming each endpoint tried and why, and stores nothing."""
    down = _refused_url()
    sick = standin_factory("--ping-status", "502")
    r = _fetch_with_list([down, sick.url], tmp_path)
    assert r.returncode == 1, r.stderr
    e = json.loads(r.stderr)
    assert e["code"] == "fetch_failed", e
    assert down + " (" in e["error"] and sick.url + " (HTTP 502)" in e["error"], e
    assert "BINANCE_API_URLS" in e["error"], e
    assert sick.stats()["klines"] == 0
    assert not (tmp_path / "versions").exists()

"""The default-strategy updater (docs/paper-trading.md, "The default-strategy
updater"): candidates trade on paper in shadow accounts next to the label's
default, over the same new minutes the Binance stand-in serves; the updater
proposes (or promotes at once) a candidate whose return over the common
forward period beats the default's by more than the rule's margin and
refuses one that does not; an admin approves or rejects; the reason and the
numbers are kept in the proposals and in the defaults history; Prometheus
counts the decisions.

The stand-in's closes are independent draws within 1% of a constant base, so
MEANREV (against the deviation from the running mean) gains and MIRROR (its
sign flipped) loses on almost any 30 minutes (more than 4 standard
deviations; exposure 0.1, since at 1 the run's annualised growth over the
short window overflows to a non-finite CAGR);
a copy of the default's own rule started on the same bar earns exactly the
same and is refused for certain. Own stack, stand-in and data directory."""
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest
from helpers import assert_error
from runs_helpers import Api

REPO = Path(__file__).resolve().parents[2]
STANDIN = REPO / "tests" / "lib" / "binance_standin.py"
WINDOW = "binance-1m-60d"
BARS = 30

MEANREV = (
    "def positions(prices, params):\n"
    "    w, s = [], 0.0\n"
    "    for t in range(len(prices)):\n"
    "        s += prices[t]\n"
    "        w.append(-0.1 if prices[t] > s / (t + 1) else 0.1)\n"
    "    return w\n"
)
MIRROR = MEANREV.replace("-0.1 if", "0.1 if").replace("else 0.1", "else -0.1")
MIRROR2 = "# the default's rule, again\n" + MIRROR
FLAT = "def positions(prices, params):\n    return [0.0] * len(prices)\n"


def _post(base, path):
    urllib.request.urlopen(urllib.request.Request(base + path, data=b"", method="POST"), timeout=5).read()


@pytest.fixture(scope="module")
def upd(stack_factory):
    si = subprocess.Popen([sys.executable, str(STANDIN), "--history-days", "0.05", "--lag-minutes", "70"],
                          stdout=subprocess.PIPE, text=True)
    base = "http://127.0.0.1:%d" % int(si.stdout.readline())
    data = Path(tempfile.mkdtemp(prefix="agenttest-e2e-updater-"))
    stack = stack_factory("updater", MANTIS_DATA_DIR=str(data), BINANCE_API_URL=base, MANTIS_FETCH_BACKOFF_MS=10)
    st = {"stack": stack, "base": base, "lag": 70,   # never 0: the current minute is still open
          "admin": Api(stack, stack.create_token(role="admin")),
          "user": Api(stack, stack.create_token(role="user"))}
    yield st
    si.kill()
    si.wait()


def prefetch(st, minutes):
    """Serve `minutes` more minutes and prefetch the window; its new last bar."""
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
    return st["user"].get("/datasets/" + s["dataset_version"]).json()["last_ts"]


def version(st, code, name):
    """A strategy version with a completed, audit-passed run on the window."""
    v = st["user"].submit(code, name)["strategy_version_id"]
    run = st["user"].run(v, dataset_version=WINDOW, asset="BTC")
    assert run["status"] == "completed" and run["audit"]["passed"], (run.get("error"), run.get("metrics"))
    st.setdefault("scores", {})[v] = run["metrics"]["score"]   # its backtest score (the discovery order)
    return v


def nominate(st, v):
    r = st["admin"].post("/defaults/candidates", {"strategy_version_id": v, "dataset_version": WINDOW})
    assert r.status == 201, r
    return r.json()["account_id"]


def set_rule(st, **kw):
    body = {"dataset_version": WINDOW, "min_age_days": 0, "margin": 0, "min_bars": BARS, **kw}
    r = st["admin"].req("PUT", "/defaults/rules", body)
    assert r.status == 200, r
    return r.json()


def proposals(st, **q):
    qs = "&".join("%s=%s" % kv for kv in {"dataset_version": WINDOW, **q}.items())
    r = st["user"].get("/defaults/proposals?" + qs)
    assert r.status == 200, r
    return r.json()["proposals"]


def candidates(st):
    r = st["user"].get("/defaults/candidates?dataset_version=" + WINDOW)
    assert r.status == 200, r
    return r.json()["candidates"]


def wait_decisions(st, n, timeout=300):
    """Poll until at least n decisions exist (the paper steps of every account ran)."""
    deadline = time.time() + timeout
    while True:
        p = proposals(st)
        if len(p) >= n:
            return p
        assert time.time() < deadline, ([(q["strategy_name"], q["status"], q["default_promotion_id"], q["reason"])
                                          for q in p], candidates(st),
                                         st["user"].get("/defaults/paper?dataset_version=%s&limit=1" % WINDOW).json())
        time.sleep(0.3)


def by_version(ps, v, promotion=None):
    m = [p for p in ps if p["strategy_version_id"] == v and (promotion is None or p["default_promotion_id"] == promotion)]
    assert len(m) == 1, (v, ps)
    return m[0]


def check_decision(p):
    """The status follows from the numbers and the rule."""
    n = p["numbers"]
    assert n["bars"] >= BARS and n["to_ts"] - n["from_ts"] == n["bars"] * 60000 and n["audit_passed"] is True, p
    beats = n["candidate_return"] > n["default_return"] + n["margin"]
    assert (p["status"] != "refused") == beats, p
    assert p["reason"].startswith("proposed" if beats else "refused"), p


def counters(st):
    m = st["stack"].get("/metrics")
    assert m.status == 200, m
    out = {}
    for ln in m.body.decode().splitlines():
        if ln.startswith("agenttest_updater_decisions_total{"):
            key, val = ln.rsplit(" ", 1)
            if ('dataset_version="%s"' % WINDOW) in key:
                out[key.split('decision="')[1].split('"')[0]] = int(val)
    return out


def test_admin_only_and_validation(upd):
    st = upd
    user, admin = st["user"], st["admin"]
    prefetch(st, 0)
    body = {"dataset_version": WINDOW, "min_age_days": 0, "margin": 0, "min_bars": BARS}
    assert_error(user.req("PUT", "/defaults/rules", body), 403, "forbidden")
    assert_error(user.post("/defaults/candidates", {"strategy_version_id": 1, "dataset_version": WINDOW}), 403,
                 "forbidden")
    assert_error(user.post("/defaults/proposals/1/approve"), 403, "forbidden")
    assert_error(user.post("/defaults/proposals/1/reject"), 403, "forbidden")
    assert_error(admin.post("/defaults/proposals/999/approve"), 404, "not_found")
    assert_error(admin.post("/defaults/proposals/x/reject"), 404, "not_found")
    assert_error(admin.req("PUT", "/defaults/rules", {**body, "dataset_version": "binance-1m-7d"}), 404, "not_found")
    assert_error(admin.req("PUT", "/defaults/rules", {**body, "min_bars": 0}), 400, "invalid_field")
    assert_error(admin.req("PUT", "/defaults/rules", {**body, "margin": "x"}), 400, "invalid_field")
    assert_error(admin.req("PUT", "/defaults/rules", {**body, "extra": 1}), 400, "invalid_field")
    assert_error(admin.req("PUT", "/defaults/rules", {k: v for k, v in body.items() if k != "min_bars"}), 400,
                 "missing_field")
    assert_error(user.get("/defaults/proposals?status=maybe"), 400, "invalid_field")
    assert proposals(st) == []
    # a candidate needs an audit-passed run on the window
    v = user.submit(FLAT, "upd-no-run")["strategy_version_id"]
    assert_error(admin.post("/defaults/candidates", {"strategy_version_id": v, "dataset_version": WINDOW}), 409,
                 "conflict")


def test_auto_promotes_the_better_candidate_and_refuses_the_other(upd):
    st = upd
    admin = st["admin"]
    mirror = version(st, MIRROR, "upd-mirror")
    assert admin.post("/defaults/promote", {"strategy_version_id": mirror, "dataset_version": WINDOW}).status == 200
    p1 = st["user"].get("/defaults?dataset_version=" + WINDOW).json()["defaults"][0]
    assert p1["reason"] == "manual promotion" and p1["proposal_id"] is None and p1["numbers"] is None
    meanrev, mirror2 = version(st, MEANREV, "upd-meanrev"), version(st, MIRROR2, "upd-mirror2")
    acc_mr = nominate(st, meanrev)
    nominate(st, mirror2)
    assert_error(admin.post("/defaults/candidates", {"strategy_version_id": meanrev, "dataset_version": WINDOW}),
                 409, "conflict")   # already trading on paper
    cs = {x["strategy_version_id"]: x for x in candidates(st)}
    assert cs[meanrev]["account_id"] == acc_mr and cs[meanrev]["state"] == "active" and cs[meanrev]["bars"] == 0
    assert_error(st["user"].get("/defaults/candidates"), 400, "missing_field")
    rule = set_rule(st, auto_promote=True)
    assert rule["auto_promote"] is True and rule["min_bars"] == BARS
    assert st["user"].get("/defaults/rules").json()["rules"][0]["dataset_version"] == WINDOW
    prefetch(st, BARS)
    ps = wait_decisions(st, 2)
    for p in ps:
        check_decision(p)
    mr = by_version(ps, meanrev)
    assert mr["status"] == "promoted" and mr["promotion_id"] and mr["decided_by"] is None, mr
    assert mr["shadow_account_id"] == acc_mr
    assert acc_mr not in [x["account_id"] for x in candidates(st)]   # the default's account now
    # decided against the first default (the same rule from the same bar: equal returns), or against the
    # promoted one as well, in the same step
    m2 = [p for p in ps if p["strategy_version_id"] == mirror2]
    assert 1 <= len(m2) <= 2 and all(p["status"] == "refused" for p in m2), ps
    # the history keeps the reason and the numbers; the shadow's curve is the default's now
    d = st["user"].get("/defaults?dataset_version=" + WINDOW).json()
    cur = d["defaults"][0]
    assert cur["strategy_version_id"] == meanrev and cur["proposal_id"] == mr["id"], cur
    assert cur["reason"] == mr["reason"] and cur["numbers"] == mr["numbers"], cur
    assert [h["strategy_version_id"] for h in d["history"]][:2] == [meanrev, mirror]
    paper = st["user"].get("/defaults/paper?dataset_version=%s&limit=100000" % WINDOW).json()
    a = paper["account"]
    assert a["strategy_version_id"] == meanrev and a["id"] == acc_mr, a
    n = mr["numbers"]
    pt = {p["ts"]: p["equity"] for p in paper["equity"]}
    e0 = 1.0 if n["from_ts"] == a["start_ts"] else pt[n["from_ts"]]
    assert n["candidate_return"] == pt[n["to_ts"]] / e0 - 1.0
    c = counters(st)
    assert c["promoted"] == 1 and c["proposed"] == 1 and c["refused"] == len(ps) - 1, c


def test_approve_reject_round_trip(upd):
    st = upd
    admin, user = st["admin"], st["user"]
    versions = {p["strategy_name"]: p["strategy_version_id"] for p in proposals(st)}
    meanrev = versions["upd-meanrev"]
    hist = user.get("/defaults?dataset_version=" + WINDOW).json()["history"]
    mirror = [h for h in hist if h["strategy_name"] == "upd-mirror"][0]["strategy_version_id"]
    # the loser is the default again (a manual promotion: a fresh account); the
    # winner and a flat rule are candidates from its start bar
    assert admin.post("/defaults/promote", {"strategy_version_id": mirror, "dataset_version": WINDOW}).status == 200
    promo = user.get("/defaults?dataset_version=" + WINDOW).json()["defaults"][0]
    flat = version(st, FLAT, "upd-flat")
    nominate(st, meanrev)   # its earlier account was retired when the manual promotion replaced it
    nominate(st, flat)
    set_rule(st, auto_promote=False, margin=0.001)
    before = len(proposals(st))
    prefetch(st, BARS)
    ps = wait_decisions(st, before + 3)
    assert ps[0]["id"] > ps[-1]["id"]   # newest first
    new = [p for p in ps if p["default_promotion_id"] == ps[0]["default_promotion_id"]]
    assert {p["strategy_name"] for p in new} == {"upd-meanrev", "upd-flat", "upd-mirror2"}, new
    for p in new:
        check_decision(p)
    mr, fl, m2 = (by_version(new, v) for v in (meanrev, flat, versions["upd-mirror2"]))
    assert mr["status"] == "proposed" and fl["status"] == "proposed" and m2["status"] == "refused", new
    assert mr["promotion_id"] is None and mr["decided_by"] is None
    assert user.get("/defaults?dataset_version=" + WINDOW).json()["defaults"][0]["strategy_version_id"] == mirror
    # admin only; a refused decision cannot be answered
    assert_error(user.post("/defaults/proposals/%d/approve" % mr["id"]), 403, "forbidden")
    assert_error(admin.post("/defaults/proposals/%d/approve" % m2["id"]), 409, "conflict")
    r = admin.post("/defaults/proposals/%d/reject" % fl["id"])
    assert r.status == 200 and r.json()["status"] == "rejected", r
    assert_error(admin.post("/defaults/proposals/%d/approve" % fl["id"]), 409, "conflict")
    assert_error(admin.post("/defaults/proposals/%d/reject" % fl["id"]), 409, "conflict")
    r = admin.post("/defaults/proposals/%d/approve" % mr["id"])
    assert r.status == 200 and r.json()["status"] == "approved" and r.json()["promotion_id"], r
    assert_error(admin.post("/defaults/proposals/%d/approve" % mr["id"]), 409, "conflict")
    got = {p["id"]: p for p in proposals(st)}
    assert got[fl["id"]]["status"] == "rejected" and got[fl["id"]]["decided_by"]
    assert got[mr["id"]]["status"] == "approved" and got[mr["id"]]["promotion_id"] == r.json()["promotion_id"]
    cur = user.get("/defaults?dataset_version=" + WINDOW).json()["defaults"][0]
    assert cur["strategy_version_id"] == meanrev and cur["proposal_id"] == mr["id"] and cur["numbers"] == mr["numbers"]
    assert cur["reason"].startswith("proposed: forward return") and cur["promoted_by"]
    assert promo["strategy_version_id"] == mirror
    a = user.get("/defaults/paper?dataset_version=" + WINDOW).json()["account"]
    assert a["strategy_version_id"] == meanrev and a["state"] == "active"
    c = counters(st)
    tally = {}
    for p in proposals(st):
        tally[p["status"]] = tally.get(p["status"], 0) + 1
    assert c["approved"] == 1 and c["rejected"] == 1 and c["promoted"] == 1
    assert c["refused"] == tally["refused"] and c["proposed"] == len(proposals(st)) - tally["refused"], (c, tally)


def test_discovers_candidates_by_rule(upd):
    """The rule opens shadows by itself (sql/026): qualifying versions without an
    active or paused account on the label, the best backtest scores first, up to
    max_shadows active shadows; younger than min_age_days waits; a nomination is
    an override beyond the bound. Then the discovered shadows trade on paper."""
    st = upd
    user = st["user"]
    half = version(st, MEANREV.replace("0.1", "0.05"), "upd-meanrev-half")
    anti = version(st, MIRROR.replace("0.1", "0.05"), "upd-mirror-half")
    before = {x["account_id"] for x in candidates(st)}
    active = [x for x in candidates(st) if x["state"] == "active"]
    trading = {x["strategy_version_id"] for x in candidates(st)}
    trading.add(user.get("/defaults/paper?dataset_version=" + WINDOW).json()["account"]["strategy_version_id"])
    pool = [v for v in st["scores"] if v not in trading]   # the retired default's version, and the new two
    assert half in pool and anti in pool and len(pool) == 3, (pool, trading)
    cap = len(active) + 2
    assert set_rule(st, min_age_days=1, max_shadows=cap)["discovered"] == 0   # all submitted minutes ago
    assert {x["account_id"] for x in candidates(st)} == before
    r = set_rule(st, max_shadows=cap)
    assert r["discovered"] == 2 and r["max_shadows"] == cap, r
    assert st["user"].get("/defaults/rules").json()["rules"][0]["max_shadows"] == cap
    want = sorted(pool, key=lambda v: (-st["scores"][v], v))
    new = [x for x in candidates(st) if x["account_id"] not in before]
    assert sorted(x["strategy_version_id"] for x in new) == sorted(want[:2]), (new, want, st["scores"])
    assert all(x["origin"] == "updater" and x["state"] == "active" and x["bars"] == 0 for x in new), new
    assert set_rule(st, max_shadows=cap)["discovered"] == 0   # full
    acc = nominate(st, want[2])   # the admin's override, beyond the bound
    assert {x["account_id"]: x["origin"] for x in candidates(st)}[acc] == "admin"
    last = prefetch(st, 2)
    deadline = time.time() + 180
    while True:
        got = {x["account_id"]: x for x in candidates(st)}
        if all(got[x["account_id"]]["last_ts"] == last for x in new):
            break
        assert time.time() < deadline, (got, last)
        time.sleep(0.3)
    assert all(got[x["account_id"]]["bars"] == 2 for x in new), got


def test_discovers_on_a_label_without_accounts(upd):
    """A second window (binance-1m-90d) with a rule but no paper account at all:
    a version that qualifies only after the rule was set gets its shadow from
    the next refresh of the label (the prefetch's finishing transaction runs
    the discovery; no paper step exists there to run it). Last in the module:
    it moves the stand-in's clock the 60-day window shares."""
    st, label = upd, "binance-1m-90d"

    def refresh(minutes):
        st["lag"] -= minutes
        _post(st["base"], "/admin/lag?minutes=%d" % st["lag"])
        deadline = time.time() + 120
        while st["admin"].post("/api/data-cache/prefetch", {"days_back": 90, "assets": ["BTC"]}).status != 202:
            assert time.time() < deadline
            time.sleep(0.2)
        while st["user"].get("/api/data-cache/status?days_back=90").json()["status"] not in ("completed", "failed"):
            assert time.time() < deadline
            time.sleep(0.2)
        s = st["user"].get("/api/data-cache/status?days_back=90").json()
        assert s["status"] == "completed", s
        return st["user"].get("/datasets/" + s["dataset_version"]).json()["last_ts"]

    def shadows():
        r = st["user"].get("/defaults/candidates?dataset_version=" + label)
        assert r.status == 200, r
        return r.json()["candidates"]

    refresh(1)
    r = st["admin"].req("PUT", "/defaults/rules", {"dataset_version": label, "min_age_days": 0, "margin": 0,
                                                   "min_bars": BARS, "max_shadows": 1})
    assert r.status == 200 and r.json()["discovered"] == 0, r   # no run on this label yet
    v = st["user"].submit(MEANREV.replace("0.1", "0.07"), "upd-bare-window")["strategy_version_id"]
    run = st["user"].run(v, dataset_version=label, asset="BTC")
    assert run["status"] == "completed" and run["audit"]["passed"], run.get("error")
    assert shadows() == [] and st["user"].get("/defaults/paper?dataset_version=" + label).status == 404
    last = refresh(1)
    got = shadows()
    assert [(x["strategy_version_id"], x["origin"], x["state"]) for x in got] == [(v, "updater", "active")], got
    assert got[0]["last_ts"] == last and got[0]["bars"] == 0, got   # from the label's last bar
    assert st["user"].get("/defaults/proposals?dataset_version=" + label).json()["proposals"] == []

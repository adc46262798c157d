"""Forward scores (issue 18, docs/forward-scores.md): an evaluation on a
refreshed window gets a score on the bars that arrived after it was
submitted, provisional while the forward period is shorter than the final
period (AGENTTEST_FORWARD_FINAL_MINUTES here: 600 minutes), final after,
equal to a fresh evaluation over the same bars; the challenge board ranks
by it. The Binance stand-in's clock is set back (lag) and moved forward to
feed new minutes; every prefetch moves the label and queues the forward job."""
import contextlib
import shutil
import subprocess
import tempfile
import uuid
import time
from pathlib import Path

import pytest
from runs_helpers import Api
from test_challenges import CONTRARIAN, MOMENTUM, wait_done
from test_data_cache import _standin, _standin_post, _wait_prefetch

WINDOW = "binance-1m-60d"
FINAL_MINUTES = 600
LAG = 900   # the stand-in's clock starts 15 h behind


def _prefetch(admin, user, timeout=120):
    """Prefetch the 60-day window of ETH; the finished prefetch's status."""
    r = admin.post("/api/data-cache/prefetch", {"days_back": 60, "assets": ["ETH"]})
    assert r.status == 202, r
    done = _wait_prefetch(user, 60, timeout)
    assert done["status"] == "completed", done
    return done


def _sql(stack, q, *args):
    """One statement on the stack's MariaDB (the account scripts/lib/stack-mariadb.sh uses); rows as lists."""
    user = subprocess.run(["id", "-un"], capture_output=True, text=True).stdout.strip()
    r = subprocess.run(["mariadb", "--no-defaults", "--protocol=socket",
                        "--socket=%s" % (stack.var / "run" / "mysqld.sock"), "-u", user, "-N", "-B", "agenttest",
                        "-e", q % tuple("'%s'" % a.replace("\\", "\\\\").replace("'", "''") for a in args)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return [line.split("\t") for line in r.stdout.splitlines()]


def _agent_with_iterations(stack, version, codes):
    """A stopped agent judged on forward scores (best_by forward) on `version` with one completed,
    error-free iteration per code, as the agent job records them (the rows only: an agent's own
    loop needs 60 days of data, far more than this test fetches)."""
    aid = str(uuid.uuid4())
    _sql(stack, "INSERT INTO agents (id, owner_id, challenge, goal, days_back, dataset_id, dataset_version, "
         "dataset_hash, status, best_by, iterations_done) SELECT %s, (SELECT MIN(id) FROM users), "
         "'ETH-1H-BINARY', 'forward test', 1, id, version, dataset_hash, 'stopped', 'forward', " + str(len(codes)) +
         " FROM datasets WHERE version = %s", aid, version)
    for n, code in enumerate(codes, 1):
        _sql(stack, "INSERT INTO agent_iterations (id, agent_id, iteration, status, code, completed_at, "
             "holdout_score) VALUES (%s, %s, " + str(n) + ", 'completed', %s, NOW(6), 0.5)",
             str(uuid.uuid4()), aid, code)
    return aid


def _wait_forward(api, eid, version, timeout=300):
    """The evaluation once its forward score was computed on `version`."""
    deadline = time.time() + timeout
    e = None
    while time.time() < deadline:
        e = api.get("/api/evaluations/" + eid).json()
        f = e.get("forward")
        if f and f["dataset_version"] == version:
            return e
        time.sleep(0.3)
    raise AssertionError("no forward score on %s: %s" % (version, e and e.get("forward")))


def _forward_counts(stack):
    """GET /metrics (loopback): agenttest_forward_scores of WINDOW as {state: count}."""
    m = stack.get("/metrics")
    assert m.status == 200, m
    out = {}
    for ln in m.body.decode().splitlines():
        for state in ("provisional", "final"):
            if ln.startswith('agenttest_forward_scores{dataset_version="%s",state="%s"} ' % (WINDOW, state)):
                out[state] = int(ln.split(" ")[1])
    return out


@contextlib.contextmanager
def forward_stack(stack_factory, name, history_days, **env):
    """A stack fetching from its own Binance stand-in (`history_days` of history, its clock
    LAG minutes behind, so refreshes can add minutes: the empty pages after the stand-in's
    clock are retried with a short back-off) into its own data directory, with the final
    forward period FINAL_MINUTES: (stack, stand-in base URL, admin Api, user Api)."""
    si, base = _standin("--history-days", str(history_days), "--lag-minutes", str(LAG))
    data = Path(tempfile.mkdtemp(prefix="agenttest-e2e-%s-" % name))
    try:
        stack = stack_factory(name, MANTIS_DATA_DIR=str(data), BINANCE_API_URL=base,
                              AGENTTEST_FORWARD_FINAL_MINUTES=FINAL_MINUTES, MANTIS_FETCH_BACKOFF_MS=20, **env)
        yield stack, base, Api(stack, stack.create_token(role="admin")), Api(stack, stack.create_token(role="user"))
    finally:
        si.kill()
        si.wait()
        shutil.rmtree(data, ignore_errors=True)


@pytest.fixture(scope="module")
def fwd(stack_factory):
    # 1.5 days of history; the clock starts 15 h behind
    with forward_stack(stack_factory, "forward", 1.5) as st:
        yield st


def test_forward_score_provisional_then_final_equals_fresh_evaluation(fwd):
    stack, base, admin, user = fwd
    v0 = _prefetch(admin, user)
    ids = []
    for code in (MOMENTUM, CONTRARIAN):
        r = user.post("/api/evaluations", {"challenge": "ETH-1H-BINARY", "code": code, "days_back": 1,
                                           "holdout_days": 0.25, "dataset_version": WINDOW})
        assert r.status == 202, r
        e = wait_done(user, r.json()["id"])
        assert e["status"] == "completed" and e["dataset_version"] == v0["dataset_version"], e
        assert e["forward"] is None, e   # nothing arrived yet
        ids.append(e["id"])
    aid = _agent_with_iterations(stack, v0["dataset_version"], [MOMENTUM, CONTRARIAN])

    # 360 new minutes: forward period shorter than the final 600 -> provisional
    _standin_post(base, "/admin/lag?minutes=540")
    v1 = _prefetch(admin, user)
    e = _wait_forward(user, ids[0], v1["dataset_version"])
    f = e["forward"]
    assert f["state"] == "provisional", f
    assert f["window"] == WINDOW and f["metric"] == "mean_auc"
    assert 355 <= f["bars"] <= 365, f            # the clock moves while the test runs
    assert f["first_ts"] > f["cutoff_ts"] and f["last_ts"] >= f["first_ts"]
    assert f["final_days"] == FINAL_MINUTES / 1440 and abs(f["forward_days"] - f["bars"] / 1440) < 1e-12
    assert f["result"]["eval_holdout_minutes"] == f["bars"], f
    assert 0.0 <= f["score"] <= 1.0 and f["error"] is None
    cutoff = f["cutoff_ts"]

    # the agent's iterations: the same forward scores as evaluations of the same code, and
    # its best iteration judged on them
    ev_fwd = [_wait_forward(user, i, v1["dataset_version"])["forward"] for i in ids]
    deadline = time.time() + 120
    while time.time() < deadline:
        ag = admin.get("/api/agents/" + aid).json()
        its = admin.get("/api/agents/%s/iterations" % aid).json()
        its = its.get("iterations", its) if isinstance(its, dict) else its
        if all(it.get("forward") for it in its):
            break
        time.sleep(0.3)
    assert ag["config"]["best_by"] == "forward", ag
    for it, f in zip(its, ev_fwd):
        g = it["forward"]
        assert g["state"] == "provisional" and g["cutoff_ts"] == f["cutoff_ts"] and g["bars"] == f["bars"], g
        assert g["score"] == f["score"] and "result" not in g, (g, f)
    best = max(range(2), key=lambda k: (ev_fwd[k]["score"], -k))
    assert ag["best_iteration"] == best + 1 and ag["best_score"] == ev_fwd[best]["score"], ag
    # Prometheus: two evaluations and two iterations, all provisional
    assert _forward_counts(stack) == {"provisional": 4, "final": 0}

    # 300 more: 660 >= 600 -> final, and equal to a fresh evaluation of the same bars
    _standin_post(base, "/admin/lag?minutes=240")
    v2 = _prefetch(admin, user)
    finals = [_wait_forward(user, i, v2["dataset_version"])["forward"] for i in ids]
    v2_last = finals[0]["last_ts"]
    fresh_ids = []
    for f in finals:
        assert f["state"] == "final" and f["bars"] >= FINAL_MINUTES, f
        assert f["cutoff_ts"] == cutoff, f         # the cutoff never moves
    for code, f in zip((MOMENTUM, CONTRARIAN), finals):
        r = user.post("/api/evaluations", {"challenge": "ETH-1H-BINARY", "code": code, "days_back": 1,
                                           "holdout_days": f["bars"] / 1440,
                                           "dataset_version": v2["dataset_version"]})
        assert r.status == 202, r
        fresh = wait_done(user, r.json()["id"])
        fresh_ids.append(fresh["id"])
        assert fresh["status"] == "completed", fresh
        assert fresh["result"]["eval_holdout_minutes"] == f["bars"]
        assert fresh["score"] == f["score"], (fresh["score"], f["score"])
        assert fresh["result"]["windows"] == f["result"]["windows"]

    # a final score is never recomputed: one more hour is scored for the fresh
    # evaluations (submitted after v2: their cutoff is v2's last bar) and leaves
    # the final ones alone; both are read after that job's one finishing write
    _standin_post(base, "/admin/lag?minutes=180")
    v3 = _prefetch(admin, user)
    for i in fresh_ids:
        g = _wait_forward(user, i, v3["dataset_version"])["forward"]
        assert g["state"] == "provisional" and g["cutoff_ts"] == v2_last, g
    for i, f in zip(ids, finals):
        again = user.get("/api/evaluations/" + i).json()["forward"]
        assert again["dataset_version"] == v2["dataset_version"] and again["score"] == f["score"], again
    # Prometheus: the four final scores stay final, the two fresh evaluations are provisional
    assert _forward_counts(stack) == {"provisional": 2, "final": 4}


def test_leaderboard_ranks_by_forward_score(fwd):
    stack, base, admin, user = fwd
    board = user.get("/api/challenges/ETH-1H-BINARY/leaderboard?rank_by=forward&dataset_version=" + WINDOW)
    assert board.status == 200, board
    b = board.json()
    assert b["rank_by"] == "forward" and b["direction"] == "higher"
    ents = b["entries"]
    assert len(ents) >= 2, b
    scores = [x["score"] for x in ents]
    assert scores == sorted(scores, reverse=True), scores
    assert [x["rank"] for x in ents] == list(range(1, len(ents) + 1))
    for x in ents:   # each entry is the evaluation's own forward score
        f = user.get("/api/evaluations/" + x["evaluation_id"]).json()["forward"]
        assert f["score"] == x["score"] and f["state"] == x["forward_state"], (x, f)
    finals = user.get("/api/challenges/ETH-1H-BINARY/leaderboard?rank_by=forward&forward_state=final"
                      "&dataset_version=" + WINDOW).json()["entries"]
    assert finals and all(x["forward_state"] == "final" for x in finals)
    assert [x["evaluation_id"] for x in finals] == [x["evaluation_id"] for x in ents
                                                     if x["forward_state"] == "final"]
    # the default board still ranks by the holdout score of the pinned version
    dflt = user.get("/api/challenges/ETH-1H-BINARY/leaderboard?dataset_version=" + ents[0]["dataset_version"])
    assert dflt.status == 200 and "rank_by" not in dflt.json()
    for q, field in (("rank_by=best", "rank_by"), ("rank_by=forward&forward_state=done", "forward_state")):
        r = user.get("/api/challenges/ETH-1H-BINARY/leaderboard?" + q)
        assert r.status == 400 and r.json()["code"] == "invalid_field" and field in r.json()["detail"], r

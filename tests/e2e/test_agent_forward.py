"""An agent judged on forward scores, from its own loop (issues 15 and 18,
docs/forward-scores.md): the built-in agent runs its iterations on a
version of a refreshed window (60 days of 1-minute ETH bars from the local
Binance stand-in); the stand-in's clock then moves forward, each prefetch
moves the window's label and the runner's forward job scores every
iteration on the new bars. With best_by "forward" the agent's best
iteration is the one the recorded forward scores select (not the sealed
holdout's), it follows the scores as more data arrives, and a recorded
forward score equals a fresh evaluation of the iteration's code over the
same bars. Needs root (the agent sandbox)."""
import os
import time

import pytest
from test_challenges import wait_done
from test_data_cache import _standin_post
from test_forward_scores import FINAL_MINUTES, LAG, WINDOW, _prefetch, forward_stack

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the agent sandbox needs root")


@pytest.fixture(scope="module")
def afwd(stack_factory):
    # 61 days of history: a full 60-day window (the agents' minimum days_back)
    with forward_stack(stack_factory, "agent-forward", 61, AGENTTEST_RUNNER_SLOTS=2) as st:
        yield st


def _version(admin, user):
    """Prefetch the window (60 days of ETH the first time); the version it registered."""
    return _prefetch(admin, user, timeout=600)["dataset_version"]


def _wait(user, aid, pred, what, timeout=1800):
    deadline = time.time() + timeout
    d = None
    while time.time() < deadline:
        d = user.get("/api/agents/" + aid).json()
        assert d["status"] not in ("error", "crashed"), d
        if pred(d):
            return d
        time.sleep(1)
    raise AssertionError("agent %s: no %s in %d s: %s" % (aid, what, timeout, d))


def _scored_on(version):
    """Every iteration of the agent has a forward score on `version`."""
    return lambda d: d["iterations"] and all(i["forward"] and i["forward"]["dataset_version"] == version
                                              for i in d["iterations"])


def _forward_best(its):
    """The iteration the forward scores select: the highest mean AUC, ties the earliest."""
    scored = [i for i in its if i["forward"]["score"] is not None]
    assert scored, its
    return max(scored, key=lambda i: (i["forward"]["score"], -i["iteration"]))


def test_real_agent_best_iteration_follows_forward_scores(afwd):
    stack, base, admin, user = afwd
    v0 = _version(admin, user)
    r = user.post("/api/agents", {"challenge": "ETH-1H-BINARY", "goal": "find the 1-hour effect on ETH",
                                  "min_iterations": 3, "max_iterations": 3, "dataset_version": v0,
                                  "best_by": "forward"})
    assert r.status == 201, r
    aid = r.json()["id"]
    d = _wait(user, aid, lambda d: d["status"] in ("completed", "max_iterations_reached"), "end of the loop")
    its = d["iterations"]
    assert [i["iteration"] for i in its] == [1, 2, 3], its
    assert all(not i["has_error"] and 0 < i["holdout_score"] < 1 for i in its), its
    # judged on forward scores: no best before any iteration has one, although each has a holdout score
    assert d["config"]["best_by"] == "forward" and d["best_iteration"] is None and d["best_score"] is None, d
    assert all(i["forward"] is None for i in its), its
    holdout_best = max(its, key=lambda i: (i["holdout_score"], -i["iteration"]))["iteration"]

    # 360 new minutes (shorter than the final 600): every iteration gets a provisional forward score
    _standin_post(base, "/admin/lag?minutes=%d" % (LAG - 360))
    v1 = _version(admin, user)
    d = _wait(user, aid, _scored_on(v1), "forward scores on " + v1)
    its = d["iterations"]
    cutoff = its[0]["forward"]["cutoff_ts"]
    for i in its:
        f = i["forward"]
        assert f["state"] == "provisional" and f["window"] == WINDOW and f["metric"] == "mean_auc", f
        assert f["cutoff_ts"] == cutoff and f["first_ts"] > cutoff and 355 <= f["bars"] <= 365, f
    # the agent's best is the one the recorded forward scores select, with its forward score
    best = _forward_best(its)
    # (written in the scores' transaction: at most a read of the detail away)
    d = _wait(user, aid, lambda d: d["best_iteration"] is not None, "best iteration", timeout=60)
    assert d["best_iteration"] == best["iteration"] and d["best_score"] == best["forward"]["score"], \
        (d["best_iteration"], d["best_score"], [(i["iteration"], i["forward"]["score"]) for i in its])
    assert d["best_score"] != best["holdout_score"], d   # judged on the forward score, not the holdout's
    firsts = {i["iteration"]: i["forward"]["score"] for i in its}
    print("holdout best %d, forward best %d on %s; forward scores %s" % (holdout_best, best["iteration"], v1, firsts))

    # the trusted evaluator's score: a fresh strict evaluation of the best iteration's code on v1,
    # whose holdout is exactly the forward bars, gives the same number and windows
    code = user.get("/api/agents/%s/code/%d" % (aid, best["iteration"]))
    assert code.status == 200, code
    e = user.post("/api/evaluations", {"challenge": "ETH-1H-BINARY", "code": code.body.decode(), "mode": "strict",
                                       "days_back": 60, "holdout_days": best["forward"]["bars"] / 1440,
                                       "dataset_version": v1})
    assert e.status == 202, e
    fresh = wait_done(user, e.json()["id"], timeout=900)
    assert fresh["status"] == "completed", fresh
    assert fresh["result"]["eval_holdout_minutes"] == best["forward"]["bars"], fresh["result"]
    assert fresh["score"] == best["forward"]["score"], (fresh["score"], best["forward"])

    # 300 more minutes: the scores are recomputed on the grown forward period (final: >= 600)
    # and the best iteration is again the one the new scores select
    _standin_post(base, "/admin/lag?minutes=%d" % (LAG - 660))
    v2 = _version(admin, user)
    d = _wait(user, aid, _scored_on(v2), "forward scores on " + v2)
    its = d["iterations"]
    for i in its:
        f = i["forward"]
        assert f["state"] == "final" and f["cutoff_ts"] == cutoff and f["bars"] >= FINAL_MINUTES, f
    best = _forward_best(its)
    d = _wait(user, aid, lambda d: d["best_score"] == best["forward"]["score"], "best on " + v2, timeout=120)
    assert d["best_iteration"] == best["iteration"], d
    print("forward best %d on %s; forward scores %s" %
          (best["iteration"], v2, {i["iteration"]: i["forward"]["score"] for i in its}))

"""Research agents end to end on a stack of their own (issue 15): the
built-in agent runs iterations that the server scores (dev and sealed
holdout), a message sent during an iteration reaches the next one, pause /
resume / stop between and during iterations, a runner SIGKILLed in the
middle of an iteration (another runner redoes it, nothing lost or doubled),
the wall-time budget's pause and its raise, and the server-sent events of
an agent. Needs root (the agent sandbox)."""
import json
import os
import signal
import socket
import time

import pytest

from test_runner_recovery import start_runner

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="the agent sandbox needs root")
pytestmark = needs_root
GOAL = "find the 1-hour momentum effect on ETH"


@pytest.fixture(scope="module")
def lstack(stack_factory):
    # 60 days of synthetic market: the agents' minimum days_back
    s = stack_factory.fresh("agents-loop", AGENTTEST_SYNTH_DAYS=60, AGENTTEST_RUNNER_SLOTS=2,
                            MANTIS_LOG_LEVEL="debug")
    s.start()
    yield s
    for p in getattr(s, "extra_runners", []):
        if p.poll() is None:
            p.kill()
            p.wait()
    s.stop()


@pytest.fixture(scope="module")
def tok(lstack):
    return lstack.create_token(role="user")


def post(s, path, tok, body=None):
    return s.request("POST", path, token=tok, json_body=body if body is not None else {})


def create(s, tok, **fields):
    body = {"challenge": "ETH-1H-BINARY", "goal": GOAL, "min_iterations": 1, "max_iterations": 2}
    body.update(fields)
    r = post(s, "/api/agents", tok, body)
    assert r.status == 201, r
    return r.json()["id"]


def detail(s, tok, aid):
    r = s.get(f"/api/agents/{aid}", token=tok)
    assert r.status == 200, r
    return r.json()


def wait_for(s, tok, aid, pred, timeout=900, what="condition"):
    deadline = time.monotonic() + timeout
    d = None
    while time.monotonic() < deadline:
        d = detail(s, tok, aid)
        if pred(d):
            return d
        assert d["status"] not in ("error", "crashed"), d
        time.sleep(0.5)
    raise AssertionError(f"agent {aid}: no {what} in {timeout}s: {json.dumps(d)[:3000]}\n{s.log_tail(40)}")


def running(d):
    return d["activity"] is not None and d["activity"]["state"] == "running"


def wait_started(s, tok, aid, n):
    """Wait until iteration n is running and has loaded its inputs (its
    iteration_started event, written after it read the pending messages): the
    state in which a message belongs to the next iteration. The activity turns
    "running" at the claim, a moment before that."""
    wait_for(s, tok, aid, lambda d: running(d) and d["activity"]["iteration"] == n, what=f"running iteration {n}")
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        if any(e["event"] == "iteration_started" and e["data"] == {"iteration": n} for e in events(s, tok, aid)):
            return
    raise AssertionError(f"agent {aid}: no iteration_started event for iteration {n}\n{s.log_tail(40)}")


def test_iterations_scored_by_server_and_message_reaches_next(lstack, tok):
    aid = create(lstack, tok)
    wait_started(lstack, tok, aid, 1)
    r = post(lstack, f"/api/agents/{aid}/message", tok, {"text": "  favour momentum  "})
    assert r.status == 200 and r.json() == {"status": "sent"}
    assert "Operator: favour momentum" in lstack.get(f"/api/agents/{aid}/inbox", token=tok).json()["content"]
    # a goal edited during iteration 1 is iteration 2's (its GOAL.md), not 1's
    r = post(lstack, f"/api/agents/{aid}/goal", tok, {"goal": "a new goal: try volatility"})
    assert r.status == 200 and r.json()["version"] == 2, r
    d = wait_for(lstack, tok, aid, lambda d: d["iteration_count"] >= 1, what="iteration 1")
    it = d["iterations"][0]
    assert it["iteration"] == 1 and it["has_error"] is False, it
    assert it["metrics"]["dev_only"] is True and "mean_auc" in it["metrics"]
    assert 0 < it["holdout_metrics"]["mean_auc"] < 1 and it["holdout_score"] == it["holdout_metrics"]["mean_auc"]
    assert d["best_iteration"] == 1 and d["best_score"] == it["holdout_score"]
    assert it["analysis"] and "feature_report" in it["analysis"]
    code = lstack.get(f"/api/agents/{aid}/code/1", token=tok)
    assert code.status == 200 and code.content_type.startswith("text/plain") and b"TechPredictor" in code.body
    import hashlib
    assert hashlib.sha256(code.body).hexdigest() == it["code_hash"]
    assert lstack.get(f"/api/agents/{aid}/notes", token=tok).json()["content"]
    assert lstack.get(f"/api/agents/{aid}/state", token=tok).json()["content"]
    out = lstack.get(f"/api/agents/{aid}/stdout?tail=5", token=tok).json()
    assert out["showing"] <= 5 and "[iter 1] started" in lstack.get(f"/api/agents/{aid}/stdout?tail=5000",
                                                                    token=tok).json()["content"]
    feats = lstack.get(f"/api/agents/{aid}/iterations/1/features", token=tok)
    assert feats.status == 200 and feats.json()["iteration"] == 1
    m = lstack.get(f"/api/agents/{aid}/iterations/1/metrics", token=tok).json()
    assert m["holdout_metrics"] == it["holdout_metrics"]
    assert lstack.get(f"/api/agents/{aid}/iterations/9/metrics", token=tok).status == 404
    # the message sent during iteration 1 is delivered to iteration 2, never erased
    d = wait_for(lstack, tok, aid, lambda d: d["status"] in ("max_iterations_reached", "completed"),
                 what="the end")
    chat = lstack.get(f"/api/agents/{aid}/chat", token=tok).json()["messages"]
    msg = [m for m in chat if m["type"] == "message"]
    assert len(msg) == 1 and msg[0]["text"] == "favour momentum" and msg[0]["delivered_iteration"] == 2, chat
    assert lstack.get(f"/api/agents/{aid}/inbox", token=tok).json()["content"] == ""
    assert [i["iteration"] for i in d["iterations"]] == [1, 2]
    assert [i["goal_version"] for i in d["iterations"]] == [1, 2], d["iterations"]
    goal_md = (lstack.var / "agents" / aid / "workspace" / "GOAL.md").read_text()
    assert "a new goal: try volatility" in goal_md and GOAL not in goal_md, goal_md
    best = max(d["iterations"], key=lambda i: (i["holdout_score"], -i["iteration"]))
    assert d["best_iteration"] == best["iteration"]


def agent_procs(aid):
    """Pids whose command line names the agent (the harness, the agent's turn)."""
    out = []
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            with open(f"/proc/{p}/cmdline", "rb") as f:
                if aid.encode() in f.read():
                    out.append(int(p))
        except OSError:
            pass
    return out


def events(s, tok, aid, after=None):
    """The agent's events after event id `after` (an opaque cursor; None: from the first)."""
    r = s.get(f"/api/agents/{aid}/events?wait=1" + (f"&after={after}" if after else ""), token=tok)
    assert r.status == 200 and r.content_type.startswith("text/event-stream"), r
    out, cur = [], {}
    for line in r.body.decode().splitlines():
        if line.startswith("event: "):
            cur["event"] = line[7:]
        elif line.startswith("data: "):
            cur["data"] = json.loads(line[6:])
            out.append(cur)
            cur = {}
    return out


def test_pause_during_iteration_resume_then_stop(lstack, tok):
    aid = create(lstack, tok, max_iterations=3)
    wait_started(lstack, tok, aid, 1)
    assert post(lstack, f"/api/agents/{aid}/pause", tok).json() == {"paused": True}
    d = wait_for(lstack, tok, aid, lambda d: d["status"] == "paused", what="the pause after iteration 1")
    assert d["iteration_count"] == 1 and d["activity"] is None and d["paused"] is True
    kinds = [e["event"] for e in events(lstack, tok, aid)]
    assert "iteration_started" in kinds and "iteration_scored" in kinds and kinds[-1] in ("status", "paused")
    scored = [e["data"] for e in events(lstack, tok, aid) if e["event"] == "iteration_scored"]
    assert scored[0]["iteration"] == 1 and scored[0]["holdout_score"] == d["iterations"][0]["holdout_score"]
    # a changed set, so iteration 2 is scored (a kept set's scores are reused at once)
    r = post(lstack, f"/api/agents/{aid}/message", tok, {"text": "exclude bollinger"})
    assert r.status == 200, r
    assert post(lstack, f"/api/agents/{aid}/resume", tok).json() == {"paused": False}
    wait_for(lstack, tok, aid, lambda d: running(d) and d["activity"]["iteration"] == 2, what="iteration 2")
    time.sleep(2)   # inside the agent's turn or its scoring: either is stopped
    t0 = time.monotonic()
    assert post(lstack, f"/api/agents/{aid}/stop", tok).json() == {"status": "stopped"}
    while agent_procs(aid) and time.monotonic() - t0 < 5:
        time.sleep(0.1)
    assert agent_procs(aid) == [], "the agent's processes outlived the stop by 5 s"
    d = wait_for(lstack, tok, aid, lambda d: d["activity"] is None, timeout=10, what="no activity")
    assert d["status"] == "stopped" and d["iteration_count"] == 1 and [i["iteration"] for i in d["iterations"]] == [1]


def test_delete_during_iteration_ends_its_processes_and_removes_it(lstack, tok):
    """A delete while iteration 1 runs: the agent is gone from the API at
    once, its processes (harness, sandbox, scoring) within 5 s, and the
    runner removes its rows and its directory once nothing of it runs."""
    aid = create(lstack, tok, max_iterations=3)
    wait_started(lstack, tok, aid, 1)
    time.sleep(1)
    assert agent_procs(aid), "no process of the running iteration found"
    t0 = time.monotonic()
    assert post(lstack, f"/api/agents/{aid}/delete", tok).json() == {"status": "deleted"}
    assert lstack.get(f"/api/agents/{aid}", token=tok).status == 404
    while agent_procs(aid) and time.monotonic() - t0 < 5:
        time.sleep(0.1)
    assert agent_procs(aid) == [], "the agent's processes outlived the delete by 5 s"
    root = lstack.var / "agents" / aid
    deadline = time.monotonic() + 120
    while root.exists() and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not root.exists(), f"the deleted agent's directory is still there\n{lstack.log_tail(40)}"


def test_runner_killed_mid_iteration_is_redone_elsewhere(lstack, tok):
    aid = create(lstack, tok, max_iterations=1)
    wait_for(lstack, tok, aid, running, what="running iteration 1")
    os.kill(lstack.pid("runner"), signal.SIGKILL)
    t0 = time.monotonic()
    while agent_procs(aid) and time.monotonic() - t0 < 10:   # PR_SET_PDEATHSIG: the harness goes too
        time.sleep(0.1)
    assert agent_procs(aid) == []
    start_runner(lstack, "runner-b")   # on the same AGENTTEST_AGENTS_DIR (shared storage across hosts)
    d = wait_for(lstack, tok, aid, lambda d: d["status"] in ("max_iterations_reached", "completed"),
                 what="iteration 1 on the other runner")
    assert [i["iteration"] for i in d["iterations"]] == [1] and not d["iterations"][0]["has_error"]
    assert d["best_iteration"] == 1
    started = [e for e in events(lstack, tok, aid) if e["event"] == "iteration_started"]
    # the one that finished, and the killed attempt's unless the kill came between its claim and its load
    assert 1 <= len(started) <= 2 and all(e["data"] == {"iteration": 1} for e in started)
    # the redo ran in the agent's one workspace: the interrupted attempt's outputs were replaced
    ws = lstack.var / "agents" / aid / "workspace"
    assert (ws / "iteration_1.py").exists() and "[iter 1] started" in (lstack.var / "agents" / aid / "stdout.log").read_text()


def test_wall_time_budget_pauses_cleanly_and_a_raise_resumes(lstack, tok):
    """budget.wall_s: after the iteration that uses it up the agent is paused
    with the budget named and its state saved; a plain resume is 409, a resume
    that raises the budget queues the next iteration."""
    aid = create(lstack, tok, max_iterations=3, budget={"wall_s": 1})
    d = wait_for(lstack, tok, aid, lambda d: d["status"] == "paused", what="the wall-time budget pause")
    assert d["iteration_count"] == 1 and d["activity"] is None, d
    assert "wall-time budget is used up" in (d["status_detail"] or ""), d
    assert d["budget"]["wall_s"] == 1 and d["budget"]["wall_s_used"] > 1 and d["budget"]["wall_s_left"] == 0, d
    assert lstack.get(f"/api/agents/{aid}/state", token=tok).json()["content"]
    r = post(lstack, f"/api/agents/{aid}/resume", tok)
    assert r.status == 409, r
    assert post(lstack, f"/api/agents/{aid}/resume", tok, {"budget": {"wall_s": 3600}}).json() == {"paused": False}
    d = detail(lstack, tok, aid)
    assert d["activity"]["iteration"] == 2 and d["budget"]["wall_s_left"] > 3000, d
    assert post(lstack, f"/api/agents/{aid}/stop", tok).json() == {"status": "stopped"}


def test_iteration_budget_stops_cleanly_and_a_raise_continues(lstack, tok):
    """max_iterations is the iterations budget: the agent stops at it with
    its state saved (max_iterations_reached, STATE.md kept); a plain resume is
    409, a resume that raises it queues the next iteration."""
    aid = create(lstack, tok, max_iterations=1)
    d = wait_for(lstack, tok, aid, lambda d: d["status"] in ("max_iterations_reached", "completed"),
                 what="the iterations budget")
    assert d["status"] == "max_iterations_reached" and d["activity"] is None, d
    assert d["budget"]["iterations"] == 1 and d["budget"]["iterations_used"] == 1 and d["budget"]["iterations_left"] == 0, d
    assert lstack.get(f"/api/agents/{aid}/state", token=tok).json()["content"]
    r = post(lstack, f"/api/agents/{aid}/resume", tok)
    assert r.status == 409, r
    assert post(lstack, f"/api/agents/{aid}/resume", tok, {"budget": {"iterations": 2}}).json() == {"paused": False}
    d = detail(lstack, tok, aid)
    assert d["activity"]["iteration"] == 2 and d["config"]["max_iterations"] == 2, d
    assert d["status"] in ("starting", "running") and d["budget"]["iterations_left"] == 1, d
    assert post(lstack, f"/api/agents/{aid}/stop", tok).json() == {"status": "stopped"}

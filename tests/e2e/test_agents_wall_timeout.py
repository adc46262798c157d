"""MANTIS_ITER_WALL_TIMEOUT end to end (issue 15): on a stack whose
per-iteration wall clock is its minimum (60 s), an agent whose turn never
ends (driver `command`: an agent command line that keeps printing, so the
idle timeout never fires) has that turn killed at the wall clock; the
iteration is recorded with has_error, timed_out and an error naming the
limit, nothing is scored, the turn's processes are gone within 5 s, and
the agent goes on with its next iteration (docs/agents.md, "The loop").
Needs root (the agent sandbox) and npm ci (the LLM profile binds the CLI's
directory, as for every `command` turn)."""
import json
import os
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CLI = REPO / "node_modules/@anthropic-ai/claude-code/cli.js"
pytestmark = [pytest.mark.skipif(os.geteuid() != 0, reason="the agent sandbox needs root"),
              pytest.mark.skipif(not CLI.exists(), reason="npm ci has not installed the CLI")]

KEY = "sk-ant-api03-E2eWallTimeout_" + "w" * 41 + "Q9"
WALL = 60
# an agent that works forever: a line every 3 s, never an iteration file;
# "overrun-it<N>" in its command line finds its processes
COMMAND = ("/usr/bin/python3 -u -c \"import time; [print('working overrun-it{iteration}', flush=True) "
           "or time.sleep(3) for _ in range(10 ** 6)]\"")


@pytest.fixture(scope="module")
def wstack(stack_factory):
    s = stack_factory.fresh("agents-wall", AGENTTEST_SYNTH_DAYS=60, AGENTTEST_RUNNER_SLOTS=1,
                            MANTIS_ITER_WALL_TIMEOUT=WALL, AGENTTEST_AGENT_COMMAND=COMMAND)
    s.start()
    yield s
    s.stop()


def post(s, path, tok, body=None):
    return s.request("POST", path, token=tok, json_body=body if body is not None else {})


def detail(s, tok, aid):
    r = s.get(f"/api/agents/{aid}", token=tok)
    assert r.status == 200, r
    return r.json()


def wait_for(s, tok, aid, pred, timeout, what):
    deadline = time.monotonic() + timeout
    d = None
    while time.monotonic() < deadline:
        d = detail(s, tok, aid)
        if pred(d):
            return d
        assert d["status"] not in ("error", "crashed"), d
        time.sleep(0.5)
    raise AssertionError(f"agent {aid}: no {what} in {timeout}s: {json.dumps(d)[:3000]}\n{s.log_tail(40)}")


def procs_with(marker):
    """Live (not zombie) pids whose command line holds marker."""
    out = []
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            with open(f"/proc/{p}/cmdline", "rb") as f:
                cmd = f.read()
            with open(f"/proc/{p}/status") as f:
                zombie = "\nState:\tZ" in f.read()
        except OSError:
            continue
        if marker.encode() in cmd and not zombie:
            out.append(int(p))
    return out


def test_turn_over_the_wall_clock_is_killed_recorded_and_the_agent_goes_on(wstack):
    tok = wstack.create_token(role="user")
    r = post(wstack, "/api/anthropic-key", tok, {"key": KEY})
    assert r.status == 200, r
    r = post(wstack, "/api/agents", tok, {"challenge": "ETH-1H-BINARY", "goal": "overrun the wall clock",
                                         "driver": "command", "min_iterations": 1, "max_iterations": 3})
    assert r.status == 201, r
    aid = r.json()["id"]
    wait_for(wstack, tok, aid, lambda d: procs_with("overrun-it1"), 300, "running turn 1")
    d = wait_for(wstack, tok, aid, lambda d: d["iteration_count"] >= 1, WALL + 240, "iteration 1 recorded")
    it = d["iterations"][0]
    assert it["iteration"] == 1 and it["has_error"] is True and it["timed_out"] is True, it
    assert it["error"] == "iteration killed: exceeded %ds wall-clock limit" % WALL, it
    # killed at the wall clock, not before it (the bound above it is the loaded machine's)
    assert WALL <= it["agent_s"] < WALL + 60, it
    assert it["metrics"] is None and it["holdout_metrics"] is None and it["code_hash"] is None, it
    assert d["best_iteration"] is None, d
    # the killed turn's processes are gone with its box (the stop's bound: 5 s)
    t0 = time.monotonic()
    while procs_with("overrun-it1") and time.monotonic() - t0 < 5:
        time.sleep(0.1)
    assert procs_with("overrun-it1") == []
    out = wstack.get(f"/api/agents/{aid}/stdout?tail=5000", token=tok).json()["content"]
    assert "working overrun-it1" in out and "[turn] ended: timeout" in out, out[-2000:]
    # the agent goes on: iteration 2 starts (its turn would overrun too; stop it)
    wait_for(wstack, tok, aid, lambda d: procs_with("overrun-it2"), 300, "running turn 2")
    assert detail(wstack, tok, aid)["status"] == "running"
    r = post(wstack, f"/api/agents/{aid}/stop", tok)
    assert r.status == 200, r
    t0 = time.monotonic()
    while procs_with("overrun-it2") and time.monotonic() - t0 < 5:
        time.sleep(0.1)
    assert procs_with("overrun-it2") == []
    d = wait_for(wstack, tok, aid, lambda d: d["status"] == "stopped", 60, "status stopped")
    assert [i["iteration"] for i in d["iterations"]] == [1], d["iterations"]

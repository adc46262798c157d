"""Live activity lines of an agent iteration (issue 15): while the built-in
agent's iteration runs, the agent detail's activity.lines and the events
stream carry what it runs and writes (its own log lines, relayed by the
harness through the runner), then the trusted side's scoring steps. A stack
of its own; needs root (the agent sandbox).

Deterministic: the iteration is held in flight by stopping the harness
process (SIGSTOP) once the first line is in the feed, so the detail is read
while the iteration is certainly running, whatever the machine's speed."""
import json
import os
import re
import signal
import time

import pytest

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the agent sandbox needs root")


@pytest.fixture(scope="module")
def vstack(stack_factory):
    s = stack_factory.fresh("agents-activity", AGENTTEST_SYNTH_DAYS=60, AGENTTEST_RUNNER_SLOTS=1)
    s.start()
    yield s
    s.stop()


def events(s, tok, aid, after=None):
    """The agent's events after event id `after` (an opaque cursor; None: from the first)."""
    r = s.get(f"/api/agents/{aid}/events?wait=1" + (f"&after={after}" if after else ""), token=tok)
    assert r.status == 200 and r.content_type.startswith("text/event-stream"), r
    out, cur = [], {}
    for line in r.body.decode().splitlines():
        if line.startswith("id: "):
            cur["id"] = line[4:]
        elif line.startswith("event: "):
            cur["event"] = line[7:]
        elif line.startswith("data: "):
            cur["data"] = json.loads(line[6:])
            out.append(cur)
            cur = {}
    return out


def harness_pids(s):
    """The runner's agent harness children (python3 -s -m agentloop.job)."""
    out = []
    for pid in s.children(s.pid("runner")):
        try:
            cmd = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
        except OSError:
            continue
        if b"agentloop.job" in cmd:
            out.append(pid)
    return out


def poll(what, fn, timeout=900):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = fn()
        if v:
            return v
        time.sleep(0.3)
    raise AssertionError(f"no {what} in {timeout}s")


def test_activity_lines_live_in_detail_and_stream(vstack):
    s = vstack
    tok = s.create_token(role="user")
    r = s.request("POST", "/api/agents", token=tok, json_body={
        "challenge": "ETH-1H-BINARY", "goal": "find the 1-hour momentum effect on ETH",
        "min_iterations": 1, "max_iterations": 1})
    assert r.status == 201, r
    aid = r.json()["id"]

    # the harness names the turn's start before the agent runs: hold it there
    poll("first activity line", lambda: [e for e in events(s, tok, aid) if e["event"] == "activity"])
    pids = poll("harness process", lambda: harness_pids(s))
    for p in pids:
        os.kill(p, signal.SIGSTOP)
    try:
        d = s.get(f"/api/agents/{aid}", token=tok).json()
        act = d["activity"]
        assert act is not None and act["state"] == "running" and act["iteration"] == 1, d
        lines = [x["line"] for x in act["lines"]]
        assert lines and lines[0] == "iteration 1: builtin agent turn started", lines
        assert all(isinstance(x["at"], str) and x["at"].endswith("Z") for x in act["lines"])
    finally:
        for p in pids:
            os.kill(p, signal.SIGCONT)

    def finished():
        d = s.get(f"/api/agents/{aid}", token=tok).json()
        assert d["status"] not in ("error", "crashed"), d
        return d if d["iteration_count"] == 1 and d["activity"] is None else None
    d = poll("scored iteration", finished)
    assert d["iterations"][0]["has_error"] is False, d["iterations"][0]

    evs = events(s, tok, aid)
    acts = [e for e in evs if e["event"] == "activity"]
    lines = [e["data"]["line"] for e in acts]
    assert all(e["data"]["iteration"] == 1 for e in acts)
    # the built-in agent's own steps: what it runs and what it writes, in order
    runs = [i for i, x in enumerate(lines) if x.startswith("[builtin] running the dev walk-forward for ")]
    wrote = lines.index("[builtin] writing iteration_1.py")
    assert runs and runs[0] < wrote, lines
    assert "[builtin] writing notes.txt" in lines and "[builtin] writing STATE.md" in lines, lines
    assert any(x.startswith("[builtin] validated ") for x in lines), lines
    # then the trusted side's steps, never a holdout number
    tail = lines[lines.index("[builtin] writing STATE.md"):]
    assert any(x.startswith("turn ended (ok) after ") for x in tail), tail
    assert "scoring iteration_1.py on the dev walk-forward windows and the sealed holdout (one stream)" in tail, tail
    # the holdout part's bound is a dev quantity (docs/agents.md, "Holdout timing")
    assert any(re.search(r"; sealed holdout scored; the next turn waits for its [0-9.]+ s bound$", x)
               for x in tail), tail
    # every line arrived before the iteration was scored
    # (the stream is in event order; ids are opaque and do not compare)
    scored = [i for i, e in enumerate(evs) if e["event"] == "iteration_scored"]
    assert scored and max(i for i, e in enumerate(evs) if e["event"] == "activity") < scored[0], evs
    # the detail shows no stale lines once nothing is in flight
    assert d["activity"] is None

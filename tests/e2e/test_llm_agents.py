"""LLM agents through the real API on a real stack (issue 16): the runner's
agent kind reads the owner's Anthropic key from the secret store and the
budgets left from MariaDB, the real Claude Code CLI runs in the agent
sandbox and reaches the Anthropic stand-in (tests/lib/anthropic_standin.py)
only through the egress proxy. Proves: an owner with no key gets status
error with no_api_key; a claude-code iteration is scored by the server and
its tokens, cost and requests equal the stand-in's usage (iteration, agent
detail, budget used and left); the upstream saw the real key on every
request and it is nowhere in the workspace, the agent's logs or the
runner's log; a budget used up during the turn pauses the agent with the
budget named and a raise through resume runs the same iteration again;
field validation of driver, model and budgets; the CLI's tool_use and text
are activity lines in the agent detail and the events stream while the
turn runs; a harness killed mid-turn is retried and the killed attempt's
metered tokens, cost and requests are still charged. Needs root (the agent
sandbox) and npm ci (the CLI)."""
import json
import os
import signal
import time
from pathlib import Path

import pytest

from helpers import AnthropicStandin, stack_sql

REPO = Path(__file__).resolve().parents[2]
CLI = REPO / "node_modules/@anthropic-ai/claude-code/cli.js"
pytestmark = [pytest.mark.skipif(os.geteuid() != 0, reason="the agent sandbox needs root"),
              pytest.mark.skipif(not CLI.exists(), reason="npm ci has not installed the CLI")]

KEY = "sk-ant-api03-E2eOwnerKey_" + "z" * 44 + "Q9"
GOAL = "find the 1-hour momentum effect on ETH"
CODE = r'''import numpy as np
from agenttest import Featurizer, Predictor

class TechFeaturizer(Featurizer):
    warmup = 1000
    compute_interval = 10
    def compute(self, view):
        p = view.prices("ETH")
        return {"mom": float(np.log(p[-1] / p[-61]))}

class TechPredictor(Predictor):
    def predict(self, f):
        up = 1.0 / (1.0 + np.exp(-200.0 * f["mom"]))
        return np.array([up, 1.0 - up])
'''
ANALYSIS = {"feature_report": [{"name": "mom", "description": "60-bar log return"}],
            "hypothesis": "1h momentum on ETH", "what_changed": "first try", "what_worked": "",
            "what_failed": "", "done": False}
PROBE = "env > probe_env.txt; cat /proc/*/cmdline 2>/dev/null | tr '\\0' ' ' > probe_cmdlines.txt"


def usage(i, o, cw=0, cr=0):
    return {"input_tokens": i, "output_tokens": o, "cache_creation_input_tokens": cw, "cache_read_input_tokens": cr}


def bash(cmd):
    return {"type": "tool_use", "name": "Bash", "input": {"command": cmd, "description": "step"}}


TOOLS = {"tools": True}
HOLD = "/tmp/agenttest-e2e-llm-hold-%d" % os.getpid()
WRITE_CODE = "cat > notes.txt <<'EOF'\nhypothesis: 1h momentum\nEOF\ncat > iteration_{{N}}.py <<'EOF'\n" + CODE + "EOF\n"
WRITE_ANALYSIS = ("cat > iteration_{{N}}_analysis.json <<'EOF'\n" + json.dumps(ANALYSIS) + "\nEOF\n"
                  "echo 'iteration {{N}}: momentum' >> STATE.md")
# The stand-in's turns are taken in order by the tests of this file, which
# run in order: the scored iteration (4 turns), then the budget test (two
# small steps, then the code, then the end), then the live activity test.
TURNS = [
    {"match": TOOLS, "content": [{"type": "text", "text": "I will write notes and code."}, bash(WRITE_CODE)],
     "usage": usage(2100, 180, 1500, 0)},
    {"match": TOOLS, "content": [bash(PROBE)], "usage": usage(300, 90, 0, 3600)},
    {"match": TOOLS, "content": [bash(WRITE_ANALYSIS)], "usage": usage(500, 120, 0, 4300)},
    {"match": TOOLS, "content": [{"type": "text", "text": "Iteration done."}], "usage": usage(600, 20, 0, 4800)},
    # budget test
    {"match": TOOLS, "content": [{"type": "text", "text": "step 0"}, bash("echo step0 >> STATE.md")],
     "usage": usage(1000, 100)},
    {"match": TOOLS, "content": [{"type": "text", "text": "step 1"}, bash("echo step1 >> STATE.md")],
     "usage": usage(1000, 100)},
    {"match": TOOLS, "content": [bash(WRITE_CODE)], "usage": usage(1000, 100)},
    {"match": TOOLS, "content": [bash(WRITE_ANALYSIS)], "usage": usage(1000, 100)},
    {"match": TOOLS, "content": [{"type": "text", "text": "done"}], "usage": usage(10, 1)},
    # live activity and a killed harness: attempt 1 (the next request is held
    # until the harness is gone), then the retried attempt
    {"match": TOOLS, "content": [{"type": "text", "text": "Looking around first."},
                                 {"type": "tool_use", "name": "Read", "input": {"file_path": "STATE.md"}}],
     "usage": usage(700, 40)},
    {"match": TOOLS, "hold_until": HOLD, "content": [bash("echo held >> STATE.md")], "usage": usage(800, 50, 0, 300)},
    {"match": TOOLS, "content": [{"type": "text", "text": "Second try."}, bash(WRITE_CODE)],
     "usage": usage(900, 60, 100, 0)},
    {"match": TOOLS, "content": [bash(WRITE_ANALYSIS)], "usage": usage(300, 30)},
    {"match": TOOLS, "content": [{"type": "text", "text": "Iteration done."}], "usage": usage(100, 10)},
]
HELD = len(TURNS) - 4   # the held turn: asked for, never metered (its proxy dies first)
DEFAULT = {"content": [{"type": "text", "text": "ok"}], "usage": usage(50, 5)}


def price(u):   # sonnet 4.x list prices per token (the proxy's built-in table)
    return (u["input_tokens"] * 3 + u["output_tokens"] * 15 + u["cache_creation_input_tokens"] * 3.75 +
            u["cache_read_input_tokens"] * 0.3) / 1e6


@pytest.fixture(scope="module")
def standin(tmp_path_factory):
    with AnthropicStandin(tmp_path_factory.mktemp("standin"), {"turns": TURNS, "default": DEFAULT}) as s:
        yield s


@pytest.fixture(scope="module")
def lstack(stack_factory, standin):
    s = stack_factory.fresh("llm-agents", AGENTTEST_SYNTH_DAYS=60, AGENTTEST_RUNNER_SLOTS=1,
                            AGENTTEST_ANTHROPIC_UPSTREAM=standin.url, MANTIS_CLAUDE_TIMEOUT=120)
    s.start()
    yield s
    s.stop()


@pytest.fixture(scope="module")
def tok(lstack):
    return lstack.create_token(role="user")


def post(s, path, tok, body=None):
    return s.request("POST", path, token=tok, json_body=body if body is not None else {})


def create(s, tok, **fields):
    body = {"challenge": "ETH-1H-BINARY", "goal": GOAL, "min_iterations": 1, "max_iterations": 1,
            "driver": "claude-code", "model": "sonnet"}
    body.update(fields)
    r = post(s, "/api/agents", tok, body)
    assert r.status == 201, r
    return r.json()["id"]


def wait_for(s, tok, aid, pred, timeout=600, what="condition"):
    deadline = time.monotonic() + timeout
    d = None
    while time.monotonic() < deadline:
        r = s.get(f"/api/agents/{aid}", token=tok)
        assert r.status == 200, r
        d = r.json()
        if pred(d):
            return d
        time.sleep(0.5)
    raise AssertionError(f"agent {aid}: no {what} in {timeout}s: {json.dumps(d)[:3000]}\n{s.log_tail(40)}")


def messages(reqs):
    return [r for r in reqs if r["path"].startswith("/v1/messages") and "count_tokens" not in r["path"]]


def served(reqs):
    return [TURNS[r["turn"]]["usage"] if r.get("turn", -1) >= 0 else DEFAULT["usage"] for r in messages(reqs)]


def test_llm_fields_are_validated(lstack, tok):
    base = {"challenge": "ETH-1H-BINARY", "goal": GOAL}
    for extra, field in ((dict(driver="gpt"), "driver"), (dict(driver="claude-code", model="gpt-4"), "model"),
                         (dict(budget={"tokens": 0}), "tokens"), (dict(budget={"usd": -1}), "usd"),
                         (dict(budget={"requests": "x"}), "requests"), (dict(budget={"cents": 5}), "cents"),
                         (dict(driver="command"), "AGENTTEST_AGENT_COMMAND")):
        r = post(lstack, "/api/agents", tok, dict(base, **extra))
        assert r.status == 400 and r.json()["code"] in ("invalid_field", "bad_request"), (extra, r)
        assert field in json.dumps(r.json()), (extra, r.json())


def test_no_key_is_an_error_with_its_code(lstack, tok, standin):
    aid = create(lstack, tok)
    d = wait_for(lstack, tok, aid, lambda d: d["status"] == "error", what="status error")
    assert "Anthropic key" in d["status_detail"] and "POST /api/anthropic-key" in d["status_detail"], d
    assert d["iterations"] == [] and standin.requests() == []
    r = post(lstack, f"/api/agents/{aid}/delete", tok)
    assert r.status == 200, r


def test_claude_code_iteration_scored_and_metered(lstack, tok, standin):
    r = post(lstack, "/api/anthropic-key", tok, {"key": KEY})
    assert r.status == 200 and r.json()["source"] == "own", r
    aid = create(lstack, tok)
    d = wait_for(lstack, tok, aid, lambda d: d["status"] in ("max_iterations_reached", "completed", "error", "paused"),
                 what="the end of iteration 1")
    assert d["status"] == "max_iterations_reached", d
    [it] = d["iterations"]
    assert not it["has_error"], it
    assert it["metrics"]["dev_only"] is True and 0.0 <= it["metrics"]["mean_auc"] <= 1.0
    assert it["holdout_metrics"] is not None and it["analysis"]["hypothesis"] == "1h momentum on ETH"
    reqs = standin.requests()
    assert reqs and all(r["headers"].get("x-api-key") == KEY for r in reqs)
    su = served(reqs)
    want = {k: sum(u[k] for u in su) for k in su[0]}
    t = it["tokens"]
    assert (t["input"], t["output"], t["cache_write"], t["cache_read"]) == (
        want["input_tokens"], want["output_tokens"], want["cache_creation_input_tokens"],
        want["cache_read_input_tokens"]), (t, want)
    assert t["requests"] == len(reqs)
    cost = sum(price(u) for u in su)
    assert t["cost"] == pytest.approx(cost, rel=1e-6)
    total = sum(want.values())
    b = d["budget"]
    assert d["tokens"]["requests"] == len(reqs) and d["total_tokens"] == total
    assert d["total_cost"] == pytest.approx(cost, rel=1e-6)
    assert (b["tokens_used"], b["requests_used"]) == (total, len(reqs))
    assert b["tokens_left"] == b["tokens"] - total and b["requests_left"] == b["requests"] - len(reqs)
    assert b["usd_used"] == pytest.approx(cost, rel=1e-6) and b["usd_left"] == pytest.approx(b["usd"] - cost)
    # the key never entered the box nor any log
    root = Path(lstack.var) / "agents" / aid
    ws = root / "workspace"
    env = (ws / "probe_env.txt").read_text()
    assert "ANTHROPIC_BASE_URL=http://127.0.0.1:8119" in env and "sk-ant-agenttest-dummy" in env
    assert "api03" not in env + (ws / "probe_cmdlines.txt").read_text()
    for p in [*root.rglob("*"), *(Path(lstack.var) / "log").rglob("*")]:
        if p.is_file() and not p.is_symlink():
            assert KEY.encode() not in p.read_bytes(), p
    out = lstack.get(f"/api/agents/{aid}/stdout?tail=5000", token=tok)
    assert out.status == 200 and KEY not in out.body.decode("utf-8", "replace")
    # the owner's day has every request, settled one by one by the proxy from its reservation in MariaDB
    [[owner]] = stack_sql(lstack, "SELECT owner_id FROM agents WHERE id = '%s'" % aid)
    [[day_tokens, day_requests, day_usd]] = stack_sql(
        lstack, "SELECT input + output + cache_write + cache_read, requests, usd FROM llm_owner_day "
                "WHERE owner_id = %s AND day = UTC_DATE()" % owner)
    assert (int(day_tokens), int(day_requests)) == (total, len(reqs))
    assert float(day_usd) == pytest.approx(cost, rel=1e-6)
    assert stack_sql(lstack, "SELECT COUNT(*) FROM llm_reservations WHERE owner_id = %s" % owner) == [["0"]]


def test_budget_exhaustion_pauses_and_a_raise_resumes(lstack, tok, standin):
    before = len(standin.requests())
    aid = create(lstack, tok, budget={"requests": 2})
    d = wait_for(lstack, tok, aid, lambda d: d["status"] in ("paused", "error", "max_iterations_reached"),
                 what="the budget pause")
    root = Path(lstack.var) / "agents" / aid
    why = lambda: (json.dumps(d), (root / "egress.log").read_text()[-3000:], lstack.log_tail(60))  # noqa: E731
    assert d["status"] == "paused" and "agent requests" in d["status_detail"], why()
    assert d["iterations"] == [] and d["budget"]["requests_used"] == 2 and d["budget"]["requests_left"] == 0
    assert len(messages(standin.requests()[before:])) == 2
    state = lstack.get(f"/api/agents/{aid}/state", token=tok)
    ws = Path(lstack.var) / "agents" / aid / "workspace"
    assert "step0" in (ws / "STATE.md").read_text(), state   # the workspace is kept
    r = post(lstack, f"/api/agents/{aid}/resume", tok, {"budget": {"requests": 1}})
    assert r.status == 400 and r.json()["code"] == "invalid_field", r      # below what is used
    r = post(lstack, f"/api/agents/{aid}/resume", tok, {"budget": {"requests": 100}})
    assert r.status == 200, r
    d = wait_for(lstack, tok, aid, lambda d: d["status"] in ("max_iterations_reached", "completed", "error",
                                                             "paused"), what="the resumed iteration")
    assert d["status"] == "max_iterations_reached", d
    [it] = d["iterations"]
    assert it["iteration"] == 1 and it["code_hash"] and not it["has_error"], it
    mine = standin.requests()[before:]
    assert d["budget"]["requests_used"] == len(mine) and d["budget"]["requests"] == 100
    su = served(mine)
    assert d["total_tokens"] == sum(sum(u.values()) for u in su)
    # the resumed turn's usage is on the iteration; both turns are in the agent's totals
    assert it["tokens"]["requests"] == len(mine) - 2


def egress_procs(aid):
    """(pid, ppid) of the egress proxy processes of agent aid."""
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            cmd = open(f"/proc/{d}/cmdline", "rb").read().split(b"\0")
            ppid = int(next(x for x in open(f"/proc/{d}/status").read().splitlines()
                            if x.startswith("PPid:")).split()[1])
        except (OSError, StopIteration, ValueError):
            continue
        if cmd and cmd[0].endswith(b"agenttest-egress") and aid.encode() in cmd:   # it rewrites its argv: "--agent", id
            out.append((int(d), ppid))
    return out


def wait_held(standin, before, timeout=60):
    """Wait until the stand-in has the request it holds (turn HELD) among
    the requests after index before (it logs a request when it arrives,
    before holding it; its hold ends by itself after 120 s)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if any(r.get("turn") == HELD for r in standin.requests()[before:]):
            return
        time.sleep(0.1)
    raise AssertionError(f"no held request in {timeout}s: {[r.get('turn') for r in standin.requests()[before:]]}")


def lines_of(d):
    return [x["line"] for x in ((d.get("activity") or {}).get("lines") or [])]


def test_live_activity_and_a_killed_harness_is_charged(lstack, tok, standin):
    before = len(standin.requests())
    aid = create(lstack, tok)
    try:
        # the first answer's text and tool_use are in the API while the
        # turn runs. The CLI prints that tool_use before it runs the tool
        # and asks again, so the kill below also waits until its next
        # request is the one the stand-in holds: killed before it, attempt 1
        # would have made one request and the held turn would go to the
        # retried attempt (under load the CLI can be seconds behind its own
        # output)
        d = wait_for(lstack, tok, aid, lambda d: "reading: STATE.md" in lines_of(d), timeout=300,
                     what="the live activity line")
        wait_held(standin, before)
        lines = lines_of(d)
        assert d["status"] == "running" and d["iterations"] == [], d
        assert lines[0] == "iteration 1: claude-code agent turn started (attempt 1 of 2)", lines
        assert lines.index("thought: Looking around first.") < lines.index("reading: STATE.md"), lines
        assert not any(x.startswith("turn ended") for x in lines), lines
        r = lstack.get(f"/api/agents/{aid}/events?wait=1", token=tok)
        body = r.body.decode()
        assert r.status == 200 and "event: activity" in body and '"line":"reading: STATE.md"' in body, body[-3000:]
        # kill the harness (the egress proxy's parent) mid-turn; the held
        # request's proxy dies with it, so that answer is never metered
        procs = egress_procs(aid)
        [harness] = {pp for _, pp in procs if pp not in {p for p, _ in procs}}
        assert b"agentloop.job" in open(f"/proc/{harness}/cmdline", "rb").read()
        os.kill(harness, signal.SIGKILL)
        deadline = time.monotonic() + 60
        while any(os.path.exists(f"/proc/{p}") for p, _ in procs) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not any(os.path.exists(f"/proc/{p}") for p, _ in procs), procs
    finally:
        open(HOLD, "w").close()
    d = wait_for(lstack, tok, aid, lambda d: d["status"] in ("max_iterations_reached", "completed", "error", "paused"),
                 what="the retried iteration")
    os.unlink(HOLD)
    assert d["status"] == "max_iterations_reached", d
    [it] = d["iterations"]
    assert not it["has_error"] and it["code_hash"], it
    mine = standin.requests()[before:]
    held = next(i for i, r in enumerate(mine) if r.get("turn") == HELD)
    first, second = mine[:held + 1], mine[held + 1:]
    use = lambda reqs: [u for r, u in zip(messages(reqs), served(reqs)) if r.get("turn") != HELD]  # noqa: E731
    # the retried attempt's usage is the iteration's; the killed one's is in the agent's totals too
    t = it["tokens"]
    assert t["requests"] == len(second) and t["input"] == sum(u["input_tokens"] for u in use(second)), (t, second)
    total = sum(sum(u.values()) for u in use(first) + use(second))
    cost = sum(price(u) for u in use(first) + use(second))
    b = d["budget"]
    assert sum(sum(u.values()) for u in use(first)) >= 700 + 40
    assert d["total_tokens"] == total and b["requests_used"] == len(mine), (d["tokens"], b, len(first), len(second))
    assert d["total_cost"] == pytest.approx(cost, rel=1e-6)
    # the runner charged the killed attempt's turn ledger: both of its
    # requests (the held one was admitted, so it counts) and the usage of
    # the one answered
    log = (Path(lstack.var) / "log" / "runner.log").read_text()
    [charged] = [json.loads(json.loads(x)["msg"].split(": ", 2)[2]) for x in log.splitlines()
                 if aid in x and "charged the usage of an attempt whose harness failed" in x]
    assert charged["requests"] == len(first) and charged["total"] == sum(sum(u.values()) for u in use(first)), (
        charged, first)

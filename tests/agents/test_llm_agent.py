"""One whole LLM agent iteration end to end (issue 16): the real Claude Code
CLI (node_modules/@anthropic-ai/claude-code, driver claude-code) in the real
agent sandbox, reaching the Anthropic stand-in only through the in-box relay
and the egress proxy, writes iteration_N.py, runs the local evaluation on
the dev data, writes its analysis; the trusted side scores it. Proves: the
upstream saw the real key on every request and the box only a dummy one;
the key is nowhere the agent can read (its environment, /proc, command
lines, the workspace, the logs it can see); other hosts, ports and paths
fail from inside; tokens and cost recorded equal the stand-in's usage;
budget exhaustion stops the turn with the workspace kept and a raised
budget resumes the same iteration; driver command runs an operator's agent
command line through the same sandbox, relay and proxy. Needs root, make
build and npm ci."""
import json
import os
import shlex
import sys

import pytest

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path[:0] = [os.path.join(REPO, "evaluator", "runner"), os.path.join(REPO, "sandbox", "host"),
                os.path.dirname(__file__)]

from agentloop import iteration  # noqa: E402
from agenttest.data import default_dataset_dir  # noqa: E402
from egress_helpers import Standin  # noqa: E402
import box_paths  # noqa: E402

CLI = os.path.join(REPO, "node_modules/@anthropic-ai/claude-code/cli.js")
pytestmark = [pytest.mark.skipif(os.geteuid() != 0, reason="the sandbox needs root"),
              pytest.mark.skipif(not os.path.exists(CLI), reason="npm ci has not installed the CLI")]

KEY = "sk-ant-api03-E2eRealKey_" + "k" * 48
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
PROBE = ("env > probe_env.txt; cat /proc/*/cmdline 2>/dev/null | tr '\\0' ' ' > probe_cmdlines.txt; "
         "cat /proc/*/environ 2>/dev/null | tr '\\0' '\\n' >> probe_env.txt; "
         "(curl -sS -m 3 http://10.0.0.1/ ; curl -sS -m 3 http://127.0.0.1:3306/ ; "
         "curl -sS -m 3 https://api.anthropic.com/v1/messages ; "
         "curl -sS -m 3 -X POST http://127.0.0.1:8119/v1/files ; "
         "curl -sS -m 3 http://127.0.0.1:8119/v1/models) > probe_net.txt 2>&1; ls -la / /agenttest > probe_ls.txt 2>&1; "
         # every file the box can read outside /usr and the kernel's trees, for a piece of the key (a
         # regex, so the CLI's transcript of this command does not match it); the canary proves it reads
         "printf 'E2eRealKe%s_k' y > probe_canary.txt; "
         "grep -rlsE 'E2eRealKe[y]_k' / --exclude-dir=proc --exclude-dir=sys --exclude-dir=dev --exclude-dir=usr "
         "> probe_grep.txt; cat /proc/self/mountinfo > probe_mountinfo.txt; pwd > probe_pwd.txt")


def usage(i, o, cw=0, cr=0):
    return {"input_tokens": i, "output_tokens": o, "cache_creation_input_tokens": cw, "cache_read_input_tokens": cr}


def bash(cmd):
    return {"type": "tool_use", "name": "Bash", "input": {"command": cmd, "description": "step"}}


def script():
    files = ("cat > notes.txt <<'EOF'\nhypothesis: 1h momentum\nEOF\n"
             "cat > iteration_{{N}}.py <<'EOF'\n" + CODE + "EOF\n")
    evaluate = ("python3 -c \"import iteration_{{N}} as m; from agenttest import evaluate; "
                "r = evaluate('ETH-1H-BINARY', m.TechFeaturizer(), m.TechPredictor(), days_back=60); "
                "print('LOCAL', r['mean_auc'])\" >> notes.txt 2>&1; tail -2 notes.txt")
    write = ("cat > iteration_{{N}}_analysis.json <<'EOF'\n" + json.dumps(ANALYSIS) + "\nEOF\n"
             "echo 'iteration {{N}}: momentum' >> STATE.md")
    tools = {"tools": True}
    return {"turns": [
        {"match": tools, "content": [{"type": "text", "text": "I will write notes and code."}, bash(files)],
         "usage": usage(2100, 180, 1500, 0)},
        {"match": tools, "content": [bash(PROBE)], "usage": usage(300, 90, 0, 3600)},
        {"match": tools, "content": [{"type": "text", "text": "Now the local evaluation."}, bash(evaluate)],
         "usage": usage(400, 60, 0, 3900)},
        {"match": tools, "content": [bash(write)], "usage": usage(500, 120, 0, 4300)},
        {"match": tools, "content": [{"type": "text", "text": "Iteration done."}], "usage": usage(600, 20, 0, 4800)},
    ], "default": {"content": [{"type": "text", "text": "ok"}], "usage": usage(50, 5)}}


def price(u):   # sonnet 4.x list prices per token
    return (u["input_tokens"] * 3 + u["output_tokens"] * 15 + u["cache_creation_input_tokens"] * 3.75 +
            u["cache_read_input_tokens"] * 0.3) / 1e6


@pytest.fixture
def setup(tmp_path):
    made = []

    def make(budget=None, scr=None):
        s = Standin(str(tmp_path), scr or script())
        made.append(s)
        ag = dict(id="llm1", root=str(tmp_path / "agents" / "llm1"), challenge="ETH-1H-BINARY",
                  goal="find a signal", driver="claude-code", model="sonnet", min_iterations=1,
                  max_iterations=3, days_back=60, dataset=default_dataset_dir(), anthropic_key=KEY,
                  owner_id=42, upstream=s.url, budget=budget or {})
        return s, ag
    yield make
    for s in made:
        s.close()


def test_claude_code_iteration_end_to_end(setup, monkeypatch):
    monkeypatch.setenv("MANTIS_CLAUDE_TIMEOUT", "120")
    s, ag = setup()
    st, e = iteration.run_iteration(ag, 1, [], "")
    assert st == "ok", e
    ws = os.path.join(ag["root"], "workspace")
    assert not e["has_error"], e
    assert e["metrics"]["dev_only"] is True and 0.0 <= e["metrics"]["mean_auc"] <= 1.0
    assert e["holdout_metrics"] is not None and e["analysis"]["hypothesis"] == "1h momentum on ETH"
    assert "LOCAL" in open(os.path.join(ws, "notes.txt")).read()
    reqs = s.requests()
    assert reqs and all(r["headers"].get("x-api-key") == KEY for r in reqs)
    assert all("authorization" not in r["headers"] for r in reqs)
    served = [script()["turns"][r["turn"]]["usage"] if r.get("turn", -1) >= 0 else script()["default"]["usage"]
              for r in reqs if r["path"].startswith("/v1/messages") and "count_tokens" not in r["path"]]
    want = {k: sum(u[k] for u in served) for k in served[0]}
    t = e["tokens"]
    assert (t["input"], t["output"], t["cache_write"], t["cache_read"]) == (
        want["input_tokens"], want["output_tokens"], want["cache_creation_input_tokens"], want["cache_read_input_tokens"])
    assert t["cost"] == pytest.approx(sum(price(u) for u in served), rel=1e-6)
    assert t["requests"] == len(reqs)
    assert any(a.startswith("running: cat > notes.txt") for a in e["llm"]["activity"])
    assert "Now the local evaluation." in e["llm"]["thoughts"] and e["llm"]["attempts"] == 1
    # the original's allow-list, non-essential traffic off, no auth token for the CLI to send
    with open(os.path.join(ws, ".claude", "settings.local.json")) as f:
        cfg = json.load(f)
    assert cfg["permissions"] == {"allow": ["Bash(*)", "Read(*)", "Write(*)", "Edit(*)", "Glob(*)", "Grep(*)",
                                            "WebFetch(*)", "WebSearch(*)", "TodoWrite(*)", "NotebookEdit(*)",
                                            "Task(*)"], "deny": []}, cfg
    assert cfg["env"] == {"ANTHROPIC_AUTH_TOKEN": "", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}, cfg
    # the key is nowhere the agent could read
    for top, _, files in os.walk(ws):
        for fn in files:
            with open(os.path.join(top, fn), "rb") as f:
                assert KEY.encode() not in f.read(), fn
    with open(os.path.join(ag["root"], "stdout.log"), "rb") as f:
        assert KEY.encode() not in f.read()
    env = open(os.path.join(ws, "probe_env.txt")).read()
    assert "ANTHROPIC_BASE_URL=http://127.0.0.1:8119" in env and "sk-ant-agenttest-dummy" in env
    assert "api03" not in env + open(os.path.join(ws, "probe_cmdlines.txt")).read()
    # a private writable home and temporary directory inside the workspace, where the CLI keeps its state
    home = [x for x in env.splitlines() if x.startswith("HOME=")]
    assert home and all(x == "HOME=/workspace/.home" for x in home), home
    assert "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1" in env and "TMPDIR=/workspace/.tmp" in env.splitlines()
    # no server path in what the box shows (issue 11 item 15): its processes' environments and command
    # lines, its working directory, the workspace files the runner wrote (the CLI's settings included);
    # only the three binds' mountinfo root fields (docs/sandbox.md) name one
    hay = box_paths.needles(REPO, ag["root"], default_dataset_dir())
    seen = env + open(os.path.join(ws, "probe_cmdlines.txt")).read() + open(os.path.join(ws, "probe_pwd.txt")).read()
    for top, _, files in os.walk(ws):
        for fn in files:
            if not fn.startswith("probe_") and os.path.join(top, fn) != os.path.join(ws, "stdout.log"):
                with open(os.path.join(top, fn), "rb") as f:
                    seen += f.read().decode("latin-1")
    assert not [n for n in hay if n in seen], [n for n in hay if n in seen]
    assert open(os.path.join(ws, "probe_pwd.txt")).read() == "/workspace\n"
    rest, showing = box_paths.binds_showing(open(os.path.join(ws, "probe_mountinfo.txt")).read(), hay)
    assert showing == {m: box_paths.fs_root_of(os.path.realpath(os.path.join(ag["root"], d)))
                       for m, d in (("/workspace", "workspace"), ("/agenttest/data", "dev"),
                                    ("/agenttest/egress", "egress"))}, showing
    assert not [n for n in hay if n in rest], rest
    assert os.listdir(os.path.join(ws, ".home")), "the CLI wrote nothing into its home"
    net = open(os.path.join(ws, "probe_net.txt")).read()
    assert net.count("curl: (7)") + net.count("curl: (6)") >= 3, net   # other hosts, ports: unreachable
    assert net.count("permission_error") == 2, net                      # other paths: 403 from the proxy
    found = open(os.path.join(ws, "probe_grep.txt")).read().split()
    assert len(found) == 1 and found[0].endswith("/probe_canary.txt"), found   # only the canary has it
    ls = open(os.path.join(ws, "probe_ls.txt")).read()
    assert "egress" in ls and "scoring" not in ls


def test_budget_exhaustion_stops_and_a_raise_resumes(setup):
    turns = [{"match": {"tools": True}, "content": [{"type": "text", "text": "step %d" % i},
                                                     bash("echo %d >> STATE.md" % i)],
              "usage": usage(1000, 100)} for i in range(3)]
    turns.append({"match": {"tools": True}, "content": [bash("cat > iteration_{{N}}.py <<'EOF'\n" + CODE + "EOF\n")],
                  "usage": usage(1000, 100)})
    turns.append({"match": {"tools": True}, "content": [{"type": "text", "text": "done"}], "usage": usage(10, 1)})
    scr = {"turns": turns, "default": {"content": [{"type": "text", "text": "ok"}], "usage": usage(1, 1)}}
    s, ag = setup(budget={"requests": 2}, scr=scr)
    st, info = iteration.run_iteration(ag, 1, [], "")
    assert st == "budget_exhausted" and info["llm"]["tokens"]["requests"] == 2
    assert "agent requests" in info["llm"]["exhausted"]
    ws = os.path.join(ag["root"], "workspace")
    state = open(os.path.join(ws, "STATE.md")).read()
    assert "0" in state and not os.path.exists(os.path.join(ws, "iteration_1.py"))
    n_before = len([r for r in s.requests() if r["path"].startswith("/v1/messages")])
    assert n_before == 2
    ag["budget"] = {"requests": 100}   # what is left (the runner reads it from MariaDB)
    metered = {}
    st, e = iteration.run_iteration(ag, 1, [], "", usage_out=metered)
    assert st == "ok" and e["code_hash"] and not e["has_error"], e
    # the ledgers are per turn: this turn's requests only, the same as reported for charging
    with open(os.path.join(ag["root"], "llm", "agent.json")) as f:
        assert json.load(f)["requests"] == len(s.requests()) - n_before == metered["tokens"]["requests"]


HELPER = os.path.join(REPO, "bin", "agenttest-sandbox")
PROBES = {
    # name: (python source, expected verdict status, expected stdout)
    "fork_exec": ("import subprocess; print(subprocess.run(['/bin/echo', 'child'], capture_output=True).stdout.decode().strip())",
                  "OK", "child"),
    "netlink": ("import socket\ntry:\n socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)\nexcept OSError as e: print(e.errno)",
                "OK", "97"),
    "other_port": ("import socket\ns = socket.socket()\ntry:\n s.connect(('127.0.0.1', 3306))\nexcept OSError as e: print(e.errno)",
                   "OK", "111"),
    "no_route": ("import socket\ns = socket.socket()\ntry:\n s.connect(('1.1.1.1', 443))\nexcept OSError as e: print(e.errno)",
                 "OK", "101"),
    "ptrace": ("import ctypes; ctypes.CDLL(None).syscall(101, 16, 1, 0, 0)", "SY", ""),
    "unshare": ("import ctypes; ctypes.CDLL(None).unshare(0x10000000)", "SY", ""),
    "mount": ("import ctypes; ctypes.CDLL(None).mount(b'none', b'/tmp', b'tmpfs', 0, None)", "SY", ""),
    "bpf": ("import ctypes; ctypes.CDLL(None).syscall(321, 0, 0, 0)", "SY", ""),
}


@pytest.mark.parametrize("name", sorted(PROBES))
def test_agent_profile_allows_only_what_it_documents(tmp_path, name):
    """--profile=agent: processes and loopback sockets work, other families
    fail, nothing routes out, and ptrace/unshare/mount/bpf stay violations."""
    src, status, out = PROBES[name]
    meta = tmp_path / "meta"
    p = __import__("subprocess").run(
        [HELPER, "--profile=agent", "--box=%d" % (2900 + sorted(PROBES).index(name)), "--cpu=20", "--wall=40",
         "--mem=1G", "--procs=64", "--meta=%s" % meta, "--env=PATH=/usr/bin:/bin", "--",
         "/usr/bin/python3", "-c", src], capture_output=True, text=True, timeout=60)
    verdict = dict(line.split(":", 1) for line in meta.read_text().splitlines() if ":" in line)
    assert verdict["status"] == status, (verdict, p.stderr)
    assert p.stdout.strip() == out, (p.stdout, p.stderr)


def test_strategy_profile_still_refuses_processes_and_sockets(tmp_path):
    src = ("import os, socket\ntry:\n os.fork()\nexcept OSError as e: print(e.errno)\n"
           "try:\n socket.socket(socket.AF_UNIX)\nexcept OSError as e: print(e.errno)")
    meta = tmp_path / "meta"
    p = __import__("subprocess").run(
        [HELPER, "--box=2950", "--cpu=20", "--wall=40", "--mem=1G", "--meta=%s" % meta,
         "--env=PATH=/usr/bin:/bin", "--", "/usr/bin/python3", "-c", src], capture_output=True, text=True, timeout=60)
    assert p.stdout.split() == ["1", "13"], (p.stdout, p.stderr)
    assert "status:OK" in meta.read_text()


def test_activity_lines_are_live_and_a_failed_first_attempt_is_metered(setup, tmp_path, monkeypatch):
    """The CLI's stream-json is parsed as it arrives: the tool_use and text
    of the first answer are activity lines while the turn is still running
    (the stand-in holds the next answer until the test has seen them). The
    first attempt then fails (an API error the CLI does not retry: it exits
    non-zero), the second writes the iteration; the failed attempt's tokens,
    cost and requests are in the turn's metered usage."""
    import threading
    import time
    monkeypatch.setenv("MANTIS_CLAUDE_TIMEOUT", "120")
    hold = str(tmp_path / "release")
    tools = {"tools": True}
    files = ("cat > notes.txt <<'EOF'\nhypothesis: 1h momentum\nEOF\n"
             "cat > iteration_{{N}}.py <<'EOF'\n" + CODE + "EOF\n")
    turns = [
        {"match": tools, "content": [{"type": "text", "text": "Reading the state first."},
                                     {"type": "tool_use", "name": "Read", "input": {"file_path": "STATE.md"}}],
         "usage": usage(700, 40)},
        {"match": tools, "hold_until": hold, "content": [{"type": "text", "text": "Writing the notes."},
                                                         bash("echo first >> STATE.md")],
         "usage": usage(800, 50, 0, 300)},
        {"match": tools, "status": 400, "message": "scripted failure of the first attempt"},
        {"match": tools, "content": [{"type": "text", "text": "Second attempt."}, bash(files)],
         "usage": usage(900, 60, 100, 0)},
        {"match": tools, "content": [{"type": "tool_use", "name": "Write",
                                      "input": {"file_path": "iteration_{{N}}_analysis.json",
                                                "content": json.dumps(ANALYSIS)}}],
         "usage": usage(300, 30)},
        {"match": tools, "content": [{"type": "text", "text": "Iteration done."}], "usage": usage(100, 10)},
    ]
    scr = {"turns": turns, "default": {"content": [{"type": "text", "text": "ok"}], "usage": usage(50, 5)}}
    s, ag = setup(scr=scr)
    lines, out, metered = [], {}, {}
    t = threading.Thread(target=lambda: out.update(r=iteration.run_iteration(ag, 1, [], "", usage_out=metered,
                                                                              on_activity=lines.append)))
    t.start()
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and "reading: STATE.md" not in lines:
            time.sleep(0.1)
        assert "reading: STATE.md" in lines and "thought: Reading the state first." in lines, lines
        assert t.is_alive() and not any(x.startswith("turn ended") for x in lines), lines
        assert lines[0] == "iteration 1: claude-code agent turn started (attempt 1 of 2)", lines
    finally:
        open(hold, "w").close()
        t.join(300)
    st, e = out["r"]
    with open(os.path.join(ag["root"], "stdout.log"), errors="replace") as f:
        log = f.read()[-6000:]
    assert st == "ok" and not e["has_error"] and e["code_hash"], (json.dumps(e)[:3000], lines, log)
    assert e["llm"]["attempts"] == 2, e["llm"]
    assert any(x.startswith("attempt 1 failed") for x in lines), lines
    for want in ("running: echo first >> STATE.md", "thought: Second attempt.", "writing: iteration_1_analysis.json"):
        assert want in lines, (want, lines)
    assert lines.index("running: echo first >> STATE.md") < lines.index(
        "iteration 1: claude-code agent turn started (attempt 2 of 2)") < lines.index("thought: Second attempt.")
    assert e["llm"]["activity"][:2] == ["reading: STATE.md", "running: echo first >> STATE.md"], e["llm"]
    reqs = [r for r in s.requests() if r["path"].startswith("/v1/messages") and "count_tokens" not in r["path"]]
    served = [turns[r["turn"]].get("usage") if r.get("turn", -1) >= 0 else scr["default"]["usage"] for r in reqs]
    assert 2 in [r.get("turn") for r in reqs]   # the scripted failure was served
    got = [u for u in served if u]
    tk = e["tokens"]
    assert tk["input"] == sum(u["input_tokens"] for u in got) and tk["output"] == sum(u["output_tokens"] for u in got)
    assert tk["input"] >= 700 + 800 + 900   # the failed attempt's two answers are in
    assert tk["cost"] == pytest.approx(sum(price(u) for u in got), rel=1e-6)
    assert tk["requests"] == len(s.requests()) and metered["tokens"] == tk


AGENT_SRC = r'''import json, os, sys, urllib.request
n = sys.argv[1]
body = json.dumps({"model": "claude-haiku-4-5", "max_tokens": 200,
                   "messages": [{"role": "user", "content": "one idea, please"}]}).encode()
req = urllib.request.Request(os.environ["ANTHROPIC_BASE_URL"] + "/v1/messages", body,
                             {"content-type": "application/json", "anthropic-version": "2023-06-01",
                              "x-api-key": os.environ["ANTHROPIC_API_KEY"]})
answer = json.load(urllib.request.urlopen(req, timeout=60))
print("in-house agent: " + answer["content"][0]["text"], flush=True)
open("iteration_%s.py" % n, "w").write(CODE)
open("iteration_%s_analysis.json" % n, "w").write(json.dumps(ANALYSIS))
'''


def test_command_driver_runs_the_operators_cli_through_the_same_proxy(setup):
    """Driver command: an operator's agent command line (here an in-house
    python one) runs in the same sandbox with the same environment, relay
    and proxy: its request reaches the upstream with the real key only, its
    usage is metered and priced (haiku), its plain output lines are activity
    lines, and the iteration it writes is scored."""
    u = usage(800, 70)
    scr = {"turns": [{"content": [{"type": "text", "text": "try 4h momentum"}], "usage": u}],
           "default": {"content": [{"type": "text", "text": "ok"}], "usage": usage(1, 1)}}
    s, ag = setup(scr=scr)
    src = AGENT_SRC.replace("CODE", repr(CODE)).replace("ANALYSIS)", "%r)" % ANALYSIS)
    ag.update(driver="command", model=None, command=shlex.join(["/usr/bin/python3", "-c", src, "{iteration}"]))
    lines = []
    st, e = iteration.run_iteration(ag, 1, [], "", on_activity=lines.append)
    assert st == "ok" and not e["has_error"] and e["code_hash"], (e, lines)
    assert "in-house agent: try 4h momentum" in lines, lines
    assert lines[0] == "iteration 1: command agent turn started (attempt 1 of 2)", lines
    [req] = s.requests()
    assert req["headers"].get("x-api-key") == KEY and req["body"]["model"] == "claude-haiku-4-5", req["headers"]
    t = e["tokens"]
    assert (t["input"], t["output"], t["requests"]) == (800, 70, 1), t
    assert t["cost"] == pytest.approx((800 * 1 + 70 * 5) / 1e6, rel=1e-6)   # haiku 4.x list prices
    for top, _, files in os.walk(os.path.join(ag["root"], "workspace")):
        for fn in files:
            with open(os.path.join(top, fn), "rb") as f:
                assert KEY.encode() not in f.read(), fn


def test_a_silent_agent_cli_is_ended_by_the_idle_timeout_once(setup, monkeypatch):
    """An LLM turn whose CLI prints nothing for MANTIS_CLAUDE_TIMEOUT seconds
    is killed as an idle timeout: recorded as such, not given a second
    attempt (only a CLI that fails for another reason is)."""
    import time
    monkeypatch.setenv("MANTIS_CLAUDE_TIMEOUT", "10")
    s, ag = setup(scr={"default": {"content": [{"type": "text", "text": "ok"}], "usage": usage(1, 1)}})
    ag.update(driver="command", command=shlex.join(
        ["/usr/bin/python3", "-c", "import time; print('thinking', flush=True); time.sleep(300)"]))
    lines = []
    t0 = time.monotonic()
    st, e = iteration.run_iteration(ag, 1, [], "", on_activity=lines.append)
    took = time.monotonic() - t0
    assert e["timed_out"] and e["has_error"] and "idle timeout" in e["error"], e
    assert e["llm"]["attempts"] == 1 and "thinking" in lines, (e["llm"], lines)
    assert 10 <= took < 120, took
    assert s.requests() == []

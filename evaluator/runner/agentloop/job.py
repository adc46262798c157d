"""`python3 -m agentloop.job`: one agent iteration for the runner's agent
job kind (evaluator/runner/agent_job.c).

Theory of operation. The runner writes one JSON object on stdin:
{anthropic_key and database_url (LLM drivers only), agent: {id, root,
challenge, goal, driver, model, seed, min_iterations, max_iterations,
days_back, dataset; LLM drivers: owner_id, budget (what is left of the
agent's, the owner's daily limits), upstream, command},
iteration, entries: [the recorded iterations, dev side only: iteration,
metrics, analysis, has_error, error], inbox: text}. The key and the
database URL (where the proxy reserves the owner's daily budget) go on to
the egress proxy's pipe and nowhere else (never a file, argv or
environment).
This process runs iteration.run_iteration and writes one JSON object on
stdout: {status: ok|stopped|budget_exhausted, entry, score, holdout_score,
direction, state_md, notes, stdout_tail, llm_usage: {tokens, exhausted}
or null}. Non-finite numbers become null.
SIGTERM is the runner's stop (cancel, stop, pause-with-kill, shutdown): during
the agent's turn the sandbox is killed within 0.2 s; during scoring the
evaluator child is killed at once; then status "stopped" is written. Any
other failure exits non-zero with a message on stderr (the runner retries
the iteration: a failure of the trusted side). Holdout results travel only
to the runner, never into the workspace.

Live activity: when AGENTTEST_ACTIVITY_FD names an open descriptor (the
runner's fd 3), each activity line of the iteration (iteration.py: the
agent's own output lines during its turn, then the trusted side's steps)
is written there as one line of text while the iteration runs; the runner
turns them into `activity` events (evaluator/runner/agent_activity.c).
"""
import json
import math
import os
import signal
import sys

from . import iteration

TEXT_MAX = 256 * 1024
STDOUT_TAIL = 2 * 1024 * 1024


class Stopped(Exception):
    """The runner asked this iteration to stop."""


_stop = {"flag": False, "in_turn": False}


def _on_term(signum, frame):
    _stop["flag"] = True
    if not _stop["in_turn"]:
        raise Stopped()


def _should_stop():
    return _stop["flag"]


def _on_scoring():
    """The turn is over: from now on SIGTERM interrupts the scoring at once."""
    _stop["in_turn"] = False
    if _stop["flag"]:
        raise Stopped()


def _finite(x):
    """x with every non-finite float replaced by None (valid JSON out)."""
    if isinstance(x, float):
        return x if math.isfinite(x) else None
    if isinstance(x, dict):
        return {k: _finite(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_finite(v) for v in x]
    return x


def _tail(path, limit):
    """The last `limit` bytes of a file as text ("" when absent); not a
    workspace file the agent controls beyond its content."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            n = f.tell()
            f.seek(max(0, n - limit))
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""


def _activity_sink():
    """A function writing one activity line to the runner, or None when the
    runner gave no activity descriptor. A broken pipe ends the lines, never
    the iteration."""
    try:
        fd = int(os.environ.get("AGENTTEST_ACTIVITY_FD", ""))
        os.fstat(fd)
    except (ValueError, OSError):
        return None
    state = {"ok": True}

    def emit(line):
        if not state["ok"]:
            return
        text = " ".join(str(line).split())[:1000]
        if not text:
            return
        try:
            os.write(fd, text.encode("utf-8", "replace") + b"\n")
        except OSError:
            state["ok"] = False
    return emit


def _agent_text(ws, name):
    raw = iteration.read_agent_file(ws, name, TEXT_MAX)
    return raw.decode("utf-8", "replace") if raw is not None else ""


def main():
    req = json.loads(sys.stdin.buffer.read(64 << 20))
    agent, n = req["agent"], int(req["iteration"])
    if req.get("anthropic_key"):
        agent["anthropic_key"] = req.pop("anthropic_key")
    if req.get("database_url"):
        agent["database_url"] = req.pop("database_url")
    usage = {}
    signal.signal(signal.SIGTERM, _on_term)
    from agenttest.evaluator import challenges
    info = challenges()[agent["challenge"]]
    primary = info["metric_info"]["primary"]
    out = {"status": "stopped", "entry": None, "score": None, "holdout_score": None,
           "direction": info["metric_info"]["direction"]}
    try:
        _stop["in_turn"] = True
        status, entry = iteration.run_iteration(agent, n, req.get("entries") or [], req.get("inbox") or "",
                                                _should_stop, _on_scoring, usage, on_activity=_activity_sink())
        out["status"], out["entry"] = status, entry
        if status == "budget_exhausted":
            out["entry"] = None
        elif entry:
            out["score"] = (entry.get("metrics") or {}).get(primary)
            out["holdout_score"] = (entry.get("holdout_metrics") or {}).get(primary)
    except Stopped:
        out["status"] = "stopped"
    if _stop["flag"]:
        out["status"], out["entry"] = "stopped", None
    P = iteration.paths(agent["root"])
    out["state_md"] = _agent_text(P["workspace"], "STATE.md")
    out["notes"] = _agent_text(P["workspace"], "notes.txt")
    out["stdout_tail"] = _tail(P["stdout"], STDOUT_TAIL)
    code = None
    if out["entry"] and out["entry"].get("code_hash"):   # the copy that was scored (trusted directory)
        with open(os.path.join(P["scoring"], "iteration_%d.py" % n), "rb") as f:
            code = f.read().decode("utf-8", "replace")
    out["code"] = code
    out["llm_usage"] = usage or None
    sys.stdout.write(json.dumps(_finite(out), allow_nan=False))
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())

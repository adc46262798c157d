"""One agent iteration, trusted side: prepare the workspace, run the agent's
turn in the agent sandbox, then score the iteration's file with the trusted
evaluator.

Theory of operation. The agent's turn is one agenttest-sandbox run
(sandbox_profile.py) whose output is appended to stdout.log and watched:
it is killed on `should_stop()` (polled every 0.2 s, so a stop takes
effect well within 5 s), after MANTIS_ITER_WALL_TIMEOUT, or after
MANTIS_CLAUDE_TIMEOUT without a line. Afterwards the trusted side copies
iteration_N.py out of the workspace (no symlinks, regular file, 1 MiB at
most) into the agent's scoring directory, which the agent cannot reach,
and runs `agenttest evaluate --split` on it once, in an evaluation
sandbox: one stream over the whole span yields both the dev-only result
(the rows before the holdout, all computed before any holdout bar reached
the sandbox, scored on the dev period alone: the `metrics` the agent is
shown in HISTORY.md, exactly what a --dev-only run gives) and the result
with the last 20 days as holdout (`holdout_metrics`: sealed, for the
owner only; neither its numbers nor its error text, logs or timing are
written anywhere the agent can read). Streaming the dev bars once instead
of twice saves about 40 % of the scoring (docs/agents.md). Timing: the
evaluator reports the dev result on a pipe (--dev-fd) before the first
holdout bar; the holdout part then has a bound D computed from the dev
part's time and the bar counts only (holdout_bound), is killed at D, and
the iteration does not return before D whatever the holdout part took, so
the start of the agent's next turn (and score_s, elapsed_s, the wall-time
budget) never depends on the holdout ("Holdout timing", docs/agents.md).
An iteration
whose file is byte for byte one scored before on the same challenge, data
and span reuses that result (scoring/scores/, keyed by a hash of all
four): the evaluation is deterministic, and the built-in agent rewrites
the same bytes whenever it keeps its best set. Nothing the agent wrote besides
iteration_N.py and iteration_N_analysis.json is read.

Live activity (on_activity): for the built-in driver every line the agent
prints during its turn (it logs what it runs and what it writes) is passed
on as it arrives; for the LLM drivers the CLI's stream-json is parsed as it
arrives (llm.StreamParser) and each tool_use becomes a line such as
"running: <cmd>", "writing: <file>", "reading: <file>", each assistant text
a "thought: ..." line. Then the trusted side names its own steps (the
turn's end, the dev scoring, the sealed scoring: never a holdout number).
These lines go to the owner only; the agent never reads them.
"""
import hashlib
import json
import os
import re
import select
import signal
import stat
import subprocess
import sys
import time

from . import config, devdata, drivers, llm, sandbox_profile, workspace

CODE_MAX = 1 << 20
ANALYSIS_MAX = 1 << 20
REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))


def paths(root):
    """The agent directory layout: workspace (the agent's), dev (its data),
    scoring (trusted only), stdout.log."""
    return {k: os.path.join(root, v) for k, v in (
        ("workspace", "workspace"), ("dev", "dev"), ("scoring", "scoring"), ("stdout", "stdout.log"))}


def _bin(name):
    return os.environ.get("AGENTTEST_BINDIR", os.path.join(REPO, "bin")) + "/" + name


def read_agent_file(ws, name, limit):
    """Bytes of a regular workspace file, refusing symlinks and oversize
    files; None when absent or refused."""
    try:
        fd = os.open(os.path.join(ws, name), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > limit:
            return None
        data = os.read(fd, limit + 1)
        return data if len(data) <= limit else None
    finally:
        os.close(fd)


def _own(ws, uid):
    """Hand the workspace to the box user (no symlink is followed)."""
    os.lchown(ws, uid, uid)
    for d, dirs, files in os.walk(ws):
        for x in dirs + files:
            os.lchown(os.path.join(d, x), uid, uid)


LINE_MAX = 4096


def _lines(pending, chunk, on_line, line_max=LINE_MAX):
    """Feed chunk to on_line line by line; returns the unterminated rest.
    Bounded: a line longer than line_max bytes is cut to its first
    line_max bytes (the rest of it up to its newline is dropped)."""
    if b"\n" not in chunk:
        return (pending + chunk)[:line_max + 1]
    *done, rest = (pending + chunk).split(b"\n")
    for line in done:
        on_line(line[:line_max].decode("utf-8", "replace"))
    return rest[:line_max + 1]


def _cancel_turn(p, grace=4):
    """End a turn's box: SIGTERM to the helper's group, a cancel (the helper
    kills and reaps the box, then exits and lets go of the box's lease), and
    SIGKILL after grace seconds (within the runner's own 5 s before it kills
    the harness). A SIGKILLed helper would free the lease while the box's
    processes are still being torn down."""
    try:
        os.killpg(p.pid, signal.SIGTERM)
        p.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    except ProcessLookupError:
        pass


def run_turn(program, ws, dev, log_path, should_stop, box, profile="strategy", extra_env=None, extra_binds=(),
             on_line=None, line_max=LINE_MAX):
    """Run one agent turn in the sandbox; returns (status, seconds) with
    status ok, error, stopped, timeout or idle_timeout. on_line(text), if
    given, receives each output line of the agent as it arrives (at most
    line_max bytes of it)."""
    wall = config.get("MANTIS_ITER_WALL_TIMEOUT")
    idle = config.get("MANTIS_CLAUDE_TIMEOUT")
    meta = os.path.join(os.path.dirname(log_path), "scoring", "turn.meta")
    lib = os.environ.get("AGENTTEST_EVAL_LIB") or os.path.join(REPO, "build/release/libagenttest_eval.so")
    host = os.path.join(REPO, "sandbox/host")
    argv = sandbox_profile.argv(_bin("agenttest-sandbox"), box, ws, host, lib, dev, program, meta,
                                profile, extra_env, extra_binds)
    t0 = time.monotonic()
    last = t0
    status = None
    pending = b""
    with open(log_path, "ab") as log:
        # the helper holds the box's lease too (its box closes every other
        # descriptor) and cancels the run when this process dies: a harness
        # killed mid-turn frees the number only once the box is gone
        p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, start_new_session=True, pass_fds=(box.fd,))
        try:
            while True:
                r, _, _ = select.select([p.stdout], [], [], 0.2)
                if r:
                    chunk = os.read(p.stdout.fileno(), 65536)
                    if not chunk:
                        break
                    log.write(chunk)
                    log.flush()
                    last = time.monotonic()
                    if on_line:
                        pending = _lines(pending, chunk, on_line, line_max)
                now = time.monotonic()
                if should_stop():
                    status = "stopped"
                elif now - t0 > wall:
                    status = "timeout"
                elif now - last > idle:
                    status = "idle_timeout"
                if status:
                    _cancel_turn(p)
                    break
            # end of output is not the end of the sandbox: it still writes
            # its verdict and exits; wait for that (bounded, a stop still
            # acts), never kill it for being a moment late
            t_eof = time.monotonic()
            while status is None and p.poll() is None and time.monotonic() - t_eof < 60:
                if should_stop():
                    status = "stopped"
                    _cancel_turn(p)
                    break
                time.sleep(0.05)
        finally:
            if p.poll() is None:   # a stop, a limit, or an exception (the runner's stop) left the turn running
                _cancel_turn(p)
            p.wait()
            p.stdout.close()
    if on_line and pending:
        on_line(pending[:line_max].decode("utf-8", "replace"))
    if status is None:
        status = "ok" if p.returncode == 0 else "error"
        verdict = _meta_verdict(meta)
        if verdict and verdict.startswith("TO:"):
            # the box's own CPU and wall limits are MANTIS_ITER_WALL_TIMEOUT
            # too: when the box ends the turn a moment before this loop does,
            # it is the same wall-clock kill
            status = "timeout"
        elif verdict:   # the sandbox ended the agent (seccomp, memory, ...): say so
            status = verdict
    with open(log_path, "ab") as log:   # the operator sees why a turn ended (and why a retry came)
        log.write(b"[turn] ended: %s (exit status %d)\n" % (status.encode(), p.returncode))
    return status, time.monotonic() - t0


def _meta_verdict(path):
    """The sandbox's verdict from its meta file ("SY: forbidden system call
    memfd_create"), or None when the agent exited by itself (OK, RE) or
    there is no verdict."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            kv = dict(line.rstrip("\n").split(":", 1) for line in f if ":" in line)
    except OSError:
        return None
    if kv.get("status", "OK") in ("OK", "RE"):   # it exited by itself: its exit status says how
        return None
    return "%s: %s" % (kv["status"], kv.get("message", "killed by the sandbox"))


EVAL_MAX_S = 7200      # the dev part of one scoring, at most
SETTLE_S = 1.0         # after the holdout bound: reap a killed evaluator, read its result
HOLDOUT_TIMEOUT = "holdout scoring exceeded its time bound"


def holdout_bound(dev_s, dev_bars, holdout_bars):
    """D, the seconds the holdout part of a scoring may take after its dev
    part: MANTIS_HOLDOUT_FACTOR times the dev part's wall time per dev bar
    for each holdout bar, at least MANTIS_HOLDOUT_FLOOR. A function of what
    the agent knows only (its code's time on the dev bars, the bar counts
    of its challenge and span), never of the holdout."""
    per_bar = dev_s / max(1, dev_bars)
    return round(max(float(config.get("MANTIS_HOLDOUT_FLOOR")),
                     config.get("MANTIS_HOLDOUT_FACTOR") * per_bar * holdout_bars), 3)


def _read_line(fd, deadline):
    """Bytes from fd up to its first newline (included), its EOF or the
    monotonic deadline, whichever comes first."""
    got = b""
    while b"\n" not in got and time.monotonic() < deadline:
        r, _, _ = select.select([fd], [], [], min(1.0, max(0.0, deadline - time.monotonic())))
        if r:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            got += chunk
    return got


def _kill_group(p):
    """SIGKILL the evaluator's process group (its sandbox dies with it:
    PR_SET_PDEATHSIG) and reap it."""
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    p.wait()


def _json_file(path, last_line=False):
    """The JSON object in a file (its last line only with last_line), or None."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read().strip()
        obj = json.loads(text.splitlines()[-1] if last_line else text)
        return obj if isinstance(obj, dict) else None
    except (OSError, ValueError, IndexError):
        return None


def _evaluate(code_path, challenge, dataset, days_back, scoring):
    """`agenttest evaluate --split --dev-fd` with the holdout part bounded in
    time: (result {dev, full, full_error}, None, timing) or (None, error
    object, None) when the dev part failed (then no holdout bar was
    streamed). The dev line (dev result and bar counts) arrives the moment
    the dev part is scored, before the first holdout bar is sent: dev_s is
    the wall time until then, D = holdout_bound(dev_s, ...). An evaluator
    still running D seconds after the dev line is killed: full_error
    HOLDOUT_TIMEOUT. timing: {dev_s, holdout_bound_s, holdout_s (owner
    only: the holdout part's real time), until (monotonic: the dev line's
    time + D + SETTLE_S, before which the caller must not go on)}. stdout
    and stderr go to files in the trusted scoring directory."""
    argv = [_bin("agenttest"), "evaluate", "--challenge", challenge, "--strategy", code_path,
            "--dataset", dataset, "--days-back", str(days_back), "--holdout-days", str(devdata.HOLDOUT_DAYS),
            "--split"]
    out_path, err_path = os.path.join(scoring, "evaluate.out"), os.path.join(scoring, "evaluate.err")
    t0 = time.monotonic()
    r, w = os.pipe()
    try:
        with open(out_path, "wb") as fo, open(err_path, "wb") as fe:
            p = subprocess.Popen(argv + ["--dev-fd", str(w)], stdin=subprocess.DEVNULL, stdout=fo, stderr=fe,
                                 pass_fds=(w,), start_new_session=True)
    finally:
        os.close(w)
    try:
        line = _read_line(r, t0 + EVAL_MAX_S)
        t_mark = time.monotonic()
        try:
            mark = json.loads(line) if line.endswith(b"\n") else None
        except ValueError:
            mark = None
        if not isinstance(mark, dict) or not isinstance(mark.get("dev"), dict):
            # no dev line: the dev part failed and no holdout bar was streamed
            try:
                p.wait(timeout=max(0.0, t0 + EVAL_MAX_S - time.monotonic()))
            except subprocess.TimeoutExpired:
                _kill_group(p)
            err = _json_file(err_path, last_line=True) if p.returncode != 0 else None
            return None, err or {"code": "internal", "error": "the evaluator gave no result"}, None
        dev_s = round(t_mark - t0, 3)
        bound = holdout_bound(dev_s, int(mark.get("dev_bars") or 0), int(mark.get("holdout_bars") or 0))
        both = {"dev": mark["dev"], "full": None, "full_error": None}
        try:
            p.wait(timeout=max(0.0, t_mark + bound - time.monotonic()))
            res = _json_file(out_path) if p.returncode == 0 else None
            if res is None:
                both["full_error"] = {"code": "internal", "error": "the evaluator gave no holdout result"}
            else:
                both["full"], both["full_error"] = res.get("full"), res.get("full_error")
        except subprocess.TimeoutExpired:
            _kill_group(p)
            both["full_error"] = {"code": "timeout", "error": "%s (%.1f s)" % (HOLDOUT_TIMEOUT, bound)}
        timing = {"dev_s": dev_s, "holdout_bound_s": bound,
                  "holdout_s": round(time.monotonic() - t_mark, 3), "until": t_mark + bound + SETTLE_S}
        return both, None, timing
    finally:
        os.close(r)
        if p.poll() is None:   # a stop (the runner's SIGTERM raised here) or an error: nothing outlives scoring
            _kill_group(p)


def _wait_until(until, should_stop):
    """Sleep until the monotonic time `until`; False when should_stop()
    turned true first (polled every 0.2 s)."""
    while True:
        left = until - time.monotonic()
        if left <= 0:
            return True
        if should_stop():
            return False
        time.sleep(min(0.2, left))


def _score_cache_path(scoring, code, agent):
    """Where the scores of this exact code on this agent's challenge, data
    and span are kept: scoring/scores/<sha256>.json (trusted only, like
    the rest of scoring/). The dataset is named by its manifest's
    dataset_hash (its path when it has none)."""
    try:
        with open(os.path.join(agent["dataset"], "manifest.json"), encoding="utf-8") as f:
            data = json.load(f).get("dataset_hash") or ""
    except (OSError, ValueError, AttributeError):
        data = ""
    h = hashlib.sha256()
    for part in (agent["challenge"], str(agent["days_back"]), str(devdata.HOLDOUT_DAYS),
                 data or os.path.realpath(agent["dataset"])):
        h.update(part.encode() + b"\0")
    h.update(code)
    return os.path.join(scoring, "scores", h.hexdigest() + ".json")


def _cached_scores(path):
    """The --split result stored at path, or None."""
    try:
        with open(path, encoding="utf-8") as f:
            both = json.load(f)
        return both if isinstance(both, dict) and "dev" in both else None
    except (OSError, ValueError):
        return None


def _store_scores(path, both):
    """Keep a successful --split result for the same code later (atomic)."""
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(both, f)
    os.replace(tmp, path)


def _headline(m):
    """A result without the timing block (what is recorded)."""
    return {k: v for k, v in m.items() if k != "timing"} if m else m


def run_iteration(agent, n, entries, inbox, should_stop=lambda: False, on_scoring=lambda: None, usage_out=None,
                  on_activity=None):
    """Run iteration n of `agent` (dict: id, root, challenge, goal, driver,
    seed, min_iterations, max_iterations, days_back, dataset); entries: the
    recorded iterations so far; inbox: the messages delivered to this turn;
    on_scoring() is called when the turn is over and scoring starts.
    Returns (status, entry) with status ok, stopped, crashed or
    budget_exhausted (an LLM budget ran out: nothing is recorded, the
    workspace is kept, and running iteration n again after a raise resumes).
    LLM drivers (claude-code, command) also need agent["anthropic_key"] and
    take model, budget, owner_id, upstream, command (llm.py); their turn's
    metered usage ({tokens, exhausted}) goes into the dict usage_out
    whatever the turn came to (stopped included), for the runner to charge.
    on_activity(line), if given, receives the live activity lines."""
    act = on_activity or (lambda line: None)
    from agenttest.evaluator import challenges
    info = dict(challenges(fields=("funding_1h",))[agent["challenge"]], name=agent["challenge"])
    P = paths(agent["root"])
    for k in ("workspace", "scoring"):
        os.makedirs(P[k], exist_ok=True)
    os.chmod(P["scoring"], 0o700)
    if not os.path.exists(os.path.join(P["dev"], "manifest.json")):
        devdata.write_dev_copy(agent["dataset"], P["dev"], agent["days_back"], assets=info["assets"])
    ws = P["workspace"]
    workspace.prepare(ws, info, n, agent["goal"], agent["min_iterations"], agent["max_iterations"],
                      entries, inbox)
    box = sandbox_profile.Box()
    try:
        _own(ws, box.uid())
        with open(P["stdout"], "ab") as log:
            log.write(b"[iter %d] started\n" % n)
        driver = agent.get("driver", "builtin")
        llm_info = None
        if driver in ("claude-code", "command"):
            status, agent_s, llm_info = llm.run_llm_turn(
                agent, n, os.path.realpath(ws), P["dev"], P["stdout"], should_stop, box, run_turn,
                os.path.dirname(_bin("x")), bool(inbox and inbox.strip()), on_activity=act)
            if usage_out is not None:
                usage_out.update(tokens=llm_info["tokens"], exhausted=llm_info.get("exhausted", ""))
        else:
            program = drivers.get(driver).program(agent, ws, n)
            act("iteration %d: %s agent turn started" % (n, driver))
            status, agent_s = run_turn(program, ws, P["dev"], P["stdout"], should_stop, box,
                                       on_line=on_activity)
    finally:
        box.close()
    if status == "stopped":
        return "stopped", None
    if status == "budget_exhausted":   # the workspace is kept; the same iteration runs again on resume
        return "budget_exhausted", {"iteration": n, "llm": llm_info}
    on_scoring()
    act("turn ended (%s) after %.1f s" % (status, agent_s))
    t1 = time.monotonic()
    code = read_agent_file(ws, "iteration_%d.py" % n, CODE_MAX)
    raw = read_agent_file(ws, "iteration_%d_analysis.json" % n, ANALYSIS_MAX)
    try:
        analysis = json.loads(raw) if raw else None
        analysis = analysis if isinstance(analysis, dict) else None
    except ValueError:
        analysis = None
    entry = {"iteration": n, "timestamp": time.time(), "analysis": analysis, "metrics": None,
             "holdout_metrics": None, "has_error": False, "error": None, "holdout_error": None,
             "agent_s": round(agent_s, 3), "tokens": {"input": 0, "output": 0, "cost": 0.0},
             "code_hash": None, "timed_out": status in ("timeout", "idle_timeout"),
             "done_signal": bool(analysis and analysis.get("done") is True and n >= agent["min_iterations"])}
    if llm_info is not None:
        entry["tokens"] = llm_info["tokens"]
        entry["llm"] = {k: llm_info[k] for k in ("attempts", "thoughts", "activity")}
        res = llm_info.get("result") or {}
        entry["llm"]["final_text"] = str(res.get("result", ""))[:4000]
        entry["llm"]["cli_reported"] = {"usage": res.get("usage"), "total_cost_usd": res.get("total_cost_usd")}
    if status == "timeout":
        entry.update(has_error=True, error="iteration killed: exceeded %ds wall-clock limit"
                     % config.get("MANTIS_ITER_WALL_TIMEOUT"))
    elif status == "idle_timeout":
        entry.update(has_error=True, error="iteration killed: no output for %ds (idle timeout)"
                     % config.get("MANTIS_CLAUDE_TIMEOUT"))
    elif code is None:
        entry.update(has_error=True, error="iteration_%d.py was not written (agent exit: %s)" % (n, status))
    timing = None
    if code is not None and not entry["timed_out"]:
        entry["code_hash"] = hashlib.sha256(code).hexdigest()
        cp = os.path.join(P["scoring"], "iteration_%d.py" % n)
        with open(cp, "wb") as f:
            f.write(code)
        act("scoring iteration_%d.py on the dev walk-forward windows and the sealed holdout (one stream)" % n)
        server_dirs = server_dirs_of(agent, P)
        cache = _score_cache_path(P["scoring"], code, agent)
        both = _cached_scores(cache)
        if both is not None:
            dev_err = None
            entry["score_reused"] = True
            act("iteration_%d.py is byte for byte an earlier iteration's: its scores are reused" % n)
        else:
            both, dev_err, timing = _evaluate(cp, agent["challenge"], agent["dataset"], agent["days_back"],
                                              P["scoring"])
            if not dev_err:   # whatever the holdout part came to: reuse must not depend on it
                _store_scores(cache, both)
        if dev_err:
            act("dev scoring failed: %s" % dev_err.get("code"))
            entry.update(has_error=True, error="%s: %s" % (dev_err.get("code"), _clip(
                no_server_paths(dev_err.get("error"), server_dirs), 2000)))
        else:
            dev_m = both["dev"]
            entry["metrics"] = _headline(dev_m)
            dev_v = (dev_m or {}).get(info["metric_info"]["primary"])
            act("dev %s = %s; sealed holdout scored%s" % (
                info["metric_info"]["primary"], "%.4f" % dev_v if isinstance(dev_v, (int, float)) else dev_v,
                "; the next turn waits for its %.1f s bound" % timing["holdout_bound_s"] if timing else ""))
            ho_m, ho_err = both.get("full"), both.get("full_error")
            if not ho_m and not ho_err:
                ho_err = {"code": "internal", "error": "the evaluator gave no holdout result"}
            if ho_err:
                entry["holdout_error"] = "%s: %s" % (ho_err.get("code"), _clip(
                    no_server_paths(ho_err.get("error"), server_dirs), 2000))
            else:
                ho = _headline(ho_m)
                ho["windows"] = [w for w in ho.get("windows", []) if w.get("in_holdout")]
                entry["holdout_metrics"] = ho
    if timing:
        # the next turn may not start (nor anything be recorded) before the
        # holdout part's bound, whatever the holdout part took
        entry.update({k: timing[k] for k in ("dev_s", "holdout_bound_s", "holdout_s")})
        if not _wait_until(timing["until"], should_stop):
            return "stopped", None
    entry["score_s"] = round(time.monotonic() - t1, 3)
    entry["elapsed_s"] = round(entry["agent_s"] + entry["score_s"], 3)
    return "ok", entry


def _clip(s, n):
    s = "" if s is None else str(s)
    return s[:n]


def server_dirs_of(agent, P):
    """The server directories an evaluator message may name while scoring
    agent's iteration: the checkout or installation, the binaries, the
    dataset, and the directory of every agent (P: paths(agent root))."""
    return (REPO, os.path.dirname(_bin("agenttest")), agent["dataset"],
            os.path.dirname(os.path.dirname(os.path.realpath(P["scoring"]))))


def no_server_paths(text, roots):
    """text with every occurrence of the given server directories (and what
    lies below them) shown as `<path>`: evaluator messages name the dataset
    or the scoring copy, and an error recorded for an iteration reaches the
    agent (HISTORY.md) and the owner, neither of whom sees server paths."""
    text = "" if text is None else str(text)
    for r in sorted({os.path.realpath(x) for x in roots if x}, key=len, reverse=True):
        if len(r) > 1:
            text = re.sub(re.escape(r) + r"(/[^\s:'\"]*)?", "<path>", text)
    return text


def best_iteration(info, entries):
    """The original's rule on the sealed score: the highest (or lowest) primary
    holdout metric among error-free iterations; ties keep the earliest."""
    primary = info["metric_info"]["primary"]
    higher = info["metric_info"]["direction"] == "higher"
    best = None
    for e in entries:
        if e.get("has_error") or not e.get("holdout_metrics"):
            continue
        v = e["holdout_metrics"].get(primary)
        if v is None:
            continue
        if best is None or (v > best[1] if higher else v < best[1]):
            best = (e["iteration"], v)
    return best


if __name__ == "__main__":
    sys.exit("use agentloop.loop")

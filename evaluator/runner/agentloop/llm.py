"""LLM agent drivers, trusted side: `claude-code` (the real Claude Code CLI
from npm, run with node in the agent sandbox) and `command` (an operator's
agent command line with the same contract).

Theory of operation. For one agent turn the trusted side
  1. starts bin/agenttest-egress outside the box, hands it the owner's key
     and the database URL on a pipe (never argv, environment or a file),
     fresh per-turn ledger files and the budgets: what is left of the
     agent's, which the runner's agent kind read from MariaDB (agent_llm.c,
     sql/015), and the owner's daily limits, which the proxy reserves
     against in MariaDB request by request (common/llm_reserve.c, sql/028);
     it listens on <root>/egress/egress.sock;
  2. writes the CLI's files into the workspace: .claude/settings.local.json
     (the original's allow-list), a private HOME (.home) and TMPDIR (.tmp);
  3. runs the CLI in the agent sandbox (--profile=agent: its own network
     namespace with only loopback) under bin/agenttest-relay, which listens
     on 127.0.0.1:RELAY_PORT and copies to the proxy's socket, bound
     read-only at /agenttest/egress; the CLI's environment has
     ANTHROPIC_BASE_URL at the relay and a dummy key;
  4. parses the CLI's stream-json output as it arrives (StreamParser on
     run_turn's on_line: each thought and tool_use becomes a live activity
     line at once, the result event is kept), retries once when the CLI
     failed (a non-zero exit, or an error result: the CLI exits 0 after an
     API error it gave up on) for another reason than a stop, a timeout or
     an exhausted budget (both attempts are metered: the one proxy of the turn counts
     every request of both into one turn ledger);
  5. stops the proxy and reads the turn's usage from its ledger: the
     tokens and cost recorded on the iteration (and charged to the agent
     and the owner in MariaDB by the runner) are the proxy's own metering
     of the upstream's usage fields, not what the CLI says.
"""
import json
import os
import shlex
import signal
import subprocess
import time

from . import sandbox_profile

RELAY_PORT = 8119
EGRESS_DIR = "/agenttest/egress"
CLAUDE_DIR = "/agenttest/claude"
RELAY_BIN = "/agenttest/bin/agenttest-relay"
MODELS = ("sonnet", "opus", "haiku")
DUMMY_KEY = "sk-ant-agenttest-dummy-key-the-proxy-replaces"
# A stream-json line can carry a whole file (a Write tool's input): lines up
# to this size are parsed, longer ones are cut (and so not parsed).
STREAM_LINE_MAX = 8 << 20
ALLOW = ["Bash(*)", "Read(*)", "Write(*)", "Edit(*)", "Glob(*)", "Grep(*)", "WebFetch(*)", "WebSearch(*)",
         "TodoWrite(*)", "NotebookEdit(*)", "Task(*)"]

# Budget defaults (docs/agents.md) for a caller that gives none; the runner
# always gives all six (what is left of the agent's in MariaDB, the owner's
# daily limits) and the database URL (agent_llm.c).
BUDGET_KEYS = {
    "tokens": ("AGENTTEST_LLM_AGENT_TOKENS", 20000000), "usd": ("AGENTTEST_LLM_AGENT_USD", 20.0),
    "requests": ("AGENTTEST_LLM_AGENT_REQUESTS", 5000),
    "owner_day_tokens": ("AGENTTEST_LLM_OWNER_DAY_TOKENS", 100000000),
    "owner_day_usd": ("AGENTTEST_LLM_OWNER_DAY_USD", 100.0),
    "owner_day_requests": ("AGENTTEST_LLM_OWNER_DAY_REQUESTS", 20000),
}


def budgets(agent):
    """The agent's budgets: its own `budget` entries, else the operator's
    AGENTTEST_LLM_* values, else the defaults. Raises ValueError on a bad one."""
    out, own = {}, agent.get("budget") or {}
    for k, (env, d) in BUDGET_KEYS.items():
        raw = own.get(k, os.environ.get(env, d))
        try:
            v = float(raw) if isinstance(d, float) else int(raw)
        except (TypeError, ValueError):
            raise ValueError("budget %s must be a number, got %r" % (k, raw)) from None
        if v < 0:
            raise ValueError("budget %s must be >= 0" % k)
        out[k] = v
    return out


def prompt(n, inbox_nonempty):
    """The original's turn prompt (spec/mantis.md 6.3 step 9)."""
    p = ("Read INSTRUCTIONS.md for iteration %d and follow its workflow. Read STATE.md (your memory), "
         "skim GOAL.md and HISTORY.md. " % n)
    if inbox_nonempty:
        p += "INBOX.md has operator messages: read it first and prioritise them. "
    p += ("Your first file write must be notes.txt; then write iteration_%d.py, evaluate it locally, write "
          "iteration_%d_analysis.json, update STATE.md and exit. Keep every file operation inside the "
          "workspace." % (n, n))
    return p


def write_cli_files(ws, model):
    """The CLI's workspace files: settings with the allow-list, HOME, TMPDIR."""
    os.makedirs(os.path.join(ws, ".claude"), exist_ok=True)
    for d in (".home", ".tmp"):
        os.makedirs(os.path.join(ws, d), exist_ok=True)
    settings = {"model": model, "permissions": {"allow": ALLOW, "deny": []},
                "env": {"ANTHROPIC_AUTH_TOKEN": "", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}}
    p = os.path.join(ws, ".claude", "settings.local.json")
    if os.path.islink(p):
        os.unlink(p)
    with open(p, "w") as f:
        json.dump(settings, f, indent=2)


def cli_env():
    """The CLI's environment inside the box (on top of the profile's): its
    HOME and TMPDIR in the workspace as the box sees it."""
    ws = sandbox_profile.WORKSPACE
    return {"HOME": ws + "/.home", "TMPDIR": ws + "/.tmp",
            "ANTHROPIC_BASE_URL": "http://127.0.0.1:%d" % RELAY_PORT, "ANTHROPIC_API_KEY": DUMMY_KEY,
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1",
            "DISABLE_TELEMETRY": "1", "DISABLE_ERROR_REPORTING": "1", "CI": "1"}


def program(agent, n, inbox_nonempty):
    """The box's program: the relay, then the agent CLI ({workspace} in an
    operator's command is the workspace as the box sees it)."""
    relay = [RELAY_BIN, "--listen=127.0.0.1:%d" % RELAY_PORT, "--to=%s/egress.sock" % EGRESS_DIR, "--"]
    if agent.get("driver") == "command":
        cmd = agent.get("command") or os.environ.get("AGENTTEST_AGENT_COMMAND", "")
        if not cmd:
            raise ValueError("driver command needs AGENTTEST_AGENT_COMMAND")
        argv = [a.replace("{prompt}", prompt(n, inbox_nonempty)).replace("{iteration}", str(n))
                .replace("{workspace}", sandbox_profile.WORKSPACE) for a in shlex.split(cmd)]
        if not os.path.isabs(argv[0]):
            raise ValueError("AGENTTEST_AGENT_COMMAND must start with an absolute path")
        return relay + argv
    model = agent.get("model") or "sonnet"
    if model not in MODELS:
        raise ValueError("model must be one of %s" % ", ".join(MODELS))
    return relay + ["/usr/bin/node", CLAUDE_DIR + "/cli.js", "-p", prompt(n, inbox_nonempty),
                    "--output-format", "stream-json", "--verbose", "--model", model,
                    "--dangerously-skip-permissions"]


class Egress:
    """bin/agenttest-egress for one turn (started, then stopped with close())."""

    def __init__(self, bindir, root, agent, key, limits):
        self.dir = os.path.join(root, "egress")
        led = os.path.join(root, "llm")
        os.makedirs(self.dir, exist_ok=True)
        os.chmod(self.dir, 0o755)
        os.makedirs(led, mode=0o700, exist_ok=True)
        # per-turn cache only: the agent's limits are what is left in
        # MariaDB, so every ledger starts at zero (a file left by an
        # interrupted turn is dropped; that turn was never charged)
        self.turn = os.path.join(led, "turn.json")
        agent_ledger = os.path.join(led, "agent.json")
        for p in [self.turn, agent_ledger] + [x + ".lock" for x in (self.turn, agent_ledger)]:
            if os.path.exists(p):
                os.unlink(p)
        argv = [os.path.join(bindir, "agenttest-egress"), "--listen=%s/egress.sock" % self.dir,
                "--agent=%s" % agent["id"], "--owner=%d" % int(agent.get("owner_id", 0)),
                "--agent-ledger=%s" % agent_ledger, "--turn-usage=%s" % self.turn,
                "--agent-tokens=%d" % limits["tokens"], "--agent-usd=%.6f" % limits["usd"],
                "--agent-requests=%d" % limits["requests"]]
        db_url = agent.get("database_url") or ""
        if db_url:   # the owner's day is reserved in MariaDB, shared by every host
            argv += ["--owner-day-tokens=%d" % limits["owner_day_tokens"],
                     "--owner-day-usd=%.6f" % limits["owner_day_usd"],
                     "--owner-day-requests=%d" % limits["owner_day_requests"]]
        elif any(k.startswith("owner_day_") for k in agent.get("budget") or {}):
            raise ValueError("the owner's daily budget needs the database URL")
        if "\n" in db_url:
            raise ValueError("the database URL must be one line")
        if agent.get("upstream"):
            argv.append("--upstream=%s" % agent["upstream"])
        r, w = os.pipe()
        argv.append("--key-fd=%d" % r)
        self.log = open(os.path.join(root, "egress.log"), "ab")
        self.p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=self.log,
                                  pass_fds=(r,), start_new_session=True)
        os.close(r)
        os.write(w, key.encode() + b"\n" + db_url.encode() + b"\n")
        os.close(w)
        line = self.p.stdout.readline()
        if line.strip() != b"ready":
            self.close()
            raise RuntimeError("the egress proxy did not start (see egress.log)")

    def usage(self):
        """This turn's metered usage (the proxy's turn ledger)."""
        try:
            with open(self.turn) as f:
                return json.load(f)
        except (OSError, ValueError):
            return {"input": 0, "output": 0, "cache_write": 0, "cache_read": 0, "tokens": 0,
                    "requests": 0, "usd": 0.0, "refused": 0, "exhausted": ""}

    def close(self):
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
            try:
                self.p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self.p.pid, signal.SIGKILL)
                self.p.wait()
        self.p.stdout.close()
        self.log.close()


class StreamParser:
    """The CLI's stream-json output, one line at a time as it arrives:
    assistant text becomes thoughts, tool_use blocks activity lines, the
    `result` event the turn's result; each thought and activity line is
    also handed to on_activity(line) at once (the live activity of the
    iteration). Lines that are not JSON events (the relay's, node's
    warnings) are passed on as they are when pass_text is set (driver
    `command`: an operator's CLI may print plain text) and dropped
    otherwise."""

    def __init__(self, on_activity=None, pass_text=False):
        self.thoughts, self.activity, self.result = [], [], None
        self.on_activity = on_activity or (lambda line: None)
        self.pass_text = pass_text

    def feed(self, line):
        """Take one output line of the CLI."""
        line = line.strip()
        if not line.startswith("{"):
            if line and self.pass_text:
                self.on_activity(line)
            return
        try:
            ev = json.loads(line)
        except ValueError:
            return
        if not isinstance(ev, dict):
            return
        if ev.get("type") == "assistant":
            for b in (ev.get("message") or {}).get("content") or []:
                if not isinstance(b, dict):
                    continue
                if b.get("type") == "text" and str(b.get("text", "")).strip():
                    text = str(b["text"]).strip()[:2000]
                    self.thoughts.append(text)
                    self.on_activity("thought: %s" % text)
                elif b.get("type") == "tool_use":
                    a = activity_line(str(b.get("name", "")), b.get("input") if isinstance(b.get("input"), dict)
                                      else {})
                    self.activity.append(a)
                    self.on_activity(a)
        elif ev.get("type") == "result":
            self.result = ev
            self.on_activity("result: %s" % ("error" if ev.get("is_error") else ev.get("subtype") or "done"))


def parse_stream(raw):
    """The CLI's stream-json lines (bytes, e.g. a stdout.log span): (thoughts,
    activity, result) where result is the `result` event (final text, usage,
    total_cost_usd) or None."""
    p = StreamParser()
    for line in raw.decode("utf-8", "replace").splitlines():
        p.feed(line)
    return p.thoughts, p.activity, p.result


def activity_line(tool, inp):
    """The original's activity strings: "running: <cmd>", "writing: <file>"."""
    if tool == "Bash":
        return "running: %s" % str(inp.get("command", ""))[:80]
    if tool in ("Write", "Edit", "NotebookEdit"):
        return "writing: %s" % os.path.basename(str(inp.get("file_path") or inp.get("notebook_path") or ""))
    if tool == "Read":
        return "reading: %s" % os.path.basename(str(inp.get("file_path", "")))
    return "%s" % tool.lower()


def run_llm_turn(agent, n, ws, dev, log_path, should_stop, box, run_turn, bindir, inbox_nonempty,
                 on_activity=None):
    """One LLM agent turn (up to 2 attempts). Returns (status, seconds, info)
    with status as run_turn's or "budget_exhausted"; info has the metered
    tokens, the attempts, thoughts, activity and the CLI's result.
    on_activity(line), if given, receives the turn's activity lines live:
    the CLI's output is parsed as it arrives (StreamParser), not after it
    ends, and each attempt is announced."""
    act = on_activity or (lambda line: None)
    key = agent.get("anthropic_key")
    if not key:
        raise ValueError("driver %s needs an Anthropic key (POST /api/anthropic-key)" % agent.get("driver"))
    limits = budgets(agent)
    write_cli_files(ws, agent.get("model") or "sonnet")
    for d in (".claude", ".home", ".tmp"):   # the box user's, like the rest of the workspace
        for top, dirs, files in os.walk(os.path.join(ws, d)):
            os.lchown(top, box.uid(), box.uid())
            for x in files:
                os.lchown(os.path.join(top, x), box.uid(), box.uid())
    prog = program(agent, n, inbox_nonempty)
    eg = Egress(bindir, agent["root"], agent, key, limits)
    info = {"attempts": 0, "thoughts": [], "activity": [], "result": None}
    total = 0.0
    status = "error"
    driver = agent.get("driver")
    try:
        for attempt in (1, 2):
            info["attempts"] = attempt
            act("iteration %d: %s agent turn started (attempt %d of 2)" % (n, driver, attempt))
            parser = StreamParser(act, pass_text=driver == "command")
            status, secs = run_turn(prog, ws, dev, log_path, should_stop, box, profile="agent",
                                    extra_env=cli_env(), extra_binds=binds(agent["root"], bindir),
                                    on_line=parser.feed, line_max=STREAM_LINE_MAX)
            total += secs
            info["thoughts"] += parser.thoughts
            info["activity"] += parser.activity
            info["result"] = parser.result or info["result"]
            why = "the agent CLI exited with an error"
            if status == "ok" and parser.result and parser.result.get("is_error"):
                # the CLI ends an API error it gave up on with exit status 0
                # and an error result: that attempt failed as well
                status, why = "error", "the agent CLI reported an error: %s" % str(parser.result.get("result", ""))[:200]
            if eg.usage().get("exhausted"):
                status = "budget_exhausted"
            if status != "error" or attempt == 2:
                break
            act("attempt %d failed (%s): one more attempt; both are metered" % (attempt, why))
            time.sleep(2)
    finally:
        eg.close()
    u = eg.usage()
    info["tokens"] = {"input": u["input"], "output": u["output"], "cache_write": u["cache_write"],
                      "cache_read": u["cache_read"], "total": u["tokens"], "requests": u["requests"],
                      "refused": u["refused"], "cost": round(u["usd"], 9)}
    if u.get("exhausted"):
        status = "budget_exhausted"
        info["exhausted"] = u["exhausted"]
        act("budget used up: %s" % u["exhausted"])
    return status, total, info


def binds(root, bindir):
    """What the agent profile adds read-only to the strategy profile's: the
    proxy's socket directory bound (a socket cannot be copied; its path
    shows in the box's mountinfo, docs/sandbox.md), the CLI and the relay
    as private copies in the box's tmpfs (48 MB for the CLI: a copy per
    turn, docs/agents.md)."""
    repo = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
    claude = os.environ.get("AGENTTEST_CLAUDE_CODE_DIR") or os.path.join(repo, "node_modules/@anthropic-ai/claude-code")
    return [(os.path.join(root, "egress"), EGRESS_DIR), (claude, CLAUDE_DIR, "copy"),
            (os.path.join(bindir, "agenttest-relay"), RELAY_BIN, "copy")]


__all__ = ["run_llm_turn", "parse_stream", "StreamParser", "budgets", "MODELS", "sandbox_profile"]

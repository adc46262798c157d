"""The built-in research agent (sandbox/host/agenttest_agent) and the
trusted iteration side (evaluator/runner/agentloop/): the planted ETH 1h momentum effect is
found on the sealed holdout, the agent is steerable, the holdout bars are
absent from its data, files the agent writes besides its strategy change
nothing recorded. Needs root (the sandbox) and make build."""
import json
import os
import sys
import time

import pytest

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path[:0] = [os.path.join(REPO, "evaluator", "runner"), os.path.join(REPO, "sandbox", "host"),
                os.path.dirname(__file__)]

from agentloop import devdata, iteration  # noqa: E402
from agenttest.data import DataProvider, default_dataset_dir  # noqa: E402
from agenttest.evaluator import challenges  # noqa: E402
from agenttest_agent import agent as A, features as F, steer  # noqa: E402

import box_paths  # noqa: E402

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="the sandbox needs root")


@pytest.fixture(scope="module")
def market():
    return default_dataset_dir()


def _agent(tmp, market, challenge="ETH-1H-BINARY"):
    return dict(id="t1", root=str(tmp / "agent"), challenge=challenge, goal="find a signal", driver="builtin",
                seed=1, min_iterations=1, max_iterations=6, days_back=60, dataset=market)


@needs_root
def test_planted_momentum_found_on_sealed_holdout(tmp_path, market):
    """Best sealed holdout AUC >= 0.55 on ETH-1H-BINARY within 6 iterations;
    the agent writes _result files and they change nothing recorded."""
    ag = _agent(tmp_path, market)
    info = challenges()["ETH-1H-BINARY"]
    entries = []
    for n in range(1, 7):
        ws = os.path.join(ag["root"], "workspace")
        if os.path.isdir(ws):   # a forged result file in the workspace is never read
            with open(os.path.join(ws, "_result_%d.json" % n), "w") as f:
                json.dump({"mean_auc": 0.99}, f)
        st, e = iteration.run_iteration(ag, n, entries, "")
        assert st == "ok" and not e["has_error"], e
        assert e["holdout_metrics"]["mean_auc"] < 0.9 and e["metrics"]["dev_only"] is True
        entries.append(e)
        best = iteration.best_iteration(info, entries)
        if best and best[1] >= 0.55:
            break
    assert best is not None and best[1] >= 0.55, entries
    hist = open(os.path.join(ag["root"], "workspace", "HISTORY.md")).read() if n > 1 else ""
    assert "%.4f" % best[1] not in hist
    # the original's workspace contract: what the platform writes, what the agent wrote
    ws = os.path.join(ag["root"], "workspace")
    for name in ("INSTRUCTIONS.md", "GOAL.md", "STATE.md", "HISTORY.md", "API_REFERENCE.md", "INBOX.md", "notes.txt"):
        assert os.path.isfile(os.path.join(ws, name)), name
    assert "find a signal" in open(os.path.join(ws, "GOAL.md")).read()
    for name in ("STATE.md", "notes.txt"):
        assert open(os.path.join(ws, name)).read().strip(), name
    code = open(os.path.join(ws, "iteration_%d.py" % n)).read()
    assert "class TechFeaturizer" in code and "class TechPredictor" in code
    with open(os.path.join(ws, "iteration_%d_analysis.json" % n)) as f:
        analysis = json.load(f)
    assert {"feature_report", "inference_spec", "hypothesis", "what_changed", "what_worked", "what_failed",
            "done"} <= set(analysis), analysis.keys()
    assert analysis["feature_report"] and entries[-1]["analysis"] == analysis


def test_dev_copy_has_no_holdout_bars(tmp_path, market):
    n, total = devdata.write_dev_copy(market, str(tmp_path / "dev"), 60)
    assert total - n == 20 * 1440
    full = DataProvider.from_dataset(market, ["ETH"])
    dev = DataProvider.from_dataset(str(tmp_path / "dev"), ["ETH"])
    assert dev.length == n
    assert (dev.prices("ETH") == full.prices("ETH")[total - 60 * 1440:][:n]).all()
    raw = b"".join(open(os.path.join(tmp_path / "dev", f), "rb").read() for f in os.listdir(tmp_path / "dev"))
    tail = full.prices("ETH")[-5:].tobytes()
    assert tail not in raw


def test_bar_features_equal_vectorised(market):
    prov = DataProvider.from_dataset(market, ["BTC", "ETH"], 10)
    c = {a: prov.prices(a) for a in ("BTC", "ETH")}
    v = prov.ohlcv("ETH")[:, 4]
    names = [n for fam in F.FAMILIES for n in F.candidates(fam, True)] + ["dir_240"]
    cl = dict(c)
    cl[None] = c["ETH"]
    X = F.compute_matrix(names, cl, {None: v})
    for t in (1200, 5000, prov.length - 1):
        for j, name in enumerate(names):
            kind, w = F.parse(name)
            b = F.bar_feature(kind, w, c["ETH"][:t + 1], v[:t + 1], [c["BTC"][:t + 1], c["ETH"][:t + 1]])
            assert b == pytest.approx(X[t, j], rel=1e-6, abs=1e-9), (name, t)


def test_steering_excludes_and_favours(tmp_path, market):
    devdata.write_dev_copy(market, str(tmp_path / "dev"), 60, assets=["ETH"])
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "INBOX.md").write_text("[12:00] Operator: exclude bollinger and rsi; focus on volatility")
    a = A.run(str(ws), 1, "ETH-1H-BINARY", 1, 1, "t", str(tmp_path / "dev"))
    names = [f["name"] for f in a["feature_report"]]
    assert names and not any(F.family_of(n) in ("bollinger", "rsi") for n in names)
    assert F.family_of(names[0]) == "volatility"
    assert steer.parse("no momentum. favour momentum")["favour"] == ["momentum"]


# A hostile turn: before the built-in agent does its work in the same
# process, it tries to edit the framework the trusted scorer uses, plants a
# shadow copy of the framework and a forged result in its workspace, looks
# for the host's dataset and the scoring directory, and reads every file it
# can outside the system directories looking for holdout bars. Its report
# goes to probe.json in the workspace.
HOSTILE = r"""
import json, os, sys
from agenttest_agent.agent import main   # the SDK is loaded before the shadow below exists
needles = [bytes.fromhex(h) for h in sys.argv[1].split(",")]
dev_tail = bytes.fromhex(sys.argv[2])
host_paths = sys.argv[3].split(",")
rep = {"wrote": [], "found": [], "reachable": [], "read": 0, "dev_tail_seen": [], "env": dict(os.environ)}
for t in ("/agenttest/host/agenttest/__init__.py", "/agenttest/host/agenttest/evaluator.py",
          "/agenttest/host/forged.py", "/agenttest/lib/libagenttest_eval.so", "/agenttest/data/manifest.json"):
    try:
        with open(t, "ab") as f:
            f.write(b"\nraise SystemExit('edited by the agent')\n")
        rep["wrote"].append(t)
    except OSError:
        pass
os.makedirs("agenttest", exist_ok=True)   # a shadow framework where the agent works
with open("agenttest/__init__.py", "w") as f:
    f.write("raise SystemExit('the shadow framework was imported')\n")
with open("_result_1.json", "w") as f:
    json.dump({"mean_auc": 0.99, "holdout": {"mean_auc": 0.99}}, f)
rep["reachable"] = [p for p in host_paths if os.path.exists(p)]
skip = ("/proc", "/sys", "/dev", "/usr", "/lib", "/lib64", "/bin", "/sbin")
for top, dirs, files in os.walk("/"):
    dirs[:] = [d for d in dirs if os.path.join(top, d) not in skip]
    for name in files:
        p = os.path.join(top, name)
        try:
            if os.path.islink(p) or os.path.getsize(p) > 256 << 20:
                continue
            with open(p, "rb") as f:
                data = f.read()
        except OSError:
            continue
        rep["read"] += 1
        if any(n in data for n in needles):
            rep["found"].append(p)
        if dev_tail in data:
            rep["dev_tail_seen"].append(p)
with open("probe.json", "w") as f:
    json.dump(rep, f)
rc = main(sys.argv[4:])
with open("iteration_1_analysis.json") as f:   # says done before min_iterations
    a = json.load(f)
a["done"] = True
with open("iteration_1_analysis.json", "w") as f:
    json.dump(a, f)
sys.exit(rc)
"""


# docs/agents.md, "The agent sandbox": the only variables of an agent's box
ALLOWED_ENV = {"PATH", "LANG", "LC_ALL", "HOME", "PYTHONPATH", "PYTHONDONTWRITEBYTECODE", "PYTHONHASHSEED",
               "DATASET_DIR", "AGENTTEST_EVAL_LIB", "AGENTTEST_NO_MEMFD", "OMP_NUM_THREADS",
               "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"}


@needs_root
def test_hostile_turn_finds_no_holdout_and_changes_nothing_recorded(tmp_path, market, monkeypatch):
    """An agent that edits the framework (read-only: refused, and the trusted
    scorer's copy on the host is unchanged), plants a shadow framework and a
    forged _result_1.json in its workspace (never imported or read: the
    iteration scores normally), cannot reach the host's dataset or the
    scoring directory or another agent's files, and finds no holdout bar in any file it can read
    (while it does find the dev bars: the scan reads the data). Its
    environment holds none of the runner's secrets, and its `done` before
    min_iterations is not honoured."""
    import hashlib
    import types
    from agentloop import drivers
    ag = dict(_agent(tmp_path, market), min_iterations=2)
    secrets = {"AGENTTEST_DATABASE_URL": "mysql://u:s3cret-db@127.0.0.1/x", "ANTHROPIC_API_KEY": "sk-ant-s3cret",
               "MANTIS_AUTH_TOKEN": "s3cret-token"}
    for k, v in secrets.items():
        monkeypatch.setenv(k, v)
    full = DataProvider.from_dataset(market, ["ETH"])
    n_dev, total = devdata.write_dev_copy(market, str(tmp_path / "probe-dev"), 60, assets=["ETH"])
    start = total - 60 * 1440
    close = full.prices("ETH")
    hold = close[start + n_dev:]
    needles = [hold[:4].tobytes(), hold[len(hold) // 2:len(hold) // 2 + 4].tobytes(), hold[-4:].tobytes()]
    dev_tail = close[start + n_dev - 4:start + n_dev].tobytes()
    assert not any(x in dev_tail for x in needles)
    host_dir = os.path.join(REPO, "sandbox", "host")

    def tree_hash():
        h = hashlib.sha256()
        for top, dirs, files in sorted(os.walk(host_dir)):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for name in sorted(files):
                p = os.path.join(top, name)
                with open(p, "rb") as f:
                    h.update(p.encode() + b"\0" + f.read())
        return h.hexdigest()

    before = tree_hash()
    builtin = drivers.get("builtin")
    # another agent's directory beside this one (as under AGENTTEST_AGENTS_DIR),
    # its notes holding holdout bytes: unreachable, so never found
    other = tmp_path / "other-agent" / "workspace"
    other.mkdir(parents=True)
    (other / "notes.txt").write_bytes(b"other agent: " + needles[0])
    hidden = [market, os.path.join(ag["root"], "scoring"), os.path.join(REPO, "evaluator"), host_dir,
              str(other / "notes.txt"), str(tmp_path / "other-agent")]

    def program(agent, ws, n):
        return (["/usr/bin/python3", "-c", HOSTILE, ",".join(x.hex() for x in needles), dev_tail.hex(),
                 ",".join(hidden)] + builtin.program(agent, ws, n)[3:])

    monkeypatch.setattr(drivers, "get", lambda name: types.SimpleNamespace(program=program))
    st, e = iteration.run_iteration(ag, 1, [], "")
    ws = os.path.join(ag["root"], "workspace")
    with open(os.path.join(ws, "probe.json")) as f:
        rep = json.load(f)
    assert rep["wrote"] == [] and rep["reachable"] == [], rep
    assert rep["found"] == [], rep
    assert rep["dev_tail_seen"] and rep["read"] > 10, rep
    assert tree_hash() == before
    env = rep["env"]
    assert not set(env) & set(secrets) and not any("s3cret" in v for v in env.values()), env
    assert env.get("DATASET_DIR") == "/agenttest/data" and set(env) <= ALLOWED_ENV, env
    # the shadow framework and the forged result changed nothing: the
    # iteration is scored by the trusted side, with the planted effect's AUC
    assert st == "ok" and not e["has_error"] and e["holdout_error"] is None, e
    assert 0.5 < e["holdout_metrics"]["mean_auc"] < 0.9 and e["metrics"]["dev_only"] is True, e
    assert e["analysis"]["done"] is True and e["done_signal"] is False, e


def test_agent_memory_from_mem_pct_clamped(monkeypatch):
    """MANTIS_CONTAINER_MEM_PCT of RAM in whole GiB, clamped to [4, 64] GiB as
    the original; out of range is refused naming the key; the box gets it."""
    from agentloop import config, sandbox_profile
    with open("/proc/meminfo") as f:
        gib = next(int(l.split()[1]) for l in f if l.startswith("MemTotal:")) / 1048576
    monkeypatch.setenv("MANTIS_CONTAINER_MEM_PCT", "1")
    assert config.agent_memory_bytes() == max(4, min(64, int(gib / 100))) << 30
    monkeypatch.setenv("MANTIS_CONTAINER_MEM_PCT", "100")
    assert config.agent_memory_bytes() == max(4, min(64, int(gib))) << 30
    import types
    box = types.SimpleNamespace(number=7)
    a = sandbox_profile.argv("/x/agenttest-sandbox", box, "/w", "/h", "/l", "/d", ["p"], "/m")
    assert "--mem=%d" % (max(4, min(64, int(gib))) << 30) in a and "--procs=512" in a and "--netns=shared" in a
    assert "--cpus=2" in a, a
    for bad in ("0", "101", "x"):
        monkeypatch.setenv("MANTIS_CONTAINER_MEM_PCT", bad)
        with pytest.raises(ValueError, match="MANTIS_CONTAINER_MEM_PCT"):
            config.agent_memory_bytes()


@needs_root
def test_turn_without_output_is_killed_at_mantis_claude_timeout(tmp_path, monkeypatch):
    """A turn that goes silent is killed after MANTIS_CLAUDE_TIMEOUT seconds
    (10 here) without output, as idle_timeout, its processes gone with the box."""
    from agentloop import sandbox_profile
    monkeypatch.setenv("MANTIS_CLAUDE_TIMEOUT", "10")
    root = tmp_path / "agent"
    for d in ("workspace", "scoring", "dev"):
        (root / d).mkdir(parents=True)
    box = sandbox_profile.Box()
    try:
        iteration._own(str(root / "workspace"), box.uid())
        prog = ["/usr/bin/python3", "-c", "import time\nprint('thinking', flush=True)\ntime.sleep(120)"]
        st, secs = iteration.run_turn(prog, str(root / "workspace"), str(root / "dev"), str(root / "stdout.log"),
                                      lambda: False, box)
        # while the lease is held no other box has this uid; killed processes
        # may take a moment to exit on a loaded machine (the stop's bound: 5 s)
        t0 = time.monotonic()
        while box_procs(box.uid()) and time.monotonic() - t0 < 5:
            time.sleep(0.1)
        left = box_procs(box.uid())
    finally:
        box.close()
    assert st == "idle_timeout" and 10 <= secs < 20, (st, secs)
    log = (root / "stdout.log").read_text()
    assert "thinking" in log and "[turn] ended: idle_timeout" in log, log
    assert left == [], left


def box_procs(uid):
    """Pids of live processes running as uid (a killed one may stay a zombie
    for a moment, until the host's init reaps it: it runs nothing)."""
    out = []
    for p in os.listdir("/proc"):
        try:
            with open("/proc/%s/status" % p) as f:
                st = f.read()
            if "\nUid:\t%d\t" % uid in st and "\nState:\tZ" not in st:
                out.append(int(p))
        except OSError:
            pass
    return out


def uid_tasks(uid):
    """Pids of every process running as uid, zombies included (each counts
    against the uid's RLIMIT_NPROC until it is reaped)."""
    out = []
    for p in os.listdir("/proc"):
        try:
            with open("/proc/%s/status" % p) as f:
                if "\nUid:\t%d\t" % uid in f.read():
                    out.append(int(p))
        except OSError:
            pass
    return out


def descendants(pid):
    """Pids of every live descendant of pid (/proc/<pid>/task/*/children)."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        try:
            tasks = os.listdir("/proc/%d/task" % p)
        except OSError:   # gone meanwhile
            continue
        for task in tasks:
            try:
                with open("/proc/%d/task/%s/children" % (p, task)) as f:
                    kids = [int(x) for x in f.read().split()]
            except OSError:
                continue
            out += kids
            todo += kids
    return out


KILLED_HARNESS = r"""
import sys
sys.path[:0] = %r
from agentloop import iteration, sandbox_profile
root = %r
box = sandbox_profile.Box()
iteration._own(root + "/workspace", box.uid())
print(box.number, flush=True)
prog = ["/usr/bin/python3", "-c", "import time\nprint('started', flush=True)\ntime.sleep(120)"]
iteration.run_turn(prog, root + "/workspace", root + "/dev", root + "/stdout.log", lambda: False, box)
"""


@needs_root
def test_a_killed_harness_takes_its_box_along_and_holds_its_number_until_then(tmp_path):
    """A harness SIGKILLed mid-turn (the killed-harness retry): the helper
    cancels the run when its parent dies, and the box number stays leased
    until the box's processes are gone. A number leased out while they
    still run would fail the next run of that uid at its exec (exit 127:
    RLIMIT_NPROC counts per uid), and an orphaned agent could reach the
    retried attempt's egress socket."""
    import fcntl
    import subprocess
    from agentloop import sandbox_profile
    root = tmp_path / "agent"
    for d in ("workspace", "scoring", "dev"):
        (root / d).mkdir(parents=True)
    here = [os.path.join(REPO, "evaluator", "runner"), os.path.join(REPO, "sandbox", "host")]
    p = subprocess.Popen([sys.executable, "-c", KILLED_HARNESS % (here, str(root))], stdout=subprocess.PIPE, text=True)
    try:
        uid = 60000 + int(p.stdout.readline())
        deadline = time.monotonic() + 60
        while "started" not in ((root / "stdout.log").read_text() if (root / "stdout.log").exists() else "") \
                and time.monotonic() < deadline:
            time.sleep(0.1)
        # the box's processes: the harness's descendants of that uid (a
        # process of another tool that uses the number without leasing it,
        # e.g. a benchmark's fixed --box, is not this test's business)
        box = [pid for pid in descendants(p.pid) if pid in uid_tasks(uid)]
        assert box, "the box did not start: %s" % (root / "stdout.log").read_text()
    finally:
        p.kill()
        p.wait()
        p.stdout.close()
    # until the box's processes are gone, its number must stay leased: each
    # round takes the lease if it is free, and only then looks at them (a
    # run that leased the number later has other processes)
    lock = os.path.join(sandbox_profile.box_dir(), "%d.lock" % (uid - 60000))
    deadline = time.monotonic() + 30
    while box and time.monotonic() < deadline:
        fd = os.open(lock, os.O_RDWR | os.O_CLOEXEC)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            free = True
        except BlockingIOError:
            free = False
        box = [pid for pid in box if pid in uid_tasks(uid)]
        os.close(fd)
        assert not (free and box), "box %d leased out while its processes %s still run" % (uid - 60000, box)
        time.sleep(0.05)
    assert box == [], "the killed harness's box still runs after 30 s: %s" % box


# A strategy that works on the dev bars and fails on the first holdout bar,
# putting the holdout price it saw into its exception and its stderr: what
# a strategy that wanted to smuggle holdout prices to the agent would do.
HOLDOUT_PROBE = r"""
import json, sys
N_DEV = %d
src = '''
import sys
import numpy as np
from agenttest import Featurizer, Predictor

class TechFeaturizer(Featurizer):
    warmup = 1000
    compute_interval = 1
    def compute(self, view):
        if view.t >= %d:
            p = float(view.prices("ETH")[-1])
            sys.stderr.write("HOLDOUTLEAK-log %%r\\n" %% p)
            raise ValueError("HOLDOUTLEAK-exc %%r" %% p)
        r = np.log(view.prices("ETH")[-1] / view.prices("ETH")[-61])
        return r

class TechPredictor(Predictor):
    def predict(self, features):
        p = 0.5 + 0.5 * np.tanh(30 * float(features))
        return np.array([p, 1 - p])
'''
open("iteration_1.py", "w").write(src)
json.dump({"feature_report": [], "hypothesis": "probe", "done": False}, open("iteration_1_analysis.json", "w"))
print("probe written", flush=True)
"""


@needs_root
def test_a_strategy_failing_on_the_holdout_tells_the_agent_nothing(tmp_path, market, monkeypatch):
    """Iteration 1's code runs on the dev bars and raises on the first
    holdout bar with the price it saw in its message and on its stderr.
    The owner gets the sealed failure (holdout_error); the iteration counts
    as a dev success, and nothing of the failure (its text, the price, the
    log line) is in any file of the next iteration's workspace or of the
    dev data the agent can read."""
    import re
    import types
    from agentloop import drivers, workspace
    ag = _agent(tmp_path, market)
    n_dev, total = devdata.write_dev_copy(market, str(tmp_path / "probe-dev"), 60, assets=["ETH"])
    close = DataProvider.from_dataset(market, ["ETH"]).prices("ETH")
    first_holdout = repr(float(close[total - 60 * 1440 + n_dev]))
    prog = HOLDOUT_PROBE % (n_dev, n_dev)
    monkeypatch.setattr(drivers, "get", lambda name: types.SimpleNamespace(
        program=lambda agent, ws, n: ["/usr/bin/python3", "-c", prog]))
    st, e = iteration.run_iteration(ag, 1, [], "")
    assert st == "ok" and e["has_error"] is False and e["error"] is None, e
    assert e["metrics"]["dev_only"] is True and 0 < e["metrics"]["mean_auc"] < 1, e
    # the sealed side saw the failure (so the probe did reach the holdout)
    assert e["holdout_metrics"] is None and "HOLDOUTLEAK-exc" in (e["holdout_error"] or ""), e
    # the next turn's files, even if the caller passed the whole entry
    info = challenges()["ETH-1H-BINARY"]
    ws = os.path.join(ag["root"], "workspace")
    workspace.prepare(ws, info, 2, ag["goal"], 1, 6, [e], "")
    seen = []
    for top in (ws, os.path.join(ag["root"], "dev")):
        for d, _, files in os.walk(top):
            for f in files:
                with open(os.path.join(d, f), "rb") as fh:
                    data = fh.read()
                # the code names its marker; the failure's text carries a price after it
                if re.search(rb"HOLDOUTLEAK-(exc|log) [0-9]", data) or first_holdout.encode() in data:
                    seen.append(os.path.join(d, f))
    assert seen == [], seen
    hist = open(os.path.join(ws, "HISTORY.md")).read()
    assert "Iteration 1" in hist and "ERROR" not in hist, hist


@needs_root
def test_cpu_quota_bounds_the_boxs_cpu_time(tmp_path):
    """--cpus (the agent profile passes 2, the original's quota): the box
    runs in a CPU-bandwidth group of its own, a busy loop of 4 s wall at
    0.1 CPU gets about 0.4 s of CPU whatever the machine's load (a quota is
    a ceiling), the group is removed afterwards; a quota without the
    cgroup, or out of range, is refused."""
    import subprocess
    from agentloop import sandbox_profile
    helper = os.path.join(REPO, "bin", "agenttest-sandbox")
    box = sandbox_profile.Box()
    meta = tmp_path / "meta"
    prog = ("import time\nt = time.monotonic()\nwhile time.monotonic() - t < 4: pass\n"
            "print(open('/proc/self/cgroup').read())")
    try:
        p = subprocess.run([helper, "--box=%d" % box.number, "--cpus=0.1", "--cpu=30", "--wall=30", "--procs=8",
                            "--meta=%s" % meta, "--", "/usr/bin/python3", "-c", prog],
                           capture_output=True, timeout=120)
    finally:
        box.close()
    m = sandbox_profile.read_meta(str(meta))
    assert p.returncode == 0 and m["status"] == "OK", (p.stderr, m)
    group = "agenttest-%d-" % box.number
    lines = p.stdout.decode().splitlines()   # v1: the cpu hierarchy's line; v2: the one "0::" line
    cpu_line = [l for l in lines if ":cpu:" in l or ":cpu," in l] or [l for l in lines if l.startswith("0::")]
    assert cpu_line and group in cpu_line[0], p.stdout
    wall, cpu = float(m["time-wall"]), float(m["time"])
    assert wall >= 4 and cpu <= 0.1 * wall + 0.25, m
    left = [d for d in os.listdir("/sys/fs/cgroup/cpu") if d.startswith(group)] \
        if os.path.isdir("/sys/fs/cgroup/cpu") else []
    assert left == [], left
    for bad in (["--cpus=0"], ["--cpus=x"], ["--cpus=2000"], ["--cpus=1", "--no-cgroup"]):
        r = subprocess.run([helper, "--box=1"] + bad + ["--", "/bin/true"], capture_output=True, timeout=60)
        assert r.returncode == 2 and b"--cpus" in r.stderr, (bad, r.stderr)


# What an agent's process can read about where it runs: every file it can
# open under /proc/self (contents, at most 1 MiB each, and symbolic link
# targets), its environment, its working directory and every file in its
# workspace, dumped to proc_dump.json for the test to search on the host
# (the probe is given no server path, so none comes from its own argv).
PROC_PROBE = r"""
import json, os, sys
dump = {"files": {}, "links": {}, "env": dict(os.environ), "cwd": os.getcwd()}
def read(p):
    try:
        with open(p, "rb") as f:
            dump["files"][p] = f.read(1 << 20).decode("latin-1")
    except OSError:
        pass
for top in ("/proc/self", "/proc/thread-self", os.getcwd()):
    for d, dirs, files in os.walk(top):
        for name in dirs + files:
            p = os.path.join(d, name)
            if os.path.islink(p):
                try:
                    dump["links"][p] = os.readlink(p)
                except OSError:
                    pass
            elif name in files and name not in ("pagemap", "mem", "clear_refs"):
                read(p)
        dirs[:] = [x for x in dirs if not os.path.islink(os.path.join(d, x))]
with open("proc_dump.json", "w") as f:
    json.dump(dump, f)
"""


@needs_root
def test_agent_box_shows_no_server_path(tmp_path, market, monkeypatch):
    """Issue 11 item 15: nothing an agent's process can read names the
    checkout, the agents' directory or the market data: not /proc/self
    (mountinfo, mounts, environ, cmdline, the cwd, exe and fd links, ...),
    its environment, getcwd() nor a file the runner wrote in its workspace
    (INSTRUCTIONS.md, HISTORY.md, ...). The workspace is /workspace, its cwd
    and HOME; the host directory and the evaluator library are private
    copies in the box's tmpfs. Exactly two entries still carry a server
    path, in their mountinfo root field only (docs/sandbox.md): the
    workspace and the dev data, binds, each showing its path relative to
    the file system that holds it."""
    import types
    from agentloop import drivers
    ag = _agent(tmp_path, market)
    monkeypatch.setattr(drivers, "get", lambda name: types.SimpleNamespace(
        program=lambda agent, ws, n: ["/usr/bin/python3", "-c", PROC_PROBE]))
    iteration.run_iteration(ag, 1, [], "a message for the inbox")
    ws = os.path.join(ag["root"], "workspace")
    with open(os.path.join(ws, "proc_dump.json")) as f:
        dump = json.load(f)
    assert dump["cwd"] == "/workspace" and dump["env"]["HOME"] == "/workspace", dump["cwd"]
    assert "/proc/self/mountinfo" in dump["files"] and "/proc/self/environ" in dump["files"], list(dump["files"])
    assert dump["links"].get("/proc/self/cwd") == "/workspace", dump["links"]
    hay = box_paths.needles(REPO, str(tmp_path), market)
    # the binds that remain, and exactly what their root field shows
    kept = {"/workspace": box_paths.fs_root_of(os.path.realpath(ws)),
            "/agenttest/data": box_paths.fs_root_of(os.path.realpath(os.path.join(ag["root"], "dev")))}
    for path, text in dump["files"].items():
        if path.endswith("/mountinfo"):
            text, showing = box_paths.binds_showing(text, hay)
            assert showing == kept, (path, showing)
        hits = [n for n in hay if n in text]
        assert not hits, (path, hits)
    for name, target in dump["links"].items():
        assert not any(n in target for n in hay), (name, target)
    for k, v in dump["env"].items():
        assert not any(n in v for n in hay), (k, v)
    written = 0
    for top, dirs, files in os.walk(ws):
        for name in files:
            if name != "proc_dump.json":
                with open(os.path.join(top, name), "rb") as f:
                    data = f.read().decode("latin-1")
                written += 1
                assert not any(n in data for n in hay), (name, [n for n in hay if n in data])
    assert written >= 6
    with open(os.path.join(ws, "INSTRUCTIONS.md")) as f:
        assert "Workspace: /workspace." in f.read()

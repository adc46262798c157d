"""The runner under failure and load, on a stack of its own: a runner killed
with SIGKILL in the middle of a run (the run completes exactly once on
another runner after its lease expires), SIGTERM hand-over, and 200 runs
queued at once against two runners (all complete, none twice)."""
import collections
import concurrent.futures
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from conftest import BIN
from runs_helpers import Api, BUY_AND_HOLD, sleeper


@pytest.fixture(scope="module")
def rstack(stack_factory):
    s = stack_factory.fresh("recovery", RUNS_MAX_QUEUED=1000, AGENTTEST_RUNNER_SLOTS=2, MANTIS_LOG_LEVEL="debug")
    s.start()
    yield s
    stop_runners(s)
    s.stop()


@pytest.fixture(scope="module")
def api(rstack):
    return Api(rstack, rstack.create_token(role="user"))


def stop_runners(stack):
    """Stop the runners start_runner added (SIGTERM, then SIGKILL after 40 s)."""
    for p in getattr(stack, "extra_runners", []):
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(timeout=40)
            except subprocess.TimeoutExpired:
                p.kill()


def start_runner(stack, name, slots=2):
    """Another agenttest-runner process on the stack's database (as on a second host)."""
    env = stack.cli_env()
    env.update({
        "RUNNER_NOTIFY_DIR": str(stack.var / "run" / "runners"),
        "ARTIFACTS_DIR": str(stack.var / "run_artifacts"),
        "AGENTTEST_AGENTS_DIR": str(stack.var / "agents"),   # agent workspaces are shared by every runner
        "MANTIS_LOG_LEVEL": "debug",
    })
    log = open(stack.var / "log" / f"{name}.log", "ab")
    p = subprocess.Popen([str(BIN / "agenttest-runner"), "--slots", str(slots)], env=env,
                         stdout=log, stderr=log, start_new_session=True)
    stack.__dict__.setdefault("extra_runners", []).append(p)
    deadline = time.monotonic() + 10
    sock = stack.var / "run" / "runners" / f"runner-{p.pid}.sock"
    while not sock.exists():
        assert p.poll() is None, f"runner {name} exited: {(stack.var / 'log' / f'{name}.log').read_text()}"
        assert time.monotonic() < deadline, "runner did not start"
        time.sleep(0.05)
    return p


def done_ids(logfile):
    """run ids a runner wrote, one entry per write."""
    out = []
    path = Path(logfile)
    if not path.exists():
        return out
    for line in path.read_text().splitlines():
        try:
            ev = json.loads(line)
        except ValueError:
            continue
        if ev.get("event") == "run_done":
            out.append(ev["run_id"])
    return out


def test_sigkill_mid_run_completes_exactly_once_elsewhere(rstack, api):
    v = api.submit(sleeper(3), "sleep3")["strategy_version_id"]
    run = api.run(v, dataset_version="v1", wait=0, audit=False)
    api.wait_status(run["run_id"], "running")
    other = start_runner(rstack, "runner-b")
    victim = rstack.pid("runner")
    os.kill(victim, signal.SIGKILL)
    t0 = time.monotonic()
    done = api.wait_run(run["run_id"], timeout=60)
    assert done["status"] == "completed", done
    assert done["attempts"] == 2, done
    assert time.monotonic() - t0 < 30
    # written once, by the survivor (it logs just after its commit); the
    # killed runner wrote nothing for it
    deadline = time.monotonic() + 5
    while not done_ids(rstack.var / "log" / "runner-b.log") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert done_ids(rstack.var / "log" / "runner-b.log").count(run["run_id"]) == 1
    assert run["run_id"] not in done_ids(rstack.var / "log" / "runner.log")
    assert other.poll() is None


def test_two_hundred_runs_two_runners_none_twice(rstack, api):
    runners = [p for p in getattr(rstack, "extra_runners", []) if p.poll() is None]
    while len(runners) < 2:
        runners.append(start_runner(rstack, f"runner-{len(runners) + 2}"))
    v = api.submit(BUY_AND_HOLD, "bh-load")["strategy_version_id"]

    def queue(_):
        r = api.post("/runs", {"strategy_version_id": v, "dataset_version": "v1"})
        assert r.status == 202, r
        return r.json()["run_id"]

    with concurrent.futures.ThreadPoolExecutor(max_workers=16) as ex:
        ids = list(ex.map(queue, range(200)))
    assert len(set(ids)) == 200
    deadline = time.monotonic() + 180
    pending = set(ids)
    while pending and time.monotonic() < deadline:
        page = api.get("/runs?status=completed&limit=200").json()["runs"]
        page += api.get("/runs?status=failed&limit=200").json()["runs"]
        pending -= {r["run_id"] for r in page}
        time.sleep(0.5)
    assert not pending, f"{len(pending)} runs never finished"
    time.sleep(1)   # runners log each write just after committing it
    writes = collections.Counter()
    per_runner = []
    for f in sorted((rstack.var / "log").glob("runner*.log")):
        w = [i for i in done_ids(f) if i in set(ids)]
        per_runner.append(len(w))
        writes.update(w)
    assert set(writes) == set(ids)
    assert max(writes.values()) == 1, [i for i, n in writes.items() if n > 1]
    assert sum(1 for n in per_runner if n > 0) >= 2, per_runner
    statuses = collections.Counter(api.get(f"/runs/{i}").json()["status"] for i in ids[:20])
    assert statuses == {"completed": 20}


def lease_lost_ids(logfile):
    """job ids whose finishing write a runner saw refused (the lease was lost)."""
    out = []
    for line in Path(logfile).read_text().splitlines():
        try:
            ev = json.loads(line)
        except ValueError:
            continue
        if ev.get("event") == "lease_lost":
            out.append(ev["run_id"])
    return out


def test_stalled_runner_finishing_write_is_refused(rstack, api):
    """A runner stalled past its lease: the job is reaped and re-claimed
    elsewhere (attempt 2), and the stalled runner's finishing write, when it
    wakes up, is refused by the lease guard (jobq_finish) and written nowhere."""
    others = [p for p in getattr(rstack, "extra_runners", []) if p.poll() is None]
    stall = start_runner(rstack, "runner-stall", slots=1)
    # submitted first: the code check is served by a runner, paused below
    v = api.submit(sleeper(6), "sleep6-stall")["strategy_version_id"]
    paused = [p.pid for p in others]
    try:
        main_runner = rstack.pid("runner")
        os.kill(main_runner, 0)
        paused.append(main_runner)
    except (OSError, ValueError):
        pass   # the stack's own runner was killed by an earlier test
    for pid in paused:
        os.kill(pid, signal.SIGSTOP)
    try:
        run = api.run(v, dataset_version="v1", wait=0, audit=False)
        api.wait_status(run["run_id"], "running")
        os.kill(stall.pid, signal.SIGSTOP)
    finally:
        for pid in paused:
            os.kill(pid, signal.SIGCONT)
    deadline = time.monotonic() + 40
    while True:
        cur = api.get(f"/runs/{run['run_id']}").json()
        if cur["attempts"] >= 2:
            break
        assert time.monotonic() < deadline, cur
        time.sleep(0.2)
    os.kill(stall.pid, signal.SIGCONT)
    done = api.wait_run(run["run_id"], timeout=60)
    assert done["status"] == "completed" and done["attempts"] == 2, done
    log = rstack.var / "log" / "runner-stall.log"
    deadline = time.monotonic() + 15
    while run["run_id"] not in lease_lost_ids(log) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert run["run_id"] in lease_lost_ids(log)
    assert run["run_id"] not in done_ids(log)


def test_sigterm_hands_back_running_work(rstack, api):
    p = start_runner(rstack, "runner-drain", slots=1)
    for q in [x for x in rstack.extra_runners if x is not p and x.poll() is None]:
        q.send_signal(signal.SIGTERM)
        q.wait(timeout=40)
    v = api.submit(sleeper(60), "sleep60")["strategy_version_id"]
    run = api.run(v, dataset_version="v1", wait=0, audit=False)
    api.wait_status(run["run_id"], "running")
    p.send_signal(signal.SIGTERM)
    log = rstack.var / "log" / "runner-drain.log"
    deadline = time.monotonic() + 60
    while '"draining"' not in log.read_text() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert '"draining"' in log.read_text(), log.read_text()[-3000:]
    p.send_signal(signal.SIGTERM)   # a second signal skips the drain: hand back now
    p.wait(timeout=60)
    back = api.get(f"/runs/{run['run_id']}").json()
    assert back["status"] == "queued", back
    assert back["attempts"] == 0
    assert_cancel = api.post(f"/runs/{run['run_id']}/cancel")
    assert assert_cancel.status == 202
    assert api.get(f"/runs/{run['run_id']}").json()["status"] == "cancelled"

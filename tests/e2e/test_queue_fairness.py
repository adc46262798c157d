"""The job queue is fair between users (issue 11 item 7), through the real
runner: one user's backlog does not starve another user's one run.

The stack's own runner has no slots, so everything is queued before any
claim; then one runner with one slot starts and serves the queue. Oldest
first would run the whole backlog before the second user's run; the fair
claim (evaluator/runner/jobq_fair.c) runs it second."""
import signal
import subprocess
import time

import pytest

from conftest import BIN
from runs_helpers import Api, BUY_AND_HOLD

BACKLOG = 8


@pytest.fixture(scope="module")
def fstack(stack_factory):
    s = stack_factory.fresh("fairness", AGENTTEST_RUNNER_SLOTS=0)
    s.start()
    s.extra = []
    yield s
    for p in s.extra:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(timeout=40)
            except subprocess.TimeoutExpired:
                p.kill()
    s.stop()


def start_runner(stack, slots):
    """One more agenttest-runner on the stack's database, with SLOTS slots."""
    env = stack.cli_env()
    env.update({
        "RUNNER_NOTIFY_DIR": str(stack.var / "run" / "runners"),
        "ARTIFACTS_DIR": str(stack.var / "run_artifacts"),
        "AGENTTEST_AGENTS_DIR": str(stack.var / "agents"),
    })
    log = open(stack.var / "log" / "runner-fair.log", "ab")
    p = subprocess.Popen([str(BIN / "agenttest-runner"), "--slots", str(slots)], env=env,
                         stdout=log, stderr=log, start_new_session=True)
    stack.extra.append(p)
    return p


def test_a_backlog_does_not_starve_another_users_run(fstack):
    alice = Api(fstack, fstack.create_token(role="user"))
    bob = Api(fstack, fstack.create_token(role="user"))
    va = alice.submit(BUY_AND_HOLD, "fair-a")["strategy_version_id"]
    vb = bob.submit(BUY_AND_HOLD, "fair-b")["strategy_version_id"]
    backlog = [alice.run(va, dataset_version="v1", wait=0, audit=False, expect=202)["run_id"]
               for _ in range(BACKLOG)]
    mine = bob.run(vb, dataset_version="v1", wait=0, audit=False, expect=202)["run_id"]
    assert all(alice.get(f"/runs/{i}").json()["status"] == "queued" for i in backlog)
    start_runner(fstack, slots=1)
    done = bob.wait_run(mine, timeout=120)
    assert done["status"] == "completed", done
    for i in backlog:
        assert alice.wait_run(i, timeout=120)["status"] == "completed"
    started = sorted((alice.get(f"/runs/{i}").json()["started_at"], "alice") for i in backlog)
    started.append((done["started_at"], "bob"))
    started.sort()
    order = [who for _, who in started]
    # nobody was served before: the oldest run first, then bob's turn
    assert order.index("bob") == 1, order

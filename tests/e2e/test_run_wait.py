"""Bounded waits woken by the runner (issue 11 item 6, issue 12).

A request with `wait` holds a prefork worker, so the pool admits at most
RUNS_MAX_WAITS of them at once (default: half the workers) and
RUNS_MAX_WAITS_PER_USER per user (default 1); over a cap the answer is 429
`rate_limited` with Retry-After and nothing is queued. An admitted wait
sleeps on its socket in RUNNER_NOTIFY_DIR and the runner wakes it after the
job's final write (common/jobwait.h)."""
import concurrent.futures
import os
import secrets
import socket
import time

import pytest

from helpers import assert_error
from runs_helpers import Api, BUY_AND_HOLD, sleeper


def notify_dir(stack):
    return stack.var / "run" / "runners"


def submit(api, code):
    return api.submit(code, f"w-{secrets.token_hex(4)}")["strategy_version_id"]


def run_ids(api):
    r = api.get("/runs?limit=200")
    assert r.status == 200, r
    return {x["run_id"] for x in r.json()["runs"]}


def health_seconds(stack):
    t0 = time.monotonic()
    r = stack.get("/health", timeout=10)
    assert r.status == 200, r
    return time.monotonic() - t0


def wait_for_waiters(stack, n, timeout=10):
    """Until n waiter sockets are registered (the waits are in progress)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if len(list(notify_dir(stack).glob("wait-*.sock"))) >= n:
            return
        time.sleep(0.02)
    raise AssertionError(f"fewer than {n} waiters registered")


def cancel_all(api, ids):
    for i in ids:
        api.post(f"/runs/{i}/cancel")


def test_default_pool_admits_one_wait_and_health_stays_fast(stack):
    """Two workers (the test stacks' size): one wait at a time; the second
    waiter is refused at once and /health is answered while one waits."""
    alice, bob = Api(stack, stack.create_token()), Api(stack, stack.create_token())
    slow = submit(alice, sleeper(30))
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as ex:
        held = ex.submit(alice.post, "/runs", {"strategy_version_id": slow, "dataset_version": "v1", "wait": 30})
        wait_for_waiters(stack, 1)
        before = run_ids(bob)
        vid = submit(bob, BUY_AND_HOLD)
        r = bob.post("/runs", {"strategy_version_id": vid, "dataset_version": "v1", "wait": 10})
        body = assert_error(r, 429, "rate_limited")
        assert r.header("Retry-After") == "1", r
        assert "waiting" in body["detail"]
        assert run_ids(bob) == before, "a refused wait queued a run"
        assert max(health_seconds(stack) for _ in range(5)) < 5.0   # not blocked behind the waiters (they wait 30 s)
        # without wait the same request is accepted at once
        r = bob.post("/runs", {"strategy_version_id": vid, "dataset_version": "v1"})
        assert r.status == 202, r
        # the cancel wakes the waiter long before its 30 s
        rid = None
        deadline = time.monotonic() + 10
        while rid is None and time.monotonic() < deadline:
            mine = alice.get("/runs?limit=5").json()["runs"]
            rid = next((x["run_id"] for x in mine if x["status"] in ("queued", "running")), None)
        assert rid, "the waiting run is not listed"
        t0 = time.monotonic()
        assert alice.post(f"/runs/{rid}/cancel").status == 202
        r = held.result(timeout=20)
        assert time.monotonic() - t0 < 15, "the waiter was not woken by the cancel"   # it waits 30 s otherwise
        assert r.status == 200 and r.json()["status"] == "cancelled", r
    assert not list(notify_dir(stack).glob("wait-*.sock")), "a waiter socket was left behind"


def test_runner_wakes_registered_waiters_after_a_final_write(stack):
    """The runner sends a datagram to every waiter socket when a job is
    written (not only the API's own cancels): "d<run id>", so the waiter of
    that run needs no status read and every other waiter sleeps on."""
    api = Api(stack, stack.create_token())
    vid = submit(api, BUY_AND_HOLD)
    path = notify_dir(stack) / f"wait-999999-{os.getpid()}.sock"
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    try:
        s.bind(str(path))
        r = api.post("/runs", {"strategy_version_id": vid, "dataset_version": "v1"})
        assert r.status == 202, r
        s.settimeout(30)
        want, got = b"d" + r.json()["run_id"].encode(), []
        while want not in got:   # an earlier test's run may finish first: its own datagram
            got.append(s.recv(64))
            assert got[-1][:1] in (b"d", b"w"), got
        assert api.wait_run(r.json()["run_id"], timeout=10)["status"] == "completed"
    finally:
        s.close()
        path.unlink(missing_ok=True)


def test_a_dead_waiters_socket_does_not_count(stack):
    """A worker killed while waiting leaves its socket file: the next waiter
    finds nobody receiving on it, removes it and is admitted."""
    api = Api(stack, stack.create_token())
    vid = submit(api, BUY_AND_HOLD)
    stale = notify_dir(stack) / "wait-424242-1.sock"
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.bind(str(stale))
    s.close()
    assert stale.exists()
    run = api.run(vid, dataset_version="v1", wait=30, expect=200)
    assert run["status"] == "completed", run
    assert not stale.exists()


@pytest.fixture(scope="module")
def wstack(stack_factory):
    return stack_factory("waits", AGENTTEST_WORKERS=3, RUNS_MAX_WAITS=2, RUNS_MAX_WAITS_PER_USER=1)


def test_per_user_and_pool_caps(wstack):
    alice, bob, carol = (Api(wstack, wstack.create_token()) for _ in range(3))
    va, vb, vc = submit(alice, sleeper(30)), submit(bob, sleeper(30)), submit(carol, BUY_AND_HOLD)
    body = {"dataset_version": "v1", "wait": 30}
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as ex:
        fa = ex.submit(alice.post, "/runs", {"strategy_version_id": va, **body})
        wait_for_waiters(wstack, 1)
        # alice's second wait: over her cap (verify and cancel?wait count too)
        before = run_ids(alice)
        assert_error(alice.post("/runs", {"strategy_version_id": va, **body}), 429, "rate_limited")
        assert run_ids(alice) == before
        fb = ex.submit(bob.post, "/runs", {"strategy_version_id": vb, **body})
        wait_for_waiters(wstack, 2)
        # carol: the pool's cap (2) is reached
        assert_error(carol.post("/runs", {"strategy_version_id": vc, **body}), 429, "rate_limited")
        assert health_seconds(wstack) < 5.0
        ids = [x["run_id"] for api in (alice, bob) for x in api.get("/runs?limit=5").json()["runs"]
               if x["status"] in ("queued", "running")]
        assert len(ids) == 2, ids
        t0 = time.monotonic()
        cancel_all(alice, ids[:1])
        cancel_all(bob, ids[1:])
        for f in (fa, fb):
            r = f.result(timeout=20)
            assert r.status == 200 and r.json()["status"] == "cancelled", r
        assert time.monotonic() - t0 < 20   # the waits are for 30 s runs
    # the slots are free again
    run = carol.run(vc, dataset_version="v1", wait=30, expect=200)
    assert run["status"] == "completed", run

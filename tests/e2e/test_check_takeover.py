"""The code checker's takeover is not seen by clients (issue 11, item 17).

A check has no side effects, so the pool asks again, once, when the
connection is reset before any byte of an answer (fcgi/handlers/
strategy_check.c), and asks another checker than the one that reset it (a
SIGKILLed owner's listening socket lingers a moment and resets what it takes
in). SIGKILLing the runner that owns the check socket while submissions are
in flight, with a second runner waiting to take the socket over, fails none
of them. With nobody to take over, a submission still gets a clear 503
`unavailable` within a few seconds.

The reset cases use a stand-in check service speaking the real wire protocol
(common/check_wire.h) on the stack's socket, taken the way a runner takes it
(the flock on "<socket>.lock"), so what the pool asked is known exactly."""
import concurrent.futures
import os
import signal
import socket
import subprocess
import threading
import time

import pytest

from conftest import BIN
from helpers import assert_error
from runs_helpers import Api, BUY_AND_HOLD
from test_strategy_check import checker_stack, stop_proc, wait_checker, wait_pid_gone


@pytest.fixture(scope="module")
def tstack(stack_factory):
    yield from checker_stack(stack_factory, "check-takeover")


@pytest.fixture(scope="module")
def tapi(tstack):
    return Api(tstack, tstack.create_token(role="user"))


def spawn_runner(stack, name):
    """A check-only agenttest-runner on the stack's socket (it waits while another owns it)."""
    env = stack.cli_env()
    env.update({"RUNNER_NOTIFY_DIR": str(stack.var / "run" / "runners")})
    log = open(stack.var / "log" / f"{name}.log", "ab")
    p = subprocess.Popen([str(BIN / "agenttest-runner"), "--slots", "0"], env=env, stdout=log, stderr=log,
                         start_new_session=True)
    stack.__dict__.setdefault("extra_runners", []).append(p)
    return p


def log_count(stack, event):
    """How many log lines of the stack carry "event":"<event>"."""
    needle = f'"event":"{event}"'
    return sum(f.read_text(errors="replace").count(needle) for f in (stack.var / "log").glob("*.log"))


def submit(api, code, name):
    return api.post("/strategies/submit", {"code": code, "name": name})


def test_sigkill_of_the_socket_owner_fails_no_check_in_flight(tstack, tapi):
    owner = tstack.pid("runner")
    heir = spawn_runner(tstack, "runner-heir")
    deadline = time.monotonic() + 60
    while "check_service_waiting" not in (tstack.var / "log" / "runner-heir.log").read_text():
        assert heir.poll() is None and time.monotonic() < deadline, "the second runner did not start"
        time.sleep(0.1)
    retried_before = log_count(tstack, "check_retried")

    done = []
    lock = threading.Lock()

    def one(i):
        # new code every time: no verdict comes from the cache, each one is asked of the checker
        r = submit(tapi, BUY_AND_HOLD + f"# takeover {i} {time.monotonic_ns()}\n", f"takeover-{i}")
        with lock:
            done.append(i)
        return i, r

    with concurrent.futures.ThreadPoolExecutor(8) as ex:
        futs = [ex.submit(one, i) for i in range(80)]
        # kill the owner with the stream of checks under way (some answered, most not)
        while len(done) < 10:
            assert time.monotonic() < deadline, "no check was answered"
            time.sleep(0.01)
        os.kill(owner, signal.SIGKILL)
        results = [f.result() for f in futs]
    wait_pid_gone(owner)
    failed = [(i, r.status, r.body[:200]) for i, r in results if r.status != 200]
    assert not failed, failed
    assert all(r.json()["kind"] == "simulate" for _, r in results)
    # the kill met checks in hand: they were asked again, and the heir answered them
    retried = log_count(tstack, "check_retried") - retried_before
    print(f"SIGKILL of the owner with checks in flight: {retried} asked again, 0 of {len(results)} failed")
    assert retried > 0
    assert heir.poll() is None
    wait_checker(tstack, heir)


# A stand-in check service, run as its own process: it takes the socket's lock
# as a runner does, then serves the groups of its plan one after the other,
# each group in a new child process (a new pid, as a runner taking over has)
# that binds the socket afresh and answers that many asks, each with its
# behaviour: "reset" (read the header, close: nothing answered), "partial"
# (3 bytes of an answer header, then close) or "answer" (simulate). Each ask
# (a connection that sent a request header) is a line in the asks file.
STAND_IN = r"""
import fcntl, os, socket, struct, sys
path, asks_file, plan = sys.argv[1], sys.argv[2], sys.argv[3]
lock = os.open(path + ".lock", os.O_RDWR | os.O_CREAT, 0o600)
fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
print("ready", flush=True)
for group in plan.split("|"):
    pid = os.fork()
    if pid:
        os.waitpid(pid, 0)
        continue
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    ls = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    ls.bind(path)
    os.chmod(path, 0o666)
    ls.listen(16)
    todo = group.split(",")
    while todo:
        c, _ = ls.accept()
        c.settimeout(5)
        hdr = b""
        while len(hdr) < 12:
            chunk = c.recv(12 - len(hdr))
            if not chunk:
                break
            hdr += chunk
        if len(hdr) < 12:   # a connection closed unasked
            c.close()
            continue
        how = todo.pop(0)
        with open(asks_file, "a") as f:
            f.write(how + "\n")
        if how != "reset":
            n, got = struct.unpack("<I", hdr[8:12])[0], 0
            while got < n:
                chunk = c.recv(n - got)
                if not chunk:
                    break
                got += len(chunk)
            body = b'{"ok":true,"kind":"simulate"}'
            answer = b"ATCA" + bytes([1, 0, 0, 0]) + struct.pack("<I", len(body)) + body
            c.sendall(answer[:3] if how == "partial" else answer)
        c.close()
    os._exit(0)   # the socket file stays behind, as a killed runner leaves it
"""


class StandIn:
    def __init__(self, stack, plan):
        self.path = stack.info["AGENTTEST_CHECK_SOCKET"]
        self.asks_file = stack.var / f"stand-in-{time.monotonic_ns()}.asks"
        self.asks_file.write_text("")
        self.proc = subprocess.Popen(["/usr/bin/python3", "-c", STAND_IN, self.path, str(self.asks_file), plan],
                                     stdout=subprocess.PIPE, text=True, start_new_session=True)
        assert self.proc.stdout.readline().strip() == "ready"
        deadline = time.monotonic() + 10
        while not os.path.exists(self.path):   # the first group's socket
            assert time.monotonic() < deadline and self.proc.poll() is None
            time.sleep(0.01)

    def asks(self):
        return self.asks_file.read_text().split()

    def close(self):
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass


def kill_every_checker(stack):
    for p in getattr(stack, "extra_runners", []):
        stop_proc(p, signal.SIGKILL)
    try:
        os.kill(stack.pid("runner"), signal.SIGKILL)
        wait_pid_gone(stack.pid("runner"))
    except ProcessLookupError:
        pass


@pytest.mark.parametrize("plan,status,asks,seconds", [
    # a takeover: the reset ask goes to the heir, is answered, and the client never knows
    ("reset|answer", 200, ["reset", "answer"], 2),
    # asked again once, not forever
    ("reset|reset", 503, ["reset", "reset"], 2),
    # answer bytes came: not a takeover, never asked again
    ("partial|answer", 503, ["partial"], 2),
    # the checker that reset it still listens and no other takes over: asked again after the
    # takeover window (3 s), since it is not the dying owner
    ("reset,answer", 200, ["reset", "answer"], 5),
])
def test_stand_in_checker_resets(tstack, tapi, plan, status, asks, seconds):
    kill_every_checker(tstack)
    s = StandIn(tstack, plan)
    try:
        t = time.monotonic()
        r = submit(tapi, BUY_AND_HOLD + f"# stand-in {plan} {time.monotonic_ns()}\n", "stand-in")
        took = time.monotonic() - t
        got = s.asks()
    finally:
        s.close()
    assert got == asks, (got, r)
    if status == 200:
        assert r.status == 200 and r.json()["kind"] == "simulate", r
    else:
        body = assert_error(r, 503, "unavailable")
        assert "code check" in body["error"], body
    assert took < seconds, took


def test_checker_down_for_good_is_a_clear_503_in_bounded_time(tstack, tapi):
    kill_every_checker(tstack)
    path = tstack.info["AGENTTEST_CHECK_SOCKET"]
    if not os.path.exists(path):   # the socket file a SIGKILLed runner leaves: no listener
        stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        stale.bind(path)
        stale.close()
    # refused by a left-over socket, retried for 2.5 s (a runner may be taking over), then 503
    t = time.monotonic()
    r = submit(tapi, BUY_AND_HOLD + f"# down {time.monotonic_ns()}\n", "down")
    took = time.monotonic() - t
    body = assert_error(r, 503, "unavailable")
    assert "agenttest-runner" in body["error"] and "not running" in body["error"], body
    assert r.header("Retry-After")
    assert 2.4 < took < 5, took
    # no socket file at all: the same answer, as fast
    os.unlink(path)
    t = time.monotonic()
    body = assert_error(submit(tapi, BUY_AND_HOLD + f"# gone {time.monotonic_ns()}\n", "gone"), 503, "unavailable")
    assert "not running" in body["error"], body
    assert time.monotonic() - t < 3
    assert tstack.get("/health").status == 200   # the pool itself is fine

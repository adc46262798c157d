"""The submission check as a service of the runner (evaluator/runner/
check_service.c): the pool asks the runner over a unix socket and never
starts a sandbox itself.

On stacks of their own: the first submission right after a start is checked
(the stack is up only once the checker answers); a stopped or killed runner
answers 503 `unavailable` naming the checker, and a restarted runner serves
again; many concurrent submissions are each checked correctly; hostile code
(pathological for the parser, or at the size limit) is answered in bounded
time; the socket protocol refuses malformed requests and answers a flood with
`busy` instead of hanging."""
import concurrent.futures
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import time

import pytest

from conftest import BIN
from helpers import assert_error
from runs_helpers import Api, BUY_AND_HOLD

VALID = BUY_AND_HOLD
POSITIONS = "def positions(prices, params):\n    return [1.0] * len(prices)\n"
SIGNAL = "class Featurizer:\n    pass\nclass Predictor:\n    pass\n"
CODE_MAX = 256 * 1024


def ask(path, op, body=b"", timeout=8.0, header=None):
    """One raw check request on the socket: (status, answer dict)."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    try:
        s.connect(str(path))
        hdr = header if header is not None else b"ATCQ" + bytes([1, op, 0, 0]) + struct.pack("<I", len(body))
        try:
            s.sendall(hdr + body)
        except (BrokenPipeError, ConnectionResetError):
            pass  # a busy or refusing checker answers without reading: read it
        h = b""
        while len(h) < 12:
            c = s.recv(12 - len(h))
            assert c, "the checker closed without an answer"
            h += c
        assert h[:5] == b"ATCA\x01" and h[6:8] == b"\0\0", h
        n = struct.unpack("<I", h[8:12])[0]
        assert n <= 16 * 1024
        data = b""
        while len(data) < n:
            c = s.recv(n - len(data))
            assert c, "truncated answer"
            data += c
        return h[5], json.loads(data)
    finally:
        s.close()


def start_runner(stack, name, slots=1):
    """An agenttest-runner on the stack's database and check socket; waits until the checker answers."""
    env = stack.cli_env()
    env.update({"RUNNER_NOTIFY_DIR": str(stack.var / "run" / "runners"),
                "ARTIFACTS_DIR": str(stack.var / "run_artifacts")})
    log = open(stack.var / "log" / f"{name}.log", "ab")
    p = subprocess.Popen([str(BIN / "agenttest-runner"), "--slots", str(slots)], env=env,
                         stdout=log, stderr=log, start_new_session=True)
    stack.__dict__.setdefault("extra_runners", []).append(p)
    wait_checker(stack, p)
    return p


def wait_checker(stack, proc=None, timeout=60):
    """Poll the check socket with pings until it answers."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            st, body = ask(stack.info["AGENTTEST_CHECK_SOCKET"], 0, timeout=2)
            if st == 0 and body.get("ready") is True:
                return
        except (OSError, AssertionError):
            pass
        assert proc is None or proc.poll() is None, "the runner exited"
        assert time.monotonic() < deadline, "the checker did not come up"
        time.sleep(0.1)


def stop_proc(p, sig=signal.SIGTERM):
    if p.poll() is None:
        p.send_signal(sig)
        try:
            p.wait(timeout=40)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def wait_pid_gone(pid, timeout=40):
    deadline = time.monotonic() + timeout
    while os.path.exists(f"/proc/{pid}") and time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().split(") ")[1].startswith("Z"):
                    return
        except OSError:
            return
        time.sleep(0.05)
    assert not os.path.exists(f"/proc/{pid}"), f"pid {pid} still runs"


def checker_stack(stack_factory, name):
    """A started stack with 6 pool workers, so several checks reach the runner
    at once, and 2 check workers; yields it, then stops the extra runners a
    test started and the stack (for a module fixture)."""
    s = stack_factory.fresh(name, AGENTTEST_WORKERS=6, AGENTTEST_RUNNER_SLOTS=1,
                            AGENTTEST_CHECK_CONCURRENCY=2)
    s.start()
    yield s
    for p in getattr(s, "extra_runners", []):
        stop_proc(p)
    s.stop()


@pytest.fixture(scope="module")
def cstack(stack_factory):
    yield from checker_stack(stack_factory, "checker")


@pytest.fixture(scope="module")
def capi(cstack):
    return Api(cstack, cstack.create_token(role="user"))


def test_pool_binary_does_not_link_the_sandbox():
    nm = shutil.which("nm")
    if not nm:
        pytest.skip("nm not installed")
    syms = subprocess.run([nm, "-a", str(BIN / "agenttest-fcgi")], capture_output=True, text=True,
                          check=True).stdout
    assert "check_hdr_encode" in syms  # the client is there ...
    assert "sbx_start" not in syms and "sbx_prestart" not in syms  # ... the sandbox is not


def test_first_submit_right_after_start_is_checked(stack_factory):
    """The stack reports up only once the checker answers: no 503 on the first submission."""
    with stack_factory.fresh("checker-first", AGENTTEST_RUNNER_SLOTS=1) as s:
        api = Api(s, s.create_token(role="user"))
        assert api.submit(VALID + "# first\n", "first")["kind"] == "simulate"
        r = api.post("/strategies/submit", {"code": "def simulate(p, q:\n  pass\n", "name": "first-bad"})
        body = assert_error(r, 400, "invalid_field")
        assert body["line"] == 1 and body["column"] >= 1


def test_runner_stopped_answers_503_then_restart_serves(cstack, capi):
    assert capi.submit(VALID + "# before\n", "before")["kind"] == "simulate"
    bad = "def simulate(prices, params):\n    return [\n# before, bad\n"
    first = assert_error(capi.post("/strategies/submit", {"code": bad, "name": "before-bad"}), 400, "invalid_field")
    pid = cstack.pid("runner")
    os.kill(pid, signal.SIGTERM)
    wait_pid_gone(pid)
    t = time.monotonic()
    r = capi.post("/strategies/submit", {"code": VALID + "# while down\n", "name": "down"})
    assert time.monotonic() - t < 2
    body = assert_error(r, 503, "unavailable")
    assert "code checker" in body["error"] and "agenttest-runner" in body["error"], body
    assert "not running" in body["error"]
    assert r.header("Retry-After")
    assert cstack.get("/health").status == 200  # the pool itself is fine

    # code checked before is answered from the verdict cache (code_checks), with no checker:
    # the same kind, and the same syntax error with its line and column
    again = capi.submit(VALID + "# before\n", "before-again")
    assert again["kind"] == "simulate" and again["created"] is True
    body = assert_error(capi.post("/strategies/submit", {"code": bad, "name": "before-bad"}), 400, "invalid_field")
    assert (body["line"], body["column"], body["error"]) == (first["line"], first["column"], first["error"])

    # a restarted runner serves again
    p = start_runner(cstack, "runner-restarted")
    assert capi.submit(VALID + "# after restart\n", "after")["kind"] == "simulate"

    # SIGKILL leaves the socket file behind: refused connections are "not running" too
    p.kill()
    p.wait()
    assert os.path.exists(cstack.info["AGENTTEST_CHECK_SOCKET"])
    r = capi.post("/strategies/submit", {"code": VALID + "# killed\n", "name": "killed"})
    assert_error(r, 503, "unavailable")
    # and the next runner takes the socket over (the lock died with the process)
    start_runner(cstack, "runner-takeover")
    assert capi.submit(VALID + "# takeover\n", "takeover")["kind"] == "simulate"


def test_second_runner_on_the_host_waits_for_the_socket(cstack, capi):
    """Two runners, one socket: the second takes over only when the first stops."""
    live = [p for p in getattr(cstack, "extra_runners", []) if p.poll() is None]
    if not live:
        live = [start_runner(cstack, "runner-a")]
    first = live[-1]
    env = cstack.cli_env()
    env.update({"RUNNER_NOTIFY_DIR": str(cstack.var / "run" / "runners")})
    log = open(cstack.var / "log" / "runner-b.log", "ab")
    second = subprocess.Popen([str(BIN / "agenttest-runner"), "--slots", "0"], env=env, stdout=log,
                              stderr=log, start_new_session=True)
    cstack.extra_runners.append(second)
    deadline = time.monotonic() + 60
    text = ""
    while "check_service_waiting" not in text:
        assert second.poll() is None and time.monotonic() < deadline, text
        time.sleep(0.1)
        text = (cstack.var / "log" / "runner-b.log").read_text()
    stop_proc(first)
    wait_checker(cstack, second)
    assert capi.submit(VALID + "# second runner\n", "second")["kind"] == "simulate"


def test_many_concurrent_submissions_all_checked(cstack, capi):
    wait_checker(cstack)
    cases = []
    for i in range(60):
        k = i % 5
        if k == 0:
            cases.append((VALID + f"# c{i}\n", 200, "simulate", None))
        elif k == 1:
            cases.append((POSITIONS + f"# c{i}\n", 200, "positions", None))
        elif k == 2:
            cases.append((SIGNAL + f"# c{i}\n", 200, "signal", None))
        elif k == 3:
            cases.append(("\n" * (i % 7) + "def simulate(prices, params:\n    pass\n", 400, None, 1 + i % 7))
        else:
            cases.append((f"x = {i}\n", 400, None, None))

    def one(case):
        code, status, kind, line = case
        r = capi.post("/strategies/submit", {"code": code, "name": f"conc-{hash(code) & 0xffff}"})
        return case, r

    with concurrent.futures.ThreadPoolExecutor(12) as ex:
        results = list(ex.map(one, cases))
    for (code, status, kind, line), r in results:
        assert r.status == status, (code, r)
        if kind:
            assert r.json()["kind"] == kind
        elif line:
            assert r.json()["line"] == line, r
        else:
            assert "simulate" in r.json()["error"]


@pytest.mark.parametrize("name,code", [
    ("nested-parens", "def simulate(prices, params):\n    return " + "(" * 100000 + ")" * 100000 + "\n"),
    ("deep-binop", "x = " + "+".join(["1"] * 60000) + "\ndef simulate(prices, params):\n    return 1\n"),
    ("unary-chain", "x = " + "-" * (CODE_MAX - 100) + "1\n"),
    ("attribute-chain", "x = " + "a." * ((CODE_MAX - 10) // 2) + "b\n"),
    ("long-list", "x = [" + "1," * ((CODE_MAX - 20) // 2) + "]\n"),
    ("many-statements", "x=1;" * ((CODE_MAX - 60) // 4) + "\ndef simulate(p, q):\n  return p\n"),
    ("nested-lists", "x = " + "[" * 5000 + "]" * 5000 + "\n"),
    # the host's answer lists every top-level name (about 190 KiB here): still answered
    ("many-functions", "def simulate(prices, params):\n    return 1\n"
     + "".join(f"def f{i}():0\n" for i in range(18000))),
    ("nul-and-junk", "def simulate(prices, params):\n    return 1\n" + "\u0000" * 10),
])
def test_hostile_checks_are_bounded(cstack, capi, name, code):
    assert len(code.encode()) <= CODE_MAX
    t = time.monotonic()
    r = capi.post("/strategies/submit", {"code": code, "name": f"hostile-{name}"}, timeout=15)
    took = time.monotonic() - t
    assert took < 14, f"{name}: {took:.1f}s"   # the submit timeout (15 s) is the failure: a bounded check answers well before it
    assert r.status in (200, 400), r
    if name == "many-functions":
        assert r.status == 200 and r.json()["kind"] == "simulate", r
    if r.status == 400:
        body = assert_error(r, 400, "invalid_field")
        assert body["error"]
    # the pool and the checker still answer at once
    assert capi.submit(VALID + f"# after {name}\n", "after-hostile")["kind"] == "simulate"


def test_socket_refuses_malformed_requests(cstack):
    wait_checker(cstack)
    path = cstack.info["AGENTTEST_CHECK_SOCKET"]
    st, body = ask(path, 0, header=b"XXXX" + bytes([1, 1, 0, 0]) + struct.pack("<I", 3))
    assert st == 3 and "malformed" in body["message"]
    # a length above the limit is refused from the header alone
    st, body = ask(path, 0, header=b"ATCQ" + bytes([1, 1, 0, 0]) + struct.pack("<I", CODE_MAX + 1))
    assert st == 3
    st, body = ask(path, 0, header=b"ATCQ" + bytes([1, 9, 0, 0]) + struct.pack("<I", 0))
    assert st == 3
    st, body = ask(path, 1, VALID.encode())
    assert st == 0 and body == {"ok": True, "kind": "simulate"}
    st, body = ask(path, 1, b"def simulate(:\n")
    assert st == 0 and body["ok"] is False and body["error"] == "syntax" and body["line"] == 1
    # a client that sends nothing is dropped after the read deadline, not kept forever
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(10)
    s.connect(path)
    t = time.monotonic()
    assert s.recv(1) == b""
    assert time.monotonic() - t < 5
    s.close()


def test_socket_flood_is_answered_busy_or_checked_never_hangs(cstack):
    wait_checker(cstack)
    path = cstack.info["AGENTTEST_CHECK_SOCKET"]

    def one(i):
        try:
            return ask(path, 1, (VALID + f"# flood {i}\n").encode(), timeout=10)
        except OSError as e:  # a full listen backlog refuses the connection
            return ("refused", str(e))

    t = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(100) as ex:
        out = list(ex.map(one, range(150)))
    assert time.monotonic() - t < 20
    answered = [b for st, b in out if st == 0]
    busy = [b for st, b in out if st == 1]
    assert all(b == {"ok": True, "kind": "simulate"} for b in answered)
    assert all("busy" in b["message"] for b in busy)
    assert len(answered) + len(busy) + sum(1 for st, _ in out if st == "refused") == 150
    assert len(answered) >= 10, (len(answered), len(busy))
    # and afterwards it serves normally
    st, body = ask(path, 1, VALID.encode())
    assert st == 0 and body["kind"] == "simulate"

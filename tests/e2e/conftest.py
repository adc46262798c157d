"""End-to-end fixtures: real stacks (MariaDB + FastCGI pool + nginx) started
with scripts/stack.sh in temporary directories.

Nothing is built here (`make test` built bin/ already; AGENTTEST_BIN points
elsewhere, e.g. a sanitizer build). Fixtures:

  stack            the shared default stack (no MANTIS_AUTH_TOKEN, rate
                   limit off so tests can make many requests, 2 workers).
  stack_factory    stack_factory(name, **env) starts (once per session and
                   name) a variant with extra configuration, e.g.
                   stack_factory("secured", MANTIS_AUTH_TOKEN=...). Every
                   stack started through it is stopped at the end.
                   stack_factory.fresh(name, **env) returns a new stack the
                   caller owns (use it as a context manager).

A Stack gives the base URL, the CLI with the stack's environment
(stack.cli("token", "list")), token creation, and an HTTP helper that can
pick the client's source address (127.0.0.2 and up are "remote" clients to
the application). Logs of every stack are copied to
$AGENTTEST_TEST_OUT/e2e-logs/<name>/ when it stops.
"""

import concurrent.futures
import http.client
import json
import os
import secrets
import shlex
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.parse
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BIN = Path(os.environ.get("AGENTTEST_BIN", REPO / "bin"))
STACK_SH = REPO / "scripts" / "stack.sh"
PYTHON = "/usr/bin/python3"
# Settings of the default stack; variants override them.
DEFAULT_ENV = {
    "MANTIS_HOST": "127.0.0.1",
    "MANTIS_RATE_LIMIT_RPM": "0",
    "AGENTTEST_WORKERS": "2",
    "AGENTTEST_DB_BUFFER_POOL": "32M",
    # a week of the synthetic market (10,080 bars) keeps stack starts fast
    "AGENTTEST_SYNTH_DAYS": "7",
}
# Variables from the caller's environment that would change a stack's
# meaning; the fixtures set what they want explicitly.
SCRUBBED = (
    "AGENTTEST_CONFIG", "AGENTTEST_VAR", "AGENTTEST_AUTH", "AGENTTEST_WORKERS",
    "AGENTTEST_BODY_LIMIT", "AGENTTEST_RATE_BURST", "DATABASE_URL",
    "MANTIS_AUTH_TOKEN", "MANTIS_HOST", "MANTIS_PORT", "MANTIS_RATE_LIMIT_RPM",
    "AGENTTEST_SECRET_FILE", "AGENTTEST_FCGI_SOCKET", "DATASET_DIR", "DATASET_VERSION",
    "MANTIS_WORKERS",
)


def free_port():
    """A TCP port on 127.0.0.1 that is free right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def strong_token():
    """A MANTIS_AUTH_TOKEN that passes the strength rule."""
    return "Mt-" + secrets.token_urlsafe(32)


class Response:
    """An HTTP response read whole: status, headers, body bytes."""

    def __init__(self, status, headers, body):
        self.status = status
        self.headers = headers  # http.client.HTTPMessage (case-insensitive)
        self.body = body

    def header(self, name, default=None):
        return self.headers.get(name, default)

    def header_all(self, name):
        return self.headers.get_all(name) or []

    def json(self):
        return json.loads(self.body.decode("utf-8"))

    @property
    def content_type(self):
        return (self.header("Content-Type") or "").split(";")[0].strip()

    def __repr__(self):
        return f"<Response {self.status} {self.body[:200]!r}>"


class Stack:
    """One stack in its own VAR directory, driven through scripts/stack.sh."""

    def __init__(self, name, env=None):
        self.name = name
        self.var = Path(tempfile.mkdtemp(prefix=f"agenttest-e2e-{name}-"))
        self.port = free_port()
        self.settings = dict(DEFAULT_ENV)
        self.settings.update({k: str(v) for k, v in (env or {}).items()})
        self.settings["AGENTTEST_VAR"] = str(self.var)
        self.settings["MANTIS_PORT"] = str(self.port)
        self.settings["AGENTTEST_BIN"] = str(BIN)
        self.info = {}
        self.started = False

    # -- lifecycle -------------------------------------------------------
    def base_env(self):
        """os.environ without stack-relevant variables, plus our settings."""
        env = {k: v for k, v in os.environ.items() if k not in SCRUBBED}
        env.update(self.settings)
        env["PYTHON"] = PYTHON
        return env

    def stack_sh(self, *args, check=False, timeout=180):
        """Run scripts/stack.sh ARGS with this stack's settings."""
        return subprocess.run(
            [str(STACK_SH), *args], env=self.base_env(), capture_output=True,
            text=True, timeout=timeout, check=check)

    def start(self):
        try:
            r = self.stack_sh("start")
        except BaseException:
            # stack.sh was killed (timeout, Ctrl-C): stop what it had started.
            self.stack_sh("stop")
            shutil.rmtree(self.var, ignore_errors=True)
            raise
        if r.returncode != 0:
            self.collect_logs()
            tail = self.log_tail()
            shutil.rmtree(self.var, ignore_errors=True)  # stack.sh stopped what it started
            raise RuntimeError(
                f"stack {self.name} failed to start (rc {r.returncode}):\n"
                f"{r.stdout}\n{r.stderr}\n{tail}")
        self.started = True
        self.info = self.read_env()
        return self

    def stop(self):
        if not self.started:
            return
        self.stack_sh("stop")
        self.started = False
        self.collect_logs()
        shutil.rmtree(self.var, ignore_errors=True)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    def read_env(self):
        """$VAR/stack.env as a dict."""
        out = {}
        for line in (self.var / "stack.env").read_text().splitlines():
            key, _, val = line.partition("=")
            parts = shlex.split(val)
            out[key] = parts[0] if parts else ""
        return out

    def collect_logs(self):
        dest_root = os.environ.get("AGENTTEST_TEST_OUT")
        if not dest_root or not (self.var / "log").is_dir():
            return
        dest = Path(dest_root) / "e2e-logs" / self.name
        shutil.rmtree(dest, ignore_errors=True)
        try:
            shutil.copytree(self.var / "log", dest, dirs_exist_ok=True)
        except shutil.Error as e:
            # a log removed while it was being copied (the stack's own
            # scripts rotate and remove theirs): the copy is diagnostics,
            # so only a file that vanished is forgiven
            if any("No such file or directory" not in str(why) for _, _, why in e.args[0]):
                raise

    def log_tail(self, lines=30):
        out = []
        for f in sorted((self.var / "log").glob("*.log")):
            text = f.read_text(errors="replace").splitlines()[-lines:]
            out.append(f"--- {f.name}\n" + "\n".join(text))
        return "\n".join(out)

    # -- addresses -------------------------------------------------------
    @property
    def url(self):
        return self.info.get("AGENTTEST_URL", f"http://127.0.0.1:{self.port}")

    @property
    def host(self):
        return urllib.parse.urlsplit(self.url).hostname

    @property
    def token(self):
        """MANTIS_AUTH_TOKEN as published in stack.env (None if unset)."""
        return self.info.get("AGENTTEST_TOKEN")

    # -- CLI -------------------------------------------------------------
    def cli_env(self):
        env = self.base_env()
        env.update(self.info)
        return env

    def cli(self, *args, check=True, timeout=60, input=None):
        """Run bin/agenttest ARGS against this stack's database."""
        return subprocess.run(
            [str(BIN / "agenttest"), *args], env=self.cli_env(), input=input,
            capture_output=True, text=True, timeout=timeout, check=check)

    def create_token(self, user=None, role="user"):
        """A new API token for USER (random name by default)."""
        user = user or f"{role}-{secrets.token_hex(4)}"
        r = self.cli("token", "create", "--user", user, "--role", role)
        token = r.stdout.strip()
        assert token and "\n" not in token, r.stdout
        return token

    # -- HTTP ------------------------------------------------------------
    def request(self, method, path, *, headers=None, body=None, json_body=None,
                token=None, cookie=None, source=None, timeout=10):
        """One HTTP request on a new connection. source: client address
        (e.g. "127.0.0.2" to be a non-loopback client); token: sent as
        Bearer; cookie: sent as the mantis_token cookie."""
        hdrs = dict(headers or {})
        if json_body is not None:
            body = json.dumps(json_body).encode()
            hdrs.setdefault("Content-Type", "application/json")
        if isinstance(body, str):
            body = body.encode()
        if token is not None:
            hdrs["Authorization"] = f"Bearer {token}"
        if cookie is not None:
            hdrs["Cookie"] = f"mantis_token={cookie}"
        conn = http.client.HTTPConnection(
            self.host, self.port, timeout=timeout,
            source_address=(source, 0) if source else None)
        try:
            conn.request(method, path, body=body, headers=hdrs)
            resp = conn.getresponse()
            return Response(resp.status, resp.headers, resp.read())
        finally:
            conn.close()

    def get(self, path, **kw):
        return self.request("GET", path, **kw)

    def wait_health(self, status=200, timeout=20):
        """Poll /health until it answers STATUS; return the last response."""
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            try:
                last = self.get("/health", timeout=2)
                if last.status == status:
                    return last
            except OSError:
                pass
            time.sleep(0.2)
        raise AssertionError(f"/health did not answer {status} in {timeout}s: {last!r}")

    # -- processes -------------------------------------------------------
    def pid(self, component):
        """Pid recorded by stack.sh for mariadb, pool or nginx."""
        return int((self.var / "run" / f"{component}.pid").read_text().split()[0])

    def children(self, pid):
        """Direct children of PID."""
        out = set()
        for task in Path(f"/proc/{pid}/task").iterdir():
            try:
                out.update(int(p) for p in (task / "children").read_text().split())
            except OSError:
                pass
        return out

    def worker_pids(self):
        """The pool's worker processes (children of the master)."""
        return self.children(self.pid("pool"))


def _sigterm_to_interrupt(signum, frame):
    """SIGTERM (e.g. from `timeout`) unwinds like Ctrl-C, so pytest still
    runs the fixture teardowns and no stack is left running."""
    raise KeyboardInterrupt(f"signal {signum}")


@pytest.fixture(scope="session")
def stack_factory():
    """stack_factory(name="default", **env) -> a started Stack, one per name."""
    signal.signal(signal.SIGTERM, _sigterm_to_interrupt)
    stacks = {}

    def get(name="default", **env):
        if name in stacks:
            s = stacks[name]
            wanted = {k: str(v) for k, v in env.items()}
            assert all(s.settings.get(k) == v for k, v in wanted.items()), \
                f"stack {name!r} was started with other settings"
            return s
        s = Stack(name, env).start()
        stacks[name] = s
        return s

    def fresh(name, **env):
        return Stack(name, env)

    get.fresh = fresh
    yield get
    # Stopping is mostly waiting (each runner, pool and MariaDB shutting
    # down): the stacks of a session stop side by side, not one by one.
    with concurrent.futures.ThreadPoolExecutor(max_workers=8) as ex:
        for f in [ex.submit(s.stop) for s in stacks.values()]:
            f.result()


@pytest.fixture(scope="session")
def stack(stack_factory):
    """The shared default stack."""
    return stack_factory("default")


@pytest.fixture(scope="session")
def secured(stack_factory):
    """A stack with MANTIS_AUTH_TOKEN set and a low rate limit (30/min,
    burst 20). Tests keep their rate-limit buckets apart by using their
    own source addresses."""
    return stack_factory("secured", MANTIS_AUTH_TOKEN=strong_token(),
                         MANTIS_RATE_LIMIT_RPM=30, AGENTTEST_RATE_BURST=20)


@pytest.fixture(scope="session")
def admin_token(stack):
    return stack.create_token(role="admin")


@pytest.fixture(scope="session")
def user_token(stack):
    return stack.create_token(role="user")

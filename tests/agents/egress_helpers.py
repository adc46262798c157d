"""Helpers for the egress tests: start the Anthropic stand-in
(tests/lib/anthropic_standin.py), a private MariaDB (the owner's daily
budget lives there) and bin/agenttest-egress, talk HTTP to the proxy's unix
socket."""
import http.client
import json
import os
import shutil
import socket
import subprocess
import tempfile
import time

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BIN = os.environ.get("AGENTTEST_BINDIR", os.path.join(REPO, "bin"))
PY = "/usr/bin/python3"


class Standin:
    """The stand-in on a free port, scripted by `script` (a dict)."""

    def __init__(self, tmp, script):
        self.dir = tmp
        self.log = os.path.join(tmp, "standin.jsonl")
        path = os.path.join(tmp, "script.json")
        with open(path, "w") as f:
            json.dump(script, f)
        self.p = subprocess.Popen([PY, os.path.join(REPO, "tests/lib/anthropic_standin.py"), "--script", path,
                                   "--log", self.log], stdout=subprocess.PIPE, text=True)
        self.port = int(self.p.stdout.readline())
        self.url = "http://127.0.0.1:%d" % self.port

    def requests(self):
        if not os.path.exists(self.log):
            return []
        with open(self.log) as f:
            return [json.loads(line) for line in f]

    def close(self):
        self.p.kill()
        self.p.wait()
        self.p.stdout.close()


class MariaDB:
    """A private MariaDB (fresh data directory, unix socket, no network,
    --skip-grant-tables) with every migration applied, like the C unit
    tests' tests/unit/lib/tmariadb.c. Needs mariadbd on PATH."""

    def __init__(self, name="agenttest_egress"):
        self.dir = tempfile.mkdtemp(prefix="agenttest-egress-db-")
        self.sock = os.path.join(self.dir, "mysqld.sock")
        self.name = name
        user = ["--user=root"] if os.geteuid() == 0 else []
        with open(os.path.join(self.dir, "install.log"), "wb") as log:
            subprocess.run(["mariadb-install-db", "--no-defaults", "--datadir=" + self.dir + "/data",
                            "--skip-test-db"] + user, stdout=log, stderr=log, check=True)
        self.p = subprocess.Popen(["mariadbd", "--no-defaults", "--datadir=" + self.dir + "/data",
                                   "--skip-networking", "--skip-grant-tables", "--socket=" + self.sock,
                                   "--log-error=" + self.dir + "/mysqld.err", "--innodb-buffer-pool-size=16M"]
                                  + (user or ["--skip-name-resolve"]),
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if not wait_for(lambda: subprocess.run(["mariadb", "--no-defaults", "-S", self.sock, "-e", "SELECT 1"],
                                               capture_output=True).returncode == 0, timeout=60):
            self.close()
            raise RuntimeError("mariadbd did not start, see %s/mysqld.err" % self.dir)
        self.sql("CREATE DATABASE %s" % name, db="mysql")
        self.url = "mariadb://root@localhost/%s?socket=%s" % (name, self.sock)
        subprocess.run([os.path.join(BIN, "agenttest"), "db", "migrate", "--dir", os.path.join(REPO, "sql")],
                       env=dict(os.environ, DATABASE_URL=self.url), check=True, capture_output=True)

    def sql(self, text, db=None):
        """Run SQL; the rows as lists of strings (tab-separated output)."""
        p = subprocess.run(["mariadb", "--no-defaults", "-S", self.sock, "-N", "-B", db or self.name, "-e", text],
                           capture_output=True, text=True, check=True)
        return [line.split("\t") for line in p.stdout.splitlines()]

    def close(self):
        self.p.terminate()
        self.p.wait(timeout=60)
        shutil.rmtree(self.dir, ignore_errors=True)


class Egress:
    """bin/agenttest-egress for one agent; `limits` are extra --options;
    db_url (a MariaDB's) goes on the key pipe's second line."""

    def __init__(self, tmp, upstream, key, agent="a1", owner=7, ledger_dir=None, db_url=None, **limits):
        self.dir = tmp
        self.ledger_dir = ledger_dir or os.path.join(tmp, "ledger")
        os.makedirs(self.ledger_dir, exist_ok=True)
        self.sock = os.path.join(tmp, "egress-%s.sock" % agent)
        self.agent_ledger = os.path.join(self.ledger_dir, "agent-%s.json" % agent)
        self.turn = os.path.join(tmp, "turn-%s.json" % agent)
        self.stderr_path = os.path.join(tmp, "egress-%s.log" % agent)
        argv = [os.path.join(BIN, "agenttest-egress"), "--listen=" + self.sock, "--agent=" + agent,
                "--owner=%d" % owner, "--agent-ledger=" + self.agent_ledger,
                "--turn-usage=" + self.turn, "--upstream=" + upstream]
        argv += ["--%s=%s" % (k.replace("_", "-"), v) for k, v in sorted(limits.items())]
        r, w = os.pipe()
        os.write(w, key.encode() + b"\n" + (db_url.encode() + b"\n" if db_url else b""))
        os.close(w)
        argv.append("--key-fd=%d" % r)
        self.err = open(self.stderr_path, "wb")
        self.p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=self.err, pass_fds=(r,), text=True)
        os.close(r)
        assert self.p.stdout.readline().strip() == "ready"

    def log_lines(self):
        with open(self.stderr_path) as f:
            return [json.loads(line) for line in f if line.startswith("{")]

    def turn_usage(self):
        with open(self.turn) as f:
            return json.load(f)

    def close(self):
        self.p.terminate()
        self.p.wait(timeout=10)
        self.p.stdout.close()
        self.err.close()


class UnixHTTPConnection(http.client.HTTPConnection):
    def __init__(self, path, timeout=30):
        super().__init__("localhost", timeout=timeout)
        self.path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(self.path)


def request(sock, method, path, body=None, headers=None):
    """One request to the proxy; returns (status, headers dict, body bytes)."""
    c = UnixHTTPConnection(sock)
    data = json.dumps(body).encode() if isinstance(body, (dict, list)) else body
    h = {"content-type": "application/json", "anthropic-version": "2023-06-01"}
    h.update(headers or {})
    c.request(method, path, body=data, headers=h)
    r = c.getresponse()
    out = r.read()
    hd = {k.lower(): v for k, v in r.getheaders()}
    c.close()
    return r.status, hd, out


def sse_events(raw):
    """The (event, data) pairs of an SSE body."""
    out = []
    for block in raw.decode().split("\n\n"):
        ev = dat = None
        for line in block.split("\n"):
            if line.startswith("event: "):
                ev = line[7:]
            elif line.startswith("data: "):
                dat = json.loads(line[6:])
        if ev:
            out.append((ev, dat))
    return out


def wait_for(pred, timeout=10):
    t = time.monotonic()
    while time.monotonic() - t < timeout:
        if pred():
            return True
        time.sleep(0.05)
    return False

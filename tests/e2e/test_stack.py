"""scripts/stack.sh and make start/stop/status behaviour."""

import os
import re
import shutil
import subprocess

from conftest import REPO, Stack


def test_make_start_runs_stack_start():
    r = subprocess.run(["make", "-n", "--no-print-directory", "start"], cwd=REPO,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "scripts/stack.sh start" in r.stdout, r.stdout


def test_start_twice_says_already_running(stack):
    # What `make start` runs after deps and build (the test above).
    master = stack.pid("pool")
    r = stack.stack_sh("start")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "already running" in r.stdout, r.stdout
    assert stack.url in r.stdout
    assert stack.pid("pool") == master
    assert stack.get("/health").status == 200


def test_status_reports_running(stack):
    r = stack.stack_sh("status")
    assert r.returncode == 0, r.stdout
    for c in ("mariadb", "pool", "nginx", "runner"):
        assert re.search(rf"^{c} +running \(pid \d+\)$", r.stdout, re.M), r.stdout
    assert stack.url in r.stdout


def test_stack_env(stack):
    env = stack.read_env()
    assert env["AGENTTEST_URL"] == f"http://127.0.0.1:{stack.port}"
    assert "AGENTTEST_TOKEN" not in env  # no MANTIS_AUTH_TOKEN on this stack
    assert env["DATABASE_URL"].startswith("mariadb://")


def test_secret_key_private(stack):
    key = stack.var / "secret.key"
    assert key.exists()
    assert key.stat().st_mode & 0o077 == 0


def test_mariadb_has_no_tcp_listener(stack):
    pid = stack.pid("mariadb")
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            link = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if link.startswith("socket:["):
            inodes.add(link[8:-1])
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as f:
            next(f)
            for line in f:
                cols = line.split()
                if cols[3] == "0A":  # LISTEN
                    assert cols[9] not in inodes, f"MariaDB listens on TCP: {line}"


def refused(**env):
    """Try to start a stack with ENV; return (start result, pid files left)."""
    s = Stack("refused", env)
    s.settings.update({k: str(v) for k, v in env.items()})
    try:
        r = s.stack_sh("start", timeout=60)
        status = sorted(p.name for p in (s.var / "run").glob("*.pid"))
    finally:
        s.stack_sh("stop")
        shutil.rmtree(s.var, ignore_errors=True)
    return r, status


def test_refuses_public_host_without_token():
    r, status = refused(MANTIS_HOST="0.0.0.0")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "refusing to start" in r.stderr
    assert status == [], status  # nothing was started


def test_refuses_weak_auth_token():
    r, status = refused(MANTIS_AUTH_TOKEN="password123")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "refusing to start" in r.stderr
    assert status == [], status


def test_refuses_invalid_stack_settings():
    for key, value in (("MANTIS_PORT", "99999"), ("MANTIS_RATE_LIMIT_RPM", "-5"),
                       ("MANTIS_HOST", "127.0.0.1;evil")):
        r, status = refused(**{key: value})
        assert r.returncode == 1, (key, r.stdout, r.stderr)
        assert key in r.stderr, r.stderr
        assert status == [], status

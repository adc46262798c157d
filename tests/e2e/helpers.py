"""Assertions and helpers shared by the end-to-end tests."""
import json
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

SECURITY_HEADERS = {
    "Cache-Control": "no-store",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
}


def assert_security_headers(resp):
    """Every response (API, static, nginx's own errors) carries these."""
    for name, want in SECURITY_HEADERS.items():
        got = resp.header(name)
        assert got is not None, f"missing {name} on {resp!r}"
        assert want in got, f"{name}: {got!r}"
    csp = resp.header("Content-Security-Policy")
    assert csp and "frame-ancestors 'none'" in csp, csp
    assert "unsafe-inline" not in csp and "unsafe-eval" not in csp, csp


def assert_error(resp, status, code):
    """RESP is the JSON error body {"error","code","detail"} with STATUS/CODE."""
    assert resp.status == status, resp
    assert resp.content_type == "application/json", resp.header("Content-Type")
    body = resp.json()
    assert set(body) >= {"error", "code", "detail"}, body
    assert body["code"] == code, body
    assert isinstance(body["error"], str) and body["error"], body
    assert isinstance(body["detail"], str) and body["detail"], body
    assert b"<html" not in resp.body.lower()
    return body


def stack_sql(stack, q):
    """One statement on the stack's MariaDB (the account scripts/lib/stack-mariadb.sh uses); rows as lists."""
    user = subprocess.run(["id", "-un"], capture_output=True, text=True).stdout.strip()
    r = subprocess.run(["mariadb", "--no-defaults", "--protocol=socket",
                        "--socket=%s" % (Path(stack.var) / "run" / "mysqld.sock"), "-u", user, "-N", "-B",
                        "agenttest", "-e", q], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return [line.split("\t") for line in r.stdout.splitlines()]


class AnthropicStandin:
    """The Anthropic stand-in (tests/lib/anthropic_standin.py) on a free
    loopback port, playing SCRIPT (a dict: "turns", optional "default"; see
    the stand-in's docstring) and logging each request it gets to
    TMP/standin.jsonl. url is what AGENTTEST_ANTHROPIC_UPSTREAM takes. Use it
    as a context manager (the process is killed on exit), e.g. in a module
    fixture: `with AnthropicStandin(tmp, script) as s: yield s`."""

    def __init__(self, tmp, script):
        tmp = Path(tmp)
        self.log = tmp / "standin.jsonl"
        path = tmp / "script.json"
        path.write_text(json.dumps(script))
        self.p = subprocess.Popen(["/usr/bin/python3", str(REPO / "tests/lib/anthropic_standin.py"), "--script",
                                   str(path), "--log", str(self.log)], stdout=subprocess.PIPE, text=True)
        self.url = "http://127.0.0.1:%d" % int(self.p.stdout.readline())

    def requests(self):
        """Every request seen so far, oldest first (parsed log lines)."""
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines()]

    def close(self):
        self.p.kill()
        self.p.wait()
        self.p.stdout.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

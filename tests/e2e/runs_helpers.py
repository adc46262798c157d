"""Helpers of the strategies/runs/leaderboard/defaults/datasets tests (issue 5).

All requests carry a Bearer token and come from 127.0.0.2, so the loopback
auto-admin never applies: every call is made as a real user or admin.
"""
import json
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples" / "strategies"
REMOTE = "127.0.0.2"

BUY_AND_HOLD = (
    "def simulate(prices, params):\n"
    "    p0 = prices[0] if prices and prices[0] else 1.0\n"
    "    return [p / p0 for p in prices]\n"
)

TERMINAL = ("completed", "failed", "cancelled")


def example(name):
    return (EXAMPLES / name).read_text()


class Api:
    """A client bound to one stack and one token."""

    def __init__(self, stack, token):
        self.stack = stack
        self.token = token

    def req(self, method, path, body=None, **kw):
        kw.setdefault("timeout", 90)
        return self.stack.request(method, path, json_body=body, token=self.token, source=REMOTE, **kw)

    def get(self, path, **kw):
        return self.req("GET", path, **kw)

    def post(self, path, body=None, **kw):
        return self.req("POST", path, body if body is not None else {}, **kw)

    # -- strategies --------------------------------------------------------
    def submit(self, code, name, params=None, expect=200):
        body = {"code": code, "name": name}
        if params is not None:
            body["params"] = params
        r = self.post("/strategies/submit", body)
        assert r.status == expect, r
        return r.json()

    # -- runs ---------------------------------------------------------------
    def run(self, version_id, wait=60, expect=None, **fields):
        body = {"strategy_version_id": version_id, **fields}
        if wait:
            body["wait"] = wait
        r = self.post("/runs", body)
        if expect is not None:
            assert r.status == expect, r
        else:
            assert r.status in (200, 202), r
        return r.json()

    def wait_run(self, run_id, timeout=60):
        deadline = time.monotonic() + timeout
        while True:
            r = self.get(f"/runs/{run_id}")
            assert r.status == 200, r
            body = r.json()
            if body["status"] in TERMINAL or time.monotonic() > deadline:
                return body
            time.sleep(0.05)

    def wait_status(self, run_id, status, timeout=30):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            body = self.get(f"/runs/{run_id}").json()
            if body["status"] == status:
                return body
            time.sleep(0.02)
        raise AssertionError(f"run {run_id} never reached {status}: {body}")


def metrics_without_runtime(run):
    m = dict(run["metrics"])
    m.pop("runtime_s", None)
    return json.dumps(m, sort_keys=True)


def sleeper(seconds):
    """A simulate strategy that sleeps before answering (for cancel and kill tests)."""
    return (
        "import time\n"
        "def simulate(prices, params):\n"
        f"    time.sleep({seconds})\n"
        "    p0 = prices[0]\n"
        "    return [p / p0 for p in prices]\n"
    )

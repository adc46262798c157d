"""Issue 17 fix 4: a running evaluation reports its progress. The runner's
heartbeat writes how many predict calls the stream has answered
(sql/031), GET /api/evaluations/{id} returns it as `progress` while the
evaluation runs, and null once it is final (or before the stream starts)."""
import time

from runs_helpers import Api
from test_challenges import MOMENTUM, wait_done

# The momentum template, a few milliseconds slower per step: 7 days of
# 1-minute bars take tens of seconds, so several heartbeats see the count.
SLOW = MOMENTUM.replace("import numpy as np", "import time\nimport numpy as np").replace(
    "    def predict(self, r):\n", "    def predict(self, r):\n        time.sleep(0.003)\n")


def test_progress_counts_up_while_running_and_is_null_after(stack):
    assert "time.sleep(0.003)" in SLOW
    api = Api(stack, stack.create_token(role="user"))
    r = api.post("/api/evaluations", {"challenge": "ETH-1H-BINARY", "code": SLOW, "days_back": 7, "holdout_days": 2})
    assert r.status == 202, r
    eid = r.json()["id"]
    seen = []   # (done, total) while running, in order
    deadline = time.time() + 600
    while time.time() < deadline:
        e = api.get(f"/api/evaluations/{eid}").json()
        if e["status"] in ("completed", "failed", "cancelled"):
            break
        if e["status"] != "running":
            assert e["progress"] is None, e["progress"]
        elif e["progress"] is not None:
            p = e["progress"]
            assert set(p) == {"done", "total", "unit"} and p["unit"] == "steps", p
            assert 0 <= p["done"] <= p["total"], p
            seen.append((p["done"], p["total"]))
        time.sleep(0.3)
    assert e["status"] == "completed", e
    assert e["progress"] is None, "no progress once final"
    assert len({t for _, t in seen}) == 1, f"one total for the whole stream: {seen}"
    dones = [d for d, _ in seen]
    assert dones == sorted(dones), f"progress never goes back: {dones}"
    assert len(set(dones)) >= 2 and dones[-1] > dones[0], f"progress increased while running: {dones}"
    # the total is the number of predict calls the evaluation made
    assert seen[0][1] == e["result"]["timing"]["steps"], (seen[0], e["result"]["timing"])
    assert wait_done(api, eid)["progress"] is None

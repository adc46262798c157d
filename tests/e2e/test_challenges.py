"""MANTIS challenges over the API (issue 6), against the real stack: the
catalogue in the original's shape, evaluations queued with POST
/api/evaluations and executed by agenttest-runner in the sandbox (lockstep
streaming), their results, the per-challenge leaderboards, input
validation and the auth matrix of these routes."""
import math
import time

import pytest

from runs_helpers import Api, REMOTE

MOMENTUM = '''
import numpy as np
from agenttest import Featurizer, Predictor
class TechFeaturizer(Featurizer):
    warmup = 61
    def compute(self, view):
        p = view.prices("ETH")
        return p[-1] / p[-61] - 1.0
class TechPredictor(Predictor):
    def predict(self, r):
        s = 0.5 + 0.5 * np.tanh(r * 300)
        return np.array([s, 1 - s])
'''

CONTRARIAN = MOMENTUM.replace("np.tanh(r * 300)", "np.tanh(-r * 300)")

FAILING = '''
from agenttest import Featurizer, Predictor
class TechFeaturizer(Featurizer):
    warmup = 10
    def compute(self, view):
        raise ValueError("broken featurizer at %d" % view.t)
class TechPredictor(Predictor):
    def predict(self, f):
        return [0.5, 0.5]
'''

ROUTES = [("GET", "/api/challenges", None), ("GET", "/api/challenges/ETH-1H-BINARY/leaderboard", None),
          ("POST", "/api/evaluations", {"challenge": "ETH-1H-BINARY", "code": MOMENTUM}),
          ("GET", "/api/evaluations/00000000-0000-4000-8000-000000000000", None)]


@pytest.fixture(scope="module")
def alice(stack):
    return Api(stack, stack.create_token(role="user"))


@pytest.fixture(scope="module")
def bob(stack):
    return Api(stack, stack.create_token(role="user"))


@pytest.fixture(scope="module")
def admin(stack):
    return Api(stack, stack.create_token(role="admin"))


def wait_done(api, eid, timeout=300):
    deadline = time.time() + timeout
    while time.time() < deadline:
        r = api.get(f"/api/evaluations/{eid}")
        assert r.status == 200, r
        e = r.json()
        if e["status"] in ("completed", "failed", "cancelled"):
            return e
        time.sleep(0.5)
    raise AssertionError(f"evaluation {eid} not done after {timeout} s: {e}")


def submit(api, code, **fields):
    body = {"challenge": "ETH-1H-BINARY", "code": code, "days_back": 7, "holdout_days": 2, **fields}
    r = api.post("/api/evaluations", body)
    assert r.status == 202, r
    return r.json()


@pytest.fixture(scope="module")
def momentum_eval(alice):
    q = submit(alice, MOMENTUM)
    return q, wait_done(alice, q["id"])


def test_catalogue_shape(alice):
    r = alice.get("/api/challenges")
    assert r.status == 200, r
    cat = r.json()
    assert set(cat) == {"ETH-1H-BINARY", "ETH-HITFIRST-100M", "ETH-LBFGS", "BTC-LBFGS-6H",
                        "MULTI-BREAKOUT", "XSEC-RANK"}      # no funding_1h in the synthetic market
    for name, c in cat.items():
        assert {"type", "short", "desc", "asset", "metric", "metric_info"} <= set(c), name
        assert set(c["metric_info"]) >= {"primary", "all", "direction", "label", "baseline"}
    hf = cat["ETH-HITFIRST-100M"]["metric_info"]
    assert hf["primary"] == "direct_log_loss" and hf["direction"] == "lower"
    assert hf["baseline"] == pytest.approx(math.log(3))
    assert cat["ETH-1H-BINARY"]["metric_info"]["baseline"] == 0.5
    assert cat["XSEC-RANK"]["type"] == "xsec_rank"


def test_funding_xsec_is_refused_at_once_on_a_market_without_funding(alice):
    """The default market has no funding_1h: FUNDING-XSEC is not listed for it
    (above), and an evaluation or an agent asking for it there is refused when
    submitted, saying which field is missing, instead of failing later with
    "no valid walk-forward windows"."""
    assert "FUNDING-XSEC" not in alice.get("/api/challenges").json()
    for path, body in (("/api/evaluations", {"challenge": "FUNDING-XSEC", "code": MOMENTUM}),
                       ("/api/agents", {"challenge": "FUNDING-XSEC", "goal": "rank funding changes"})):
        r = alice.post(path, body)
        assert r.status == 400, (path, r)
        err = r.json()
        assert err["code"] == "dataset_lacks_field", (path, err)
        assert err["error"].startswith("FUNDING-XSEC needs the funding_1h field and dataset_version '"), err
        assert "does not carry it" in err["error"], err
    # nothing was queued or launched
    assert alice.get("/api/evaluations?challenge=FUNDING-XSEC").json()["evaluations"] == []
    assert [a for a in alice.get("/api/agents").json() if a["challenge"] == "FUNDING-XSEC"] == []


def test_evaluation_runs_in_the_sandbox(alice, momentum_eval):
    q, e = momentum_eval
    assert q["status"] == "queued" and q["url"] == f"/api/evaluations/{q['id']}"
    assert e["status"] == "completed", e
    res = e["result"]
    assert res["challenge"] == "ETH-1H-BINARY" and res["type"] == "binary" and res["mode"] == "strict"
    assert res["dev_length"] == 5 * 1440 and res["eval_holdout_minutes"] == 2 * 1440
    assert res["windows"] and any(w["in_holdout"] for w in res["windows"])
    assert e["metric"] == "mean_auc" and e["score"] == pytest.approx(res["mean_auc"], rel=1e-12)
    assert res["timing"]["steps"] == 7 * 1440 - 61
    assert e["dataset_version"] == q["dataset_version"] and e["code_hash"] == q["code_hash"]
    assert e["error"] is None and e["started_at"] and e["completed_at"] and e["runtime_s"] > 0
    # the owner reads back the code that was scored
    assert e["code"] == MOMENTUM


def test_failed_evaluation_reports_the_exception(alice):
    e = wait_done(alice, submit(alice, FAILING)["id"])
    assert e["status"] == "failed" and e["error"]["code"] == "strategy_error"
    assert "broken featurizer at 10" in e["error"]["message"]
    assert e["result"]["exception"]["type"] == "ValueError" and e["score"] is None


def test_mantis_mode_and_leaderboard_order(alice, bob, momentum_eval):
    q2 = submit(bob, CONTRARIAN, name="contrarian tanh ×300", note="the momentum signal reversed\nas a control")
    assert q2["name"] == "contrarian tanh ×300" and q2["note"] == "the momentum signal reversed\nas a control"
    e2 = wait_done(bob, q2["id"])
    assert e2["status"] == "completed", e2
    assert e2["name"] == q2["name"] and e2["note"] == q2["note"]
    assert momentum_eval[1]["name"] is None and momentum_eval[1]["note"] is None   # not given
    listed = {x["id"]: x for x in bob.get("/api/evaluations?challenge=ETH-1H-BINARY").json()["evaluations"]}
    assert listed[e2["id"]]["name"] == q2["name"]
    r = alice.get("/api/challenges/ETH-1H-BINARY/leaderboard")
    assert r.status == 200, r
    board = r.json()
    assert board["metric"] == "mean_auc" and board["direction"] == "higher" and board["mode"] == "strict"
    scores = [x["score"] for x in board["entries"]]
    assert scores == sorted(scores, reverse=True) and len(scores) >= 2
    ids = [x["evaluation_id"] for x in board["entries"]]
    assert momentum_eval[1]["id"] in ids and e2["id"] in ids
    assert [x["rank"] for x in board["entries"]] == list(range(1, len(ids) + 1))
    # rows are identifiable by the name given at submission
    names = {x["evaluation_id"]: x["name"] for x in board["entries"]}
    assert names[e2["id"]] == "contrarian tanh ×300" and names[momentum_eval[1]["id"]] is None
    # a mantis-mode evaluation is on the mantis board only
    m = wait_done(alice, submit(alice, MOMENTUM, mode="mantis")["id"])
    assert m["status"] == "completed" and m["mode"] == "mantis" and m["result"]["mode"] == "mantis"
    mb = alice.get("/api/challenges/ETH-1H-BINARY/leaderboard?mode=mantis").json()
    assert m["id"] in [x["evaluation_id"] for x in mb["entries"]]
    assert m["id"] not in ids
    hb = alice.get("/api/challenges/ETH-HITFIRST-100M/leaderboard").json()
    assert hb["direction"] == "lower" and hb["metric"] == "direct_log_loss"


def test_dev_only_evaluation(alice):
    e = wait_done(alice, submit(alice, MOMENTUM, dev_only=True)["id"])
    assert e["status"] == "completed", e
    assert e["dev_only"] is True and e["result"]["dev_only"] is True
    assert e["result"]["n_timesteps"] == 5 * 1440


def test_visibility(alice, bob, admin, momentum_eval):
    eid = momentum_eval[1]["id"]
    assert bob.get(f"/api/evaluations/{eid}").status == 404
    assert admin.get(f"/api/evaluations/{eid}").status == 200
    assert admin.get(f"/api/evaluations/{eid}").json()["code"] == MOMENTUM
    assert alice.get("/api/evaluations/not-a-uuid").status == 404


@pytest.mark.parametrize("body,status,code", [
    ({"code": MOMENTUM}, 400, "missing_field"),
    ({"challenge": "ETH-1H-BINARY"}, 400, "missing_field"),
    ({"challenge": "NOPE", "code": MOMENTUM}, 400, "invalid_field"),
    ({"challenge": "ETH-1H-BINARY", "code": MOMENTUM, "mode": "loose"}, 400, "invalid_field"),
    ({"challenge": "ETH-1H-BINARY", "code": MOMENTUM, "days_back": 0}, 400, "invalid_field"),
    ({"challenge": "ETH-1H-BINARY", "code": MOMENTUM, "holdout_days": -1}, 400, "invalid_field"),
    ({"challenge": "ETH-1H-BINARY", "code": MOMENTUM, "dev_only": "yes"}, 400, "invalid_field"),
    ({"challenge": "ETH-1H-BINARY", "code": MOMENTUM, "extra": 1}, 400, "invalid_field"),
    ({"challenge": "ETH-1H-BINARY", "code": MOMENTUM, "dataset_version": "nope"}, 404, "not_found"),
    ({"challenge": "ETH-1H-BINARY", "code": MOMENTUM, "name": "x" * 129}, 400, "invalid_field"),
    ({"challenge": "ETH-1H-BINARY", "code": MOMENTUM, "name": "two\nlines"}, 400, "invalid_field"),
    ({"challenge": "ETH-1H-BINARY", "code": MOMENTUM, "name": 7}, 400, "invalid_field"),
    ({"challenge": "ETH-1H-BINARY", "code": MOMENTUM, "note": "n" * 1025}, 400, "invalid_field"),
    ({"challenge": "ETH-1H-BINARY", "code": MOMENTUM, "note": "bell\x07"}, 400, "invalid_field"),
])
def test_create_validation(alice, body, status, code):
    r = alice.post("/api/evaluations", body)
    assert r.status == status, r
    assert r.json()["code"] == code and r.json()["error"]


def test_unknown_challenge_lists_the_valid_ones(alice):
    """The same message as an agent with an unknown challenge (fcgi ag_bad_challenge)."""
    r = alice.post("/api/evaluations", {"challenge": "NOPE", "code": MOMENTUM})
    assert r.status == 400, r
    assert r.json()["error"].startswith("unknown challenge 'NOPE'; valid: ETH-1H-BINARY, "), r.json()


def test_leaderboard_validation(alice):
    assert alice.get("/api/challenges/NOPE/leaderboard").status == 404
    r = alice.get("/api/challenges/ETH-1H-BINARY/leaderboard?mode=loose")
    assert r.status == 400 and r.json()["code"] == "invalid_field"
    assert alice.get("/api/challenges/ETH-1H-BINARY/leaderboard?limit=0").status == 400


@pytest.mark.parametrize("method,path,body", ROUTES)
def test_auth_matrix(stack, alice, method, path, body):
    # no credential from a remote address: 401
    r = stack.request(method, path, json_body=body, source=REMOTE)
    assert r.status == 401 and r.json()["code"] == "unauthorized", r
    # a bad token: 401
    r = stack.request(method, path, json_body=body, token="x" * 43, source=REMOTE)
    assert r.status == 401, r
    # a user token: allowed (the unknown evaluation id is 404, not 401/403)
    r = alice.req(method, path, body)
    assert r.status in (200, 202, 404), r
    if method == "GET" and path.startswith("/api/evaluations/"):
        assert r.status == 404
    if r.status == 202:
        # the accepted evaluation is cancelled and waited for: the later tests
        # submit as alice, who may have one ETH-1H-BINARY evaluation at a time
        eid = r.json()["id"]
        alice.post(f"/api/evaluations/{eid}/cancel")
        assert wait_done(alice, eid)["status"] in ("cancelled", "completed", "failed")


def test_one_evaluation_per_challenge_and_dataset_at_a_time(stack):
    """Issue 11 item 2: two evaluations of one user side by side could pass
    each other what they see, so a second one of the same challenge and
    dataset is refused while the first is queued or running."""
    erin = Api(stack, stack.create_token(role="user"))
    first = submit(erin, MOMENTUM)
    r = erin.post("/api/evaluations", {"challenge": "ETH-1H-BINARY", "code": MOMENTUM, "days_back": 7,
                                       "holdout_days": 2})
    assert r.status == 429 and r.json()["code"] == "concurrency_limit", r
    other = submit(erin, FAILING, challenge="ETH-HITFIRST-100M")   # another challenge is fine
    assert wait_done(erin, first["id"])["status"] == "completed"
    wait_done(erin, other["id"])
    again = submit(erin, FAILING)                                   # once done, the next one is accepted
    wait_done(erin, again["id"])


SLOW = '''
import time
from agenttest import Featurizer, Predictor
class F(Featurizer):
    warmup = 61
    def compute(self, view):
        t = time.monotonic()
        while time.monotonic() - t < 60:
            pass
        return 0.0
class P(Predictor):
    def predict(self, f):
        return 0.5
'''


def test_cancel_a_running_evaluation(alice):
    """The queue's cancel for evaluations: the runner kills the sandbox within a tick."""
    q = submit(alice, SLOW)
    deadline = time.time() + 120
    while alice.get(f"/api/evaluations/{q['id']}").json()["status"] == "queued":
        assert time.time() < deadline, "the evaluation never started"
        time.sleep(0.2)
    t0 = time.time()
    r = alice.post(f"/api/evaluations/{q['id']}/cancel")
    assert r.status == 200, r
    e = wait_done(alice, q["id"], timeout=30)
    assert e["status"] == "cancelled" and e["error"]["code"] == "cancelled", e
    assert time.time() - t0 < 20
    again = alice.post(f"/api/evaluations/{q['id']}/cancel")
    assert again.status == 409 and again.json()["code"] == "conflict", again
    assert alice.post("/api/evaluations/00000000-0000-4000-8000-000000000000/cancel").status == 404


# Issue 11 item 5: a failed evaluation returned up to 64 KiB of the
# strategy's own text (exception message, traceback, stderr), enough to
# carry the holdout's prices out; what comes back is a few KiB at most.
LEAKING = '''
import sys
from agenttest import Featurizer, Predictor
def deep(n, view):
    if n == 0:
        raise ValueError("x" * 60000)
    return deep(n - 1, view)
class TechFeaturizer(Featurizer):
    warmup = 10
    def compute(self, view):
        sys.stderr.write("y" * 16000 + "\\n")
        return deep(60, view)
class TechPredictor(Predictor):
    def predict(self, f):
        return [0.5, 0.5]
'''


def test_a_failed_evaluation_returns_a_few_kib_of_the_strategys_text(alice):
    import json
    e = wait_done(alice, submit(alice, LEAKING)["id"])
    assert e["status"] == "failed" and e["error"]["code"] == "strategy_error", e["error"]
    assert e["result"]["exception"]["type"] == "ValueError"
    assert "xxxx" in e["result"]["exception"]["message"]      # still says what failed
    text = json.dumps({"error": e["error"], "result": e["result"]})
    assert len(text) <= 6 * 1024, len(text)


# Issue 11 item 8: rows of 4096 values made the trusted runner hold
# rows x 4096 floats (2.76 GB RSS for two 60-day evaluations, outside any
# cgroup); a row wider than the challenge's embedding_dim is refused.
WIDE = '''
import numpy as np
from agenttest import Featurizer, Predictor
class TechFeaturizer(Featurizer):
    warmup = 1
    def compute(self, view):
        return 0.0
class TechPredictor(Predictor):
    def predict(self, f):
        return np.full(4096, 0.5)
'''


def test_rows_wider_than_the_challenge_dimension_are_refused(alice):
    e = wait_done(alice, submit(alice, WIDE)["id"])
    assert e["status"] == "failed", e
    assert e["error"]["code"] == "bad_output", e["error"]
    assert "4096 values" in e["error"]["message"] and "embedding_dim 2" in e["error"]["message"], e["error"]

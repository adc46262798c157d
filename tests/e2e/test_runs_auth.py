"""The auth matrix of every route of the runs API (issue 5) and of every
by-id route of the API (issue 11): no credential from a non-loopback client,
a user, another user, an admin."""
import pathlib
import re

import pytest

from runs_helpers import Api, BUY_AND_HOLD, EXAMPLES, REMOTE
from test_agents_api import ROUTES as AGENT_ROUTES  # their matrix: test_every_route_is_the_owners_or_an_admins
from test_challenges import FAILING


@pytest.fixture(scope="module")
def world(stack):
    owner = Api(stack, stack.create_token(role="user"))
    other = Api(stack, stack.create_token(role="user"))
    admin = Api(stack, stack.create_token(role="admin"))
    v = owner.submit(BUY_AND_HOLD + "# auth\n", "auth-matrix")
    run = owner.run(v["strategy_version_id"], dataset_version="v1")
    assert run["status"] == "completed"
    ev = owner.post("/api/evaluations", {"challenge": "ETH-1H-BINARY", "code": FAILING, "days_back": 7,
                                         "holdout_days": 2})
    assert ev.status == 202, ev
    return {"owner": owner, "other": other, "admin": admin, "sid": v["strategy_id"],
            "vid": v["strategy_version_id"], "rid": run["run_id"], "eid": ev.json()["id"]}


# (method, path template, body, expectation per caller: owner, other, admin)
# "ok" = 2xx; 403/404 = that status.
ROUTES = [
    ("POST", "/strategies/submit", {"code": BUY_AND_HOLD, "name": "auth-m"}, ("ok", "ok", "ok")),
    ("POST", "/strategies", {"strategy_path": str(EXAMPLES / "buy_and_hold.py")}, (403, 403, "ok")),
    ("GET", "/strategies", None, ("ok", "ok", "ok")),
    ("GET", "/strategies/{sid}", None, ("ok", 404, "ok")),
    ("GET", "/strategies/versions/{vid}", None, ("ok", 404, "ok")),
    ("POST", "/runs", {"strategy_version_id": "{vid}", "dataset_version": "v1"}, ("ok", 404, "ok")),
    ("GET", "/runs", None, ("ok", "ok", "ok")),
    ("GET", "/runs/{rid}", None, ("ok", 404, "ok")),
    ("GET", "/runs/{rid}/equity", None, ("ok", 404, "ok")),
    ("GET", "/runs/{rid}/trades", None, (409, 404, 409)),   # a simulate run: no trades (test_run_trades.py)
    ("POST", "/runs/{rid}/verify", {}, ("ok", 404, "ok")),
    ("POST", "/runs/{rid}/cancel", {}, (409, 404, 409)),
    ("GET", "/leaderboard", None, ("ok", "ok", "ok")),
    ("POST", "/defaults/promote", {"strategy_version_id": "{vid}", "dataset_version": "v1"}, (403, 403, "ok")),
    ("GET", "/defaults", None, ("ok", "ok", "ok")),
    ("GET", "/datasets", None, ("ok", "ok", "ok")),
    ("GET", "/datasets/v1", None, ("ok", "ok", "ok")),
    ("GET", "/api/evaluations/{eid}", None, ("ok", 404, "ok")),
    ("GET", "/api/challenges/ETH-1H-BINARY/leaderboard", None, ("ok", "ok", "ok")),
]
# by-id routes with a side effect, tested on their own below
SEPARATE = {"/api/tokens/{id}/revoke", "/api/evaluations/{id}/cancel",
            # the updater's answers: admin only, covered with real proposals in test_updater.py
            "/defaults/proposals/{id}/approve", "/defaults/proposals/{id}/reject",
            # it calls the model API: covered against the Anthropic stand-in in test_agents_ask.py
            # (no credential 401, another user 404, the owner answered)
            "/api/agents/{id}/ask"}


def fill(x, w):
    if isinstance(x, str):
        if x in ("{vid}", "{sid}", "{eid}"):
            return w[x[1:-1]]
        return x.format(**w)
    if isinstance(x, dict):
        return {k: fill(v, w) for k, v in x.items()}
    return x


@pytest.mark.parametrize("method,path,body,expect", ROUTES, ids=[f"{m} {p}" for m, p, _, _ in ROUTES])
def test_matrix(stack, world, method, path, body, expect):
    url = fill(path, world)
    data = fill(body, world)
    anon = stack.request(method, url, json_body=data, source=REMOTE)
    assert anon.status == 401, (url, anon)
    for who, want in zip(("owner", "other", "admin"), expect):
        r = world[who].req(method, url, data)
        if want == "ok":
            assert 200 <= r.status < 300, (who, url, r)
        else:
            assert r.status == want, (who, url, r)
            assert r.json()["code"] in ("forbidden", "not_found", "conflict")


def test_every_by_id_route_is_in_the_matrix():
    """Every route of fcgi/routes.c with a parameter is covered here."""
    table = (pathlib.Path(__file__).resolve().parents[2] / "fcgi" / "routes.c").read_text()
    by_id = set(re.findall(r'"(/[^"]*\{[^"]*)"', table))
    covered = {re.sub(r"\{\w+\}", "{}", p) for _, p, _, _ in ROUTES}
    covered |= {re.sub(r"\{\w+\}", "{}", p) for p in SEPARATE}
    covered |= {"/api/agents/{}" + re.sub(r"/\d+(?=/|$)", "/{}", t.split("?")[0]) for _, t in AGENT_ROUTES}
    concrete = {re.sub(r"/(v1|ETH-1H-BINARY)(/|$)", r"/{}\2", p) for p in covered}
    missing = {p for p in by_id if re.sub(r"\{\w+\}", "{}", p) not in covered | concrete}
    assert not missing, missing


def test_token_revoke_by_id(stack, world):
    """Another user's token is 404 (not revealed); the owner and admins revoke."""
    mint = world["owner"].post("/api/tokens", {"label": "matrix"})
    assert mint.status == 201, mint
    tid = mint.json()["id"]
    url = f"/api/tokens/{tid}/revoke"
    assert stack.request("POST", url, json_body={}, source=REMOTE).status == 401
    r = world["other"].post(url)
    assert r.status == 404 and r.json()["code"] == "not_found", r
    assert world["admin"].post(url).status == 200
    mint2 = world["owner"].post("/api/tokens", {"label": "matrix2"}).json()
    assert world["owner"].post(f"/api/tokens/{mint2['id']}/revoke").status == 200


def test_evaluation_cancel_by_id(stack, world):
    """Cancelling an evaluation: no credential 401, another user 404 (not
    revealed); the owner and admins may (409 once the evaluation is final,
    which it may already be: the fixture's code fails fast)."""
    url = f"/api/evaluations/{world['eid']}/cancel"
    assert stack.request("POST", url, json_body={}, source=REMOTE).status == 401
    r = world["other"].post(url)
    assert r.status == 404 and r.json()["code"] == "not_found", r
    for who in ("owner", "admin"):
        r = world[who].post(url)
        assert r.status in (200, 409), (who, r)
        if r.status == 409:
            assert r.json()["code"] == "conflict", r

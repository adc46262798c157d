"""The auth matrix of every route of the runs API (issue 5): no credential
from a non-loopback client, a user, another user, an admin."""
import pytest

from runs_helpers import Api, BUY_AND_HOLD, EXAMPLES, REMOTE


@pytest.fixture(scope="module")
def world(stack):
    owner = Api(stack, stack.create_token(role="user"))
    other = Api(stack, stack.create_token(role="user"))
    admin = Api(stack, stack.create_token(role="admin"))
    v = owner.submit(BUY_AND_HOLD + "# auth\n", "auth-matrix")
    run = owner.run(v["strategy_version_id"], dataset_version="v1")
    assert run["status"] == "completed"
    return {"owner": owner, "other": other, "admin": admin, "sid": v["strategy_id"],
            "vid": v["strategy_version_id"], "rid": run["run_id"]}


# (method, path template, body, expectation per caller: owner, other, admin)
# "ok" = 2xx; 403/404 = that status.
ROUTES = [
    ("POST", "/strategies/submit", {"code": BUY_AND_HOLD, "name": "auth-m"}, ("ok", "ok", "ok")),
    ("POST", "/strategies", {"strategy_path": str(EXAMPLES / "buy_and_hold.py")}, (403, 403, "ok")),
    ("GET", "/strategies", None, ("ok", "ok", "ok")),
    ("GET", "/strategies/{sid}", None, ("ok", 404, "ok")),
    ("GET", "/strategies/versions/{vid}", None, ("ok", "ok", "ok")),
    ("POST", "/runs", {"strategy_version_id": "{vid}", "dataset_version": "v1"}, ("ok", 404, "ok")),
    ("GET", "/runs", None, ("ok", "ok", "ok")),
    ("GET", "/runs/{rid}", None, ("ok", 404, "ok")),
    ("GET", "/runs/{rid}/equity", None, ("ok", 404, "ok")),
    ("POST", "/runs/{rid}/verify", {}, ("ok", 404, "ok")),
    ("POST", "/runs/{rid}/cancel", {}, (409, 404, 409)),
    ("GET", "/leaderboard", None, ("ok", "ok", "ok")),
    ("POST", "/defaults/promote", {"strategy_version_id": "{vid}", "dataset_version": "v1"}, (403, 403, "ok")),
    ("GET", "/defaults", None, ("ok", "ok", "ok")),
    ("GET", "/datasets", None, ("ok", "ok", "ok")),
    ("GET", "/datasets/v1", None, ("ok", "ok", "ok")),
]


def fill(x, w):
    if isinstance(x, str):
        if x in ("{vid}", "{sid}"):
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

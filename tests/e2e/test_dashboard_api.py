"""API the dashboard lists with: GET /api/evaluations (ownership, filters,
cursor pagination, validation, auth), the strategy name on run rows
(GET /runs, GET /runs/{id}) and POST /api/logout (cookie expiry and the
CSRF rule)."""
import time

import pytest

from runs_helpers import Api, BUY_AND_HOLD, REMOTE
from test_challenges import FAILING, MOMENTUM, submit, wait_done

UUID0 = "00000000-0000-4000-8000-000000000000"


@pytest.fixture(scope="module")
def carol(stack):
    return Api(stack, stack.create_token(role="user"))


@pytest.fixture(scope="module")
def dave(stack):
    return Api(stack, stack.create_token(role="user"))


@pytest.fixture(scope="module")
def boss(stack):
    return Api(stack, stack.create_token(role="admin"))


@pytest.fixture(scope="module")
def evals(carol, dave):
    """carol: one completed ETH-1H-BINARY evaluation, one failed, one on
    another challenge; dave: one. Ids in submission order."""
    done = wait_done(carol, submit(carol, MOMENTUM)["id"])
    assert done["status"] == "completed", done
    failed = wait_done(carol, submit(carol, FAILING)["id"])
    other = submit(carol, FAILING, challenge="ETH-HITFIRST-100M")
    mine = submit(dave, FAILING)
    return {"done": done, "failed": failed, "other": other, "dave": mine}


def listing(api, query=""):
    r = api.get(f"/api/evaluations{query}")
    assert r.status == 200, r
    body = r.json()
    assert set(body) == {"evaluations", "next_cursor"}
    return body


def all_ids(api, query=""):
    return [e["id"] for e in listing(api, query)["evaluations"]]


def test_list_shape_and_values(carol, evals):
    body = listing(carol, "?challenge=ETH-1H-BINARY")
    by_id = {e["id"]: e for e in body["evaluations"]}
    done = by_id[evals["done"]["id"]]
    assert {"id", "challenge", "status", "owner", "mode", "metric", "score", "queued_at",
            "completed_at"} <= set(done)
    assert done["challenge"] == "ETH-1H-BINARY" and done["status"] == "completed" and done["mode"] == "strict"
    assert done["metric"] == "mean_auc" and done["score"] == pytest.approx(evals["done"]["score"], rel=1e-12)
    assert done["queued_at"] == evals["done"]["queued_at"]
    assert done["completed_at"] == evals["done"]["completed_at"]
    assert done["owner"] == carol.get("/api/me").json()["user"]
    failed = by_id[evals["failed"]["id"]]
    assert failed["status"] == "failed" and failed["score"] is None and failed["error_code"] == "strategy_error"
    # newest first
    ids = [e["id"] for e in body["evaluations"]]
    assert ids.index(evals["failed"]["id"]) < ids.index(evals["done"]["id"])


def test_filters(carol, evals):
    ids = all_ids(carol, "?challenge=ETH-HITFIRST-100M")
    assert evals["other"]["id"] in ids and evals["done"]["id"] not in ids
    ids = all_ids(carol, "?status=failed")
    assert evals["failed"]["id"] in ids and evals["done"]["id"] not in ids
    for e in listing(carol, "?status=completed&challenge=ETH-1H-BINARY")["evaluations"]:
        assert e["status"] == "completed" and e["challenge"] == "ETH-1H-BINARY"


def test_ownership(carol, dave, boss, evals):
    mine = all_ids(carol, "?limit=200")
    assert evals["dave"]["id"] not in mine
    assert {evals[k]["id"] for k in ("done", "failed", "other")} <= set(mine)
    theirs = all_ids(dave, "?limit=200")
    assert evals["dave"]["id"] in theirs
    assert not {evals[k]["id"] for k in ("done", "failed", "other")} & set(theirs)
    every = all_ids(boss, "?limit=200")
    assert {evals[k]["id"] for k in evals} <= set(every)


def test_cursor_pagination(carol, evals):
    first = listing(carol, "?limit=2")
    assert len(first["evaluations"]) == 2 and isinstance(first["next_cursor"], str)
    second = listing(carol, f"?limit=2&cursor={first['next_cursor']}")
    seen = [e["id"] for e in first["evaluations"] + second["evaluations"]]
    assert len(set(seen)) == len(seen)
    # walking every page gives the one-page answer, in the same order
    walked, cursor = [], None
    for _ in range(100):
        page = listing(carol, "?limit=1" + (f"&cursor={cursor}" if cursor else ""))
        walked += [e["id"] for e in page["evaluations"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert walked == all_ids(carol, "?limit=200")
    assert listing(carol, "?limit=200")["next_cursor"] is None


@pytest.mark.parametrize("query", ["?status=bogus", "?limit=0", "?limit=201", "?limit=x",
                                   "?challenge=NOPE", "?challenge=" + "A" * 80])
def test_list_validation(carol, query):
    r = carol.get(f"/api/evaluations{query}")
    assert r.status == 400, (query, r)
    body = r.json()
    assert body["code"] == "invalid_field" and body["error"] and body["detail"]


@pytest.mark.parametrize("cursor", ["abc", "0", "1", "", "null"])
def test_list_refuses_a_cursor_it_did_not_issue(carol, cursor):
    # cursors are opaque (issue 11 item 15): a number is no longer a position
    r = carol.get(f"/api/evaluations?cursor={cursor}")
    assert r.status == 400, (cursor, r)
    assert r.json()["code"] == "bad_cursor"


def test_list_auth(stack):
    r = stack.request("GET", "/api/evaluations", source=REMOTE)
    assert r.status == 401 and r.json()["code"] == "unauthorized", r
    r = stack.request("GET", "/api/evaluations", token="x" * 43, source=REMOTE)
    assert r.status == 401, r
    r = stack.request("DELETE", "/api/evaluations", source=REMOTE)
    assert r.status == 405 and "GET" in r.header("Allow"), r


# -- runs carry their strategy's name ------------------------------------------

@pytest.fixture(scope="module")
def named_run(carol):
    v = carol.submit(BUY_AND_HOLD + "# named\n", "named-for-list")
    run = carol.run(v["strategy_version_id"], dataset_version="v1")
    return v, run


def test_run_rows_carry_strategy_name(carol, boss, named_run):
    v, run = named_run
    rows = carol.get("/runs?limit=200").json()["runs"]
    row = next(r for r in rows if r["run_id"] == run["run_id"])
    assert row["strategy_name"] == "named-for-list" and row["strategy_id"] == v["strategy_id"]
    assert row["strategy_version_id"] == v["strategy_version_id"]
    assert row["owner"] == carol.get("/api/me").json()["user"]
    assert all(isinstance(r["strategy_name"], str) and r["strategy_name"] for r in rows)
    one = carol.get(f"/runs/{run['run_id']}").json()
    assert one["strategy_name"] == "named-for-list" and one["strategy_id"] == v["strategy_id"]
    # admins see the owner's name too
    assert boss.get(f"/runs/{run['run_id']}").json()["owner"] == row["owner"]


def test_runs_filter_by_strategy_id(carol, named_run):
    v, run = named_run
    rows = carol.get(f"/runs?strategy_id={v['strategy_id']}").json()["runs"]
    assert [r["run_id"] for r in rows] == [run["run_id"]]
    assert carol.get("/runs?strategy_id=0").status == 400
    assert carol.get("/runs?strategy_id=999999999").json()["runs"] == []


# -- sign-out ------------------------------------------------------------------

def logout(stack, headers=None, **kw):
    return stack.request("POST", "/api/logout", headers=headers or {}, **kw)


def expired_cookie(r):
    cookies = [c for c in r.header_all("Set-Cookie") if c.startswith("mantis_token=")]
    assert len(cookies) == 1, r.header_all("Set-Cookie")
    attrs = [a.strip().lower() for a in cookies[0].split(";")]
    return attrs


def test_logout_expires_the_cookie(stack, user_token):
    # sign in the browser way first: the query token sets the cookie
    r = stack.get(f"/api/me?token={user_token}", source=REMOTE, headers={"Sec-Fetch-Site": "same-origin"})
    assert r.status == 200
    set_attrs = [a.strip().lower() for a in r.header_all("Set-Cookie")[0].split(";")][1:]
    r = logout(stack, {"X-Requested-With": "XMLHttpRequest"}, cookie=user_token, source=REMOTE)
    assert r.status == 200 and r.json() == {"ok": True}, r
    attrs = expired_cookie(r)
    assert attrs[0] == "mantis_token="
    assert "max-age=0" in attrs
    # the same attributes as when it was set, apart from the lifetime
    assert sorted(a for a in attrs[1:] if not a.startswith("max-age")) == \
        sorted(a for a in set_attrs if not a.startswith("max-age"))
    assert {"httponly", "samesite=strict", "path=/"} <= set(attrs)


def test_logout_with_json_body_or_same_origin(stack, user_token):
    r = stack.request("POST", "/api/logout", json_body={}, cookie=user_token, source=REMOTE)
    assert r.status == 200 and "max-age=0" in expired_cookie(r), r
    origin = f"http://{stack.host}:{stack.port}"
    r = logout(stack, {"Origin": origin}, cookie=user_token, source=REMOTE)
    assert r.status == 200, r


def test_logout_works_with_a_revoked_or_unknown_cookie(stack):
    r = logout(stack, {"X-Requested-With": "XMLHttpRequest"}, cookie="x" * 43, source=REMOTE)
    assert r.status == 200 and "max-age=0" in expired_cookie(r), r
    r = logout(stack, {"X-Requested-With": "XMLHttpRequest"}, source=REMOTE)
    assert r.status == 200, r


@pytest.mark.parametrize("headers", [
    {"Origin": "http://evil.example", "Content-Type": "application/json"},
    {"Content-Type": "application/x-www-form-urlencoded"},
    {},
])
def test_logout_csrf(stack, user_token, headers):
    r = stack.request("POST", "/api/logout", headers=headers, body=b"a=1" if headers.get("Content-Type", "").startswith(
        "application/x") else None, cookie=user_token, source=REMOTE)
    assert r.status == 403 and r.json()["code"] == "csrf_rejected", r
    assert not [c for c in r.header_all("Set-Cookie") if c.startswith("mantis_token=")]


def test_logout_method(stack):
    r = stack.request("GET", "/api/logout", source=REMOTE)
    assert r.status == 405 and r.header("Allow") == "POST", r


# -- token labels ---------------------------------------------------------------

def test_token_label(carol):
    r = carol.post("/api/tokens", {"label": "laptop ünï"})
    assert r.status == 201, r
    made = r.json()
    assert made["label"] == "laptop ünï"
    plain = carol.post("/api/tokens", {})
    assert plain.status == 201 and plain.json()["label"] is None, plain
    listed = {t["id"]: t for t in carol.get("/api/tokens").json()["tokens"]}
    assert listed[made["id"]]["label"] == "laptop ünï"
    assert listed[plain.json()["id"]]["label"] is None
    # the labelled token works like any other
    assert carol.stack.get("/api/me", token=made["token"], source=REMOTE).status == 200
    for t in (made, plain.json()):
        assert carol.post(f"/api/tokens/{t['id']}/revoke").status == 200


@pytest.mark.parametrize("body,code", [
    ({"label": ""}, "invalid_field"),
    ({"label": "x" * 65}, "invalid_field"),
    ({"label": 7}, "invalid_field"),
    ({"label": "ok", "extra": 1}, "invalid_field"),
])
def test_token_label_validation(carol, body, code):
    before = len(carol.get("/api/tokens").json()["tokens"])
    r = carol.post("/api/tokens", body)
    assert r.status == 400 and r.json()["code"] == code, r
    assert len(carol.get("/api/tokens").json()["tokens"]) == before, "nothing was created"

"""Issue 11 item 15: no server path in what a user can read, and opaque
pagination cursors.

- Every main route (runs, run detail and trades, evaluations, datasets,
  agents, strategies and versions, challenges, defaults, leaderboard,
  data cache), as the owner and as an admin, answers without the stack's
  data directory (AGENTTEST_VAR, where datasets, artifacts and strategies
  live) or the checkout's path in it; the run shows its artifacts by route.
- Cursors of GET /runs and GET /api/evaluations walk every page (the same
  rows, in order, as one page), are not numbers, and never repeat; a
  number, garbage, an altered cursor, another user's cursor or another
  list's cursor is 400 bad_cursor with a message.
"""
import os
import secrets

import pytest

from helpers import assert_error
from runs_helpers import Api, BUY_AND_HOLD, EXAMPLES
from test_challenges import FAILING, submit, wait_done

REPO = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", ".."))


@pytest.fixture(scope="module")
def owner(stack):
    return Api(stack, stack.create_token(role="user"))


@pytest.fixture(scope="module")
def other(stack):
    return Api(stack, stack.create_token(role="user"))


@pytest.fixture(scope="module")
def admin(stack):
    return Api(stack, stack.create_token(role="admin"))


@pytest.fixture(scope="module")
def world(owner, admin):
    """owner: a strategy with 5 completed runs, one evaluation that failed
    (its error text comes from the sandbox) and 3 more queued or done; an
    agent (stopped at once). admin: a strategy registered by server path."""
    v = owner.submit(BUY_AND_HOLD + f"# paths {secrets.token_hex(4)}\n", f"paths-{secrets.token_hex(4)}")
    runs = [owner.run(v["strategy_version_id"], dataset_version="v1", wait=0)["run_id"] for _ in range(5)]
    runs = [owner.wait_run(r, timeout=120) for r in runs]
    assert all(r["status"] == "completed" for r in runs), runs
    evals = [wait_done(owner, submit(owner, FAILING)["id"]) for _ in range(4)]
    reg = admin.post("/strategies", {"strategy_path": str(EXAMPLES / "buy_and_hold.py")})
    assert reg.status == 200, reg
    agent = owner.post("/api/agents", {"challenge": "ETH-1H-BINARY", "goal": "paths", "min_iterations": 1,
                                       "max_iterations": 1})
    assert agent.status == 201, agent
    aid = agent.json()["id"]
    owner.post(f"/api/agents/{aid}/stop")
    yield {"version": v, "runs": runs, "evals": evals, "registered": reg.json(), "agent": aid}
    owner.post(f"/api/agents/{aid}/delete")


def server_paths(stack):
    """The directories whose names must not reach a client."""
    var = str(stack.var)
    return {var, os.path.realpath(var), REPO}


def routes(world):
    run = world["runs"][0]["run_id"]
    ev = world["evals"][0]["id"]
    vid = world["version"]["strategy_version_id"]
    sid = world["version"]["strategy_id"]
    return ["/runs", f"/runs/{run}", f"/runs/{run}/equity?format=json", "/api/evaluations",
            f"/api/evaluations/{ev}", "/datasets", "/datasets/v1", "/api/agents", f"/api/agents/{world['agent']}",
            "/strategies", f"/strategies/{sid}", f"/strategies/versions/{vid}", "/api/challenges",
            "/api/challenges/ETH-1H-BINARY/leaderboard", "/defaults", "/leaderboard?dataset_version=v1",
            "/api/data-cache", "/api/me", "/health", f"/api/agents/{world['agent']}/export",
            f"/api/agents/{world['agent']}/iterations", f"/api/agents/{world['agent']}/goal"]


def test_no_server_path_in_any_main_route(stack, world, owner, admin):
    paths = server_paths(stack)
    reg = world["registered"]["strategy_version_id"]
    checked = 0
    for api, extra in ((owner, []), (admin, [f"/strategies/versions/{reg}", "/api/users"])):
        for route in routes(world) + extra:
            r = api.get(route)
            assert r.status == 200, (route, r)
            text = r.body.decode()
            for p in paths:
                assert p not in text, (route, p, text[:300])
            checked += 1
    assert checked >= 2 * len(routes(world))
    # the failed evaluations' error texts came from the sandbox and the runner
    assert all(e["status"] == "failed" for e in world["evals"])


def test_run_shows_its_artifacts_by_route(world, owner):
    run = owner.get(f"/runs/{world['runs'][0]['run_id']}").json()
    assert "artifacts_dir" not in run
    assert run["artifacts"] == {"equity": f"/runs/{run['run_id']}/equity", "trades": None}
    assert owner.get(run["artifacts"]["equity"]).status == 200
    queued = owner.run(world["version"]["strategy_version_id"], dataset_version="v1", wait=0)
    if queued["status"] != "completed":
        assert queued["artifacts"] is None
    assert world["registered"]["strategy_file"] == "buy_and_hold.py"


def walk(api, path, key, limit):
    """Every page of a list; returns (ids, cursors)."""
    ids, cursors, cursor = [], [], None
    for _ in range(200):
        sep = "&" if "?" in path else "?"
        r = api.get(f"{path}{sep}limit={limit}" + (f"&cursor={cursor}" if cursor else ""))
        assert r.status == 200, r
        page = r.json()
        ids += [x["run_id" if key == "runs" else "id"] for x in page[key]]
        cursor = page["next_cursor"]
        if cursor is None:
            return ids, cursors
        cursors.append(cursor)
    raise AssertionError("the pages never ended")


@pytest.mark.parametrize("path,key", [("/runs", "runs"), ("/api/evaluations", "evaluations")])
def test_cursor_round_trip_over_several_pages(world, owner, path, key):
    ids, cursors = walk(owner, path, key, 1)
    assert len(cursors) >= 3           # 5 runs or 4 evaluations in pages of 1
    whole = owner.get(f"{path}?limit=200").json()
    assert whole["next_cursor"] is None
    assert ids == [x["run_id" if key == "runs" else "id"] for x in whole[key]]
    assert len(set(ids)) == len(ids)
    for c in cursors:
        # opaque: URL-safe text, no number, no position a client can read
        assert isinstance(c, str) and len(c) == 66 and not c.isdigit()
        assert set(c) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
    # a fresh cursor each time, yet the same page
    again = owner.get(f"{path}?limit=2").json()
    first = owner.get(f"{path}?limit=2").json()
    assert again["next_cursor"] != first["next_cursor"]
    a = owner.get(f"{path}?limit=2&cursor={again['next_cursor']}").json()[key]
    b = owner.get(f"{path}?limit=2&cursor={first['next_cursor']}").json()[key]
    assert a == b


def altered(cursor, at):
    return cursor[:at] + ("A" if cursor[at] != "A" else "B") + cursor[at + 1:]


@pytest.mark.parametrize("path,key", [("/runs", "runs"), ("/api/evaluations", "evaluations")])
def test_bad_tampered_and_foreign_cursors(world, owner, other, admin, path, key):
    cursor = owner.get(f"{path}?limit=1").json()["next_cursor"]
    assert cursor
    bad = ["0", "1", "100", "-1", "abc", "null", "", cursor[:-1], cursor + "A", cursor + "=",
           cursor.replace(cursor[5], "+", 1), altered(cursor, 0), altered(cursor, 30), altered(cursor, 65)]
    for c in bad:
        e = assert_error(owner.get(f"{path}?cursor={c}"), 400, "bad_cursor")
        assert "cursor" in e["error"], (c, e)
    # the owner's cursor is not another user's (nor an admin's) page
    for api in (other, admin):
        assert_error(api.get(f"{path}?cursor={cursor}"), 400, "bad_cursor")
    # nor a cursor of another list
    elsewhere = "/api/evaluations" if path == "/runs" else "/runs"
    assert_error(owner.get(f"{elsewhere}?cursor={cursor}"), 400, "bad_cursor")
    # the untouched cursor still works
    assert owner.get(f"{path}?cursor={cursor}").status == 200

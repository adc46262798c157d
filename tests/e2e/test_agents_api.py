"""The /api/agents routes against the real stack (issue 15, docs/agents.md):
validation with machine-readable errors, owner-only access (others get 404,
no token 401), the list's strong ETag and 304, the MANTIS_MAX_AGENTS 429,
controls, messages, goal edits with If-Match, export/import with every
name validated. The runner of this stack has no agent slots free of other
work, so these tests do not wait for iterations (test_agents_loop.py does)."""
import json

import pytest

from helpers import assert_error, stack_sql

GOAL = "find a momentum signal on ETH"


@pytest.fixture(scope="module")
def astack(stack_factory):
    # no runner slots: iterations stay queued, so the API state is stable
    return stack_factory("agents-api", MANTIS_MAX_AGENTS=3, AGENTTEST_RUNNER_SLOTS=0)


@pytest.fixture(scope="module")
def owner(astack):
    return astack.create_token(role="user")


@pytest.fixture(scope="module")
def other(astack):
    return astack.create_token(role="user")


@pytest.fixture(scope="module")
def admin(astack):
    return astack.create_token(role="admin")


def post(s, path, tok, body=None, **kw):
    return s.request("POST", path, token=tok, json_body=body if body is not None else {}, **kw)


def create(s, tok, **fields):
    body = {"challenge": "ETH-1H-BINARY", "goal": GOAL, "min_iterations": 1, "max_iterations": 2}
    body.update(fields)
    r = post(s, "/api/agents", tok, body)
    assert r.status == 201, r
    out = r.json()
    assert out["status"] == "starting" and len(out["id"]) == 36
    return out["id"]


def delete_all(s, tok):
    for a in s.get("/api/agents", token=tok).json():
        post(s, f"/api/agents/{a['id']}/delete", tok)


@pytest.mark.parametrize("body,code,field", [
    ({"goal": GOAL}, "missing_field", "challenge"),
    ({"challenge": "ETH-1H-BINARY"}, "missing_field", "goal"),
    ({"challenge": "NOPE", "goal": GOAL}, "invalid_field", "NOPE"),
    ({"challenge": "ETH-1H-BINARY", "goal": GOAL, "min_iterations": 0}, "invalid_field", "min_iterations"),
    ({"challenge": "ETH-1H-BINARY", "goal": GOAL, "max_iterations": 501}, "invalid_field", "max_iterations"),
    ({"challenge": "ETH-1H-BINARY", "goal": GOAL, "days_back": 59}, "invalid_field", "days_back"),
    ({"challenge": "ETH-1H-BINARY", "goal": GOAL, "days_back": 366}, "invalid_field", "days_back"),
    ({"challenge": "ETH-1H-BINARY", "goal": GOAL, "driver": "gpt"}, "invalid_field", "driver"),
    ({"challenge": "ETH-1H-BINARY", "goal": GOAL, "model": "gpt"}, "invalid_field", "model"),
    ({"challenge": "ETH-1H-BINARY", "goal": "x" * 10001}, "invalid_field", "goal"),
    ({"challenge": "ETH-1H-BINARY", "goal": GOAL, "min_iterations": 9, "max_iterations": 3},
     "invalid_field", "min_iterations"),
    ({"challenge": "ETH-1H-BINARY", "goal": GOAL, "colour": 1}, "invalid_field", "colour"),
])
def test_create_validation(astack, owner, body, code, field):
    e = assert_error(post(astack, "/api/agents", owner, body), 400, code)
    assert field in e["error"], e


def test_create_list_get_and_etag(astack, owner, other, admin):
    delete_all(astack, owner)
    aid = create(astack, owner)
    d = astack.get(f"/api/agents/{aid}", token=owner)
    assert d.status == 200, d
    d = d.json()
    assert d["id"] == aid and d["status"] == "starting" and d["paused"] is False
    assert d["config"]["challenge"] == "ETH-1H-BINARY" and d["config"]["goal"] == GOAL
    assert d["config"]["driver"] == "builtin" and d["config"]["days_back"] == 60
    assert d["iterations"] == [] and d["best_iteration"] is None
    assert d["activity"]["iteration"] == 1 and d["activity"]["state"] == "queued"
    assert d["budget"]["iterations_left"] == 2
    lst = astack.get("/api/agents", token=owner)
    assert lst.status == 200 and [a["id"] for a in lst.json()] == [aid]
    etag = lst.header("ETag")
    assert etag and etag.startswith('"') and len(etag) == 18
    again = astack.get("/api/agents", token=owner, headers={"If-None-Match": etag})
    assert again.status == 304 and again.body == b""
    # others see nothing of it; admins see it
    assert astack.get("/api/agents", token=other).json() == []
    assert_error(astack.get(f"/api/agents/{aid}", token=other), 404, "not_found")
    assert astack.get(f"/api/agents/{aid}", token=admin).status == 200
    assert aid in [a["id"] for a in astack.get("/api/agents", token=admin).json()]
    full = astack.get("/api/agents?full=1", token=owner).json()
    assert full[0]["id"] == aid and "iterations" in full[0]
    assert_error(astack.get("/api/agents?full=2", token=owner), 400, "invalid_field")
    assert_error(astack.get(f"/api/agents/{aid}"[:-1], token=owner), 404, "not_found")
    # the list changes: the ETag too
    aid2 = create(astack, owner)
    changed = astack.get("/api/agents", token=owner, headers={"If-None-Match": etag})
    assert changed.status == 200 and changed.header("ETag") != etag
    assert [a["id"] for a in changed.json()] == [aid2, aid]
    delete_all(astack, owner)


def test_max_agents_429(astack, owner, other):
    delete_all(astack, owner)
    delete_all(astack, other)
    ids = [create(astack, owner) for _ in range(3)]
    r = post(astack, "/api/agents", other, {"challenge": "ETH-1H-BINARY", "goal": GOAL})
    e = assert_error(r, 429, "rate_limited")
    assert "max 3 concurrent agents" in e["error"] and r.header("Retry-After")
    post(astack, f"/api/agents/{ids[0]}/stop", owner)
    create(astack, other)
    delete_all(astack, owner)
    delete_all(astack, other)


def test_no_token_401(stack_factory):
    """Every agent route without a credential is 401 and changes nothing, on an
    agent that exists (so the 401 is not a 404 in disguise)."""
    from conftest import strong_token
    s = stack_factory("agents-secured", MANTIS_AUTH_TOKEN=strong_token(), AGENTTEST_RUNNER_SLOTS=0)
    assert_error(s.get("/api/agents", source="127.0.0.2"), 401, "unauthorized")
    assert_error(s.request("POST", "/api/agents", json_body={"challenge": "ETH-1H-BINARY", "goal": GOAL},
                           source="127.0.0.2"), 401, "unauthorized")
    assert_error(s.request("POST", "/api/agents/import", json_body=bundle(), source="127.0.0.2"), 401,
                 "unauthorized")
    tok = s.create_token(role="user")
    aid = create(s, tok)
    for method, tail in ROUTES + [("POST", "/ask")]:
        r = s.request(method, f"/api/agents/{aid}{tail}", source="127.0.0.2",
                      json_body=BODIES.get(tail, {}) if method == "POST" else None)
        assert_error(r, 401, "unauthorized")
    d = s.get(f"/api/agents/{aid}", token=tok, source="127.0.0.2").json()
    assert d["status"] == "starting" and d["paused"] is False and d["goal_version"] == 1, d
    assert s.get(f"/api/agents/{aid}/chat", token=tok, source="127.0.0.2").json()["messages"] == []
    assert [a["id"] for a in s.get("/api/agents", token=tok, source="127.0.0.2").json()] == [aid]


def test_pause_resume_stop_between_iterations(astack, owner):
    delete_all(astack, owner)
    aid = create(astack, owner)
    r = post(astack, f"/api/agents/{aid}/pause", owner)
    assert r.status == 200 and r.json() == {"paused": True}
    d = astack.get(f"/api/agents/{aid}", token=owner).json()
    assert d["status"] == "paused" and d["paused"] is True and d["activity"] is None
    assert_error(post(astack, f"/api/agents/{aid}/resume", owner, {"budget": {"iterations": 0}}), 400,
                 "invalid_field")
    assert_error(post(astack, f"/api/agents/{aid}/resume", owner, {"budget": {"cents": 5}}), 400, "invalid_field")
    for bad in ({"tokens": 0}, {"usd": 0}, {"requests": -1}, {"tokens": "many"}):   # the LLM budgets (issue 16)
        assert_error(post(astack, f"/api/agents/{aid}/resume", owner, {"budget": bad}), 400, "invalid_field")
    r = post(astack, f"/api/agents/{aid}/resume", owner,
             {"budget": {"iterations": 7, "wall_s": 3600, "tokens": 5000, "usd": 1.5, "requests": 40}})
    assert r.status == 200 and r.json() == {"paused": False}
    d = astack.get(f"/api/agents/{aid}", token=owner).json()
    assert d["status"] == "starting" and d["paused"] is False and d["activity"]["state"] == "queued"
    assert d["config"]["max_iterations"] == 7 and d["budget"]["wall_s"] == 3600
    b = d["budget"]
    assert (b["tokens"], b["tokens_used"], b["tokens_left"], b["requests"], b["requests_left"]) == (5000, 0, 5000, 40, 40)
    assert b["usd"] == 1.5 and b["usd_used"] == 0 and b["usd_left"] == 1.5
    assert post(astack, f"/api/agents/{aid}/stop", owner).json() == {"status": "stopped"}
    d = astack.get(f"/api/agents/{aid}", token=owner).json()
    assert d["status"] == "stopped" and d["activity"] is None
    assert post(astack, f"/api/agents/{aid}/stop", owner).json() == {"status": "stopped"}
    assert_error(post(astack, f"/api/agents/{aid}/pause", owner), 409, "conflict")
    assert_error(post(astack, f"/api/agents/{aid}/resume", owner), 409, "conflict")
    assert post(astack, f"/api/agents/{aid}/delete", owner).json() == {"status": "deleted"}
    assert_error(astack.get(f"/api/agents/{aid}", token=owner), 404, "not_found")
    assert aid not in [a["id"] for a in astack.get("/api/agents", token=owner).json()]


def test_an_agent_with_no_iteration_left_is_crashed_and_resume_requeues(astack, owner):
    """Status crashed (the original's set): an agent that should be running
    but has no iteration queued or running, e.g. its queued iteration was
    failed by the queue. Resume queues the next iteration again."""
    aid = create(astack, owner)
    stack_sql(astack, f"UPDATE agent_iterations SET status = 'failed' WHERE agent_id = '{aid}'")
    d = astack.get(f"/api/agents/{aid}", token=owner).json()
    assert d["status"] == "crashed" and d["activity"] is None, d
    assert [a["status"] for a in astack.get("/api/agents", token=owner).json() if a["id"] == aid] == ["crashed"]
    assert post(astack, f"/api/agents/{aid}/resume", owner).json() == {"paused": False}
    d = astack.get(f"/api/agents/{aid}", token=owner).json()
    assert d["status"] == "starting" and d["activity"]["state"] == "queued" and d["activity"]["iteration"] == 1, d
    post(astack, f"/api/agents/{aid}/delete", owner)


def test_messages_are_kept_and_inbox_overwrite_supersedes(astack, owner):
    aid = create(astack, owner)
    assert_error(post(astack, f"/api/agents/{aid}/message", owner, {"text": "   "}), 400, "invalid_field")
    assert_error(post(astack, f"/api/agents/{aid}/message", owner, {}), 400, "missing_field")
    assert_error(post(astack, f"/api/agents/{aid}/message", owner, {"text": "x" * 10001}), 400, "invalid_field")
    for t in ("favour momentum", "exclude volume"):
        assert post(astack, f"/api/agents/{aid}/message", owner, {"text": t}).json() == {"status": "sent"}
    inbox = astack.get(f"/api/agents/{aid}/inbox", token=owner).json()["content"]
    assert "Operator: favour momentum" in inbox and "Operator: exclude volume" in inbox
    assert post(astack, f"/api/agents/{aid}/inbox", owner, {"content": "only rsi"}).json() == {"status": "ok"}
    assert astack.get(f"/api/agents/{aid}/inbox", token=owner).json()["content"] == "only rsi"
    chat = astack.get(f"/api/agents/{aid}/chat", token=owner).json()
    assert [m["text"] for m in chat["messages"]] == ["favour momentum", "exclude volume", "only rsi"]
    assert [m["superseded"] for m in chat["messages"]] == [True, True, False] and chat["paused"] is False
    assert_error(post(astack, f"/api/agents/{aid}/inbox", owner, {"content": "y" * 50001}), 400, "invalid_field")
    post(astack, f"/api/agents/{aid}/delete", owner)


def test_goal_edits_with_if_match(astack, owner):
    aid = create(astack, owner)
    g = astack.get(f"/api/agents/{aid}/goal", token=owner)
    assert g.json() == {"content": GOAL, "version": 1} and g.header("ETag") == '"g1"'
    r = astack.request("POST", f"/api/agents/{aid}/goal", token=owner, json_body={"goal": "try rsi"},
                       headers={"If-Match": '"g1"'})
    assert r.status == 200 and r.json() == {"status": "updated", "version": 2} and r.header("ETag") == '"g2"'
    stale = astack.request("POST", f"/api/agents/{aid}/goal", token=owner, json_body={"goal": "lost?"},
                           headers={"If-Match": '"g1"'})
    e = assert_error(stale, 412, "precondition_failed")
    assert "version 2" in e["error"]
    assert astack.get(f"/api/agents/{aid}/goal", token=owner).json()["content"] == "try rsi"
    assert post(astack, f"/api/agents/{aid}/goal", owner, {"goal": "no precondition"}).json()["version"] == 3
    assert_error(post(astack, f"/api/agents/{aid}/goal", owner, {"goal": ""}), 400, "invalid_field")
    d = astack.get(f"/api/agents/{aid}", token=owner).json()
    assert d["config"]["goal"] == "no precondition" and d["goal_version"] == 3
    post(astack, f"/api/agents/{aid}/delete", owner)


ROUTES = [
    ("GET", ""), ("GET", "/inbox"), ("GET", "/chat"), ("GET", "/goal"), ("GET", "/notes"), ("GET", "/state"),
    ("GET", "/stdout"), ("GET", "/iterations"), ("GET", "/iterations/1/features"),
    ("GET", "/iterations/1/metrics"), ("GET", "/code/1"), ("GET", "/export"), ("GET", "/events?wait=1"),
    ("POST", "/message"), ("POST", "/inbox"), ("POST", "/goal"), ("POST", "/clone"), ("POST", "/pause"),
    ("POST", "/resume"), ("POST", "/stop"), ("POST", "/delete"),
]
BODIES = {"/message": {"text": "hi"}, "/inbox": {"content": "hi"}, "/goal": {"goal": "g"}}


def test_every_route_is_the_owners_or_an_admins(astack, owner, other, admin):
    aid = create(astack, owner)
    for method, tail in ROUTES:
        path = f"/api/agents/{aid}{tail}"
        r = astack.request(method, path, token=other, json_body=BODIES.get(tail, {}) if method == "POST" else None)
        assert_error(r, 404, "not_found")
    # the owner's and an admin's view of the same routes (no iteration yet: those are 404)
    for tok in (owner, admin):
        for method, tail in ROUTES:
            if tail in ("/stop", "/delete", "/clone"):
                continue
            path = f"/api/agents/{aid}{tail}"
            r = astack.request(method, path, token=tok, json_body=BODIES.get(tail, {}) if method == "POST" else None)
            want = 404 if tail.startswith(("/iterations/", "/code/")) else 200
            assert r.status == want, (tok == admin, method, tail, r)
    r = post(astack, f"/api/agents/{aid}/clone", admin, {"goal": "admin's copy"})
    assert r.status == 201 and r.json()["cloned_from"] == aid
    post(astack, f"/api/agents/{r.json()['id']}/delete", admin)
    assert post(astack, f"/api/agents/{aid}/stop", admin).json() == {"status": "stopped"}
    assert post(astack, f"/api/agents/{aid}/delete", admin).json() == {"status": "deleted"}


def test_each_routes_shape_and_ranges(astack, owner):
    """The shapes of the read routes of a new agent and the 400s of each
    route's ranges (docs/agents.md, the route table), each naming its field."""
    aid = create(astack, owner)
    base = f"/api/agents/{aid}"
    out = astack.get(f"{base}/stdout", token=owner).json()
    assert set(out) == {"content", "lines", "showing"} and out["content"] == "" and out["showing"] == 0, out
    assert astack.get(f"{base}/stdout?tail=5000", token=owner).status == 200
    for bad in ("0", "5001", "-1", "x", "1.5"):
        e = assert_error(astack.get(f"{base}/stdout?tail={bad}", token=owner), 400, "invalid_field")
        assert "tail" in e["error"], e
    for bad in ("0", "31", "x"):
        e = assert_error(astack.get(f"{base}/events?wait={bad}", token=owner), 400, "invalid_field")
        assert "wait" in e["error"], e
    assert astack.get(f"{base}/iterations", token=owner).json() == {"iterations": [], "count": 0}
    assert astack.get(f"{base}/notes", token=owner).json() == {"content": ""}
    assert astack.get(f"{base}/state", token=owner).json() == {"content": ""}
    assert astack.get(f"{base}/inbox", token=owner).json() == {"content": ""}
    assert astack.get(f"{base}/chat", token=owner).json() == {"messages": [], "paused": False}
    for tail in ("/iterations/0/metrics", "/iterations/x/features", "/code/0", "/code/abc", "/iterations/1/metrics"):
        assert_error(astack.get(base + tail, token=owner), 404, "not_found")
    for body, field in (({"max_iterations": 0}, "max_iterations"), ({"max_iterations": 501}, "max_iterations"),
                        ({"iteration": 0}, "iteration"), ({"iteration": "1"}, "iteration"),
                        ({"goal": ""}, "goal"), ({"colour": 1}, "colour")):
        e = assert_error(post(astack, f"{base}/clone", owner, body), 400, "invalid_field")
        assert field in e["error"], (body, e)
    assert_error(post(astack, f"{base}/inbox", owner, {}), 400, "missing_field")
    assert_error(post(astack, f"{base}/goal", owner, {}), 400, "missing_field")
    assert_error(post(astack, f"{base}/goal", owner, {"goal": "x" * 10001}), 400, "invalid_field")
    post(astack, f"{base}/delete", owner)


def test_events_stream(astack, owner, other):
    aid = create(astack, owner)
    r = astack.get(f"/api/agents/{aid}/events?wait=1", token=owner)
    assert r.status == 200 and r.content_type.startswith("text/event-stream"), r
    text = r.body.decode()
    assert text.startswith("retry: 1000\n\n") and "event: status\n" in text
    ids = [l[4:] for l in text.splitlines() if l.startswith("id: ")]
    data = [json.loads(l[6:]) for l in text.splitlines() if l.startswith("data: ")]
    assert data[0] == {"status": "starting"}
    # ids are opaque cursors (the global agent_events.seq is not shown)
    assert all(len(i) == 66 and not i.isdigit() for i in ids), ids
    post(astack, f"/api/agents/{aid}/pause", owner)
    r = astack.get(f"/api/agents/{aid}/events?wait=5", token=owner, headers={"Last-Event-ID": ids[-1]})
    text = r.body.decode()
    assert "event: status\n" in text and "event: paused\n" in text and '"status":"starting"' not in text, text
    last = [l[4:] for l in text.splitlines() if l.startswith("id: ")][-1]
    quiet = astack.get(f"/api/agents/{aid}/events?wait=1&after={last}", token=owner).body.decode()
    assert "id: " not in quiet and ": no new events" in quiet
    assert_error(astack.get(f"/api/agents/{aid}/events?wait=31", token=owner), 400, "invalid_field")
    # a number (the old raw seq), garbage, an altered id, or another agent's id
    altered = last[:30] + ("A" if last[30] != "A" else "B") + last[31:]
    for bad in ("0", "12", "x", altered):
        assert_error(astack.get(f"/api/agents/{aid}/events?wait=1&after={bad}", token=owner), 400, "bad_cursor")
        assert_error(astack.get(f"/api/agents/{aid}/events?wait=1", token=owner, headers={"Last-Event-ID": bad}),
                     400, "bad_cursor")
    aid2 = create(astack, owner)
    assert_error(astack.get(f"/api/agents/{aid2}/events?wait=1&after={last}", token=owner), 400, "bad_cursor")
    # another user cannot read the stream at all
    assert astack.get(f"/api/agents/{aid}/events?wait=1", token=other).status == 404
    post(astack, f"/api/agents/{aid}/delete", owner)
    post(astack, f"/api/agents/{aid2}/delete", owner)


def test_event_streams_count_as_waits(astack, owner):
    """Issue 11 item 6: a quiet stream holds a worker, so it is a wait under
    RUNS_MAX_WAITS (here 1: half of 2 workers) and RUNS_MAX_WAITS_PER_USER;
    over a cap it is answered at once and the pool stays responsive."""
    import concurrent.futures
    import time
    aid = create(astack, owner)
    text = astack.get(f"/api/agents/{aid}/events?wait=1", token=owner).body.decode()
    last = [l[4:] for l in text.splitlines() if l.startswith("id: ")][-1]
    waiters = astack.var / "run" / "runners"
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as ex:
        held = ex.submit(astack.get, f"/api/agents/{aid}/events?wait=6&after={last}", token=owner, timeout=20)
        deadline = time.monotonic() + 5
        while not list(waiters.glob("wait-*.sock")) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert list(waiters.glob("wait-*.sock")), "the first stream never registered its wait"
        t0 = time.monotonic()
        r = astack.get(f"/api/agents/{aid}/events?wait=6&after={last}", token=owner)
        body = r.body.decode()
        assert r.status == 200 and ": the pool's waits are all taken: answered at once" in body, body
        assert "id: " not in body and time.monotonic() - t0 < 3.0
        t0 = time.monotonic()
        assert astack.get("/health", timeout=10).status == 200 and time.monotonic() - t0 < 3.0
        r = held.result(timeout=20)
        assert r.status == 200 and ": no new events" in r.body.decode() and "all taken" not in r.body.decode()
    assert not list(waiters.glob("wait-*.sock"))   # the wait unregistered
    post(astack, f"/api/agents/{aid}/delete", owner)


def bundle(code=None, iterations=None, **cfg):
    config = {"challenge": "ETH-1H-BINARY", "goal": GOAL, "min_iterations": 1, "max_iterations": 3}
    config.update(cfg)
    return {"format": "mantis-agent-export-v1", "exported_at": "2026-01-01T00:00:00Z",
            "agent": {"config": config, "iterations": iterations or []}, "code": code or {}}


def test_export_import_round_trip_and_no_traversal(astack, owner, other):
    aid = create(astack, owner)
    ex = astack.get(f"/api/agents/{aid}/export", token=owner)
    assert ex.status == 200 and f'agent_{aid}.json' in ex.header("Content-Disposition")
    b = ex.json()
    assert b["format"] == "mantis-agent-export-v1" and b["agent"]["config"]["goal"] == GOAL and b["code"] == {}
    imp = post(astack, "/api/agents/import", owner, b)
    assert imp.status == 201 and imp.json()["imported"] is True and imp.json()["iterations"] == 0
    src = "class TechFeaturizer:\n    pass\n"
    its = [{"iteration": 1, "metrics": {"mean_auc": 0.6}, "holdout_metrics": {"mean_auc": 0.99},
            "analysis": {"feature_report": [{"name": "ret_60"}]}, "has_error": False}]
    imp = post(astack, "/api/agents/import", owner, bundle({"1": src}, its))
    assert imp.status == 201 and imp.json()["iterations"] == 1
    nid = imp.json()["id"]
    d = astack.get(f"/api/agents/{nid}", token=owner).json()
    assert d["status"] == "completed" and d["imported"] is True and d["activity"] is None
    it = d["iterations"][0]
    # a bundle's holdout figure is not this server's sealed score
    assert it["metrics"] == {"mean_auc": 0.6} and it["holdout_metrics"] is None and d["best_iteration"] is None
    assert astack.get(f"/api/agents/{nid}/code/1", token=owner).body.decode() == src
    feats = astack.get(f"/api/agents/{nid}/iterations/1/features", token=owner).json()
    assert feats["feature_report"] == [{"name": "ret_60"}]
    assert_error(astack.get(f"/api/agents/{nid}", token=other), 404, "not_found")
    for key in ("../../etc/passwd", "/etc/passwd", "1/../2", "01", "-1", "1.py", "", "501", " 1", "1e2"):
        e = assert_error(post(astack, "/api/agents/import", owner, bundle({key: src})), 400, "invalid_field")
        assert "code" in e["error"], e
    assert_error(post(astack, "/api/agents/import", owner, bundle({"1": 5})), 400, "invalid_field")
    assert_error(post(astack, "/api/agents/import", owner, bundle(iterations=[{"iteration": "../x"}])), 400,
                 "invalid_field")
    assert_error(post(astack, "/api/agents/import", owner, bundle(iterations=[{"iteration": 1}, {"iteration": 1}])),
                 400, "invalid_field")
    wrong = bundle()
    wrong["format"] = "mantis-agent-export-v2"
    assert_error(post(astack, "/api/agents/import", owner, wrong), 400, "invalid_field")
    assert_error(post(astack, "/api/agents/import", owner, bundle(challenge="NOPE")), 400, "invalid_field")
    assert_error(post(astack, "/api/agents/import", owner, bundle(days_back=10)), 400, "invalid_field")
    big = bundle({"1": "x" * (2 << 20)})
    assert astack.request("POST", "/api/agents/import", token=owner, json_body=big).status == 413
    # clone with a fork of the imported iteration: its code is the clone's first inbox
    c = post(astack, f"/api/agents/{nid}/clone", owner, {"iteration": 1, "max_iterations": 4})
    assert c.status == 201 and c.json()["fork_iteration"] == 1 and c.json()["cloned_from"] == nid
    cid = c.json()["id"]
    assert src in astack.get(f"/api/agents/{cid}/inbox", token=owner).json()["content"]
    assert astack.get(f"/api/agents/{cid}", token=owner).json()["config"]["max_iterations"] == 4
    assert_error(post(astack, f"/api/agents/{nid}/clone", owner, {"iteration": 7}), 404, "not_found")
    for x in (aid, nid, cid):
        post(astack, f"/api/agents/{x}/delete", owner)


def test_clone_and_import_keep_best_by(astack, owner):
    """best_by (how the best iteration is judged, docs/forward-scores.md) survives a
    clone, an export and an import; a clone may set it; a bad value is refused with
    400 invalid_field naming the field, and nothing is created."""
    def best_by(x):
        return astack.get(f"/api/agents/{x}", token=owner).json()["config"]["best_by"]

    aid = create(astack, owner, best_by="forward")
    assert best_by(aid) == "forward"
    c = post(astack, f"/api/agents/{aid}/clone", owner, {"goal": "the same, judged forward"})
    assert c.status == 201, c
    cid = c.json()["id"]
    assert best_by(cid) == "forward"
    post(astack, f"/api/agents/{cid}/delete", owner)
    c = post(astack, f"/api/agents/{aid}/clone", owner, {"best_by": "holdout"})
    assert c.status == 201, c
    hid = c.json()["id"]
    assert best_by(hid) == "holdout"
    post(astack, f"/api/agents/{hid}/delete", owner)
    for bad in ("FORWARD", "sharpe", "", 1, True, ["forward"]):
        e = assert_error(post(astack, f"/api/agents/{aid}/clone", owner, {"best_by": bad}), 400, "invalid_field")
        assert "best_by" in e["error"] and "forward" in e["error"], e
    ex = astack.get(f"/api/agents/{aid}/export", token=owner)
    assert ex.status == 200 and ex.json()["agent"]["config"]["best_by"] == "forward", ex
    imp = post(astack, "/api/agents/import", owner, ex.json())
    assert imp.status == 201, imp
    assert best_by(imp.json()["id"]) == "forward"
    ids = [aid, imp.json()["id"]]
    for given, want in (("holdout", "holdout"), (None, "holdout")):
        imp = post(astack, "/api/agents/import", owner, bundle(best_by=given))
        assert imp.status == 201, imp
        assert best_by(imp.json()["id"]) == want
        ids.append(imp.json()["id"])
    no_key = bundle()
    assert "best_by" not in no_key["agent"]["config"]
    imp = post(astack, "/api/agents/import", owner, no_key)
    assert imp.status == 201 and best_by(imp.json()["id"]) == "holdout", imp
    ids.append(imp.json()["id"])
    count = len(astack.get("/api/agents", token=owner).json())
    for bad in ("FORWARD", "sharpe", "", 1, False, {"by": "forward"}):
        e = assert_error(post(astack, "/api/agents/import", owner, bundle(best_by=bad)), 400, "invalid_field")
        assert "agent.config.best_by" in e["error"], e
    assert len(astack.get("/api/agents", token=owner).json()) == count   # nothing was created
    for x in ids:
        post(astack, f"/api/agents/{x}/delete", owner)


def test_pause_and_pending_messages_survive_a_full_stack_restart(astack, owner):
    aid = create(astack, owner)
    post(astack, f"/api/agents/{aid}/pause", owner)
    post(astack, f"/api/agents/{aid}/message", owner, {"text": "after the restart, try rsi"})
    r = astack.stack_sh("stop")
    assert r.returncode == 0, r.stderr
    r = astack.stack_sh("start")
    assert r.returncode == 0, r.stdout + r.stderr
    astack.wait_health()
    d = astack.get(f"/api/agents/{aid}", token=owner).json()
    assert d["status"] == "paused" and d["paused"] is True and d["activity"] is None
    assert "try rsi" in astack.get(f"/api/agents/{aid}/inbox", token=owner).json()["content"]
    assert post(astack, f"/api/agents/{aid}/resume", owner).json() == {"paused": False}
    assert astack.get(f"/api/agents/{aid}", token=owner).json()["activity"]["state"] == "queued"
    post(astack, f"/api/agents/{aid}/delete", owner)


def test_pause_is_resumed_after_mantis_pause_timeout(stack_factory):
    """A paused agent gets its next iteration queued by the runner once its
    pause is older than MANTIS_PAUSE_TIMEOUT (10 s here), with a status event
    saying why; before that it stays paused."""
    import time
    s = stack_factory("agents-pause-timeout", MANTIS_PAUSE_TIMEOUT=10, AGENTTEST_RUNNER_SLOTS=0)
    tok = s.create_token(role="user")
    aid = create(s, tok)
    t0 = time.monotonic()
    assert post(s, f"/api/agents/{aid}/pause", tok).json() == {"paused": True}
    time.sleep(3)
    d = s.get(f"/api/agents/{aid}", token=tok).json()
    assert d["status"] == "paused" and d["activity"] is None, d
    while time.monotonic() - t0 < 40:
        d = s.get(f"/api/agents/{aid}", token=tok).json()
        if not d["paused"]:
            break
        time.sleep(0.5)
    waited = time.monotonic() - t0
    assert d["paused"] is False and d["activity"] == dict(d["activity"], iteration=1, state="queued"), d
    assert waited >= 9, waited
    text = s.get(f"/api/agents/{aid}/events?wait=1", token=tok).body.decode()
    assert "resumed after MANTIS_PAUSE_TIMEOUT" in text, text

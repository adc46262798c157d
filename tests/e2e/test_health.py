"""GET /health through nginx, response headers, request ids, static files."""

import re

import pytest

from helpers import assert_error, assert_security_headers

REMOTE = "127.0.0.2"
PUBLIC_KEYS = {"ok", "status", "db", "version"}
ADMIN_KEYS = PUBLIC_KEYS | {"agents_running", "max_agents"}


def test_health_through_nginx(stack):
    r = stack.get("/health", source=REMOTE)
    assert r.status == 200, r
    assert r.content_type == "application/json"
    body = r.json()
    # Exactly these keys for anybody: no counts or internals that help an attacker.
    assert set(body) == PUBLIC_KEYS, body
    assert body["ok"] is True and body["status"] == "healthy" and body["db"] == "ok"
    assert isinstance(body["version"], str) and body["version"]
    assert (r.header("Server") or "") == "nginx", "nginx must not reveal its version"


def test_health_is_public_for_remote_clients(stack):
    r = stack.get("/health", source="127.0.0.2")
    assert r.status == 200, r
    assert r.json()["ok"] is True


def test_health_loopback_caller_sees_agent_counts(stack):
    r = stack.get("/health")  # 127.0.0.1 without a credential: the local admin
    assert r.status == 200, r
    body = r.json()
    assert set(body) == ADMIN_KEYS, body
    assert body["max_agents"] == 5  # MANTIS_MAX_AGENTS default
    assert isinstance(body["agents_running"], int) and body["agents_running"] >= 0


@pytest.mark.parametrize("role,keys", [("admin", ADMIN_KEYS), ("user", PUBLIC_KEYS)])
def test_health_counts_by_role_for_remote_callers(stack, role, keys):
    r = stack.get("/health", token=stack.create_token(role=role), source=REMOTE)
    assert r.status == 200, r
    assert set(r.json()) == keys, r.json()


@pytest.mark.parametrize("token", ["not-a-token", "at_" + "A" * 43])
def test_health_bad_credential_is_anonymous_not_401(stack, token):
    for source in (REMOTE, "127.0.0.1"):  # a wrong token is not upgraded by loopback
        r = stack.get("/health", token=token, source=source)
        assert r.status == 200, r
        assert set(r.json()) == PUBLIC_KEYS, r.json()


def test_health_secured_stack_loopback_and_shared_token(secured):
    """With MANTIS_AUTH_TOKEN set, loopback still sees the counts (as
    /metrics); a remote caller needs the admin token."""
    assert set(secured.get("/health", source="127.0.0.1").json()) == ADMIN_KEYS
    assert set(secured.get("/health", source="127.0.0.6").json()) == PUBLIC_KEYS
    assert set(secured.get("/health", token=secured.token, source="127.0.0.6").json()) == ADMIN_KEYS


def test_health_agents_running_counts_starting_and_running_agents(stack_factory):
    """agents_running is the count POST /api/agents admits against. With no
    runner slots an agent stays queued (status starting) until stopped."""
    s = stack_factory("health-agents", MANTIS_MAX_AGENTS=2, AGENTTEST_RUNNER_SLOTS=0)
    tok = s.create_token(role="user")

    def counts():
        body = s.get("/health").json()
        return body["agents_running"], body["max_agents"]

    assert counts() == (0, 2)
    r = s.request("POST", "/api/agents", token=tok, source=REMOTE, json_body={
        "challenge": "ETH-1H-BINARY", "goal": "count me", "min_iterations": 1, "max_iterations": 1})
    assert r.status == 201, r
    aid = r.json()["id"]
    assert counts() == (1, 2)
    r = s.request("POST", f"/api/agents/{aid}/stop", token=tok, source=REMOTE, json_body={})
    assert r.status == 200, r
    assert counts() == (0, 2)


def test_api_security_headers(stack):
    assert_security_headers(stack.get("/health"))


def test_request_id_echoed(stack):
    r = stack.get("/health", headers={"X-Request-Id": "e2e-test.42"})
    assert r.header("X-Request-Id") == "e2e-test.42"


def test_request_id_generated_when_absent(stack):
    a = stack.get("/health").header("X-Request-Id")
    b = stack.get("/health").header("X-Request-Id")
    assert a and b and a != b
    assert re.fullmatch(r"[A-Za-z0-9._:-]{8,128}", a), a


def test_request_id_unsafe_value_replaced(stack):
    evil = "x" * 300
    r = stack.get("/health", headers={"X-Request-Id": evil})
    rid = r.header("X-Request-Id")
    assert rid and rid != evil and len(rid) <= 128


def test_request_id_on_nginx_errors(stack):
    r = stack.get("/no-such-file.txt", headers={"X-Request-Id": "e2e-static-404"})
    assert_error(r, 404, "not_found")
    assert r.header("X-Request-Id") == "e2e-static-404"


def test_static_index_served_with_strict_headers(stack):
    r = stack.get("/")
    assert r.status == 200, r
    assert r.content_type == "text/html"
    assert_security_headers(r)
    csp = r.header("Content-Security-Policy")
    assert "default-src 'self'" in csp and "object-src 'none'" in csp


def test_static_dotfiles_hidden(stack):
    assert_error(stack.get("/.git/config"), 404, "not_found")

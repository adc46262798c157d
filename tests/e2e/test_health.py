"""GET /health through nginx, response headers, request ids, static files."""

import re

from helpers import assert_error, assert_security_headers


def test_health_through_nginx(stack):
    r = stack.get("/health")
    assert r.status == 200, r
    assert r.content_type == "application/json"
    body = r.json()
    # Exactly these keys: no counts or internals that help an attacker.
    assert set(body) == {"ok", "status", "db", "version"}, body
    assert body["ok"] is True and body["status"] == "healthy" and body["db"] == "ok"
    assert isinstance(body["version"], str) and body["version"]
    assert (r.header("Server") or "") == "nginx", "nginx must not reveal its version"


def test_health_is_public_for_remote_clients(stack):
    r = stack.get("/health", source="127.0.0.2")
    assert r.status == 200, r
    assert r.json()["ok"] is True


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

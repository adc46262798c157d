"""The authentication matrix (MANTIS rules over API tokens), roles, CSRF.

/metrics is the admin-or-loopback endpoint, /runs needs any user, POST
/runs is the state-changing request used for the CSRF rule. Clients at
127.0.0.2 and up are "remote": nginx passes the TCP peer address, and only
127.0.0.1 / ::1 count as loopback.
"""

import json
import secrets

import pytest

from helpers import assert_error

REMOTE = "127.0.0.2"


def metrics_ok(r):
    assert r.status == 200, r
    assert r.content_type == "text/plain", r.header("Content-Type")
    assert b"# TYPE " in r.body


# -- no token configured (the default stack) ------------------------------

def test_loopback_without_credential_is_local_admin(stack):
    metrics_ok(stack.get("/metrics"))


def test_remote_without_credential_is_401(stack):
    assert_error(stack.get("/metrics", source=REMOTE), 401, "unauthorized")
    assert_error(stack.get("/runs", source=REMOTE), 401, "unauthorized")


def test_wrong_bearer_is_401_even_from_loopback(stack):
    bogus = secrets.token_urlsafe(32)
    assert_error(stack.get("/metrics", token=bogus), 401, "unauthorized")
    assert_error(stack.get("/metrics", token=bogus, source=REMOTE), 401, "unauthorized")


def test_wrong_cookie_and_query_token_are_401(stack):
    bogus = secrets.token_urlsafe(32)
    assert_error(stack.get("/metrics", cookie=bogus, source=REMOTE), 401, "unauthorized")
    r = stack.get(f"/metrics?token={bogus}", source=REMOTE)
    assert_error(r, 401, "unauthorized")
    assert not any("mantis_token" in c for c in r.header_all("Set-Cookie"))


def test_admin_bearer_from_remote(stack, admin_token):
    metrics_ok(stack.get("/metrics", token=admin_token, source=REMOTE))


def test_admin_cookie_from_remote(stack, admin_token):
    metrics_ok(stack.get("/metrics", cookie=admin_token, source=REMOTE))


def test_query_token_sets_strict_httponly_cookie(stack, admin_token):
    r = stack.get(f"/metrics?token={admin_token}", source=REMOTE, headers={"Sec-Fetch-Site": "same-origin"})
    metrics_ok(r)
    cookies = [c for c in r.header_all("Set-Cookie") if c.startswith("mantis_token=")]
    assert len(cookies) == 1, r.header_all("Set-Cookie")
    attrs = [a.strip().lower() for a in cookies[0].split(";")]
    assert attrs[0] == f"mantis_token={admin_token}".lower()
    assert "httponly" in attrs
    assert "samesite=strict" in attrs
    # The cookie then works on its own.
    metrics_ok(stack.get("/metrics", cookie=admin_token, source=REMOTE))


def test_user_role_cannot_read_metrics(stack, user_token):
    assert_error(stack.get("/metrics", token=user_token, source=REMOTE), 403, "forbidden")
    # ... a user credential is judged as that user even from loopback
    assert_error(stack.get("/metrics", token=user_token), 403, "forbidden")


def test_user_role_reaches_user_endpoints(stack, user_token):
    r = stack.get("/runs", token=user_token, source=REMOTE)
    assert r.status == 200, r


def test_revoked_token_is_401(stack):
    user = f"revoke-{secrets.token_hex(4)}"
    token = stack.create_token(user, role="admin")
    metrics_ok(stack.get("/metrics", token=token, source=REMOTE))
    rows = [json.loads(line) for line in stack.cli("token", "list").stdout.splitlines() if line.strip()]
    ids = [row["id"] for row in rows if row["user"] == user]
    assert len(ids) == 1, rows
    stack.cli("token", "revoke", str(ids[0]))
    assert_error(stack.get("/metrics", token=token, source=REMOTE), 401, "unauthorized")


def test_health_needs_no_credential_even_with_a_bad_one(stack):
    r = stack.get("/health", token="not-a-token", source=REMOTE)
    assert r.status == 200, r


# -- CSRF on state-changing requests ---------------------------------------

def post_runs(stack, headers, **kw):
    return stack.request("POST", "/runs", body=b"{}", headers=headers, **kw)


def test_csrf_cookie_with_foreign_origin_rejected(stack, user_token):
    r = post_runs(stack, {"Content-Type": "application/json", "Origin": "http://evil.example"},
                  cookie=user_token, source=REMOTE)
    assert_error(r, 403, "csrf_rejected")


def test_csrf_cookie_form_post_without_origin_rejected(stack, user_token):
    r = post_runs(stack, {"Content-Type": "application/x-www-form-urlencoded"},
                  cookie=user_token, source=REMOTE)
    assert_error(r, 403, "csrf_rejected")


def test_csrf_loopback_rule_form_post_rejected(stack):
    r = post_runs(stack, {"Content-Type": "text/plain"})
    assert_error(r, 403, "csrf_rejected")


def test_csrf_same_origin_passes(stack, user_token):
    origin = f"http://{stack.host}:{stack.port}"
    r = post_runs(stack, {"Content-Type": "application/json", "Origin": origin},
                  cookie=user_token, source=REMOTE)
    assert r.status != 403, r


def test_csrf_xhr_header_passes(stack):
    # Passes the CSRF rule, then fails on the content type (415), not 403.
    r = post_runs(stack, {"Content-Type": "text/plain", "X-Requested-With": "XMLHttpRequest"})
    assert_error(r, 415, "unsupported_media_type")


def test_csrf_does_not_apply_to_bearer(stack, user_token):
    r = post_runs(stack, {"Content-Type": "application/json", "Origin": "http://evil.example"},
                  token=user_token, source=REMOTE)
    assert r.status != 403, r


# -- MANTIS_AUTH_TOKEN configured ------------------------------------------

def test_auth_token_published_in_stack_env(secured):
    assert secured.token == secured.settings["MANTIS_AUTH_TOKEN"]
    assert (secured.var / "stack.env").stat().st_mode & 0o077 == 0


def test_auth_token_is_admin(secured):
    metrics_ok(secured.get("/metrics", token=secured.token, source="127.0.0.4"))
    metrics_ok(secured.get("/metrics", cookie=secured.token, source="127.0.0.4"))


def test_auth_token_configured_loopback_needs_credential(secured):
    assert_error(secured.get("/runs", source="127.0.0.1"), 401, "unauthorized")
    assert_error(secured.get("/metrics", source="127.0.0.4"), 401, "unauthorized")
    # /metrics stays readable from loopback (a local Prometheus scraper).
    metrics_ok(secured.get("/metrics", source="127.0.0.1"))


def test_auth_token_wrong_value_401(secured):
    wrong = secured.token[:-1] + ("A" if secured.token[-1] != "A" else "B")
    assert_error(secured.get("/metrics", token=wrong, source="127.0.0.4"), 401, "unauthorized")


def test_auth_token_db_tokens_still_work(secured):
    token = secured.create_token(role="user")
    assert secured.get("/runs", token=token, source="127.0.0.4").status == 200


@pytest.mark.parametrize("method,path,body", [
    ("POST", "/api/tokens", {}),            # the issue 11 attack: minted an admin token
    ("GET", "/api/me", None),
    ("GET", "/health", None),
    ("GET", "/", None),                      # static files too
])
def test_dns_rebinding_foreign_host_is_421(stack, method, path, body):
    """A domain rebound to 127.0.0.1 sends its own Host and a matching
    Origin; only the Host name tells it apart: 421 before any handler."""
    hdrs = {"Host": "evil.example:%d" % stack.port, "Origin": "http://evil.example:%d" % stack.port}
    r = stack.request(method, path, headers=hdrs, json_body=body)
    assert_error(r, 421, "misdirected_request")


def test_loopback_names_are_allowed_hosts(stack):
    for host in ("localhost", "127.0.0.1", "[::1]", "LocalHost."):
        r = stack.request("GET", "/api/me", headers={"Host": "%s:%d" % (host, stack.port)})
        assert r.status == 200, (host, r)
        assert r.json()["auth"] == "loopback", r


@pytest.mark.parametrize("headers", [
    {"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate", "Sec-Fetch-User": "?1"},  # a link elsewhere
    {"Sec-Fetch-Site": "same-site"},
    {},                                                            # no browser metadata
    {"Sec-Fetch-Site": "same-origin", "Cookie": "mantis_token=x"},  # a session exists
])
def test_login_csrf_query_token_sets_no_cookie(stack, user_token, headers):
    """Issue 11 item 13: a link to /api/me?token=<attacker's token> must not
    sign the victim in: ?token= answers its own request, but becomes the
    cookie only for a same-origin (or typed) request without a session."""
    r = stack.get(f"/api/me?token={user_token}", source=REMOTE, headers=headers)
    if "Cookie" in headers:
        assert r.status == 401, r      # the cookie is judged first, and it is wrong
    else:
        assert r.status == 200, r
    assert not [c for c in r.header_all("Set-Cookie") if c.startswith("mantis_token=")], r.header_all("Set-Cookie")

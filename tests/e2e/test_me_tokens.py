"""GET /api/me, the caller's API tokens over HTTP, and GET /api/users
(fcgi/handlers/me.c, tokens.c), against the real stack: identities and
roles, tokens shown once and working at once, revocation scoped to the
owner (admins: anyone), the active-token cap, and the auth/CSRF rules."""

import secrets


def test_me_loopback_is_local_admin(stack):
    r = stack.get("/api/me")
    assert r.status == 200, r
    me = r.json()
    assert me["user"] == "local" and me["role"] == "admin" and me["auth"] == "loopback"
    assert me["token_id"] is None and me["shared_token"] is False
    assert isinstance(me["user_id"], int) and me["user_id"] > 0


def test_me_with_a_user_token(stack, user_token):
    me = stack.get("/api/me", token=user_token).json()
    assert me["role"] == "user" and me["auth"] == "bearer"
    assert isinstance(me["token_id"], int) and me["shared_token"] is False
    # the same token as a cookie says so
    assert stack.get("/api/me", cookie=user_token).json()["auth"] == "cookie"


def test_me_rejects_a_wrong_token(stack):
    r = stack.get("/api/me", token="at_" + "x" * 43)
    assert r.status == 401 and r.json()["code"] == "unauthorized"


def test_create_token_shown_once_and_usable(stack):
    owner = stack.create_token(user=f"tok-{secrets.token_hex(3)}", role="user")
    r = stack.request("POST", "/api/tokens", token=owner, json_body={})
    assert r.status == 201, r
    new = r.json()
    assert new["token"].startswith("at_") and len(new["token"]) == 46
    assert new["token"].startswith(new["prefix"]) and new["role"] == "user"
    # the new token works at once and is the same user
    me = stack.get("/api/me", token=new["token"]).json()
    assert me["user"] == new["user"] and me["token_id"] == new["id"]
    # listed with its prefix only: the token text is never shown again
    listed = stack.get("/api/tokens", token=owner)
    assert listed.status == 200
    body = listed.body.decode()
    assert new["token"] not in body
    rows = {t["id"]: t for t in listed.json()["tokens"]}
    assert rows[new["id"]]["prefix"] == new["prefix"] and rows[new["id"]]["revoked_at"] is None
    assert rows[new["id"]]["current"] is False
    assert [t for t in rows.values() if t["current"]], "the caller's own token is marked current"


def test_create_token_takes_no_fields_and_no_body(stack, user_token):
    r = stack.request("POST", "/api/tokens", token=user_token, json_body={"role": "admin"})
    assert r.status == 400 and r.json()["code"] == "invalid_field"
    # no body at all is fine (BODY_JSON_OPTIONAL), with the CSRF header for bearer-less callers
    r = stack.request("POST", "/api/tokens", token=user_token)
    assert r.status == 201, r
    assert r.json()["role"] == "user", "a user cannot mint an admin token"


def test_revoke_own_token_then_it_fails(stack):
    owner = stack.create_token(user=f"rev-{secrets.token_hex(3)}", role="user")
    new = stack.request("POST", "/api/tokens", token=owner, json_body={}).json()
    r = stack.request("POST", f"/api/tokens/{new['id']}/revoke", token=owner, json_body={})
    assert r.status == 200 and r.json() == {"id": new["id"], "revoked": True}
    assert stack.get("/api/me", token=new["token"]).status == 401
    # a second revoke finds no active token
    r = stack.request("POST", f"/api/tokens/{new['id']}/revoke", token=owner, json_body={})
    assert r.status == 404 and r.json()["code"] == "not_found"
    listed = {t["id"]: t for t in stack.get("/api/tokens", token=owner).json()["tokens"]}
    assert listed[new["id"]]["revoked_at"] is not None


def test_user_cannot_revoke_someone_elses_token(stack):
    alice = stack.create_token(user=f"alice-{secrets.token_hex(3)}", role="user")
    mallory = stack.create_token(user=f"mallory-{secrets.token_hex(3)}", role="user")
    victim = stack.request("POST", "/api/tokens", token=alice, json_body={}).json()
    r = stack.request("POST", f"/api/tokens/{victim['id']}/revoke", token=mallory, json_body={})
    assert r.status == 404, "another user's token is neither revoked nor revealed"
    assert stack.get("/api/me", token=victim["token"]).status == 200
    ids = {t["id"] for t in stack.get("/api/tokens", token=mallory).json()["tokens"]}
    assert victim["id"] not in ids, "the list shows only the caller's tokens"


def test_admin_can_revoke_any_token(stack, admin_token):
    bob = stack.create_token(user=f"bob-{secrets.token_hex(3)}", role="user")
    me = stack.get("/api/me", token=bob).json()
    r = stack.request("POST", f"/api/tokens/{me['token_id']}/revoke", token=admin_token, json_body={})
    assert r.status == 200
    assert stack.get("/api/me", token=bob).status == 401


def test_revoke_bad_ids(stack, user_token):
    for bad in ("abc", "0", "-1", "99999999999999999999"):
        r = stack.request("POST", f"/api/tokens/{bad}/revoke", token=user_token, json_body={})
        assert r.status == 404, (bad, r)


def test_active_token_cap(stack):
    owner = stack.create_token(user=f"cap-{secrets.token_hex(3)}", role="user")
    statuses = [stack.request("POST", "/api/tokens", token=owner, json_body={}).status for _ in range(50)]
    # the CLI token counts: 49 more succeed, then the cap answers 409
    assert statuses.count(201) == 49 and statuses[-1] == 409, statuses


def test_users_list_is_admin_only(stack, admin_token, user_token):
    r = stack.get("/api/users", token=admin_token)
    assert r.status == 200
    users = {u["name"]: u for u in r.json()["users"]}
    assert users["local"]["role"] == "admin"
    assert all(set(u) == {"id", "name", "role", "created_at", "active_tokens", "last_used_at"} for u in users.values())
    assert stack.get("/api/users", token=user_token).status == 403
    assert stack.get("/api/users").status == 200, "loopback without a token is the local admin"


def test_cookie_caller_needs_csrf_proof(stack, user_token):
    # a cookie-authenticated POST without Origin, X-Requested-With or a JSON type is refused
    r = stack.request("POST", "/api/tokens", cookie=user_token, body=b"",
                      headers={"Content-Type": "text/plain"})
    assert r.status in (403, 415), r
    r = stack.request("POST", "/api/tokens", cookie=user_token,
                      headers={"X-Requested-With": "XMLHttpRequest"})
    assert r.status == 201, r


def test_secured_stack_needs_a_token(stack_factory):
    from conftest import strong_token
    tok = strong_token()
    s = stack_factory("secured-me", MANTIS_AUTH_TOKEN=tok)
    assert s.get("/api/me").status == 401
    me = s.get("/api/me", token=tok).json()
    assert me["user"] == "mantis-admin" and me["shared_token"] is True and me["role"] == "admin"
    # ?token= sets the cookie the dashboard relies on
    r = s.get(f"/api/me?token={tok}", headers={"Sec-Fetch-Site": "same-origin"})
    assert r.status == 200
    assert any(c.startswith("mantis_token=") and "HttpOnly" in c for c in r.header_all("Set-Cookie"))

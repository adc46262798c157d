"""Error answers are the JSON error body, whether the application or nginx
produces them: 400, 404, 405, 413 (both), 415, 429, 502."""

from helpers import assert_error, assert_security_headers

BODY_LIMIT = 1048576  # AGENTTEST_BODY_LIMIT default


def test_app_404_unknown_api_path(stack, admin_token):
    r = stack.get("/api/no-such-endpoint", token=admin_token)
    assert_error(r, 404, "not_found")
    assert_security_headers(r)
    assert_error(stack.get("/runs/1/no/such/thing", token=admin_token), 404, "not_found")


def test_nginx_404_static(stack):
    r = stack.get("/no/such/file.js")
    assert_error(r, 404, "not_found")
    assert_security_headers(r)


def test_app_405_with_allow(stack, admin_token):
    r = stack.request("DELETE", "/health", token=admin_token)
    assert_error(r, 405, "method_not_allowed")
    allow = [m.strip() for m in (r.header("Allow") or "").split(",")]
    assert "GET" in allow, r.header("Allow")


def test_nginx_405_static(stack):
    r = stack.request("POST", "/index.html", body=b"x", headers={"Content-Type": "text/plain"})
    assert_error(r, 405, "method_not_allowed")


def test_400_malformed_json(stack, user_token):
    r = stack.request("POST", "/runs", body=b'{"strategy": ', token=user_token,
                      headers={"Content-Type": "application/json"})
    body = assert_error(r, 400, "invalid_json")
    assert body["detail"]


def test_400_trailing_bytes(stack, user_token):
    r = stack.request("POST", "/runs", body=b'{} {}', token=user_token,
                      headers={"Content-Type": "application/json"})
    assert_error(r, 400, "invalid_json")


def test_400_too_deep(stack, user_token):
    deep = b"[" * 2000 + b"]" * 2000
    r = stack.request("POST", "/runs", body=deep, token=user_token,
                      headers={"Content-Type": "application/json"})
    assert_error(r, 400, "invalid_json")


def test_400_wrong_field_type_names_field(stack, user_token):
    r = stack.request("POST", "/runs", json_body={"strategy": ["not", "a", "name"]}, token=user_token)
    assert r.status == 400, r
    body = r.json()
    assert body["code"] in ("invalid_field", "missing_field"), body
    assert "strategy" in body["detail"] or "strategy" in body["error"], body


def test_415_non_json_content_type(stack, user_token):
    r = stack.request("POST", "/runs", body=b"{}", token=user_token,
                      headers={"Content-Type": "text/plain"})
    assert_error(r, 415, "unsupported_media_type")


def test_415_without_content_type_names_the_type(stack, user_token):
    # curl -X POST -d without -H: no Content-Type at all. Loopback (the CSRF
    # rule applies to it), a cookie and a token all get 415, not 403.
    for kw in ({}, {"token": user_token}, {"cookie": user_token}):
        r = stack.request("POST", "/runs", body=b"{}", **kw)
        assert_error(r, 415, "unsupported_media_type")
        assert "application/json" in r.json()["error"], r
    # a wrong type from a loopback caller is still the CSRF refusal
    assert_error(stack.request("POST", "/runs", body=b"{}", headers={"Content-Type": "text/plain"}),
                 403, "csrf_rejected")


def test_413_from_the_application(stack, user_token):
    # Over the application's limit, under nginx's cap (limit + 64 KiB).
    body = b'{"x":"' + b"a" * (BODY_LIMIT + 1000) + b'"}'
    r = stack.request("POST", "/runs", body=body, token=user_token,
                      headers={"Content-Type": "application/json"})
    assert_error(r, 413, "payload_too_large")
    # nginx let it through: the application's answer carries its CSP.
    assert "default-src 'none'" in (r.header("Content-Security-Policy") or ""), r.headers


def test_413_from_nginx(stack, user_token):
    body = b"a" * (BODY_LIMIT + 300_000)
    r = stack.request("POST", "/runs", body=body, token=user_token,
                      headers={"Content-Type": "application/json"})
    assert_error(r, 413, "payload_too_large")
    assert_security_headers(r)


def test_400_bad_request_line_from_nginx(stack):
    import socket
    with socket.create_connection((stack.host, stack.port), timeout=5) as s:
        s.sendall(b"GARBAGE\r\n\r\n")
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400"), head
    assert b"application/json" in head
    assert b'"code":"bad_request"' in body


# -- rate limit (nginx limit_req) -------------------------------------------

def test_429_rate_limited(secured):
    statuses, limited = [], None
    for _ in range(40):
        r = secured.get("/health", source="127.0.0.3")
        statuses.append(r.status)
        if r.status == 429:
            limited = r
    assert statuses[:21] == [200] * 21, statuses  # rate + burst of 20
    assert limited is not None, statuses
    assert_error(limited, 429, "rate_limited")
    assert limited.header("Retry-After") == "2"  # ceil(60 s / 30)
    assert_security_headers(limited)
    # Per address: another client is not affected.
    assert secured.get("/health", source="127.0.0.5").status == 200


def test_rate_limit_off_when_zero(stack):
    # The default test stack runs with MANTIS_RATE_LIMIT_RPM=0.
    assert all(stack.get("/health").status == 200 for _ in range(150))


def test_error_quotes_utf8_unchanged_and_invalid_bytes_as_fffd(stack, user_token):
    """An error quoting what the user sent (here the challenge name in the path)
    carries it as raw UTF-8, not as one escape per byte; bytes that are not
    UTF-8 arrive as U+FFFD, and the body is valid JSON in valid UTF-8."""
    r = stack.get("/api/challenges/caf%C3%A9-%F0%9F%93%88/leaderboard", token=user_token)
    body = assert_error(r, 404, "not_found")
    assert body["error"] == "no challenge 'caf\u00e9-\U0001f4c8'", body
    assert "caf\u00e9-\U0001f4c8".encode() in r.body and b"\\u00c3" not in r.body
    r = stack.get("/api/challenges/a%FFb%C3/leaderboard", token=user_token)
    body = assert_error(r, 404, "not_found")   # .json() decodes strict UTF-8
    assert body["error"] == "no challenge 'a\ufffdb\ufffd'", body

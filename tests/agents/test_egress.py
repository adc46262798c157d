"""The egress proxy of LLM agents (bin/agenttest-egress) against the
Anthropic stand-in: only the model API goes through, with the real key in
place of the agent's; SSE is streamed, not buffered; usage and cost are
metered exactly; budgets per agent and per owner and day refuse requests
before they reach the upstream (the owner's day reserved in a private
MariaDB, shared by proxies of one owner at once, settled to the real
usage); 429/529 pass back with Retry-After; the key is in no log, argv or
environment. Needs make build and mariadbd (no root)."""
import json
import os
import shutil
import subprocess
import time

import pytest

from egress_helpers import BIN, Egress, MariaDB, Standin, UnixHTTPConnection, request, sse_events, wait_for

KEY = "sk-ant-api03-RealKey_" + "x" * 40
DUMMY = "sk-ant-dummy-key-of-the-agent"
USAGE = {"input_tokens": 1200, "output_tokens": 345, "cache_creation_input_tokens": 100,
         "cache_read_input_tokens": 2000}
TEXT = {"content": [{"type": "text", "text": "hello from the model"}], "usage": USAGE}
SONNET = {"input": 3.0, "output": 15.0, "cache_write": 3.75, "cache_read": 0.30}


def cost(u, p=SONNET):
    return (u["input_tokens"] * p["input"] + u["output_tokens"] * p["output"] +
            u["cache_creation_input_tokens"] * p["cache_write"] + u["cache_read_input_tokens"] * p["cache_read"]) / 1e6


def body(stream=True, model="claude-sonnet-4-5"):
    return {"model": model, "max_tokens": 1000, "stream": stream,
            "messages": [{"role": "user", "content": "write iteration_1.py"}]}


@pytest.fixture
def stack(tmp_path):
    made = []

    def make(script, **limits):
        s = Standin(str(tmp_path), script)
        e = Egress(str(tmp_path), s.url, KEY, **limits)
        made.extend([e, s])
        return s, e
    yield make
    for x in made:
        x.close()


def test_stream_passes_through_with_the_real_key_and_is_metered(stack):
    tool = {"type": "tool_use", "name": "Bash", "input": {"command": "python3 iteration_1.py"}}
    s, e = stack({"turns": [{"content": [{"type": "text", "text": "Let me run it."}, tool], "usage": USAGE}]})
    st, hd, raw = request(e.sock, "POST", "/v1/messages?beta=true", body(),
                          {"x-api-key": DUMMY, "authorization": "Bearer " + DUMMY, "cookie": "a=b"})
    assert st == 200 and hd["content-type"].startswith("text/event-stream")
    ev = sse_events(raw)
    names = [n for n, _ in ev]
    assert names[0] == "message_start" and names[-1] == "message_stop" and "message_delta" in names
    deltas = [d["delta"] for n, d in ev if n == "content_block_delta"]
    assert "".join(d["text"] for d in deltas if d["type"] == "text_delta") == "Let me run it."
    assert json.loads("".join(d["partial_json"] for d in deltas if d["type"] == "input_json_delta")) == tool["input"]
    (req,) = s.requests()
    assert req["headers"]["x-api-key"] == KEY
    assert "authorization" not in req["headers"] and "cookie" not in req["headers"]
    assert req["path"] == "/v1/messages?beta=true" and req["body"]["model"] == "claude-sonnet-4-5"
    t = e.turn_usage()
    assert (t["input"], t["output"], t["cache_write"], t["cache_read"]) == (1200, 345, 100, 2000)
    assert t["tokens"] == 1200 + 345 + 100 + 2000 and t["requests"] == 1
    assert t["usd"] == pytest.approx(cost(USAGE), rel=1e-9)
    with open(e.agent_ledger) as f:
        assert json.load(f)["usd"] == pytest.approx(cost(USAGE), rel=1e-9)


def test_plain_json_and_count_tokens(stack):
    s, e = stack({"turns": [TEXT]})
    st, _, raw = request(e.sock, "POST", "/v1/messages", body(stream=False, model="claude-haiku-4-5"))
    assert st == 200 and json.loads(raw)["usage"]["output_tokens"] == 345
    st, _, raw = request(e.sock, "POST", "/v1/messages/count_tokens", body(stream=False))
    assert st == 200 and json.loads(raw)["input_tokens"] > 0
    t = e.turn_usage()
    haiku = {"input": 1.0, "output": 5.0, "cache_write": 1.25, "cache_read": 0.10}
    assert t["requests"] == 2 and t["output"] == 345 and t["usd"] == pytest.approx(cost(USAGE, haiku), rel=1e-9)
    assert [r["path"] for r in s.requests()] == ["/v1/messages", "/v1/messages/count_tokens"]


def test_stream_is_not_buffered(stack):
    """The stand-in waits 0.7 s before each block and the final delta; the
    first event must reach the client long before the last."""
    s, e = stack({"turns": [dict(TEXT, delay_s=0.7)]})
    c = UnixHTTPConnection(e.sock)
    c.request("POST", "/v1/messages", body=json.dumps(body()), headers={"content-type": "application/json"})
    r = c.getresponse()
    t0 = time.monotonic()
    first = None
    while True:
        line = r.fp.readline()
        if not line:
            break
        if b"message_start" in line and first is None:
            first = time.monotonic() - t0
        if b"message_stop" in line:
            last = time.monotonic() - t0
    c.close()
    assert first is not None and last - first >= 1.0, (first, last)


@pytest.mark.parametrize("method,path", [
    ("GET", "/v1/messages"), ("POST", "/v1/complete"), ("POST", "/v1/messages/batches"),
    ("POST", "/v1/files"), ("POST", "/v1/messages?beta=true&x=1"), ("DELETE", "/v1/messages"),
    ("POST", "/api/oauth/token"), ("POST", "//v1/messages"), ("POST", "/v1/messages/../files"),
    ("POST", "http://evil.example/v1/messages"),
])
def test_other_paths_and_methods_are_refused(stack, method, path):
    s, e = stack({"default": TEXT})
    st, hd, raw = request(e.sock, method, path, body() if method == "POST" else None)
    assert st == 403 and hd["content-type"] == "application/json"
    assert json.loads(raw) == {"type": "error", "error": {"type": "permission_error", "message": json.loads(raw)["error"]["message"]}}
    assert s.requests() == []


def test_bad_requests(stack):
    s, e = stack({"default": TEXT})
    st, _, raw = request(e.sock, "POST", "/v1/messages", b"not json")
    assert st == 400 and json.loads(raw)["error"]["type"] == "invalid_request_error"
    st, _, raw = request(e.sock, "POST", "/v1/messages", body(model="gpt-4o"))
    assert st == 403 and "price table" in json.loads(raw)["error"]["message"]
    st, _, _ = request(e.sock, "POST", "/v1/messages", None, {"content-length": str(64 << 20)})
    assert st == 413
    assert s.requests() == []


@pytest.mark.parametrize("status,etype", [(429, "rate_limit_error"), (529, "overloaded_error")])
def test_rate_limits_pass_back_with_retry_after_and_count(stack, status, etype):
    s, e = stack({"turns": [{"status": status, "retry_after": 7}, TEXT]}, agent_requests=2)
    st, hd, raw = request(e.sock, "POST", "/v1/messages", body())
    assert st == status and hd["retry-after"] == "7" and json.loads(raw)["error"]["type"] == etype
    assert request(e.sock, "POST", "/v1/messages", body())[0] == 200
    st, hd, raw = request(e.sock, "POST", "/v1/messages", body())
    assert st == 400 and hd["x-agenttest-budget"] == "exhausted"
    assert len(s.requests()) == 2 and e.turn_usage()["requests"] == 2 and e.turn_usage()["refused"] == 1


@pytest.mark.parametrize("limit,value,allowed", [
    ("agent_requests", 3, 3), ("agent_tokens", 7000, 2), ("agent_usd", "0.015", 2),
])
def test_agent_budgets_refuse_before_the_upstream(stack, limit, value, allowed):
    """Each request spends 3645 tokens and about $0.0098 (sonnet)."""
    s, e = stack({"default": TEXT}, **{limit: value})
    got = [request(e.sock, "POST", "/v1/messages", body()) for _ in range(allowed + 2)]
    assert [g[0] for g in got] == [200] * allowed + [400, 400]
    err = json.loads(got[-1][2])["error"]
    assert err["type"] == "invalid_request_error" and "budget exhausted" in err["message"]
    assert err["message"].split("(")[1].startswith("agent " + limit.split("_")[1])
    assert len(s.requests()) == allowed
    t = e.turn_usage()
    assert t["requests"] == allowed and t["refused"] == 2 and t["exhausted"].startswith("agent")


@pytest.fixture(scope="module")
def mariadb():
    if not shutil.which("mariadbd"):
        pytest.skip("mariadbd is not installed")
    m = MariaDB()
    yield m
    m.close()


def owner_day(db, owner):
    """(tokens, requests, usd) of the owner's llm_owner_day row of today, and the live reservations."""
    rows = db.sql("SELECT input + output + cache_write + cache_read, requests, usd FROM llm_owner_day "
                  "WHERE owner_id = %d AND day = UTC_DATE()" % owner)
    res = int(db.sql("SELECT COUNT(*) FROM llm_reservations WHERE owner_id = %d" % owner)[0][0])
    return (int(rows[0][0]), int(rows[0][1]), float(rows[0][2])) if rows else (0, 0, 0.0), res


def test_owner_daily_budget_spans_agents(tmp_path, mariadb):
    s = Standin(str(tmp_path), {"default": TEXT})
    led = str(tmp_path / "ledger")
    a = Egress(str(tmp_path), s.url, KEY, agent="a", owner=17, ledger_dir=led, db_url=mariadb.url, owner_day_requests=3)
    b = Egress(str(tmp_path), s.url, KEY, agent="b", owner=17, ledger_dir=led, db_url=mariadb.url, owner_day_requests=3)
    other = Egress(str(tmp_path), s.url, KEY, agent="c", owner=18, ledger_dir=led, db_url=mariadb.url,
                   owner_day_requests=3)
    try:
        assert [request(a.sock, "POST", "/v1/messages", body())[0] for _ in range(2)] == [200, 200]
        got = [request(b.sock, "POST", "/v1/messages", body()) for _ in range(2)]
        assert [g[0] for g in got] == [200, 400] and got[1][1]["x-agenttest-budget"] == "exhausted"
        assert "owner daily requests: 3 used + 0 in flight of 3" in json.loads(got[1][2])["error"]["message"]
        assert request(other.sock, "POST", "/v1/messages", body())[0] == 200
        (tokens, requests, usd), res = owner_day(mariadb, 17)
        assert (tokens, requests, res) == (3 * 3645, 3, 0) and usd == pytest.approx(3 * cost(USAGE), rel=1e-9)
        t = b.turn_usage()
        assert t["requests"] == 1 and t["refused"] == 1 and t["exhausted"].startswith("owner daily requests")
        assert owner_day(mariadb, 18)[0][1] == 1 and len(s.requests()) == 4
    finally:
        for x in (a, b, other, s):
            x.close()


def test_owner_daily_tokens_reserve_the_estimate_and_settle_the_usage(tmp_path, mariadb):
    """Each request reserves max_tokens (1000) plus its body's bytes / 4 and
    settles to the 3645 tokens it really spent: two fit under 8000 (0 + est,
    then 3645 + est), the third does not (7290 + est > 8000)."""
    s = Standin(str(tmp_path), {"default": TEXT})
    e = Egress(str(tmp_path), s.url, KEY, owner=19, db_url=mariadb.url, owner_day_tokens=8000)
    try:
        got = [request(e.sock, "POST", "/v1/messages", body()) for _ in range(3)]
        assert [g[0] for g in got] == [200, 200, 400]
        est = 1000 + len(json.dumps(body()).encode()) // 4
        msg = json.loads(got[2][2])["error"]["message"]
        assert "owner daily tokens: 7290 used + 0 reserved + %d asked of 8000" % est in msg, msg
        assert owner_day(mariadb, 19) == ((7290, 2, pytest.approx(2 * cost(USAGE), rel=1e-9)), 0)
        assert len(s.requests()) == 2
    finally:
        e.close()
        s.close()


def test_owner_daily_budget_holds_for_two_proxies_at_once(tmp_path, mariadb):
    """Two proxies of one owner (two hosts' turns), 10 slow requests at
    once: the owner's 4 requests of the day go to exactly 4 of them."""
    s = Standin(str(tmp_path), {"default": dict(TEXT, delay_s=0.2)})
    px = [Egress(str(tmp_path), s.url, KEY, agent=n, owner=20, db_url=mariadb.url, owner_day_requests=4)
          for n in ("h1", "h2")]
    try:
        procs = [subprocess.Popen(["/usr/bin/python3", "-c", (
            "import sys; sys.path.insert(0, %r); from egress_helpers import request;"
            "print(request(%r, 'POST', '/v1/messages', %s)[0])") % (os.path.dirname(__file__), px[i % 2].sock,
                                                                      json.dumps(body()).replace("true", "True"))],
            stdout=subprocess.PIPE, text=True) for i in range(10)]
        codes = sorted(int(p.communicate()[0]) for p in procs)
        assert codes == [200] * 4 + [400] * 6 and len(s.requests()) == 4
        assert owner_day(mariadb, 20)[0][:2] == (4 * 3645, 4) and owner_day(mariadb, 20)[1] == 0
    finally:
        for x in px + [s]:
            x.close()


def test_owner_daily_budget_needs_the_database(tmp_path):
    r, w = os.pipe()
    os.write(w, KEY.encode() + b"\n")
    os.close(w)
    p = subprocess.run([os.path.join(BIN, "agenttest-egress"), "--listen=%s/s" % tmp_path, "--key-fd=%d" % r,
                        "--agent=a", "--owner=1", "--agent-ledger=%s/a" % tmp_path, "--turn-usage=%s/t" % tmp_path,
                        "--owner-day-usd=5"], pass_fds=(r,), capture_output=True, text=True, timeout=10)
    os.close(r)
    assert p.returncode == 2 and json.loads(p.stderr)["code"] == "invalid_config"
    assert "database URL" in json.loads(p.stderr)["error"]


def test_concurrent_requests_respect_the_request_budget(stack):
    s, e = stack({"default": dict(TEXT, delay_s=0.2)}, agent_requests=4)
    procs = [subprocess.Popen(["/usr/bin/python3", "-c", (
        "import sys; sys.path.insert(0, %r); from egress_helpers import request; import json;"
        "print(request(%r, 'POST', '/v1/messages', %s)[0])") % (os.path.dirname(__file__), e.sock,
                                                                  json.dumps(body()).replace("true", "True"))],
        stdout=subprocess.PIPE, text=True) for _ in range(8)]
    codes = sorted(int(p.communicate()[0]) for p in procs)
    assert codes == [200] * 4 + [400] * 4 and len(s.requests()) == 4


def test_key_is_in_no_log_argv_or_environment(stack):
    s, e = stack({"turns": [TEXT, {"status": 429, "retry_after": 1}]})
    request(e.sock, "POST", "/v1/messages", body(), {"x-api-key": DUMMY})
    request(e.sock, "POST", "/v1/messages", body())
    request(e.sock, "GET", "/v1/models", None)
    assert wait_for(lambda: len(e.log_lines()) == 3)   # a refusal is logged after its reply
    lines = e.log_lines()
    # each child logs when its request is over (after settling its owner-day reservation), so the 429's
    # line may follow the 403 refusal of the next request: the order of the lines is not the requests'
    assert sorted(ln["status"] for ln in lines) == [200, 403, 429] and all(ln["event"] == "egress_request" for ln in lines)
    ok = next(ln for ln in lines if ln["status"] == 200)
    assert ok["input_tokens"] == 1200 and ok["usd_micro"] == round(cost(USAGE) * 1e6)
    with open(e.stderr_path) as f:
        assert KEY not in f.read()
    for name in ("cmdline", "environ"):
        with open("/proc/%d/%s" % (e.p.pid, name), "rb") as f:
            assert KEY.encode() not in f.read()
    for fn in os.listdir(e.ledger_dir):
        with open(os.path.join(e.ledger_dir, fn), "rb") as f:
            assert KEY.encode() not in f.read()


def test_upstream_down_is_a_502(tmp_path):
    e = Egress(str(tmp_path), "http://127.0.0.1:9", KEY)
    try:
        st, _, raw = request(e.sock, "POST", "/v1/messages", body())
        assert st == 502 and json.loads(raw)["error"]["type"] == "api_error"
    finally:
        e.close()


@pytest.mark.parametrize("url", ["http://api.anthropic.com", "ftp://127.0.0.1:1", "https://"])
def test_plain_http_upstream_only_on_loopback(tmp_path, url):
    r, w = os.pipe()
    os.write(w, KEY.encode())
    os.close(w)
    p = subprocess.run([os.path.join(BIN, "agenttest-egress"), "--listen=%s/s" % tmp_path, "--key-fd=%d" % r,
                        "--agent=a", "--owner=1", "--agent-ledger=%s/a" % tmp_path,
                        "--turn-usage=%s/t" % tmp_path, "--upstream=" + url], pass_fds=(r,), capture_output=True,
                       text=True, timeout=10)
    os.close(r)
    assert p.returncode == 2 and json.loads(p.stderr)["code"] == "invalid_config"


def test_price_table_file(tmp_path, monkeypatch):
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"claude-sonnet-4": {"input": 1, "output": 2, "cache_write": 3, "cache_read": 4}}))
    monkeypatch.setenv("AGENTTEST_LLM_PRICES", str(prices))
    s = Standin(str(tmp_path), {"default": TEXT})
    e = Egress(str(tmp_path), s.url, KEY)
    try:
        assert request(e.sock, "POST", "/v1/messages", body())[0] == 200
        assert request(e.sock, "POST", "/v1/messages", body(model="claude-haiku-4-5"))[0] == 403
        p = {"input": 1, "output": 2, "cache_write": 3, "cache_read": 4}
        assert e.turn_usage()["usd"] == pytest.approx(cost(USAGE, p), rel=1e-9)
    finally:
        e.close()
        s.close()


def test_a_stopping_proxy_leaves_a_newer_proxys_socket(tmp_path):
    """The retried attempt of a killed turn starts a new proxy on the same
    socket path while the old one may still be exiting: the old one removes
    its socket only if it is still its own, so the new one stays reachable."""
    s = Standin(str(tmp_path), {"default": TEXT})
    old = Egress(str(tmp_path), s.url, KEY)
    new = None
    try:
        new = Egress(str(tmp_path), s.url, KEY)   # binds the same path anew
        assert new.sock == old.sock
        old.close()
        old = None
        assert os.path.exists(new.sock)
        st, _, raw = request(new.sock, "POST", "/v1/messages", body(stream=False))
        assert st == 200 and json.loads(raw)["content"][0]["text"] == "hello from the model"
        new.close()
        new = None
        assert not os.path.exists(os.path.join(str(tmp_path), "egress-a1.sock"))   # its own it removes
    finally:
        for e in (old, new):
            if e:
                e.close()
        s.close()

"""POST /api/agents/{id}/ask on a real stack (issue 16), against the
Anthropic stand-in (tests/lib/anthropic_standin.py) as
AGENTTEST_ANTHROPIC_UPSTREAM. Proves: bad bodies and other users get clear
JSON errors and nothing goes upstream; with no key 409 no_api_key; an ask
reaches the upstream with the owner's real key, the agent's model and its
context, the answer and the question land in the chat, and the tokens, cost
and request are metered into the agent's budget (equal to the stand-in's
usage, priced by the built-in table); upstream 429 and 529 come back as 429
and 503 with the upstream's Retry-After, another error as 502
upstream_error, and each counts as a request; at most 3
asks of one owner run at once (the 4th: 429 with Retry-After); an agent
whose request budget is used up gets 402 budget_exhausted and nothing is
sent; every ask is on the owner's day, settled from its reservation, and a
live reservation of another host's request that holds the rest of the day
refuses an ask until it expires; the model is told the tails of STATE.md and
notes.txt, a history line per iteration and the dev metrics and analysis of
the last 3 completed iterations, never a holdout number.

The agents are claude-code agents created before any key is set: their
first iteration fails at once with no_api_key (status error), so no agent
turn runs and the stand-in sees only the asks. No root and no CLI needed."""
import json
import threading
import time

import pytest

from helpers import AnthropicStandin, stack_sql as sql

KEY = "sk-ant-api03-AskOwnerKey_" + "k" * 44 + "W7"
GOAL = "find the 1-hour momentum effect on ETH"
ANSWER = "The agent has not scored an iteration yet: it stopped for want of an API key."
USAGE = {"input_tokens": 1234, "output_tokens": 56, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
SMALL = {"input_tokens": 10, "output_tokens": 2}
# Taken in order by the tests below (asks have no tools and do not stream).
# The stand-in holds the 3 concurrent asks until the test creates RELEASE
# (after the 4th was refused), whatever the machine's speed.
RELEASE = "release-the-slow-asks"
TURNS = [
    {"content": [{"type": "text", "text": ANSWER}], "usage": USAGE},
    {"status": 429, "retry_after": 7, "message": "slow down"},
    {"status": 529, "retry_after": 3, "message": "overloaded"},
    {"status": 500, "message": "upstream broke: " + "x" * 400},
    {"content": [{"type": "text", "text": "slow 1"}], "usage": SMALL, "hold_until": RELEASE},
    {"content": [{"type": "text", "text": "slow 2"}], "usage": SMALL, "hold_until": RELEASE},
    {"content": [{"type": "text", "text": "slow 3"}], "usage": SMALL, "hold_until": RELEASE},
    {"content": [{"type": "text", "text": "budget ask"}], "usage": SMALL},
    {"content": [{"type": "text", "text": "room again"}], "usage": SMALL},
    {"content": [{"type": "text", "text": "context seen"}], "usage": SMALL},
]


def price(u):   # claude-sonnet-4-5 list prices per token (common/llm_prices.c)
    return (u.get("input_tokens", 0) * 3 + u.get("output_tokens", 0) * 15 +
            u.get("cache_creation_input_tokens", 0) * 3.75 + u.get("cache_read_input_tokens", 0) * 0.3) / 1e6


@pytest.fixture(scope="module")
def standin(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("ask-standin")
    release = tmp / RELEASE
    turns = [dict(t, hold_until=str(release)) if "hold_until" in t else t for t in TURNS]
    with AnthropicStandin(tmp, {"turns": turns}) as s:
        s.release = release
        yield s


@pytest.fixture(scope="module")
def astack(stack_factory, standin):
    s = stack_factory.fresh("agents-ask", AGENTTEST_SYNTH_DAYS=60, AGENTTEST_RUNNER_SLOTS=1, AGENTTEST_WORKERS=6,
                            AGENTTEST_ANTHROPIC_UPSTREAM=standin.url)
    s.start()
    yield s
    s.stop()


@pytest.fixture(scope="module")
def tok(astack):
    return astack.create_token(role="user")


def post(s, path, tok, body=None, timeout=10):
    return s.request("POST", path, token=tok, json_body=body if body is not None else {}, timeout=timeout)


def ask(s, tok, aid, text, timeout=60):
    return post(s, f"/api/agents/{aid}/ask", tok, {"text": text}, timeout=timeout)


def detail(s, tok, aid):
    r = s.get(f"/api/agents/{aid}", token=tok)
    assert r.status == 200, r
    return r.json()


def wait_status(s, tok, aid, status, timeout=300):
    deadline = time.monotonic() + timeout
    d = None
    while time.monotonic() < deadline:
        d = detail(s, tok, aid)
        if d["status"] == status:
            return d
        time.sleep(0.5)
    raise AssertionError(f"agent {aid}: not {status} in {timeout}s: {json.dumps(d)[:2000]}\n{s.log_tail(40)}")


@pytest.fixture(scope="module")
def agents(astack, tok):
    """Two claude-code agents, created with no key anywhere: both end in
    status error without a turn. The second has a budget of 1 request."""
    ids = []
    for extra in ({}, {"budget": {"requests": 1}}):
        body = {"challenge": "ETH-1H-BINARY", "goal": GOAL, "min_iterations": 1, "max_iterations": 1,
                "driver": "claude-code", "model": "sonnet", **extra}
        r = post(astack, "/api/agents", tok, body)
        assert r.status == 201, r
        ids.append(r.json()["id"])
    for aid in ids:
        wait_status(astack, tok, aid, "error")
    return ids


def chat(s, tok, aid):
    r = s.get(f"/api/agents/{aid}/chat", token=tok)
    assert r.status == 200, r
    return r.json()["messages"]


def test_bad_bodies_and_other_users(astack, tok, agents, standin):
    aid = agents[0]
    path = f"/api/agents/{aid}/ask"
    for body, code in (({}, "missing_field"), ({"text": ""}, "invalid_field"), ({"text": " \n\t"}, "invalid_field"),
                       ({"text": 5}, "invalid_field"), ({"text": "a", "question": "b"}, "invalid_field"),
                       ({"text": "a", "stream": True}, None), ({"question": "x" * 10001}, "invalid_field")):
        r = post(astack, path, tok, body)
        assert r.status == 400, (body, r)
        j = r.json()
        assert j["code"] and j["detail"], j
        if code:
            assert j["code"] == code, (body, j)
    r = astack.request("POST", path, token=tok, body=b"{not json", headers={"Content-Type": "application/json"})
    assert r.status == 400 and r.json()["code"] == "invalid_json", r
    other = astack.create_token(role="user")
    r = ask(astack, other, aid, "what is it doing?")
    assert r.status == 404 and r.json()["code"] == "not_found", r
    r = ask(astack, tok, "00000000-0000-0000-0000-000000000000", "hello?")
    assert r.status == 404 and r.json()["code"] == "not_found", r
    r = astack.request("POST", path, json_body={"text": "no token"}, source="127.0.0.2")   # not loopback: no admin
    assert r.status == 401 and r.json()["code"] == "unauthorized", r
    assert standin.requests() == []


def test_no_key_is_409_no_api_key(astack, tok, agents, standin):
    r = ask(astack, tok, agents[0], "how is it going?")
    assert r.status == 409, r
    j = r.json()
    assert j["code"] == "no_api_key" and "POST /api/anthropic-key" in j["detail"], j
    assert standin.requests() == [] and chat(astack, tok, agents[0]) == []


def test_ask_answers_into_the_chat_and_is_metered(astack, tok, agents, standin):
    aid = agents[0]
    r = post(astack, "/api/anthropic-key", tok, {"key": KEY})
    assert r.status == 200 and r.json()["source"] == "own", r
    before = detail(astack, tok, aid)["budget"]
    q = "Why did this agent stop, and what should I change?"
    r = ask(astack, tok, aid, q)
    assert r.status == 200, r
    j = r.json()
    assert j["answer"] == ANSWER and j["model"] == "claude-sonnet-4-5", j
    u = j["usage"]
    assert (u["input"], u["output"], u["cache_write"], u["cache_read"], u["requests"]) == (1234, 56, 0, 0, 1), u
    assert u["cost"] == pytest.approx(price(USAGE), rel=1e-9, abs=1e-12), u
    [req] = standin.requests()
    assert req["method"] == "POST" and req["path"] == "/v1/messages", req
    assert req["headers"].get("x-api-key") == KEY and "authorization" not in req["headers"], req["headers"]
    b = req["body"]
    assert b["model"] == "claude-sonnet-4-5" and not b.get("stream") and b["max_tokens"] == 1024, b
    assert b["messages"] == [{"role": "user", "content": q}], b
    assert GOAL in b["system"] and "ETH-1H-BINARY" in b["system"] and "status: error" in b["system"], b["system"]
    msgs = chat(astack, tok, aid)
    assert [(m["role"], m["type"], m["text"]) for m in msgs] == [("user", "ask", q), ("assistant", "answer", ANSWER)]
    after = detail(astack, tok, aid)["budget"]
    assert after["requests_used"] == before["requests_used"] + 1, (before, after)
    assert after["tokens_used"] == before["tokens_used"] + 1234 + 56, (before, after)
    assert after["usd_used"] == pytest.approx(before["usd_used"] + price(USAGE), rel=1e-9, abs=1e-12)
    assert KEY not in astack.log_tail(5000)


def test_upstream_errors_pass_back(astack, tok, agents, standin):
    aid = agents[0]
    before = detail(astack, tok, aid)["budget"]
    n_chat = len(chat(astack, tok, aid))
    r = ask(astack, tok, aid, "again?")
    assert r.status == 429 and r.json()["code"] == "rate_limited" and r.headers.get("Retry-After") == "7", r
    r = ask(astack, tok, aid, "and now?")
    assert r.status == 503 and r.json()["code"] == "unavailable" and r.headers.get("Retry-After") == "3", r
    r = ask(astack, tok, aid, "and again?")
    assert r.status == 502 and r.json()["code"] == "upstream_error", r
    detail_ = r.json()["detail"]
    assert "500" in detail_ and "upstream broke: xxx" in detail_ and len(detail_) < 400, detail_
    after = detail(astack, tok, aid)["budget"]
    assert after["requests_used"] == before["requests_used"] + 3 and after["tokens_used"] == before["tokens_used"]
    assert len(chat(astack, tok, aid)) == n_chat
    assert len(standin.requests()) == 4


def test_at_most_three_asks_at_once(astack, tok, agents, standin):
    aid = agents[0]
    seen = len(standin.requests())
    results = []

    def one(i):
        results.append(ask(astack, tok, aid, f"slow question {i}", timeout=120))

    threads = [threading.Thread(target=one, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 60
    while len(standin.requests()) < seen + 3:   # the stand-in logs each ask when it arrives, then holds it
        assert time.monotonic() < deadline, "the 3 asks did not reach the stand-in"
        assert not results, [r.json() for r in results]
        time.sleep(0.1)
    try:
        r = ask(astack, tok, aid, "a fourth at once")
        assert r.status == 429, r
        assert r.json()["code"] == "rate_limited" and r.headers.get("Retry-After") == "5", r.json()
    finally:
        standin.release.touch()
    for t in threads:
        t.join()
    assert sorted(r.status for r in results) == [200, 200, 200], [r.json() for r in results]
    assert len(chat(astack, tok, aid)) == 2 + 6
    assert sorted(r.json()["answer"] for r in results) == ["slow 1", "slow 2", "slow 3"], [
        (q["body"]["messages"], q.get("turn"), q["time"]) for q in standin.requests()]
    # the refused one never went upstream, and each ask went once (the
    # handler is never run again once its request is sent, even when the
    # three recording transactions collide)
    asked = sorted(q["body"]["messages"][0]["content"] for q in standin.requests()[seen:])
    assert asked == ["slow question 0", "slow question 1", "slow question 2"], asked


def test_used_up_budget_is_402_budget_exhausted(astack, tok, agents, standin):
    aid = agents[1]   # budget.requests 1
    r = ask(astack, tok, aid, "the one request it may make")   # also: the slots are free again
    assert r.status == 200 and r.json()["answer"] == "budget ask", r
    seen = len(standin.requests())
    b = detail(astack, tok, aid)["budget"]
    assert b["requests_used"] == 1 and b["requests_left"] == 0, b
    r = ask(astack, tok, aid, "one more?")
    assert r.status == 402, r
    j = r.json()
    assert j["code"] == "budget_exhausted" and "agent requests: 1 of 1 used" in j["detail"], j
    assert len(standin.requests()) == seen


def test_owner_day_is_reserved_across_hosts(astack, tok, agents, standin):
    """The asks so far are on the owner's day, each settled from its
    reservation (none is left); a reservation of another host's request in
    flight that holds the rest of the day's USD refuses the ask before it is
    sent, and once it expires (its proxy died) the ask goes through."""
    aid = agents[0]
    [[owner]] = sql(astack, "SELECT owner_id FROM agents WHERE id = '%s'" % aid)
    [[asks, tokens]] = sql(astack, "SELECT SUM(requests), SUM(input + output + cache_write + cache_read) FROM "
                                   "agent_llm_usage WHERE owner_id = %s AND kind = 'ask'" % owner)
    [[day_requests, day_tokens]] = sql(astack, "SELECT requests, input + output + cache_write + cache_read FROM "
                                               "llm_owner_day WHERE owner_id = %s AND day = UTC_DATE()" % owner)
    assert (day_requests, day_tokens) == (asks, tokens) and int(asks) >= 1
    assert sql(astack, "SELECT COUNT(*) FROM llm_reservations") == [["0"]]
    # another host's turn has the rest of the day's 100 USD (the default) in flight
    sql(astack, "INSERT INTO llm_reservations (owner_id, day, agent_id, kind, tokens, usd, expires_at) VALUES "
                "(%s, UTC_DATE(), NULL, 'turn', 1000, 100, UTC_TIMESTAMP(6) + INTERVAL 1 HOUR)" % owner)
    seen = len(standin.requests())
    r = ask(astack, tok, aid, "is there room today?")
    assert r.status == 402, r
    j = r.json()
    assert j["code"] == "budget_exhausted" and "owner daily usd" in j["detail"] and "reserved" in j["detail"], j
    assert len(standin.requests()) == seen
    sql(astack, "UPDATE llm_reservations SET expires_at = UTC_TIMESTAMP(6) - INTERVAL 1 SECOND")
    r = ask(astack, tok, aid, "and now?")
    assert r.status == 200, r
    assert len(standin.requests()) == seen + 1
    assert sql(astack, "SELECT COUNT(*) FROM llm_reservations") == [["0"]]   # swept, and the ask's settled
    [[day_requests2]] = sql(astack, "SELECT requests FROM llm_owner_day WHERE owner_id = %s AND day = UTC_DATE()"
                            % owner)
    assert int(day_requests2) == int(day_requests) + 1


def test_the_model_is_told_the_agents_state_history_and_last_3_iterations(astack, tok, agents, standin):
    """The original's context for an ask (spec/mantis.md ask route): the
    tails of STATE.md and notes.txt as the last iteration left them, one
    history line per iteration, and the dev metrics and analysis of the last
    3 completed iterations; the sealed holdout stays out."""
    aid = agents[0]
    state = "OLD-STATE-HEAD " + "s" * 5000 + " STATE-TAIL-MARK"
    sql(astack, "UPDATE agents SET state_md = '%s', notes = 'NOTES-MARK momentum' WHERE id = '%s'" % (state, aid))
    for n in (7, 8, 9, 10):
        sql(astack, "INSERT INTO agent_iterations (id, agent_id, iteration, status, metrics, holdout_metrics, "
                    "analysis, score, holdout_score) VALUES (UUID(), '%s', %d, 'completed', "
                    "'{\"mean_auc\": 0.5%d1}', '{\"mean_auc\": 0.9%d9}', '{\"hypothesis\": \"HYP-%d\"}', "
                    "0.5%d1, 0.9%d9)" % (aid, n, n, n, n, n, n))
    seen = len(standin.requests())
    r = ask(astack, tok, aid, "what did the last iterations show?")
    assert r.status == 200 and r.json()["answer"] == "context seen", r
    [req] = standin.requests()[seen:]
    system = req["body"]["system"]
    assert "STATE-TAIL-MARK" in system and "OLD-STATE-HEAD" not in system, system[:3000]
    assert "NOTES-MARK momentum" in system, system[:3000]
    for n in (7, 8, 9, 10):   # a history line for each
        assert "- iteration %d: completed, dev score 0.5%d1" % (n, n) in system, system[-3000:]
    for n in (8, 9, 10):      # metrics and analysis for the last 3 only
        assert "### iteration %d\nmetrics (dev): {\"mean_auc\": 0.5%d1}" % (n, n) in system, system[-3000:]
        assert "HYP-%d" % n in system, system[-3000:]
    assert "### iteration 7" not in system and "HYP-7" not in system, system[-3000:]
    assert not any("0.9%d9" % n in system for n in (7, 8, 9, 10)), system[-3000:]   # no holdout number

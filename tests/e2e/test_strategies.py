"""POST /strategies/submit, POST /strategies, GET /strategies[/{id}],
GET /strategies/versions/{id}: validation in the sandbox, (owner, name)
identity, idempotent versions, content-addressed copies, ownership."""
import concurrent.futures
import hashlib
import os
import secrets
import tempfile
from pathlib import Path

import pytest

from helpers import assert_error
from runs_helpers import Api, BUY_AND_HOLD, EXAMPLES, example


@pytest.fixture(scope="module")
def alice(stack):
    return Api(stack, stack.create_token(role="user"))


@pytest.fixture(scope="module")
def bob(stack):
    return Api(stack, stack.create_token(role="user"))


@pytest.fixture(scope="module")
def admin(stack):
    return Api(stack, stack.create_token(role="admin"))


def uniq(prefix):
    return f"{prefix}-{secrets.token_hex(4)}"


def test_submit_returns_ids_hash_and_kind(alice):
    code = BUY_AND_HOLD + "# " + secrets.token_hex(4) + "\n"
    body = alice.submit(code, uniq("bh"))
    assert set(body) >= {"strategy_id", "strategy_version_id", "code_hash", "created", "kind"}
    assert body["created"] is True
    assert body["kind"] == "simulate"
    assert body["code_hash"] == hashlib.sha256(code.encode()).hexdigest()


def test_same_code_same_name_is_the_same_version(alice, stack):
    code = BUY_AND_HOLD + "# again " + secrets.token_hex(4) + "\n"
    name = uniq("same")
    a = alice.submit(code, name)
    b = alice.submit(code, name)
    assert (b["strategy_id"], b["strategy_version_id"], b["code_hash"]) == \
        (a["strategy_id"], a["strategy_version_id"], a["code_hash"])
    assert b["created"] is False
    # the content-addressed copy exists, with exactly the submitted bytes
    copy = stack.var / "strategies" / f"{a['code_hash']}.py"
    assert copy.read_bytes() == code.encode()


def test_new_code_same_name_is_a_new_version_of_the_same_strategy(alice):
    name = uniq("evolving")
    a = alice.submit(BUY_AND_HOLD + "# v1\n", name)
    b = alice.submit(BUY_AND_HOLD + "# v2\n", name)
    assert b["strategy_id"] == a["strategy_id"]
    assert b["strategy_version_id"] != a["strategy_version_id"]
    detail = alice.get(f"/strategies/{a['strategy_id']}").json()
    assert [v["id"] for v in detail["versions"]] == [a["strategy_version_id"], b["strategy_version_id"]]


def test_same_code_other_user_is_their_own_strategy(alice, bob):
    code = BUY_AND_HOLD + "# shared " + secrets.token_hex(4) + "\n"
    a = alice.submit(code, "shared-name")
    b = bob.submit(code, "shared-name")
    assert a["strategy_id"] != b["strategy_id"]
    assert a["code_hash"] == b["code_hash"]


def test_concurrent_duplicate_submissions_create_one_version(alice):
    code = BUY_AND_HOLD + "# race " + secrets.token_hex(6) + "\n"
    name = uniq("race")
    with concurrent.futures.ThreadPoolExecutor(max_workers=8) as ex:
        results = list(ex.map(lambda _: alice.submit(code, name), range(12)))
    assert len({r["strategy_version_id"] for r in results}) == 1
    assert len({r["strategy_id"] for r in results}) == 1
    assert sum(1 for r in results if r["created"]) == 1


def test_empty_code_is_refused(alice):
    r = alice.post("/strategies/submit", {"code": "   \n ", "name": "x"})
    body = assert_error(r, 400, "missing_field")
    assert "code is required" in body["error"]


def test_missing_name_is_refused(alice):
    assert_error(alice.post("/strategies/submit", {"code": BUY_AND_HOLD}), 400, "missing_field")
    assert_error(alice.post("/strategies/submit", {"code": BUY_AND_HOLD, "name": "  "}), 400, "invalid_field")


def test_syntax_error_answers_line_and_column(alice):
    r = alice.post("/strategies/submit", {"code": "x = 1\ndef simulate(prices, params:\n    return prices\n",
                                          "name": uniq("bad")})
    body = assert_error(r, 400, "invalid_field")
    assert body["line"] == 2 and body["column"] >= 1
    assert "line 2" in body["error"]


def test_missing_entry_point_names_it(alice):
    r = alice.post("/strategies/submit", {"code": "def run(prices, params):\n    return prices\n", "name": "x"})
    body = assert_error(r, 400, "invalid_field")
    assert "simulate" in body["error"]
    # a comment is not a function (the original accepted the substring)
    r = alice.post("/strategies/submit", {"code": "# def simulate(\nx = 1\n", "name": "x"})
    assert_error(r, 400, "invalid_field")


def test_check_never_executes_the_code(alice, stack):
    marker = Path(tempfile.gettempdir()) / f"agenttest-pwn-{secrets.token_hex(4)}"
    code = (f"open({str(marker)!r}, 'w').write('x')\n"
            "def simulate(prices, params):\n    return [1.0] * len(prices)\n")
    body = alice.submit(code, uniq("sidefx"))
    assert body["kind"] == "simulate"
    assert not marker.exists()


def test_kinds_positions_and_signal(alice):
    assert alice.submit(example("sma_positions.py"), uniq("sma"))["kind"] == "positions"
    sig = "class Featurizer:\n    pass\nclass Predictor:\n    pass\n"
    assert alice.submit(sig, uniq("sig"))["kind"] == "signal"
    r = alice.post("/strategies/submit", {"code": "class Featurizer:\n    pass\n", "name": "half"})
    body = assert_error(r, 400, "invalid_field")
    assert "Predictor" in body["error"]
    # the list names the kind of each strategy's latest version
    name = uniq("kinds")
    alice.submit(BUY_AND_HOLD + "# kinds\n", name)
    listed = {s["name"]: s for s in alice.get("/strategies?limit=1000").json()["strategies"]}
    assert listed[name]["latest_kind"] == "simulate"
    alice.submit(example("sma_positions.py") + "# kinds\n", name)
    listed = {s["name"]: s for s in alice.get("/strategies?limit=1000").json()["strategies"]}
    assert listed[name]["latest_kind"] == "positions" and listed[name]["versions"] == 2


def test_params_must_be_an_object(alice):
    r = alice.post("/strategies/submit", {"code": BUY_AND_HOLD, "name": "p", "params": [1]})
    assert_error(r, 400, "invalid_field")


def test_oversized_code_is_refused(alice):
    r = alice.post("/strategies/submit", {"code": "#" * (300 * 1024), "name": "big"})
    assert r.status in (400, 413), r


def test_list_and_detail_are_owner_scoped(alice, bob, admin):
    mine = alice.submit(BUY_AND_HOLD + "# list " + secrets.token_hex(4) + "\n", uniq("listed"))
    ids = [s["id"] for s in alice.get("/strategies").json()["strategies"]]
    assert mine["strategy_id"] in ids
    assert mine["strategy_id"] not in [s["id"] for s in bob.get("/strategies?limit=1000").json()["strategies"]]
    assert mine["strategy_id"] in [s["id"] for s in admin.get("/strategies?limit=1000").json()["strategies"]]
    assert_error(bob.get(f"/strategies/{mine['strategy_id']}"), 404, "not_found")
    assert admin.get(f"/strategies/{mine['strategy_id']}").status == 200
    assert_error(alice.get("/strategies/999999999"), 404, "not_found")
    assert_error(alice.get("/strategies/abc"), 404, "not_found")


def test_version_visible_to_owner_and_admin_only(alice, bob, admin):
    code = BUY_AND_HOLD + "# secret " + secrets.token_hex(4) + "\n"
    v = alice.submit(code, uniq("secret"))
    own = alice.get(f"/strategies/versions/{v['strategy_version_id']}").json()
    assert own["code"] == code and own["code_hash"] == v["code_hash"]
    # another user's version is not there for bob (name, params, hash: issue 11 item 12)
    assert_error(bob.get(f"/strategies/versions/{v['strategy_version_id']}"), 404, "not_found")
    assert admin.get(f"/strategies/versions/{v['strategy_version_id']}").json()["code"] == code
    assert_error(alice.get("/strategies/versions/999999999"), 404, "not_found")


def test_trusted_path_registration(admin, alice):
    path = str(EXAMPLES / "buy_and_hold.py")
    r = admin.post("/strategies", {"strategy_path": path})
    assert r.status == 200, r
    body = r.json()
    # the file's name, never the server path (issue 11 item 15)
    assert body["strategy_file"] == "buy_and_hold.py" and "strategy_path" not in body
    assert os.path.dirname(os.path.realpath(path)) not in r.body.decode()
    shown = admin.get(f"/strategies/versions/{body['strategy_version_id']}").json()
    assert shown["strategy_file"] == "buy_and_hold.py" and "strategy_path" not in shown
    assert body["code_hash"] == hashlib.sha256(Path(path).read_bytes()).hexdigest()
    again = admin.post("/strategies", {"strategy_path": path}).json()
    assert again["strategy_version_id"] == body["strategy_version_id"] and again["created"] is False
    # users may not register server files at all
    assert_error(alice.post("/strategies", {"strategy_path": path}), 403, "forbidden")


def test_trusted_path_outside_the_trusted_dirs_is_refused(admin):
    assert_error(admin.post("/strategies", {"strategy_path": "/etc/passwd"}), 403, "forbidden")
    assert_error(admin.post("/strategies", {"strategy_path": "/nonexistent/x.py"}), 404, "not_found")
    # a symlink inside a trusted dir pointing outside is resolved and refused
    with tempfile.TemporaryDirectory() as d:
        outside = Path(d) / "evil.py"
        outside.write_text(BUY_AND_HOLD)
        link = EXAMPLES / f".link-{secrets.token_hex(4)}.py"
        try:
            link.symlink_to(outside)
            assert_error(admin.post("/strategies", {"strategy_path": str(link)}), 403, "forbidden")
        finally:
            link.unlink(missing_ok=True)
    dotdot = str(EXAMPLES / ".." / ".." / "README.md")
    assert_error(admin.post("/strategies", {"strategy_path": dotdot}), 403, "forbidden")

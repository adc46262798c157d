"""GET /runs/{id}/trades (issue 17): the fills and per-bar positions the
runner stores for a completed positions run. The fills add up to the
equity the runner scored (each fill's equity is the curve's value at its
bar minus its fee, bit for bit; the fees sum to fees_paid), pages join to
the whole list, and the route is the owner's or an admin's; a run without
trades (a simulate strategy) is 409. A verification compares the stored
trades byte for byte too (issue 11/17): a position or a fill altered in
MariaDB is reported as the first difference."""
import math
import secrets
import time

import pytest

from helpers import assert_error, stack_sql
from runs_helpers import Api, BUY_AND_HOLD

# flips between long, flat and 2x short every few bars: a few hundred fills over a week
FLIPPER = (
    "def positions(prices, params):\n"
    "    cycle = [1.0, 1.0, 0.0, -2.0, -2.0, 0.5] * 8\n"
    "    return [cycle[(t // 40) % len(cycle)] for t in range(len(prices))]\n"
)


@pytest.fixture(scope="module")
def world(stack):
    owner = Api(stack, stack.create_token(role="user"))
    other = Api(stack, stack.create_token(role="user"))
    admin = Api(stack, stack.create_token(role="admin"))
    v = owner.submit(FLIPPER, f"flipper-{secrets.token_hex(4)}")
    run = owner.run(v["strategy_version_id"], fee_bps=5, max_leverage=1.5)
    assert run["status"] == "completed", run
    return {"owner": owner, "other": other, "admin": admin, "run": run}


def test_fills_add_up_to_the_scored_equity(world):
    owner, run = world["owner"], world["run"]
    r = owner.get(f"/runs/{run['run_id']}/trades?limit=1000")
    assert r.status == 200, r
    t = r.json()
    eq = owner.get(f"/runs/{run['run_id']}/equity?format=json").json()["equity"]
    assert t["bars"] == len(eq) == 10080
    assert t["truncated"] is False and t["fills_total"] == t["fills_stored"]
    # 42 cycles of 240 bars: the first trade, 3 changes inside each cycle, one between cycles
    fills = page_all(owner, run["run_id"], 1000)
    assert len(fills) == t["fills_total"] == 1 + 42 * 3 + 41
    fees = 0.0
    for f in fills:
        k = f["bar"]
        assert f["equity"] == eq[k] - f["fee"]           # the same IEEE operation as the runner's
        before = t["positions"][k - 1] if k else 0.0
        assert f["side"] == ("buy" if f["position"] > before else "sell")
        assert abs(f["cash"] + f["units"] * f["price"] - f["equity"]) <= 1e-12
        assert f["time"].endswith("Z")
        fees += f["fee"]
    assert fees == run["metrics"]["fees_paid"]              # same terms, same order: bit for bit
    # 2x short is clamped to the run's max leverage
    assert min(t["positions"]) == -1.5 and max(t["positions"]) == 1.0
    # flat over a bar with no trade into it: the curve does not move
    traded = {f["bar"] for f in fills}
    assert all(eq[k + 1] == eq[k] for k in range(len(eq) - 1) if t["positions"][k] == 0 and k not in traded)


def page_all(api, rid, limit):
    out, cursor = [], None
    while True:
        q = f"?limit={limit}" + (f"&cursor={cursor}" if cursor is not None else "")
        r = api.get(f"/runs/{rid}/trades{q}")
        assert r.status == 200, r
        body = r.json()
        assert ("positions" in body) == (cursor is None)
        out += body["fills"]
        cursor = body["next_cursor"]
        if cursor is None:
            return out


def test_pages_join_to_the_whole_list(world):
    rid = world["run"]["run_id"]
    whole = page_all(world["owner"], rid, 1000)
    assert page_all(world["owner"], rid, 7) == whole
    assert [f["bar"] for f in whole] == sorted({f["bar"] for f in whole})


def test_owner_or_admin_only(world):
    rid = world["run"]["run_id"]
    assert_error(world["other"].get(f"/runs/{rid}/trades"), 404, "not_found")
    assert world["admin"].get(f"/runs/{rid}/trades").status == 200
    assert_error(world["owner"].get("/runs/00000000-0000-4000-8000-000000000000/trades"), 404, "not_found")


def test_bad_paging_and_runs_without_trades(world):
    owner, rid = world["owner"], world["run"]["run_id"]
    assert_error(owner.get(f"/runs/{rid}/trades?limit=0"), 400, "invalid_field")
    # cursors are opaque and bound to the run (issue 11 item 15): a number,
    # an altered cursor or one of another list is 400 bad_cursor
    assert_error(owner.get(f"/runs/{rid}/trades?cursor=x"), 400, "bad_cursor")
    assert_error(owner.get(f"/runs/{rid}/trades?cursor=100000"), 400, "bad_cursor")
    nxt = owner.get(f"/runs/{rid}/trades?limit=1").json()["next_cursor"]
    assert nxt and not nxt.isdigit()
    altered = nxt[:20] + ("A" if nxt[20] != "A" else "B") + nxt[21:]
    assert_error(owner.get(f"/runs/{rid}/trades?cursor={altered}"), 400, "bad_cursor")
    assert_error(owner.get(f"/runs?cursor={nxt}"), 400, "bad_cursor")
    v = owner.submit(BUY_AND_HOLD + "# trades\n", f"bh-{secrets.token_hex(4)}")
    sim = owner.run(v["strategy_version_id"], dataset_version="v1")
    assert sim["status"] == "completed"
    assert_error(owner.get(f"/runs/{sim['run_id']}/trades"), 409, "conflict")
    assert math.isfinite(sim["metrics"]["total_return"])


def verify(api, rid):
    """POST /runs/{rid}/verify and the verification record once it is written."""
    r = api.post(f"/runs/{rid}/verify", {"wait": 60})
    assert r.status in (200, 202), r
    vid = r.json()["verification_run_id"]
    deadline = time.monotonic() + 180
    while True:
        v = api.get(f"/runs/{rid}").json()["verification"]
        if v and v["verification_run_id"] == vid:
            return v
        assert time.monotonic() < deadline, f"verification {vid} of {rid} never recorded"
        time.sleep(0.2)


# 0.5 as a little-endian float64: neither the flipper's first position (1.0) nor its first fill's price
HALF = "X'000000000000E03F'"


def test_verify_compares_the_trades(stack, world):
    owner, rid = world["owner"], world["run"]["run_id"]
    where = f"WHERE run_id = '{rid}'"
    # the 8 bytes edited below: position 0, and the price of fill 0 (bytes 24..31 of its 64-byte record)
    (pos0, price0, total), = stack_sql(
        stack, f"SELECT HEX(SUBSTRING(positions, 1, 8)), HEX(SUBSTRING(fills, 25, 8)), fills_total "
               f"FROM run_trades {where}")
    first = owner.get(f"/runs/{rid}/trades?limit=1").json()["fills"][0]
    assert first["bar"] == 0 and first["price"] != 0.5

    def set_pos0(hexval):
        stack_sql(stack, f"UPDATE run_trades SET positions = CONCAT({hexval}, SUBSTRING(positions, 9)) {where}")

    def set_price0(hexval):
        stack_sql(stack, f"UPDATE run_trades SET fills = CONCAT(SUBSTRING(fills, 1, 24), {hexval}, "
                         f"SUBSTRING(fills, 33)) {where}")

    try:
        # metrics and equity are untouched: only the stored trades differ from the re-execution's
        set_pos0(HALF)
        v = verify(owner, rid)
        assert v["identical"] is False
        assert v["first_difference"] == {"what": "position", "bar": 0, "expected": 0.5, "actual": 1.0}
        set_pos0(f"X'{pos0}'")
        set_price0(HALF)
        v = verify(owner, rid)
        assert v["identical"] is False
        assert v["first_difference"] == {"what": "fill", "index": 0, "bar": 0, "field": "price",
                                         "expected": 0.5, "actual": first["price"]}
        set_price0(f"X'{price0}'")
        stack_sql(stack, f"UPDATE run_trades SET fills_total = fills_total + 1 {where}")
        v = verify(owner, rid)
        assert v["first_difference"] == {"what": "fills_total", "expected": int(total) + 1, "actual": int(total)}
    finally:
        set_pos0(f"X'{pos0}'")
        set_price0(f"X'{price0}'")
        stack_sql(stack, f"UPDATE run_trades SET fills_total = {int(total)} {where}")
    # restored: the same trades verify as identical, so the differences above were the edits
    v = verify(owner, rid)
    assert v["identical"] is True and v["first_difference"] is None, v

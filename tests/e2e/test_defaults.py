"""POST /defaults/promote (admin only, needs a completed audit-passed run on
the dataset version) and GET /defaults (current default and history)."""
import secrets

import pytest

from helpers import assert_error
from runs_helpers import Api, BUY_AND_HOLD


@pytest.fixture(scope="module")
def erin(stack):
    return Api(stack, stack.create_token(role="user"))


@pytest.fixture(scope="module")
def boss(stack):
    name = f"boss-{secrets.token_hex(3)}"
    return Api(stack, stack.create_token(user=name, role="admin")), name


def test_promote_requires_admin(erin):
    v = erin.submit(BUY_AND_HOLD + "# p1\n", "promo-user")["strategy_version_id"]
    assert_error(erin.post("/defaults/promote", {"strategy_version_id": v}), 403, "forbidden")


def test_promote_refuses_without_a_qualifying_run(erin, boss):
    admin, _ = boss
    v = erin.submit(BUY_AND_HOLD + f"# p2 {secrets.token_hex(3)}\n", "promo-norun")["strategy_version_id"]
    assert_error(admin.post("/defaults/promote", {"strategy_version_id": v, "dataset_version": "v1"}),
                 409, "conflict")
    # a run without the audit does not qualify either
    erin.run(v, dataset_version="v1", audit=False)
    assert_error(admin.post("/defaults/promote", {"strategy_version_id": v, "dataset_version": "v1"}),
                 409, "conflict")
    assert_error(admin.post("/defaults/promote", {"strategy_version_id": 999999999}), 404, "not_found")
    assert_error(admin.post("/defaults/promote", {}), 400, "missing_field")


def test_promote_and_history(erin, boss):
    admin, admin_name = boss
    tag = secrets.token_hex(3)
    a = erin.submit(BUY_AND_HOLD + f"# a {tag}\n", f"promo-a-{tag}")["strategy_version_id"]
    b = erin.submit(BUY_AND_HOLD + f"# b {tag}\n", f"promo-b-{tag}")["strategy_version_id"]
    ra = erin.run(a, dataset_version="v1")
    erin.run(b, dataset_version="v1")
    r = admin.post("/defaults/promote", {"strategy_version_id": a, "dataset_version": "v1"})
    assert r.status == 200, r
    body = r.json()
    assert body["ok"] is True and body["strategy_version_id"] == a
    assert body["run_id"] == ra["run_id"] and body["promoted_by"] == admin_name and body["promoted_at"]
    assert admin.post("/defaults/promote", {"strategy_version_id": b, "dataset_version": "v1"}).status == 200
    d = erin.get("/defaults?dataset_version=v1").json()
    current = [x for x in d["defaults"] if x["dataset_version"] == "v1"]
    assert len(current) == 1 and current[0]["strategy_version_id"] == b
    hist = [x["strategy_version_id"] for x in d["history"] if x["dataset_version"] == "v1"]
    assert hist[:2] == [b, a]   # newest first
    assert all(x["promoted_by"] for x in d["history"])


def test_promote_uses_the_configured_dataset_version_by_default(erin, boss):
    admin, _ = boss
    v = erin.submit(BUY_AND_HOLD + f"# d {secrets.token_hex(3)}\n", "promo-default")["strategy_version_id"]
    erin.run(v)   # synth-v1, the stack's DATASET_VERSION
    body = admin.post("/defaults/promote", {"strategy_version_id": v}).json()
    assert body["dataset_version"] == "synth-v1"

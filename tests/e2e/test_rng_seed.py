"""Issue 11 item 19: every run's RNGs are seeded from the run's identity
(strategy source and params) before user code runs and before every call,
so an unseeded random strategy gives the same result on every rerun and
verification, whichever zygote ran it, and passes the causality audit."""
import secrets

import pytest

from runs_helpers import Api, metrics_without_runtime

RANDOM_POSITIONS = '''
import random
import numpy as np
BIAS = np.random.rand()          # drawn at load time
def positions(prices, params):
    n = len(prices)
    draws = np.random.rand(n) + 0.1 * random.random() * BIAS
    return [1.0 if d > params.get("cut", 0.5) else 0.0 for d in draws]
'''


@pytest.fixture(scope="module")
def carl(stack):
    return Api(stack, stack.create_token(role="user"))


def test_unseeded_random_strategy_is_reproducible(carl):
    v = carl.submit(RANDOM_POSITIONS, "rng-" + secrets.token_hex(4))
    runs = [carl.run(v["strategy_version_id"], dataset_version="v1") for _ in range(3)]
    for r in runs:
        r = r if r["status"] in ("completed", "failed") else carl.wait_run(r["run_id"])
        assert r["status"] == "completed", r
    runs = [carl.wait_run(r["run_id"]) for r in runs]
    assert len({metrics_without_runtime(r) for r in runs}) == 1, [r["metrics"] for r in runs]
    # the reseed before every call keeps the audit's prefix calls consistent
    assert runs[0]["audit"]["passed"] is True, runs[0]["audit"]
    r = carl.post(f"/runs/{runs[0]['run_id']}/verify", {"wait": 60})
    assert r.status == 200, r
    assert r.json()["verification"]["identical"] is True, r.json()
    # other params: another identity, other draws
    other = carl.wait_run(carl.run(v["strategy_version_id"], dataset_version="v1", params={"cut": 0.5000001})["run_id"])
    assert other["status"] == "completed", other
    assert metrics_without_runtime(other) != metrics_without_runtime(runs[0])

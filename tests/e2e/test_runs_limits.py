"""Run limits through the real runner: a strategy allocating far beyond the
memory limit fails with `memory_limit`."""
import secrets

import pytest

from runs_helpers import Api

HOG_BYTES = (
    "def simulate(prices, params):\n"
    "    x = b'x' * (4 << 30)\n"
    "    return [1.0] * len(prices)\n"
)
HOG_NUMPY = (
    "import numpy as np\n"
    "def simulate(prices, params):\n"
    "    x = np.ones(1 << 29)\n"
    "    return [1.0] * len(prices)\n"
)
HOG_GROW = (
    "def simulate(prices, params):\n"
    "    chunks = []\n"
    "    while True:\n"
    "        chunks.append(bytearray(16 << 20))\n"
)


def submit(api, code, prefix):
    return api.submit(code, f"{prefix}-{secrets.token_hex(4)}")["strategy_version_id"]


@pytest.fixture(scope="module")
def alice(stack):
    return Api(stack, stack.create_token(role="user"))


@pytest.mark.parametrize("code", [HOG_BYTES, HOG_NUMPY], ids=["bytes", "numpy"])
def test_one_huge_allocation_fails_with_memory_limit(alice, code):
    # refused by the address-space limit: Python's MemoryError, mapped to memory_limit
    vid = submit(alice, code, "hog")
    for _ in range(2):   # the second run goes through a warm zygote child
        run = alice.run(vid, dataset_version="v1")
        assert run["status"] == "failed", run
        assert run["error"]["code"] == "memory_limit", run["error"]


def test_growing_beyond_the_limit_fails_with_memory_limit(alice):
    # killed by the memory cgroup's OOM killer. The host's pipes close at
    # once, the backtest cancels the sandbox on EOF, and that cancellation
    # used to win over the OOM kill in the verdict (`crashed`, signal 9)
    # about one run in four: repeat to catch the race.
    vid = submit(alice, HOG_GROW, "grow")
    for _ in range(10):
        run = alice.run(vid, dataset_version="v1")
        assert run["status"] == "failed", run
        assert run["error"]["code"] == "memory_limit", run["error"]
        assert run["resources"]["verdict"] == "memory_limit", run["resources"]
        assert run["resources"]["peak_memory_bytes"] >= 200 << 20, run["resources"]

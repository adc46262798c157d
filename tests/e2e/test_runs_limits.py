"""Run limits through the real runner: a strategy allocating far beyond the
memory limit fails with `memory_limit`, and with a short CPU limit set by
the operator (AGENTTEST_RUN_CPU_SECONDS, docs/configuration.md) a spinning
strategy fails with `timeout`."""
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
SPIN = (
    "def simulate(prices, params):\n"
    "    while True:\n"
    "        pass\n"
)


def submit(api, code, prefix):
    return api.submit(code, f"{prefix}-{secrets.token_hex(4)}")["strategy_version_id"]


@pytest.fixture(scope="module")
def alice(stack):
    return Api(stack, stack.create_token(role="user"))


@pytest.mark.parametrize("code", [HOG_BYTES, HOG_NUMPY], ids=["bytes", "numpy"])
def test_one_huge_allocation_fails_with_memory_limit(alice, code):
    # 4 GiB, filled: the address space allows it, the memory cgroup does not
    # (its OOM killer: verdict ML, the trusted side's own observation)
    vid = submit(alice, code, "hog")
    for _ in range(2):   # the second run goes through a warm zygote child
        run = alice.run(vid, dataset_version="v1")
        assert run["status"] == "failed", run
        assert run["error"]["code"] == "memory_limit", run["error"]
        assert run["resources"]["verdict"] == "memory_limit", run["resources"]


# Issue 11 item 4: raising MemoryError used to forge `memory_limit` (the
# host's word was taken for it); the verdict comes from the cgroup only.
FAKE_OOM = (
    "def simulate(prices, params):\n"
    "    raise MemoryError('the platform ran out of memory')\n"
)


def test_a_raised_memory_error_is_the_strategys_error(alice):
    run = alice.run(submit(alice, FAKE_OOM, "fakeoom"), dataset_version="v1")
    assert run["status"] == "failed", run
    assert run["error"]["code"] == "strategy_error", run["error"]
    assert "MemoryError" in run["error"]["message"], run["error"]
    assert run["resources"]["verdict"] != "memory_limit", run["resources"]


# Issue 11 item 4, the other forgery: code that finds the host's channel
# through gc and sends an ERROR frame with code `internal` (or
# `memory_limit`) was retried three times as the platform's failure and
# ended `internal` with the attacker's message. The host's word is the
# user's error: failed at once, strategy_error, one attempt.
FORGED_ERROR = (
    "import gc, os\n"
    "def simulate(prices, params):\n"
    "    chans = [o for o in gc.get_objects() if type(o).__name__ == 'Channel' and hasattr(o, 'send')]\n"
    "    if not chans:\n"
    "        raise RuntimeError('no channel found')\n"
    "    chans[0].send(0x8f, {'code': %r, 'type': 'PlatformError',\n"
    "                         'message': 'the platform failed', 'traceback': []})\n"
    "    os._exit(0)\n"
)


@pytest.mark.parametrize("code", ["internal", "memory_limit", "timeout"])
def test_a_forged_error_frame_is_the_strategys_error(alice, code):
    run = alice.run(submit(alice, FORGED_ERROR % code, "forged-" + code), dataset_version="v1", audit=False)
    run = alice.wait_run(run["run_id"], timeout=120)
    assert run["status"] == "failed", run
    assert run["error"]["code"] == "strategy_error", run["error"]
    assert run["attempts"] == 1, run
    assert run["resources"]["verdict"] not in ("memory_limit", "timeout"), run["resources"]


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


@pytest.fixture(scope="module")
def short_cpu(stack_factory):
    s = stack_factory("shortcpu", AGENTTEST_RUN_CPU_SECONDS=2, AGENTTEST_RUN_WALL_SECONDS=6,
                      AGENTTEST_RUN_MEMORY_MB=192)
    return Api(s, s.create_token(role="user"))


def test_spinning_strategy_times_out_under_the_configured_cpu_limit(short_cpu):
    vid = submit(short_cpu, SPIN, "spin")
    run = short_cpu.run(vid, dataset_version="v1")
    assert run["status"] == "failed", run
    assert run["error"]["code"] == "timeout", run["error"]
    res = run["resources"]
    assert res["limits"]["cpu_seconds"] == 2 and res["limits"]["wall_seconds"] == 6, res
    assert res["limits"]["memory_bytes"] == 192 << 20, res
    # the CPU limit ended it, or, on a machine so loaded that the box got under a quarter of a core, the
    # wall limit (6 s) first: both are the limits configured, both answer timeout
    assert 1.5 <= res["cpu_seconds"] < 5 or res["wall_seconds"] >= 5.9, res


# v1's audit cuts are 1, 2 and 3 bars. The full run and the one-bar cut
# spin nothing; the two- and three-bar cuts 1.1 s of CPU each. With two cut
# hosts side by side, both of those start while the hosts ended so far have
# used almost nothing (each within the 2 s limit alone); together with the
# rest the run uses 2.2 s.
SPIN_IN_CUTS = (
    "import time\n"
    "def positions(prices, params):\n"
    "    if len(prices) in (2, 3):\n"
    "        t = time.process_time()\n"
    "        while time.process_time() - t < 1.1:\n"
    "            pass\n"
    "    return [1.0] * len(prices)\n"
)


def test_the_audit_cannot_multiply_the_cpu_limit(short_cpu):
    # cut hosts that run side by side are each given what the ended hosts
    # left; the total over all hosts is what the limit bounds
    run = short_cpu.run(submit(short_cpu, SPIN_IN_CUTS, "spin-cuts"), dataset_version="v1")
    assert run["status"] == "failed", run
    assert run["error"]["code"] == "timeout", run["error"]
    assert run["resources"]["cpu_seconds"] < 4, run["resources"]


# Issue 11 item 5 for runs: a failed run returned up to 64 KiB of the
# strategy's own text (exception message, traceback, stderr), enough to
# carry a holdout out; what a user reads back is a few KiB at most.
LEAKING_RUN = (
    "import sys\n"
    "def deep(n):\n"
    "    if n == 0:\n"
    "        raise ValueError('x' * 60000)\n"
    "    return deep(n - 1)\n"
    "def simulate(prices, params):\n"
    "    sys.stderr.write('y' * 16000 + '\\n')\n"
    "    print('z' * 16000)\n"
    "    return deep(60)\n"
)


def test_a_failed_run_returns_a_few_kib_of_the_strategys_text(alice):
    run = alice.run(submit(alice, LEAKING_RUN, "leaky"), dataset_version="v1", audit=False)
    run = alice.wait_run(run["run_id"], timeout=120)
    assert run["status"] == "failed" and run["error"]["code"] == "strategy_error", run["error"]
    assert "ValueError" in run["error"]["message"] and "xxxx" in run["error"]["message"], run["error"]
    text = alice.get(f"/runs/{run['run_id']}").body
    assert len(text) <= 8 * 1024, len(text)

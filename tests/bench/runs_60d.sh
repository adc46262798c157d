#!/usr/bin/env bash
# A backtest run on the default market (60 days of 1-minute bars, 29
# assets, 97 MiB) through a private stack (tests/e2e's Stack, one runner
# slot): POST /runs (wait) -> completed, six times in a row. The first run
# of the runner process opens the dataset with every hash verified (what
# every run paid before the runner's dataset cache); the next ones take it
# from the cache (evaluator/runner/dscache.c).
set -euo pipefail
cd "$(dirname "$0")/../.."
exec /usr/bin/python3 - <<'PY'
import sys, time
sys.path.insert(0, "tests/e2e")
from conftest import Stack
from runs_helpers import Api, BUY_AND_HOLD
s = Stack("bench60", {"AGENTTEST_SYNTH_DAYS": 60, "AGENTTEST_RUNNER_SLOTS": 1, "RUNS_MAX_QUEUED": 1000}).start()
try:
    api = Api(s, s.create_token(role="user"))
    vid = api.submit(BUY_AND_HOLD, "bh60")["strategy_version_id"]
    ds = s.info.get("DATASET_VERSION", "synth-v1")
    for i in range(6):
        t0 = time.monotonic()
        run = api.run(vid, dataset_version=ds, audit=False, wait=60)
        print("run %d: POST->%s %.3f s, runner runtime_s %.3f%s" % (
            i + 1, run["status"], time.monotonic() - t0, run.get("runtime_s") or 0,
            " (verifies the dataset)" if i == 0 else " (cached dataset)"))
finally:
    s.stop()
PY

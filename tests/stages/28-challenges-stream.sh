#!/usr/bin/env bash
# MANTIS evaluations through the real path (pytest, tests/challenges/
# test_stream*.py and test_sdk*.py): `agenttest evaluate` streaming bars in
# lockstep over shared memory into the sandboxed strategy host, every
# challenge end to end and equal to the in-process SDK, the leak tests, NaN
# and shape handling, dev-only sealing, the planted ETH momentum; the SDK
# (README example, the original suite's view/provider ideas, aliases); the
# built-in research agent on the planted signal and on every challenge
# (tests/agents/).
# Needs bin/agenttest and libagenttest_eval.so (make build) and root for the
# confined sandbox (the confined tests skip without it).
# The files run in two pytest-xdist workers (--dist loadfile: each file's
# tests in order in one worker), since much of an agent iteration is waiting
# for its holdout bound and much of a stream is one process waiting for the
# other; AGENTTEST_STREAM_WORKERS=0 runs them in one process.
set -euo pipefail
cd "$(dirname "$0")/../.."
PYTHON=${PYTHON:-/usr/bin/python3}
export AGENTTEST_EVAL_LIB=${AGENTTEST_EVAL_LIB:-$PWD/build/release/libagenttest_eval.so}
export AGENTTEST_STREAM_TESTS=1
for f in "$AGENTTEST_EVAL_LIB" bin/agenttest; do
  [ -e "$f" ] || { echo "28-challenges-stream: $f missing (make build)"; exit 1; }
done
workers=${AGENTTEST_STREAM_WORKERS:-2}
par=()
[ "$workers" = 0 ] || par=(-n "$workers" --dist loadfile)
exec "$PYTHON" -m pytest -q -p no:cacheprovider "${par[@]}" tests/challenges/test_stream*.py tests/challenges/test_sdk*.py \
  tests/agents/test_builtin_agent.py tests/agents/test_builtin_challenges.py tests/agents/test_holdout_timing.py \
  tests/agents/test_egress.py tests/agents/test_llm_agent.py \
  --junitxml="$AGENTTEST_JUNIT_DIR/challenges-stream.xml" -o junit_suite_name=challenges-stream "$@"

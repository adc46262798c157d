#!/usr/bin/env bash
# The MANTIS challenge core through libagenttest_eval.so (pytest,
# tests/challenges/): every label and metric against an independent
# numpy/scikit-learn/scipy reference on seeded series (labels identical,
# metrics within 1e-9, mantis mode), whole evaluations of every challenge
# against the reference, the original suite's label/metric/window ideas, and
# the strict-mode fixes, the original's SDK names, inference parity and the
# copy-on-write views (test_sdk_compat.py). Builds nothing: `make test` built the library first.
set -euo pipefail
cd "$(dirname "$0")/../.."
PYTHON=${PYTHON:-/usr/bin/python3}
export AGENTTEST_EVAL_LIB=${AGENTTEST_EVAL_LIB:-$PWD/build/release/libagenttest_eval.so}
[ -f "$AGENTTEST_EVAL_LIB" ] || { echo "27-challenges: $AGENTTEST_EVAL_LIB missing (make build)"; exit 1; }
exec "$PYTHON" -m pytest -q -p no:cacheprovider \
  tests/challenges/test_labels_metrics.py tests/challenges/test_evaluate.py \
  tests/challenges/test_original_ports.py tests/challenges/test_strict.py \
  tests/challenges/test_sdk_compat.py \
  --junitxml="$AGENTTEST_JUNIT_DIR/challenges.xml" -o junit_suite_name=challenges "$@"

#!/usr/bin/env bash
# Run the original MANTIS tool's own test file, unmodified, against our SDK
# under the original import names (mantis_model_iteration_tool...):
#
#   tests/sdk/run_original_suite.sh ORIGINAL_CHECKOUT
#
# ORIGINAL_CHECKOUT is a checkout of the original's repository (not part of
# this project). The file is copied into a fresh temporary directory two
# levels deep, so the sys.path entry it adds (its grandparent) holds no copy
# of the original package and the imports resolve to sandbox/host/. Prints
# the file's own PASS/FAIL lines and its "N/47 tests passed" line; exits
# with the file's status. Needs the C library (make build).
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: $0 ORIGINAL_CHECKOUT" >&2; exit 2; }
REPO=$(cd "$(dirname "$0")/../.." && pwd)
SRC=$1/test_model_iteration_tool.py
[ -f "$SRC" ] || { echo "run_original_suite: $SRC not found" >&2; exit 2; }
PYTHON=${PYTHON:-/usr/bin/python3}
export AGENTTEST_EVAL_LIB=${AGENTTEST_EVAL_LIB:-$REPO/build/release/libagenttest_eval.so}
[ -f "$AGENTTEST_EVAL_LIB" ] || { echo "run_original_suite: $AGENTTEST_EVAL_LIB missing (make build)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/a/b"
cp "$SRC" "$tmp/a/b/"
cd "$tmp/a/b"
PYTHONPATH="$REPO/sandbox/host${PYTHONPATH:+:$PYTHONPATH}" exec "$PYTHON" -B test_model_iteration_tool.py

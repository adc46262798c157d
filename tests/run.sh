#!/usr/bin/env bash
# Run every test stage in order (tests/stages/NN-name.sh) and print one
# closing line "N passed, N failed" summed over all stages.
#
# Each stage writes JUnit XML files into $AGENTTEST_JUNIT_DIR (cmocka with
# CMOCKA_MESSAGE_OUTPUT=XML, pytest with --junitxml); the totals come from
# those files. A stage that exits non-zero without recording a failure is
# counted as one failed test, so a crash can never read as green.
# Select stages with TEST_STAGES="10-unit 40-e2e" (names without .sh).
set -uo pipefail
cd "$(dirname "$0")/.."

export AGENTTEST_TEST_OUT=${AGENTTEST_TEST_OUT:-$PWD/build/test-out}
export AGENTTEST_JUNIT_DIR=$AGENTTEST_TEST_OUT/junit
export PYTHON=${PYTHON:-/usr/bin/python3}
rm -rf "$AGENTTEST_TEST_OUT"
mkdir -p "$AGENTTEST_JUNIT_DIR"

stages=()
if [ -n "${TEST_STAGES:-}" ]; then
  for s in $TEST_STAGES; do stages+=("tests/stages/$s.sh"); done
else
  for s in tests/stages/*.sh; do stages+=("$s"); done
fi

failed_stages=()
for s in "${stages[@]}"; do
  name=$(basename "$s" .sh)
  echo "=== stage $name ==="
  start=$(date +%s)
  before=$("$PYTHON" tests/lib/junit_sum.py "$AGENTTEST_JUNIT_DIR" --failed-only)
  if bash "$s"; then
    echo "=== stage $name: ok ($(( $(date +%s) - start ))s) ==="
  else
    after=$("$PYTHON" tests/lib/junit_sum.py "$AGENTTEST_JUNIT_DIR" --failed-only)
    if [ "$after" = "$before" ]; then
      # the stage failed but recorded no failed test: count it as one
      printf '<testsuite name="%s" tests="1" failures="1"><testcase name="stage %s"><failure message="stage exited non-zero"/></testcase></testsuite>\n' \
        "$name" "$name" > "$AGENTTEST_JUNIT_DIR/stage-$name.xml"
    fi
    failed_stages+=("$name")
    echo "=== stage $name: FAILED ($(( $(date +%s) - start ))s) ==="
  fi
done

echo
[ "${#failed_stages[@]}" -eq 0 ] || echo "failed stages: ${failed_stages[*]}"
"$PYTHON" tests/lib/junit_sum.py "$AGENTTEST_JUNIT_DIR"
[ "${#failed_stages[@]}" -eq 0 ]

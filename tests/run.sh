#!/usr/bin/env bash
# Run every test stage in order (tests/stages/NN-name.sh) and print one
# closing line "N passed, N failed" summed over all stages.
#
# Each stage writes JUnit XML files into $AGENTTEST_JUNIT_DIR (cmocka with
# CMOCKA_MESSAGE_OUTPUT=XML, pytest with --junitxml); the totals come from
# those files. A stage that exits non-zero without recording a failure is
# counted as one failed test, so a crash can never read as green.
# Select stages with TEST_STAGES="10-unit 40-e2e" (names without .sh).
#
# Stages named together in TEST_STAGE_GROUP run side by side (each with its
# own JUnit folder, merged afterwards, and its output printed when the group
# ends), the group as one step in the order of its first member. The default
# group is the CLI stages: 25-data-cli mostly waits (back-offs and retries
# against a local fake server) while 26 and 27 compute. TEST_STAGE_GROUP=
# runs every stage alone.
set -uo pipefail
cd "$(dirname "$0")/.."

export AGENTTEST_TEST_OUT=${AGENTTEST_TEST_OUT:-$PWD/build/test-out}
export AGENTTEST_JUNIT_DIR=$AGENTTEST_TEST_OUT/junit
export PYTHON=${PYTHON:-/usr/bin/python3}
rm -rf "$AGENTTEST_TEST_OUT"
mkdir -p "$AGENTTEST_JUNIT_DIR"
group=" ${TEST_STAGE_GROUP-25-data-cli 26-backtest-cli 27-challenges} "

stages=()
if [ -n "${TEST_STAGES:-}" ]; then
  for s in $TEST_STAGES; do stages+=("tests/stages/$s.sh"); done
else
  for s in tests/stages/*.sh; do stages+=("$s"); done
fi

failed_stages=()

# record NAME JUNIT_DIR RC SECONDS: the stage's verdict line; a stage that
# failed without recording a failed test in JUNIT_DIR is counted as one.
record() {
  local name=$1 dir=$2 rc=$3 took=$4 before=$5 after
  if [ "$rc" -eq 0 ]; then
    echo "=== stage $name: ok (${took}s) ==="
    return
  fi
  after=$("$PYTHON" tests/lib/junit_sum.py "$dir" --failed-only)
  if [ "$after" = "$before" ]; then
    printf '<testsuite name="%s" tests="1" failures="1"><testcase name="stage %s"><failure message="stage exited non-zero"/></testcase></testsuite>\n' \
      "$name" "$name" > "$AGENTTEST_JUNIT_DIR/stage-$name.xml"
  fi
  failed_stages+=("$name")
  echo "=== stage $name: FAILED (${took}s) ==="
}

# run_group STAGE...: the stages side by side, each into its own JUnit
# folder under $AGENTTEST_TEST_OUT/junit-group/ whose files are then moved
# into $AGENTTEST_JUNIT_DIR.
run_group() {
  local s name dir i pids=() names=() starts=() rc
  for s in "$@"; do
    name=$(basename "$s" .sh)
    dir=$AGENTTEST_TEST_OUT/junit-group/$name
    mkdir -p "$dir"
    echo "=== stage $name (side by side with the others of its group) ==="
    AGENTTEST_JUNIT_DIR=$dir bash "$s" >"$AGENTTEST_TEST_OUT/stage-$name.log" 2>&1 &
    pids+=($!); names+=("$name"); starts+=("$(date +%s)")
  done
  for i in "${!pids[@]}"; do
    name=${names[$i]}
    dir=$AGENTTEST_TEST_OUT/junit-group/$name
    wait "${pids[$i]}"; rc=$?
    local took=$(( $(date +%s) - ${starts[$i]} ))
    echo "=== stage $name output ==="
    cat "$AGENTTEST_TEST_OUT/stage-$name.log"
    record "$name" "$dir" "$rc" "$took" 0
    find "$dir" -maxdepth 1 -name '*.xml' -exec mv -t "$AGENTTEST_JUNIT_DIR" {} +
  done
  rm -rf "$AGENTTEST_TEST_OUT/junit-group"
}

pending=()
for s in "${stages[@]}" ""; do
  name=$(basename "${s:-none}" .sh)
  if [ -n "$s" ] && [[ $group == *" $name "* ]]; then
    pending+=("$s")
    continue
  fi
  if [ "${#pending[@]}" -gt 0 ]; then
    run_group "${pending[@]}"
    pending=()
  fi
  [ -n "$s" ] || break
  echo "=== stage $name ==="
  start=$(date +%s)
  before=$("$PYTHON" tests/lib/junit_sum.py "$AGENTTEST_JUNIT_DIR" --failed-only)
  bash "$s"
  record "$name" "$AGENTTEST_JUNIT_DIR" $? "$(( $(date +%s) - start ))" "$before"
done

echo
[ "${#failed_stages[@]}" -eq 0 ] || echo "failed stages: ${failed_stages[*]}"
"$PYTHON" tests/lib/junit_sum.py "$AGENTTEST_JUNIT_DIR"
[ "${#failed_stages[@]}" -eq 0 ]

#!/usr/bin/env bash
# Run cmocka test binaries, each writing JUnit XML into $AGENTTEST_JUNIT_DIR.
# usage: run_cmocka.sh PREFIX BINARY...   (PREFIX names the XML files)
set -uo pipefail
prefix=$1; shift
rc=0
for t in "$@"; do
  name=$(basename "$t")
  CMOCKA_MESSAGE_OUTPUT=XML CMOCKA_XML_FILE="$AGENTTEST_JUNIT_DIR/$prefix-$name.xml" "$t" >/dev/null 2>"$AGENTTEST_TEST_OUT/$prefix-$name.log"
  st=$?
  if [ $st -ne 0 ]; then
    echo "FAIL $prefix $name (exit $st)"; cat "$AGENTTEST_TEST_OUT/$prefix-$name.log" | tail -30
    [ -f "$AGENTTEST_JUNIT_DIR/$prefix-$name.xml" ] && grep -A3 '<failure' "$AGENTTEST_JUNIT_DIR/$prefix-$name.xml" | head -30
    rc=1
  else
    echo "ok   $prefix $name"
  fi
done
exit $rc

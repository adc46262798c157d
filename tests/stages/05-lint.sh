#!/usr/bin/env bash
# Static checks: cppcheck over every C component and mandoc -Tlint over the
# man page (make lint). One JUnit test case; its output is the failure text.
set -uo pipefail
out=$AGENTTEST_JUNIT_DIR/lint.xml
log=$AGENTTEST_TEST_OUT/lint.log
if make --no-print-directory -s lint >"$log" 2>&1; then
  printf '<testsuite name="lint" tests="1" failures="0"><testcase name="cppcheck and mandoc"/></testsuite>\n' >"$out"
  echo "ok   lint"
else
  msg=$(sed -e 's/&/\&amp;/g; s/</\&lt;/g; s/>/\&gt;/g; s/"/\&quot;/g' "$log" | tail -40)
  printf '<testsuite name="lint" tests="1" failures="1"><testcase name="cppcheck and mandoc"><failure message="lint failed">%s</failure></testcase></testsuite>\n' "$msg" >"$out"
  cat "$log"
  exit 1
fi

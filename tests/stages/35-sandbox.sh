#!/usr/bin/env bash
# Sandbox: the escape corpus (tests/sandbox/corpus.py) through the real
# client library, helper, zygote and strategy host, plus the helper's
# verdict table on a static program. Needs root (CI is root); without it
# the stage records one skipped-as-failed test rather than pretending.
set -euo pipefail
out=$AGENTTEST_JUNIT_DIR/sandbox-corpus.xml
if [ "$(id -u)" -ne 0 ]; then
  printf '<testsuite name="sandbox-corpus" tests="1" failures="1"><testcase name="needs root"><failure message="stage 35 must run as root"/></testcase></testsuite>\n' > "$out"
  exit 1
fi
make --no-print-directory -s bin/agenttest-sandbox bin/agenttest-zygote.so \
  build/release/tests/sandbox/sbx-drive build/release/tests/sandbox/verdict_prog
export AGENTTEST_HOST_DIR=$PWD/sandbox/host
export AGENTTEST_SANDBOX_HELPER=$PWD/bin/agenttest-sandbox
mandoc -Tlint -Wwarning sandbox/agenttest-sandbox.1 || { echo "man page lint failed"; exit 1; }
exec "${PYTHON:-/usr/bin/python3}" tests/sandbox/corpus.py \
  --drive build/release/tests/sandbox/sbx-drive --helper bin/agenttest-sandbox \
  --prog build/release/tests/sandbox/verdict_prog --junit "$out"

#!/usr/bin/env bash
# End-to-end tests (pytest, tests/e2e/) against real stacks that
# tests/e2e/conftest.py starts with scripts/stack.sh in temporary
# directories: nginx → FastCGI pool → private MariaDB. Builds nothing:
# `make test` built bin/ first (AGENTTEST_BIN selects another build).
# The files run in two pytest-xdist workers (--dist loadfile: each file's
# tests in order in one worker, every file on stacks of its own), since most
# of an e2e test is waiting for stacks, runners and sandboxes;
# AGENTTEST_E2E_WORKERS=0 runs them in one process.
set -euo pipefail
cd "$(dirname "$0")/../.."
PYTHON=${PYTHON:-/usr/bin/python3}
for b in agenttest agenttest-fcgi; do
  [ -x "${AGENTTEST_BIN:-bin}/$b" ] || { echo "40-e2e: ${AGENTTEST_BIN:-bin}/$b missing (make build)"; exit 1; }
done
workers=${AGENTTEST_E2E_WORKERS:-2}
par=()
[ "$workers" = 0 ] || par=(-n "$workers" --dist loadfile)
exec "$PYTHON" -m pytest -q -p no:cacheprovider "${par[@]}" tests/e2e \
  --junitxml="$AGENTTEST_JUNIT_DIR/e2e.xml" -o junit_suite_name=e2e "$@"

#!/usr/bin/env bash
# Forward scores (issue 18, docs/forward-scores.md): FWD_N (100) completed
# ETH-1H-BINARY evaluations (days_back FWD_DAYS_BACK = 1, distinct code and
# owner each) on a window fetched from the local Binance stand-in, which
# already have a forward score on 5 hours of forward bars; then one new
# hour of data arrives (a prefetch moves the label) and the runner's forward
# job re-scores all of them in one batch. Prints the wall time from the
# label moving to the 100th new forward score being visible in the API,
# the job's own runtime, the time per evaluation, and the CPU (user+sys) of
# the stack's processes over the batch (read from /proc, so other load on
# the shared machine does not count; wall figures do suffer from it: the
# load average is printed). Needs make build; runs a private stack
# (tests/e2e/conftest.py's Stack) with one runner slot per core.
set -euo pipefail
cd "$(dirname "$0")/../.."
PYTHON=${PYTHON:-/usr/bin/python3}
for b in agenttest agenttest-fcgi agenttest-runner; do
  [ -x "${AGENTTEST_BIN:-bin}/$b" ] || { echo "bench/forward_scores: ${AGENTTEST_BIN:-bin}/$b missing (make build)"; exit 1; }
done
exec "$PYTHON" tests/bench/forward_scores.py "${FWD_N:-100}" "${FWD_DAYS_BACK:-1}"

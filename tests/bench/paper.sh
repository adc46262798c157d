#!/usr/bin/env bash
# Paper trading and forward scores (issue 18; docs/paper-trading.md,
# docs/forward-scores.md), the two figures of the issue's benchmark, each on
# a private stack (the e2e Stack of tests/e2e/conftest.py):
#
# 1. tests/bench/paper.py: the latency from a new candle stored (the prefetch
#    that registered it completed) to the default's equity for that bar
#    visible in GET /defaults/paper, over PAPER_BARS (10) new minutes served
#    one at a time by the Binance stand-in. Each bar is one sandboxed
#    strategy call on the grown series plus the whole-series backtest next
#    to it. The runner's CPU time per bar is printed too.
# 2. tests/bench/forward_scores.py: FWD_N (100) completed ETH-1H-BINARY
#    evaluations (days_back FWD_DAYS_BACK = 1, distinct code and owner each)
#    that already have a forward score on 5 hours of forward bars; one new
#    hour of data arrives (a prefetch moves the label) and the runner's
#    forward job re-scores all of them in one batch: the wall time from the
#    label moving to the 100th new score visible in the API, the job's own
#    runtime, the time per evaluation and the CPU (user+sys) of the stack's
#    processes over the batch (from /proc: other load on the shared machine
#    does not count; the wall figures do suffer from it, so the load average
#    is printed). PAPER_PARTS="paper" or "forward" runs one of the two.
set -euo pipefail
cd "$(dirname "$0")/../.."
PYTHON=${PYTHON:-/usr/bin/python3}
for b in agenttest agenttest-fcgi agenttest-runner; do
  [ -x "${AGENTTEST_BIN:-bin}/$b" ] || { echo "paper: ${AGENTTEST_BIN:-bin}/$b missing (make build)"; exit 1; }
done
parts=" ${PAPER_PARTS:-paper forward} "
if [[ $parts == *" paper "* ]]; then
  "$PYTHON" tests/bench/paper.py "${PAPER_BARS:-10}"
fi
if [[ $parts == *" forward "* ]]; then
  "$PYTHON" tests/bench/forward_scores.py "${FWD_N:-100}" "${FWD_DAYS_BACK:-1}"
fi

#!/usr/bin/env bash
# Paper trading (docs/paper-trading.md): the latency from a new candle stored
# (the prefetch that registered it completed) to the default's equity for
# that bar visible in GET /defaults/paper, over PAPER_BARS (10) new minutes
# served one at a time by the Binance stand-in, on a private stack (the e2e
# Stack of tests/e2e/conftest.py). Each bar is one sandboxed strategy call
# on the grown series plus the whole-series backtest next to it. The
# machine is shared: the runner's CPU time per bar is printed too.
set -euo pipefail
cd "$(dirname "$0")/../.."
PYTHON=${PYTHON:-/usr/bin/python3}
for b in agenttest agenttest-fcgi agenttest-runner; do
  [ -x "${AGENTTEST_BIN:-bin}/$b" ] || { echo "paper: ${AGENTTEST_BIN:-bin}/$b missing (make build)"; exit 1; }
done
exec "$PYTHON" tests/bench/paper.py "${PAPER_BARS:-10}"

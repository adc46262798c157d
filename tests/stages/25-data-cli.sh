#!/usr/bin/env bash
# `agenttest data` end to end (pytest, tests/cli/test_data_cli.py): synth
# (pinned hash, byte-identical output, option errors), verify/info (flipped
# byte, truncation, bad manifest), import (klines ms/µs, gaps, line-numbered
# rejections, prices-csv) and the planted ETH momentum measured on the
# default market; `data fetch` against the local Binance stand-in
# (tests/cli/test_market_fetch.py: faults, gaps, refresh, a killed fetch).
# Builds nothing: `make test` built bin/ first.
set -euo pipefail
cd "$(dirname "$0")/../.."
PYTHON=${PYTHON:-/usr/bin/python3}
[ -x "${AGENTTEST_BIN:-bin}/agenttest" ] || { echo "25-data-cli: ${AGENTTEST_BIN:-bin}/agenttest missing (make build)"; exit 1; }
exec "$PYTHON" -m pytest -q -p no:cacheprovider tests/cli/test_data_cli.py tests/cli/test_market_fetch.py \
  --junitxml="$AGENTTEST_JUNIT_DIR/data-cli.xml" -o junit_suite_name=data-cli "$@"

#!/usr/bin/env bash
# `agenttest backtest` end to end (pytest, tests/cli/test_backtest_cli.py):
# the original's examples with the spec's metric vectors and config_hash
# vectors, broken strategies (length, NaN, first value, exceptions with
# scrubbed tracebacks, syntax errors, exits, timeouts), the causality audit
# (the original's momentum example fails, causal strategies pass), positions
# strategies against an independent engine, 10k and 1M-bar series, and the
# confined sandbox once it is available; the host's wire constants
# (test_host_wire.py) and what it sends back (test_host_output.py: packed
# float64, frame metas, seeds) and the compiled-code hand-over of audited
# runs (test_host_code.py). Builds nothing: `make test` built bin/ first.
set -euo pipefail
cd "$(dirname "$0")/../.."
PYTHON=${PYTHON:-/usr/bin/python3}
[ -x "${AGENTTEST_BIN:-bin}/agenttest" ] || { echo "26-backtest-cli: ${AGENTTEST_BIN:-bin}/agenttest missing (make build)"; exit 1; }
exec "$PYTHON" -m pytest -q -p no:cacheprovider tests/cli/test_backtest_cli.py tests/cli/test_host_wire.py tests/cli/test_host_output.py tests/cli/test_host_code.py \
  --junitxml="$AGENTTEST_JUNIT_DIR/backtest-cli.xml" -o junit_suite_name=backtest-cli "$@"

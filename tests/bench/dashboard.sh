#!/usr/bin/env bash
# The dashboard overview's first render in Debian's Chromium (moved here
# from the browser test, which keeps only the functional check): a private
# stack (nginx, pool, MariaDB, runner), no token, no rate limit, one day of
# synthetic market; tests/bench/dashboard_render.mjs opens the overview in
# N new tabs and prints each time, the median and the minimum.
#
# Knobs: N=9 (loads), KEEP=1 (leave the stack running).
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=/usr/bin/python3

. tests/bench/lib.sh
bench_need dashboard agenttest agenttest-fcgi agenttest-runner agenttest-sandbox
[ -f node_modules/playwright-core/package.json ] || { echo "bench/dashboard: node_modules missing (make deps)"; exit 1; }
[ -x "${CHROMIUM:-/usr/bin/chromium}" ] || { echo "bench/dashboard: ${CHROMIUM:-/usr/bin/chromium} missing (make deps)"; exit 1; }
bench_stack_env dashboard
export MANTIS_LOG_LEVEL=warning AGENTTEST_SYNTH_DAYS=1 AGENTTEST_NGINX_ACCESS_LOG=0

scripts/stack.sh start >/dev/null
AGENTTEST_URL=$base node tests/bench/dashboard_render.mjs

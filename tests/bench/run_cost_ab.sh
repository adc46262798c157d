#!/usr/bin/env bash
# Paired A/B of the per-run cost (issue 19): two private stacks side by side,
# A from another built tree (AB_A_DIR, e.g. a checkout of main with its own
# bin/) and B from this one, with audited 5-bar buy-and-hold runs
# (POST /runs with wait) alternating between them one by one (A B B A ...),
# so both sides see the same machine load. Prints each side's CPU per run,
# summed over every process of its stack (read from /proc as in
# run_cost.py), its minor faults per run and the load average.
# Knobs: AB_A_DIR (required), AB_N=100 runs per side, AUDIT=1, RUNNER_SLOTS=2.
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=/usr/bin/python3
B_DIR=$PWD
A_DIR=${AB_A_DIR:?set AB_A_DIR to the other built tree}
for d in "$A_DIR" "$B_DIR"; do
  [ -x "$d/bin/agenttest-runner" ] || { echo "bench/run_cost_ab: $d/bin missing (make build there)"; exit 1; }
done
free_port() { "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
export MANTIS_HOST=127.0.0.1 MANTIS_RATE_LIMIT_RPM=0 MANTIS_LOG_LEVEL=warning AGENTTEST_SYNTH_DAYS=7
export AGENTTEST_RUNNER_SLOTS=${RUNNER_SLOTS:-2} RUNS_MAX_QUEUED=1000000 AGENTTEST_NGINX_ACCESS_LOG=0
unset MANTIS_AUTH_TOKEN AGENTTEST_CONFIG AGENTTEST_BIN
va=$(mktemp -d /tmp/agenttest-bench-ab-a-XXXXXX)
vb=$(mktemp -d /tmp/agenttest-bench-ab-b-XXXXXX)
pa=$(free_port)
pb=$(free_port)
cleanup() {
  (cd "$A_DIR" && AGENTTEST_VAR=$va scripts/stack.sh stop >/dev/null 2>&1) || true
  (cd "$B_DIR" && AGENTTEST_VAR=$vb scripts/stack.sh stop >/dev/null 2>&1) || true
  rm -rf "$va" "$vb"
}
trap cleanup EXIT
(cd "$A_DIR" && AGENTTEST_VAR=$va MANTIS_PORT=$pa scripts/stack.sh start >/dev/null)
(cd "$B_DIR" && AGENTTEST_VAR=$vb MANTIS_PORT=$pb scripts/stack.sh start >/dev/null)
echo "bench/run_cost_ab: A $A_DIR, B $B_DIR, $(nproc) CPUs, load at start $(cut -d' ' -f1-3 /proc/loadavg)"
"$PY" tests/bench/run_cost_ab.py "http://127.0.0.1:$pa" "$va/run" "http://127.0.0.1:$pb" "$vb/run" \
  "${AB_N:-100}" "${AUDIT:-1}"

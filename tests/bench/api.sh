#!/usr/bin/env bash
# API throughput: wrk against GET /health through nginx → FastCGI pool, on a
# private stack (scripts/stack.sh in a temporary AGENTTEST_VAR, rate limit
# off: MANTIS_RATE_LIMIT_RPM=0), for each pool size in WORKERS at 16 and 64
# connections, DURATION each, and prints requests/s with p50/p99 latency.
# Target (issue 2): >= 15,000 requests/s and p99 < 10 ms at 64 connections.
#
# Knobs: WORKERS="2 4" (pool sizes), DURATION=10s, CONNECTIONS="16 64",
# WRK_THREADS=2, AGENTTEST_BIN, and any stack setting (AGENTTEST_NGINX_WORKERS,
# AGENTTEST_NGINX_KEEPALIVE, AGENTTEST_NGINX_ACCESS_LOG, ...).
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=/usr/bin/python3
WORKERS=${WORKERS:-"2 4"}
DURATION=${DURATION:-10s}
CONNECTIONS=${CONNECTIONS:-"16 64"}
WRK_THREADS=${WRK_THREADS:-2}

. tests/bench/lib.sh
bench_need api wrk agenttest agenttest-fcgi agenttest-runner
bench_stack_env api
export AGENTTEST_SYNTH_DAYS=${AGENTTEST_SYNTH_DAYS:-1}
url="$base/health"

# run_wrk CONNS: one measurement; prints "rps p50 p99 errors".
run_wrk() {
  local out rps p50 p99 errs
  out=$(wrk -t"$WRK_THREADS" -c"$1" -d"$DURATION" --latency "$url")
  rps=$(awk '/^Requests\/sec:/ {printf "%d", $2}' <<<"$out")
  p50=$(to_ms "$(awk '$1 == "50%" {print $2}' <<<"$out")")
  p99=$(to_ms "$(awk '$1 == "99%" {print $2}' <<<"$out")")
  errs=$(awk '/Non-2xx or 3xx responses:/ {n += $NF} /Socket errors:/ {gsub(",", ""); n += $4 + $6 + $8 + $10} END {print n + 0}' <<<"$out")
  echo "$rps $p50 $p99 $errs"
}

printf '%-8s %-6s %12s %9s %9s %7s\n' workers conns "requests/s" "p50 ms" "p99 ms" errors
best=""
for w in $WORKERS; do
  export AGENTTEST_WORKERS=$w
  scripts/stack.sh start >/dev/null
  wrk -t1 -c8 -d2s "$url" >/dev/null   # warm-up: connections, caches
  for c in $CONNECTIONS; do
    read -r rps p50 p99 errs < <(run_wrk "$c")
    printf '%-8s %-6s %12s %9s %9s %7s\n' "$w" "$c" "$rps" "$p50" "$p99" "$errs"
    if [ "$c" = 64 ]; then
      best+="$w $rps $p99"$'\n'
    fi
  done
  if [ -z "${calib:-}" ]; then
    # Calibration: nginx answering on its own (its JSON 404 for a missing
    # static file) on the same machine at the same moment. The issue quotes
    # about 80,000 requests/s for this on the idle reference machine; a much
    # lower figure means the machine is busy and every figure is scaled down.
    calib=$(wrk -t"$WRK_THREADS" -c64 -d"$DURATION" "http://127.0.0.1:$MANTIS_PORT/bench-calibration-missing" |
      awk '/^Requests\/sec:/ {printf "%d", $2}')
  fi
  scripts/stack.sh stop >/dev/null
done
echo "calibration: nginx alone (its JSON 404) at 64 connections: $calib requests/s"

# The verdict on the best 64-connection figure.
if [ -n "$best" ]; then
  read -r w rps p99 < <(sort -k2 -n -r <<<"$best" | head -n 1)
  verdict=met
  [ "$rps" -ge 15000 ] && awk -v p="$p99" 'BEGIN {exit !(p < 10)}' || verdict="NOT met"
  echo "best at 64 connections: $w workers, $rps requests/s, p99 $p99 ms (target >= 15000 req/s, p99 < 10 ms: $verdict)"
fi

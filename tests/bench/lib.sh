# tests/bench/lib.sh: what the stack benchmarks share (sourced, not run).
#
#   bench_need NAME [wrk] BIN...   exit 1 unless wrk (when named) and every
#                                  ${AGENTTEST_BIN:-bin}/BIN are there
#   bench_stack_env NAME           a private stack's environment: a fresh
#                                  AGENTTEST_VAR (in $var), a free MANTIS_PORT
#                                  on 127.0.0.1, no rate limit, no token, no
#                                  config file; $base is its URL; the stack is
#                                  stopped and $var removed on exit (KEEP=1
#                                  keeps both). Set more variables after it.
#   to_ms VALUE                    wrk's "812.00us" / "1.23ms" / "1.05s" in ms
#
# The caller has cd'ed to the repository root and set PY.

bench_need() {
  local name=$1 b
  shift
  if [ "${1:-}" = wrk ]; then
    command -v wrk >/dev/null || { echo "bench/$name: wrk is not installed (make deps)"; exit 1; }
    shift
  fi
  for b in "$@"; do
    [ -x "${AGENTTEST_BIN:-bin}/$b" ] || { echo "bench/$name: ${AGENTTEST_BIN:-bin}/$b missing (make build)"; exit 1; }
  done
}

bench_cleanup() {
  scripts/stack.sh stop >/dev/null 2>&1 || true
  rm -rf "$var"
}

bench_stack_env() {
  var=$(mktemp -d "/tmp/agenttest-bench-$1-XXXXXX")
  export AGENTTEST_VAR=$var
  MANTIS_PORT=$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  export MANTIS_PORT MANTIS_HOST=127.0.0.1 MANTIS_RATE_LIMIT_RPM=0
  unset MANTIS_AUTH_TOKEN AGENTTEST_CONFIG
  base="http://127.0.0.1:$MANTIS_PORT"
  [ -n "${KEEP:-}" ] || trap bench_cleanup EXIT
}

to_ms() {
  "$PY" -c '
import re, sys
m = re.fullmatch(r"([0-9.]+)(us|ms|s|m)", sys.argv[1])
print("%.2f" % (float(m.group(1)) * {"us": 0.001, "ms": 1, "s": 1000, "m": 60000}[m.group(2)]))' "$1"
}

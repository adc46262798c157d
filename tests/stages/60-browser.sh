#!/usr/bin/env bash
# Browser tests (tests/browser/*.test.mjs, node's built-in test runner with
# playwright-core driving Debian's Chromium) against a real stack: nginx →
# FastCGI pool → private MariaDB, with the runner and the sandbox, started
# here with scripts/stack.sh in a temporary directory on a free port, with
# MANTIS_AUTH_TOKEN set (so signing in is tested too) and the rate limit
# off, and stopped at the end whatever happens. JUnit XML goes to
# $AGENTTEST_JUNIT_DIR/browser.xml, screenshots to
# $AGENTTEST_TEST_OUT/screenshots/, the stack's logs to
# $AGENTTEST_TEST_OUT/browser-logs/. Builds nothing (`make test` did).
set -euo pipefail
cd "$(dirname "$0")/../.."
REPO=$PWD
PYTHON=${PYTHON:-/usr/bin/python3}
BIN=${AGENTTEST_BIN:-$REPO/bin}
OUT=${AGENTTEST_TEST_OUT:-$REPO/build/test-out}
JUNIT=${AGENTTEST_JUNIT_DIR:-$OUT/junit}
mkdir -p "$OUT" "$JUNIT"

for b in agenttest agenttest-fcgi agenttest-runner agenttest-sandbox; do
  [ -x "$BIN/$b" ] || { echo "60-browser: $BIN/$b missing (make build)"; exit 1; }
done
[ -f node_modules/playwright-core/package.json ] && [ -f node_modules/axe-core/axe.min.js ] ||
  { echo "60-browser: node_modules missing (make deps runs npm ci)"; exit 1; }
[ -f static/vendor/uPlot.iife.min.js ] && [ -f static/vendor/codemirror.js ] || { echo "60-browser: static/vendor missing (npm ci runs the vendor step)"; exit 1; }
[ -x "${CHROMIUM:-/usr/bin/chromium}" ] || { echo "60-browser: ${CHROMIUM:-/usr/bin/chromium} missing (make deps)"; exit 1; }

VAR=$(mktemp -d "${TMPDIR:-/tmp}/agenttest-browser-XXXXXX")
# A strong shared admin token (the stack refuses weak ones) and a free port.
TOKEN="Br-$("$PYTHON" -c 'import secrets; print(secrets.token_urlsafe(32))')"
PORT=$("$PYTHON" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')

# Only our settings: nothing from the caller's environment changes the stack.
unset AGENTTEST_CONFIG DATABASE_URL AGENTTEST_AUTH AGENTTEST_SECRET_FILE AGENTTEST_FCGI_SOCKET \
      AGENTTEST_BODY_LIMIT AGENTTEST_RATE_BURST AGENTTEST_URL AGENTTEST_TOKEN BINANCE_API_URL \
      AGENTTEST_ANTHROPIC_UPSTREAM
export AGENTTEST_VAR=$VAR AGENTTEST_BIN=$BIN MANTIS_HOST=127.0.0.1 MANTIS_PORT=$PORT MANTIS_DATA_DIR=$VAR/market \
       MANTIS_AUTH_TOKEN=$TOKEN MANTIS_RATE_LIMIT_RPM=0 AGENTTEST_WORKERS=2 AGENTTEST_DB_BUFFER_POOL=32M

standin=
astandin=
cleanup() {
  local rc=$?
  scripts/stack.sh stop >/dev/null 2>&1 || true
  [ -z "$standin" ] || { kill "$standin" 2>/dev/null; wait "$standin" 2>/dev/null; } || true
  [ -z "$astandin" ] || { kill "$astandin" 2>/dev/null; wait "$astandin" 2>/dev/null; } || true
  if [ -d "$VAR/log" ]; then
    rm -rf "$OUT/browser-logs"
    cp -r "$VAR/log" "$OUT/browser-logs" 2>/dev/null || true
  fi
  rm -rf "$VAR" ${VAR2:+"$VAR2"}
  exit "$rc"
}
trap cleanup EXIT INT TERM

# The local Binance stand-in (ETH with gaps) for the fetches of the session.
"$PYTHON" tests/lib/binance_standin.py --gap-symbol ETHUSDT >"$VAR/standin.port" &
standin=$!
for _ in $(seq 100); do [ -s "$VAR/standin.port" ] && break; sleep 0.1; done
[ -s "$VAR/standin.port" ] || { echo "60-browser: the Binance stand-in did not start"; exit 1; }
export BINANCE_API_URL="http://127.0.0.1:$(head -n 1 "$VAR/standin.port")"

# The local Anthropic stand-in as the stack's model API, for the Ask box
# (tests/browser/agents_ask.test.mjs): its script with the path of the file
# that releases the held first answer, its request log for the test.
export AGENTTEST_ANTHROPIC_LOG=$VAR/anthropic.jsonl AGENTTEST_ANTHROPIC_RELEASE=$VAR/anthropic.release
sed "s|@RELEASE@|$AGENTTEST_ANTHROPIC_RELEASE|" tests/browser/agents_ask.script.json >"$VAR/anthropic.script.json"
"$PYTHON" tests/lib/anthropic_standin.py --script "$VAR/anthropic.script.json" --log "$AGENTTEST_ANTHROPIC_LOG" >"$VAR/anthropic.port" &
astandin=$!
for _ in $(seq 100); do [ -s "$VAR/anthropic.port" ] && break; sleep 0.1; done
[ -s "$VAR/anthropic.port" ] || { echo "60-browser: the Anthropic stand-in did not start"; exit 1; }
export AGENTTEST_ANTHROPIC_UPSTREAM="http://127.0.0.1:$(head -n 1 "$VAR/anthropic.port")"

echo "60-browser: starting a stack on 127.0.0.1:$PORT in $VAR"
scripts/stack.sh start
# The URL must be ours: nginx of this stack listens (not another server
# that happened to take the port meanwhile).
ngpid=$(cat "$VAR/run/nginx.pid" 2>/dev/null || true)
[ -n "$ngpid" ] && kill -0 "$ngpid" 2>/dev/null || { echo "60-browser: this stack's nginx is not running"; exit 1; }

set -a
# shellcheck disable=SC1091
. "$VAR/stack.env"
set +a
AGENTTEST_USER_TOKEN=$("$BIN/agenttest" token create --user browser-user --role user | tail -n 1)

# The Data page's audit: 60 days of BTC and ETH (ETH with gaps) fetched from
# the local Binance stand-in (started before the stack, so the runner's
# prefetch jobs use it too) into the stack's MANTIS_DATA_DIR.
AGENTTEST_CONFIG=/dev/null \
  "$BIN/agenttest" data fetch --days-back 60 --assets BTC,ETH --no-pace --parallel 2 >/dev/null ||
  { echo "60-browser: agenttest data fetch from the stand-in failed"; exit 1; }
export AGENTTEST_USER_TOKEN AGENTTEST_TEST_OUT=$OUT

# node's test runner: spec on stdout for people, JUnit for tests/run.sh.
# One file at a time (they share the stack); bounded by --test-timeout.
rc=0
NO_COLOR=1 FORCE_COLOR=0 node --test --test-concurrency=1 --test-timeout=600000 \
  --test-reporter=spec --test-reporter-destination=stdout \
  --test-reporter=junit --test-reporter-destination="$JUNIT/browser.xml" \
  tests/browser/units.test.mjs tests/browser/auth.test.mjs tests/browser/dashboard.test.mjs \
  tests/browser/errors.test.mjs tests/browser/agents_analysis.test.mjs || rc=$?
# The Agents pages (issue 17): on the same stack, a run of its own, since it
# waits for the built-in agent's scored iterations (minutes of CPU each) and
# node's --test-timeout bounds a whole file, not one test; the file's own
# tests carry their bounds. Then the Ask box (agents_ask.test.mjs, after
# the agent above is stopped, so the runner is free to fail its
# claude-code agent at once for want of a key). Their JUnit goes to
# browser-agents.xml.
NO_COLOR=1 FORCE_COLOR=0 node --test --test-concurrency=1 --test-timeout=1800000 \
  --test-reporter=spec --test-reporter-destination=stdout \
  --test-reporter=junit --test-reporter-destination="$JUNIT/browser-agents.xml" \
  tests/browser/agents.test.mjs tests/browser/agents_ask.test.mjs || rc=$?
# The rate limit at its default (issue 17 item 7): a second stack of its
# own, no token (the loopback admin), MANTIS_RATE_LIMIT_RPM unset, after
# the first one is stopped; tests/browser/ratelimit.test.mjs opens six tabs
# at once and then spends the burst. Its JUnit goes to browser-ratelimit.xml.
scripts/stack.sh stop >/dev/null 2>&1 || true
VAR2=$(mktemp -d "${TMPDIR:-/tmp}/agenttest-browser-rl-XXXXXX")
PORT2=$("$PYTHON" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
unset MANTIS_AUTH_TOKEN MANTIS_RATE_LIMIT_RPM AGENTTEST_TOKEN AGENTTEST_URL DATABASE_URL AGENTTEST_SECRET_FILE \
      AGENTTEST_FCGI_SOCKET AGENTTEST_CHECK_SOCKET AGENTTEST_CONFIG   # the first stack's stack.env
export AGENTTEST_VAR=$VAR2 MANTIS_PORT=$PORT2 MANTIS_DATA_DIR=$VAR2/market AGENTTEST_SYNTH_DAYS=1
echo "60-browser: starting a rate-limited stack on 127.0.0.1:$PORT2 in $VAR2"
if scripts/stack.sh start; then
  AGENTTEST_URL="http://127.0.0.1:$PORT2" NO_COLOR=1 FORCE_COLOR=0 node --test --test-concurrency=1 --test-timeout=300000 \
    --test-reporter=spec --test-reporter-destination=stdout \
    --test-reporter=junit --test-reporter-destination="$JUNIT/browser-ratelimit.xml" \
    tests/browser/ratelimit.test.mjs || rc=$?
  [ ! -d "$VAR2/log" ] || { rm -rf "$OUT/browser-rl-logs"; cp -r "$VAR2/log" "$OUT/browser-rl-logs" 2>/dev/null || true; }
else
  echo "60-browser: the rate-limited stack did not start"; rc=1
fi
# Error texts may carry terminal escapes, which XML 1.0 cannot hold: drop
# the control characters so the report stays readable by tests/run.sh.
for xml in "$JUNIT/browser.xml" "$JUNIT/browser-agents.xml" "$JUNIT/browser-ratelimit.xml"; do
"$PYTHON" - "$xml" <<'PY'
import re, sys
p = sys.argv[1]
try:
    t = open(p, encoding="utf-8", errors="replace").read()
except FileNotFoundError:
    sys.exit(0)
t = re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", t)
t = re.sub(r"[\x00-\x08\x0b\x0c\x0e-\x1f]", "", t)
open(p, "w", encoding="utf-8").write(t)
PY
done
exit "$rc"

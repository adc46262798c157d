#!/usr/bin/env bash
# The original agenttest's README flow (spec/agenttest.md §7.1) against the
# running stack: register the example buy-and-hold file, run it on the
# original's 5-bar demo data (dataset version "v1": prices 100..104), then
# show the run and the leaderboard. Each response is printed. Runs are
# asynchronous here: POST /runs answers 202 and `wait` returns the finished
# run. Expect a score of about 34.83.
#
#   scripts/demo.sh            start the stack if needed (scripts/stack.sh start)
#   AGENTTEST_URL=... scripts/demo.sh   use another running instance
#
# Without a token the stack admits loopback clients as the local admin; set
# AGENTTEST_TOKEN (an admin token: registering a server file is admin-only)
# for a stack that requires authentication.
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
VAR=${AGENTTEST_VAR:-$REPO/var}

if [ -z "${AGENTTEST_URL:-}" ]; then
  if [ ! -f "$VAR/stack.env" ] || ! "$REPO/scripts/stack.sh" status >/dev/null 2>&1; then
    "$REPO/scripts/stack.sh" start
  fi
  AGENTTEST_URL=$(. "$VAR/stack.env" && printf '%s' "$AGENTTEST_URL")
  [ -n "${AGENTTEST_TOKEN:-}" ] || AGENTTEST_TOKEN=$(. "$VAR/stack.env" && printf '%s' "${AGENTTEST_TOKEN:-}")
fi
A=$AGENTTEST_URL
AUTH=()
[ -z "${AGENTTEST_TOKEN:-}" ] || AUTH=(-H "Authorization: Bearer $AGENTTEST_TOKEN")
DATASET_VERSION=${DEMO_DATASET_VERSION:-v1}

# post PATH JSON: POST a JSON body, print and return the response.
post() {
  curl -sS -X POST "$A$1" "${AUTH[@]}" -H 'Content-Type: application/json' -d "$2"
}
# field NAME: read one top-level field of the JSON on stdin.
field() {
  /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)[sys.argv[1]])' "$1"
}

echo "== GET /health"
curl -sS "$A/health"; echo

STRATEGY_PATH="$REPO/examples/strategies/buy_and_hold.py"
echo "== POST /strategies {strategy_path: $STRATEGY_PATH}"
reg=$(post /strategies "{\"strategy_path\": \"$STRATEGY_PATH\"}")
echo "$reg"
vid=$(printf '%s' "$reg" | field strategy_version_id)

echo "== POST /runs {strategy_path, dataset_version: $DATASET_VERSION, wait: 60}"
run=$(post /runs "{\"strategy_path\": \"$STRATEGY_PATH\", \"dataset_version\": \"$DATASET_VERSION\", \"params\": {}, \"wait\": 60}")
echo "$run"
run_id=$(printf '%s' "$run" | field run_id)

echo "== GET /runs/$run_id"
curl -sS "${AUTH[@]}" "$A/runs/$run_id"; echo

echo "== GET /leaderboard?dataset_version=$DATASET_VERSION"
curl -sS "${AUTH[@]}" "$A/leaderboard?dataset_version=$DATASET_VERSION"; echo

echo "== POST /defaults/promote {strategy_version_id: $vid, dataset_version: $DATASET_VERSION}"
post /defaults/promote "{\"strategy_version_id\": $vid, \"dataset_version\": \"$DATASET_VERSION\"}"; echo

echo "== GET /defaults?dataset_version=$DATASET_VERSION"
curl -sS "${AUTH[@]}" "$A/defaults?dataset_version=$DATASET_VERSION"; echo

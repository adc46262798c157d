#!/usr/bin/env bash
# The original agenttest's agent-submission flow (spec/agenttest.md §7.2)
# against the running stack: submit an SMA-crossover strategy as source
# code, run it with {"window": 3}, poll the run until it finishes, print
# score, total return and sharpe, then the top 5 of the leaderboard.
#
# Unlike the original's (whose loop covered an empty range on 5 prices and
# returned a flat curve), this strategy is causal and trades: on the 5-bar
# demo data it holds from bar 3, so the result is not a flat zero.
#
#   scripts/submission_demo.sh          start the stack if needed
#   AGENTTEST_URL=... AGENTTEST_TOKEN=... scripts/submission_demo.sh
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
PY=/usr/bin/python3

read -r -d '' CODE <<'PYCODE' || true
def simulate(prices, params):
    """SMA crossover, decided at the close of bar t-1 and held over bar t."""
    window = int(params.get("window", 3))
    equity = [1.0]
    for t in range(1, len(prices)):
        past = prices[max(0, t - window):t]
        long = len(past) == window and prices[t - 1] > sum(past) / window - 1e-12
        step = prices[t] / prices[t - 1] if long else 1.0
        equity.append(equity[-1] * step)
    return equity
PYCODE

body=$($PY -c 'import json,sys; print(json.dumps({"code": sys.argv[1], "name": "sma_crossover_test", "params": {"window": 3}}))' "$CODE")
echo "== Step 1: POST /strategies/submit (sma_crossover_test)"
sub=$(curl -sS -X POST "$A/strategies/submit" "${AUTH[@]}" -H 'Content-Type: application/json' -d "$body")
echo "$sub"
vid=$($PY -c 'import json,sys; print(json.load(sys.stdin)["strategy_version_id"])' <<<"$sub")

echo "== Step 2: POST /runs {strategy_version_id: $vid, params: {window: 3}}"
run=$(curl -sS -X POST "$A/runs" "${AUTH[@]}" -H 'Content-Type: application/json' \
  -d "{\"strategy_version_id\": $vid, \"dataset_version\": \"$DATASET_VERSION\", \"params\": {\"window\": 3}}")
echo "$run"
run_id=$($PY -c 'import json,sys; print(json.load(sys.stdin)["run_id"])' <<<"$run")

echo "== Step 3: poll GET /runs/$run_id"
status=queued
for _ in $(seq 1 100); do
  res=$(curl -sS "${AUTH[@]}" "$A/runs/$run_id")
  status=$($PY -c 'import json,sys; print(json.load(sys.stdin)["status"])' <<<"$res")
  echo "   status: $status"
  case $status in completed|failed|cancelled) break ;; esac
  sleep 0.1
done
echo "$res"

echo "== Step 4: results"
$PY -c '
import json, sys
r = json.load(sys.stdin)
m = r.get("metrics") or {}
if r["status"] != "completed":
    print("   run", r["status"], r.get("error"))
else:
    print("   score:        %.4f" % m["score"])
    print("   total return: %.2f %%" % (m["total_return"] * 100))
    print("   sharpe:       %.4f" % m["sharpe"])
' <<<"$res"

echo "== Step 5: GET /leaderboard?dataset_version=$DATASET_VERSION&limit=5"
curl -sS "${AUTH[@]}" "$A/leaderboard?dataset_version=$DATASET_VERSION&limit=5"; echo

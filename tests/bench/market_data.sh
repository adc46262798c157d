#!/usr/bin/env bash
# Market data benchmark: `agenttest data fetch` of 29 assets x DAYS days of
# 1-minute candles (60 days: 2.5 M candles) from the local Binance stand-in
# (tests/lib/binance_standin.py) with pacing off. Prints
#   1. the whole fetch: wall, the CLI's CPU (user+sys), candles/s parsed and
#      stored per CPU second (the stand-in, a Python process generating the
#      JSON, bounds the wall time), peak RSS of the CLI
#   2. a refresh that finds 1 new minute per asset: wall and CPU
# Usage: tests/bench/market_data.sh [DAYS]   (AGENTTEST_BIN: directory of the binary)
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${AGENTTEST_BIN:-bin}/agenttest
PYTHON=${PYTHON:-/usr/bin/python3}
DAYS=${1:-60}
[ -x "$BIN" ] || { echo "market_data.sh: $BIN missing (make build)"; exit 1; }
tmp=$(mktemp -d)
"$PYTHON" tests/lib/binance_standin.py --lag-minutes 2 >"$tmp/port" &
si=$!
trap 'kill $si 2>/dev/null; rm -rf "$tmp"' EXIT
for _ in $(seq 50); do [ -s "$tmp/port" ] && break; sleep 0.1; done
unset DATABASE_URL   # store only: the figures are the fetcher and the store, not a registration
export BINANCE_API_URL="http://127.0.0.1:$(cat "$tmp/port")" AGENTTEST_CONFIG=/dev/null

/usr/bin/time -f "%e %U %S %M" -o "$tmp/t1" "$BIN" data fetch --data-dir "$tmp/d" --days-back "$DAYS" \
  --no-pace --parallel 4 >"$tmp/fetch.json"
"$PYTHON" - "$tmp/t1" "$tmp/fetch.json" <<'PY'
import json, sys
w, u, s, rss = open(sys.argv[1]).read().split()
o = json.load(open(sys.argv[2]))
rows = sum(q["rows"] for q in o["quality"].values())
cpu = float(u) + float(s)
print("fetch %d assets x %d bars = %d candles: wall %.2fs (stand-in bound), CLI cpu %.2fs (user %s, sys %s), "
      "%.0f candles/s per CPU second parsed+stored, %.0f candles/s wall, peak RSS %.0f MiB"
      % (o["assets"], o["bars"], rows, float(w), cpu, u, s, rows / max(cpu, 1e-9), rows / float(w),
         int(rss) / 1024))
PY
curl -s -X POST "$BINANCE_API_URL/admin/lag?minutes=0" >/dev/null
sleep 0.2
/usr/bin/time -f "%e %U %S %M" -o "$tmp/t2" "$BIN" data fetch --data-dir "$tmp/d" --refresh \
  --window "binance-1m-${DAYS}d" --no-pace --parallel 4 >"$tmp/refresh.json"
"$PYTHON" - "$tmp/t2" "$tmp/refresh.json" <<'PY'
import json, sys
w, u, s, rss = open(sys.argv[1]).read().split()
o = json.load(open(sys.argv[2]))
print("refresh: %d new candles, wall %.2fs, cpu %.2fs, peak RSS %.0f MiB (new version %s)"
      % (o["rows_added"], float(w), float(u) + float(s), int(rss) / 1024, o["dataset_hash"][:12]))
PY

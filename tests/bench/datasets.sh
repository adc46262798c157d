#!/usr/bin/env bash
# Dataset benchmarks: prints
#   1. `agenttest data synth` of the default market (60 days x 29 assets,
#      1-minute bars: 86,400 bars, 146 column files, ~97 MiB), wall and CPU
#   2. `agenttest data verify` of it (mmap open + SHA-256 of every file +
#      value checks), wall and throughput
#   3. `agenttest data import --format binance-klines` of 60 days of 1-minute
#      klines for 3 assets (259,200 CSV rows), wall and rows/s
# Usage: tests/bench/datasets.sh [DAYS]   (AGENTTEST_BIN: directory of the binary)
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${AGENTTEST_BIN:-bin}/agenttest
PYTHON=${PYTHON:-/usr/bin/python3}
DAYS=${1:-60}
[ -x "$BIN" ] || { echo "datasets.sh: $BIN missing (make build)"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

timed() { # timed OUTFILE CMD...: run, print "wall user sys" seconds
  local out=$1; shift
  /usr/bin/time -f "%e %U %S" -o "$tmp/time" "$@" >"$out"
  cat "$tmp/time"
}

read -r w u s < <(timed "$tmp/synth.json" "$BIN" data synth --out "$tmp/synth" --version bench --days "$DAYS")
size=$(du -sm "$tmp/synth" | cut -f1)
echo "synth ${DAYS}d x 29 assets: wall ${w}s (user ${u}s, sys ${s}s; the rest is fsync), ${size} MiB"

read -r w u s < <(timed "$tmp/verify.json" "$BIN" data verify "$tmp/synth")
"$PYTHON" - "$w" "$size" <<'PY'
import sys
w, mib = float(sys.argv[1]), float(sys.argv[2])
print(f"open + verify (SHA-256 of every file, value checks): wall {w:.2f}s, {mib / max(w, 1e-9):.0f} MiB/s")
PY

"$PYTHON" - "$tmp/synth" "$tmp" <<'PY'
import json, sys, numpy as np
d, out = sys.argv[1], sys.argv[2]
ts = np.fromfile(f"{d}/ts.i64", dtype="<i8")
for a in ("BTC", "ETH", "SOL"):
    cols = [np.fromfile(f"{d}/{a}.{f}.f64", dtype="<f8") for f in ("open", "high", "low", "close", "volume")]
    with open(f"{out}/{a}USDT-1m.csv", "w") as f:
        for i in range(len(ts)):
            o, h, l, c, v = (x[i] for x in cols)
            f.write(f"{ts[i]},{o!r},{h!r},{l!r},{c!r},{v!r},{ts[i] + 59999},0,0,0,0,0\n")
PY
rows=$(cat "$tmp"/*USDT-1m.csv | wc -l)
read -r w u s < <(timed "$tmp/import.json" "$BIN" data import --format binance-klines --out "$tmp/imported" --version bench-kl \
  "$tmp/BTCUSDT-1m.csv" "$tmp/ETHUSDT-1m.csv" "$tmp/SOLUSDT-1m.csv")
"$PYTHON" - "$w" "$rows" <<'PY'
import sys
w, rows = float(sys.argv[1]), int(sys.argv[2])
print(f"import binance-klines, 3 assets, {rows} rows: wall {w:.2f}s, {rows / max(w, 1e-9):,.0f} rows/s")
PY

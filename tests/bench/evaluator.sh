#!/usr/bin/env bash
# Evaluator benchmark: (1) C metrics over a 10M-bar equity series, ns/bar;
# (2) a pandas reference of the original's formulas on the same series in
# the same run, and the ratio; (3) a full `agenttest backtest` of
# buy-and-hold over 1M bars (trusted, and confined when available), split
# into Python time (interpreter start, strategy load, the host's own
# per-call time, interpreter exit) and the C side's overhead (the rest of
# the CLI's wall time: dataset, transfer, validation, metrics, equity.csv),
# plus the same split in CPU seconds (the host's CPU from the sandbox
# verdict, the CLI's from getrusage), which stays meaningful on a busy
# machine; with and without writing the 1M-row equity.csv.
# Metrics timings are CPU time of the process (best of REPS) for the same
# reason.
# Knobs: BARS (10000000), CLI_BARS (1000000), REPS (3).
set -euo pipefail
cd "$(dirname "$0")/../.."
PYTHON=${PYTHON:-/usr/bin/python3}
BARS=${BARS:-10000000}
CLI_BARS=${CLI_BARS:-1000000}
REPS=${REPS:-3}
make --no-print-directory -s build/release/libevaluator.a build/release/libcommon.a
make --no-print-directory -s bin/agenttest || [ -x bin/agenttest ] || { echo "bin/agenttest missing"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# (1) + (2)
cc -std=c11 -O2 -D_GNU_SOURCE -I. -Icommon $(pkg-config --cflags json-c) -o "$tmp/metrics_bench" \
  tests/bench/evaluator_metrics.c build/release/libevaluator.a build/release/libcommon.a \
  $(pkg-config --libs json-c libsodium) -lm
c_json=$("$tmp/metrics_bench" "$BARS" "$REPS" "$tmp/series.f64")
py_json=$("$PYTHON" tests/bench/evaluator_pandas_ref.py "$tmp/series.f64" "$REPS" "$c_json")
"$PYTHON" - "$c_json" "$py_json" <<'PY'
import json, sys
c, p = json.loads(sys.argv[1]), json.loads(sys.argv[2])
print("metrics, %d bars: C %.2f ns/bar (%.3f s), pandas reference %.2f ns/bar (%.3f s), "
      "C is %.1fx faster; values agree to %.1e"
      % (c["bars"], c["ns_per_bar"], c["seconds"], p["ns_per_bar"], p["seconds"],
         p["seconds"] / c["seconds"], p["max_rel_diff_vs_c"]))
PY

# (3)
"$PYTHON" - "$tmp/prices.csv" "$CLI_BARS" <<'PY'
import sys
import numpy as np
n = int(sys.argv[2])
p = 100 * np.exp(np.cumsum(np.random.default_rng(5).normal(0, 1e-3, n)))
with open(sys.argv[1], "w") as f:
    f.write("ts,price\n")
    f.write("".join("%d,%r\n" % (i + 1, x) for i, x in enumerate(p.tolist())))
PY
bin/agenttest data import --format prices-csv --out "$tmp/ds" --version bench-1m "$tmp/prices.csv" >/dev/null
run_cli() { # label extra-args...
  local label=$1 out; shift
  for i in $(seq "$REPS"); do
    if ! out=$(bin/agenttest backtest --strategy examples/strategies/buy_and_hold.py --dataset "$tmp/ds" \
                 --artifacts "$tmp/art" --cpu-seconds 120 "$@" 2>"$tmp/err"); then
      echo "backtest ($label): failed: $(cat "$tmp/err")" >&2; return 0
    fi
    echo "$out"
    rm -rf "$tmp/art"
  done | "$PYTHON" -c '
import json, sys, statistics
runs = [json.loads(l)["timing"] for l in sys.stdin if l.strip()]
if not runs:
    sys.exit(0)
med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
print("backtest %s, %s bars, median of %d:\n"
      "  wall: total %.3f s = Python %.3f s (start %.3f, load %.4f, calls %.3f, exit %.3f) + C side %.3f s"
      " (%.1f%% of Python; equity.csv took %.3f s, overlapped with the interpreter exit)\n"
      "  CPU:  Python %.3f s, C side %.3f s = %.1f%% of Python"
      % (sys.argv[1], sys.argv[2], len(runs), med["cli_s"], med["python_s"], med["startup_s"],
         med["load_s"], med["host_s"], med["shutdown_s"], med["overhead_s"],
         100 * med["overhead_s"] / med["python_s"], med["artifacts_s"],
         med["python_cpu_s"], med["c_cpu_s"], 100 * med["c_cpu_s"] / med["python_cpu_s"]))
' "$label" "$CLI_BARS"
}
run_cli "trusted, writing equity.csv" --trusted
run_cli "trusted, --no-artifacts" --trusted --no-artifacts
if bin/agenttest backtest --strategy examples/strategies/buy_and_hold.py --dataset "$tmp/ds" \
     --no-artifacts >/dev/null 2>"$tmp/err"; then
  run_cli "confined, writing equity.csv"
  run_cli "confined, --no-artifacts" --no-artifacts
else
  echo "backtest confined: not available here ($(head -c 200 "$tmp/err"))"
fi

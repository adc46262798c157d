#!/usr/bin/env bash
# Benchmark part (1) of the challenges issue: labels and breakout event
# detection for every challenge, C vs the numpy reference, as ratios, plus
# the whole C scoring per challenge. Data: 60 days of 1-minute bars of the
# synthetic market (`agenttest data synth`, 29 assets) when bin/agenttest is
# built, else a deterministic seeded random walk; funding_1h (not in the
# synthetic market) is a seeded random walk. BENCH_FULL=1 also times the
# reference's whole evaluation (slow: the original's per-row loops).
set -euo pipefail
cd "$(dirname "$0")/../.."
PYTHON=${PYTHON:-/usr/bin/python3}
export AGENTTEST_EVAL_LIB=${AGENTTEST_EVAL_LIB:-$PWD/build/release/libagenttest_eval.so}
[ -f "$AGENTTEST_EVAL_LIB" ] || make --no-print-directory -s "$AGENTTEST_EVAL_LIB"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
src="random walk (seed 1)"
if [ -x bin/agenttest ] && bin/agenttest data synth --out "$tmp/ds" --version bench-60d --days 60 >/dev/null 2>&1; then
  src="agenttest data synth --days 60"
fi
"$PYTHON" - "$tmp" <<'PY'
import os, sys
import numpy as np
sys.path.insert(0, "tests/challenges")
import reference as ref
tmp = sys.argv[1]
T = 60 * 1440
ds = os.path.join(tmp, "ds")
if os.path.isdir(ds):
    closes = np.column_stack([np.fromfile(os.path.join(ds, f"{a}.close.f64"), dtype="<f8")
                              for a in ref.BREAKOUT_ASSETS])
else:
    rng = np.random.default_rng(1)
    closes = 100 * np.exp(np.cumsum(rng.normal(0, 0.0015, (T, 29)), axis=0))
rng = np.random.default_rng(2)
funding = np.cumsum(rng.normal(0, 1e-6, (closes.shape[0], 20)), axis=0) + 1e-4
np.savez(os.path.join(tmp, "bench.npz"), closes=closes, funding=funding)
PY
echo "data: $src"
"$PYTHON" tests/bench/challenges_labels.py "$tmp/bench.npz"

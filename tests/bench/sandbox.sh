#!/usr/bin/env bash
# Sandbox start-up cost: median wall time of many runs (hyperfine), as root.
#   - a trivial static program: bare, inside agenttest-sandbox, inside bwrap;
#   - `python3 -c pass`: bare, helper, bwrap;
#   - `python3 -c "import numpy"`: bare, helper, bwrap;
#   - one run through the zygote: sbx_start -> LOAD/DATA/RUN of a trivial
#     strategy -> verdict, through the real client library (sbx-drive),
#     median over the runs after the first (which starts the zygote).
# Knobs: RUNS (default 40), ZRUNS (default 40). On a busy machine the
# spread is large: compare the columns of one run, not runs of different days.
set -euo pipefail
cd "$(dirname "$0")/../.."
RUNS=${RUNS:-40}
ZRUNS=${ZRUNS:-40}
PY=/usr/bin/python3
[ "$(id -u)" -eq 0 ] || { echo "bench/sandbox: needs root"; exit 1; }
make --no-print-directory -s bin/agenttest-sandbox bin/agenttest-zygote.so \
  build/release/tests/sandbox/sbx-drive build/release/tests/sandbox/verdict_prog
H=$PWD/bin/agenttest-sandbox
P=$PWD/build/release/tests/sandbox/verdict_prog
PD=$(dirname "$P")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

ENVS=(--env=PATH=/usr/bin --env=HOME=/nonexistent --env=OPENBLAS_NUM_THREADS=1 --env=LANG=C.UTF-8)
BW=(bwrap --ro-bind /usr /usr --symlink usr/lib /lib --symlink usr/lib64 /lib64 --symlink usr/bin /bin
    --ro-bind /etc/ld.so.cache /etc/ld.so.cache --ro-bind /etc/alternatives /etc/alternatives
    --dev /dev --proc /proc --unshare-all --die-with-parent --clearenv
    --setenv PATH /usr/bin --setenv OPENBLAS_NUM_THREADS 1)

# median in ms of one command line (hyperfine, no shell)
median() {
  local name=$1; shift
  local cmd
  cmd=$(printf '%q ' "$@")
  # every variant sees the same minimal environment the sandbox gives
  env -i PATH=/usr/bin:/bin HOME=/nonexistent LANG=C.UTF-8 OPENBLAS_NUM_THREADS=1 \
    hyperfine -N -w 3 -r "$RUNS" --export-json "$tmp/h.json" "$cmd" >/dev/null 2>&1
  "$PY" -c 'import json,sys; print("%.2f" % (json.load(open(sys.argv[1]))["results"][0]["median"] * 1000))' "$tmp/h.json"
}

row() { printf '%-22s %9s %9s %9s %9s %9s\n' "$@"; }
row "workload (median ms)" bare helper "+helper" bwrap "+bwrap"
for w in static pass numpy; do
  case $w in
    static) cmd=("$P" ok); binds=(--bind="$PD"); bwb=(--ro-bind "$PD" "$PD") ;;
    pass)   cmd=("$PY" -E -s -B -c pass); binds=(); bwb=() ;;
    numpy)  cmd=("$PY" -E -s -B -c "import numpy"); binds=(); bwb=() ;;
  esac
  b=$(median bare "${cmd[@]}")
  h=$(median helper "$H" --box=1 "${binds[@]}" "${ENVS[@]}" -- "${cmd[@]}")
  bw=$(median bwrap "${BW[@]}" "${bwb[@]}" -- "${cmd[@]}")
  row "$w" "$b" "$h" "$(echo "$h - $b" | bc)" "$bw" "$(echo "$bw - $b" | bc)"
done

# zygote: per-run time through the client library
cat > "$tmp/s.py" <<'PYEOF'
def simulate(prices, params):
    return [1.0] * len(prices)
PYEOF
export AGENTTEST_HOST_DIR=$PWD/sandbox/host AGENTTEST_SANDBOX_HELPER=$H AGENTTEST_SANDBOX_ZYGOTES=1
for mode in zygote oneshot trusted; do
  extra=()
  [ $mode = trusted ] && extra=(--trusted)
  n=$ZRUNS
  [ $mode = zygote ] || n=$(( ZRUNS / 4 + 2 ))
  AGENTTEST_SANDBOX_ZYGOTE=$([ $mode = zygote ] && echo 1 || echo 0) \
    build/release/tests/sandbox/sbx-drive "${extra[@]}" --bars=1000 --repeat="$n" "$tmp/s.py" > "$tmp/$mode.jsonl"
  "$PY" - "$tmp/$mode.jsonl" "$mode" <<'PYEOF'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
bad = [r for r in rows if r.get("status") != "OK"]
el = [r["elapsed"] * 1000 for r in rows[1:]]
print("%-22s %9.2f ms  (start -> verdict of a trivial strategy; first run %.0f ms; %d runs, %d not OK)" % (
    "API " + sys.argv[2], statistics.median(el), rows[0]["elapsed"] * 1000, len(rows), len(bad)))
PYEOF
done

#!/usr/bin/env bash
# Sandbox start-up cost: median wall time of many interleaved runs, as root.
#   - a trivial static program: bare, inside agenttest-sandbox (with and
#     without its per-run cgroup), inside bwrap;
#   - `python3 -c pass`: bare, helper, bwrap;
#   - `python3 -c "import numpy"`: bare, helper, bwrap;
# The per-run cgroup costs one task migration, which on cgroup v1 (and on
# v2 without CLONE_INTO_CGROUP) waits for an RCU grace period: 5-20 ms on
# a loaded host. The nocg column shows the helper without it.
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

# The commands of one workload run interleaved (bare, helper, nocg, bwrap,
# bare, ...) so that load from other processes hits all of them alike; the
# figures are medians in ms.
interleaved() {  # args: a JSON list of argv lists
  env -i PATH=/usr/bin:/bin HOME=/nonexistent LANG=C.UTF-8 OPENBLAS_NUM_THREADS=1 \
    "$PY" - "$RUNS" "$1" <<'PYEOF'
import json, statistics, subprocess, sys, time
runs, cmds = int(sys.argv[1]), json.loads(sys.argv[2])
times = [[] for _ in cmds]
for i in range(runs + 2):
    for j, c in enumerate(cmds):
        t = time.perf_counter()
        r = subprocess.run(c, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        dt = (time.perf_counter() - t) * 1000
        if r.returncode != 0:
            sys.exit("failed: %s" % c)
        if i >= 2:
            times[j].append(dt)
print(" ".join("%.2f" % statistics.median(t) for t in times))
PYEOF
}

row() { printf '%-10s %8s %8s %8s %8s %8s %8s %8s\n' "$@"; }
echo "median ms of $RUNS interleaved runs; helper = default (per-run cgroup), nocg = --no-cgroup"
row workload bare helper +helper nocg +nocg bwrap +bwrap
for w in static pass numpy; do
  case $w in
    static) cmd=("$P" ok); binds=(--bind="$PD"); bwb=(--ro-bind "$PD" "$PD") ;;
    pass)   cmd=("$PY" -E -s -B -c pass); binds=(); bwb=() ;;
    numpy)  cmd=("$PY" -E -s -B -c "import numpy"); binds=(); bwb=() ;;
  esac
  json=$("$PY" -c 'import json, sys
a = sys.argv[1:]
i = a.index("@@")
cmd, rest = a[:i], a[i + 1:]
j = rest.index("@@")
binds, rest = rest[:j], rest[j + 1:]
k = rest.index("@@")
bwb, rest = rest[:k], rest[k + 1:]
h, envs, bw = rest[0], rest[1:5], rest[5:]
print(json.dumps([cmd, [h, "--box=1"] + binds + envs + ["--"] + cmd,
                  [h, "--box=1", "--no-cgroup"] + binds + envs + ["--"] + cmd, bw + bwb + ["--"] + cmd]))' \
    "${cmd[@]}" @@ "${binds[@]}" @@ "${bwb[@]}" @@ "$H" "${ENVS[@]}" "${BW[@]}")
  read -r b h n bw < <(interleaved "$json")
  row "$w" "$b" "$h" "$(echo "$h - $b" | bc)" "$n" "$(echo "$n - $b" | bc)" "$bw" "$(echo "$bw - $b" | bc)"
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
    build/release/tests/sandbox/sbx-drive "${extra[@]}" $([ $mode = zygote ] && echo --prestart) --bars=1000 --repeat="$n" "$tmp/s.py" > "$tmp/$mode.jsonl"
  "$PY" - "$tmp/$mode.jsonl" "$mode" <<'PYEOF'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
bad = [r for r in rows if r.get("status") != "OK"]
el = [r["elapsed"] * 1000 for r in rows[1:]]
print("%-14s %8.2f ms  (start -> verdict of a trivial strategy; first run %.0f ms; %d runs, %d not OK)" % (
    "API " + sys.argv[2], statistics.median(el), rows[0]["elapsed"] * 1000, len(rows), len(bad)))
PYEOF
done

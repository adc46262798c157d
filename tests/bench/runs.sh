#!/usr/bin/env bash
# Runs benchmark (issue 5), on a private stack (scripts/stack.sh in a
# temporary AGENTTEST_VAR, one runner with RUNNER_SLOTS slots):
#   1. latency from POST /runs to `completed` (client-side, POST with wait)
#      for buy-and-hold on the 5-bar dataset "v1" and on the 10,080-bar
#      synthetic week, with and without the causality audit (median, p90);
#   2. throughput of completed sandboxed runs: N_RUNS queued at once
#      (5 bars, and 10,080 bars), runs/s until the last one completed;
#   3. wrk on GET /leaderboard with >= 1,000 completed runs in the table
#      (best per version, and all=1) and on GET /runs/{id}.
# Targets: < 60 ms (5 bars) and < 100 ms (10,000 bars) POST→completed,
# >= 40 sandboxed runs/s on 2 cores, leaderboard >= 3,200 requests/s
# (20x the original's 160/s with 10x the rows).
#
# Knobs: RUNNER_SLOTS=2, N_RUNS=200, N_LAT=20, BOARD_RUNS=1000, DURATION=5s,
# CONNECTIONS=32, WRK_THREADS=2, AGENTTEST_WORKERS, AGENTTEST_BIN.
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=/usr/bin/python3
RUNNER_SLOTS=${RUNNER_SLOTS:-2}
N_RUNS=${N_RUNS:-200}
N_LAT=${N_LAT:-20}
BOARD_RUNS=${BOARD_RUNS:-1000}
DURATION=${DURATION:-5s}
CONNECTIONS=${CONNECTIONS:-32}
WRK_THREADS=${WRK_THREADS:-2}

. tests/bench/lib.sh
bench_need runs wrk agenttest agenttest-fcgi agenttest-runner
bench_stack_env runs
export MANTIS_LOG_LEVEL=warning AGENTTEST_NGINX_ACCESS_LOG=0
export AGENTTEST_SYNTH_DAYS=7 AGENTTEST_RUNNER_SLOTS=$RUNNER_SLOTS RUNS_MAX_QUEUED=1000000

scripts/stack.sh start >/dev/null
echo "bench/runs: stack at $base, runner slots $RUNNER_SLOTS, $(nproc) CPUs"

# The measurements that need a client: latency, throughput, seeding the board.
"$PY" - "$base" "$N_LAT" "$N_RUNS" "$BOARD_RUNS" "$var/ids" <<'PYEOF'
import http.client, json, statistics, sys, time, urllib.parse

base, n_lat, n_runs, board_runs, ids_file = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
u = urllib.parse.urlsplit(base)
conn = http.client.HTTPConnection(u.hostname, u.port, timeout=120)

def call(method, path, body=None):
    data = json.dumps(body).encode() if body is not None else None
    for attempt in range(5):
        conn.request(method, path, body=data, headers={"Content-Type": "application/json"} if data else {})
        r = conn.getresponse()
        out = json.loads(r.read())
        if r.status != 503:
            return r.status, out
        time.sleep(0.2)   # the code check could not start a sandbox: retry
    return r.status, out

def ts(s):
    """RFC 3339 UTC text with microseconds -> seconds."""
    import datetime
    return datetime.datetime.strptime(s, "%Y-%m-%dT%H:%M:%S.%fZ").timestamp()

BH = "def simulate(prices, params):\n    p0 = prices[0]\n    return [p / p0 for p in prices]\n"
_, s = call("POST", "/strategies/submit", {"code": BH, "name": "bench-bh"})
assert "strategy_version_id" in s, s
vid = s["strategy_version_id"]

def latency(dsv, audit, n):
    out = []
    for i in range(n + 2):
        t0 = time.perf_counter()
        st, r = call("POST", "/runs", {"strategy_version_id": vid, "dataset_version": dsv, "audit": audit, "wait": 60})
        dt = (time.perf_counter() - t0) * 1000
        assert st == 200 and r["status"] == "completed", r
        if i >= 2:   # the first runs warm the zygote and the dataset cache
            out.append(dt)
    out.sort()
    return statistics.median(out), out[int(0.9 * (len(out) - 1))]

print("\n1. POST /runs -> completed (buy-and-hold, client-side, ms)")
print("%-26s %10s %10s" % ("dataset / audit", "median", "p90"))
for dsv, label in (("v1", "5 bars"), ("synth-v1", "10,080 bars")):
    for audit in (False, True):
        med, p90 = latency(dsv, audit, n_lat)
        print("%-26s %10.1f %10.1f" % (f"{label}, audit {'on' if audit else 'off'}", med, p90))

def throughput(dsv, n, audit):
    """n runs queued at once; rate = n / (last completed_at - first queued_at), server clocks."""
    ids = []
    for _ in range(n):
        st, r = call("POST", "/runs", {"strategy_version_id": vid, "dataset_version": dsv, "audit": audit})
        assert st == 202, r
        ids.append(r["run_id"])
    first = ts(call("GET", f"/runs/{ids[0]}")[1]["queued_at"])
    while call("GET", "/runs?status=queued&limit=1")[1]["runs"] or call("GET", "/runs?status=running&limit=1")[1]["runs"]:
        time.sleep(0.1)
    last = 0.0
    for i in ids:
        r = call("GET", f"/runs/{i}")[1]
        assert r["status"] == "completed", r
        last = max(last, ts(r["completed_at"]))
    return n / (last - first)

print("\n2. throughput: runs queued at once until the last completed")
print("%-26s %10s %12s" % ("dataset / audit", "runs/s", "runs/min"))
for dsv, label, n in (("v1", "5 bars", n_runs), ("synth-v1", "10,080 bars", max(20, n_runs // 4))):
    for audit in (False, True):
        rps = throughput(dsv, n, audit)
        print("%-26s %10.1f %12.0f" % (f"{label}, audit {'on' if audit else 'off'}", rps, rps * 60))

# Seed the leaderboard: BOARD_RUNS completed runs over 100 strategy versions.
versions = []
for k in range(100):
    code = "def simulate(prices, params):\n    k = %r\n    p0 = prices[0]\n    return [1.0 + k * (p / p0 - 1.0) for p in prices]\n" % (0.5 + k / 100)
    versions.append(call("POST", "/strategies/submit", {"code": code, "name": f"board-{k}"})[1]["strategy_version_id"])
ids = []
for j in range(board_runs):
    st, r = call("POST", "/runs", {"strategy_version_id": versions[j % 100], "dataset_version": "v1"})
    ids.append(r["run_id"])
for i in ids:
    while call("GET", f"/runs/{i}")[1]["status"] not in ("completed", "failed"):
        time.sleep(0.01)
_, rows = call("GET", "/leaderboard?dataset_version=v1&all=1&limit=1000")
print(f"\n3. leaderboard: {len(rows)} eligible runs on v1 (all=1, limit 1000)")
open(ids_file, "w").write(ids[0])
PYEOF

# bench PATH LABEL: one wrk measurement, one line.
bench() {
  local out rps p99 errs
  out=$(wrk -t"$WRK_THREADS" -c"$CONNECTIONS" -d"$DURATION" --latency "$base$1")
  rps=$(awk '/^Requests\/sec:/ {printf "%d", $2}' <<<"$out")
  p99=$(to_ms "$(awk '$1 == "99%" {print $2}' <<<"$out")")
  errs=$(awk '/Non-2xx or 3xx responses:/ {n += $NF} /Socket errors:/ {gsub(",", ""); n += $4 + $6 + $8 + $10} END {print n + 0}' <<<"$out")
  printf '%-52s %12s %9s %7s\n' "$2" "$rps" "$p99" "$errs"
}

printf '%-52s %12s %9s %7s\n' "wrk, $CONNECTIONS connections, $DURATION" "requests/s" "p99 ms" errors
bench "/leaderboard?dataset_version=v1" "GET /leaderboard (best per version, 100 rows)"
bench "/leaderboard?dataset_version=v1&limit=20" "GET /leaderboard (best per version, limit 20)"
bench "/leaderboard?dataset_version=v1&all=1" "GET /leaderboard?all=1 (limit 100 of 1,000+)"
bench "/runs/$(cat "$var/ids")" "GET /runs/{id}"

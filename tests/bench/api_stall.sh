#!/usr/bin/env bash
# Two requests cannot stall the API; one user's backlog cannot stall
# another's run (issue 11 items 6 and 7), on a private stack with the
# default pool (one worker per CPU) and 2 runner slots.
#
#   6. WAITERS users each POST /runs with wait=60 on a strategy that
#      sleeps: how many are held (200 later) and how many are refused at
#      once (429), and GET /health latency (median, p99, max of N_HEALTH
#      sequential requests) while they wait. The red team's figures on the
#      old pool: 2 waiters made /health take 14.7 s, 4 made it answer 504.
#   7. With both slots busy, one user POSTs N_VERIFY verifies of a
#      completed run: how many are accepted (RUNS_MAX_QUEUED, default 100)
#      and refused (429); then another user's 5-bar run: queued_at ->
#      completed_at on the server's clocks (the red team saw 276 s behind
#      150 verifies), and the runner's CPU seconds meanwhile (/proc).
#
# Knobs: WAITERS=8, N_HEALTH=200, N_VERIFY=150, SLEEP_S=20 (the sleepers'
# run time), KEEP=1 (leave the stack running).
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=/usr/bin/python3
WAITERS=${WAITERS:-8}
N_HEALTH=${N_HEALTH:-200}
N_VERIFY=${N_VERIFY:-150}
SLEEP_S=${SLEEP_S:-20}

. tests/bench/lib.sh
bench_need api_stall agenttest agenttest-fcgi agenttest-runner agenttest-sandbox
bench_stack_env apistall
export MANTIS_LOG_LEVEL=warning AGENTTEST_SYNTH_DAYS=1 AGENTTEST_NGINX_ACCESS_LOG=0 AGENTTEST_RUNNER_SLOTS=2
unset RUNS_MAX_WAITS RUNS_MAX_WAITS_PER_USER RUNS_MAX_QUEUED MANTIS_WORKERS

scripts/stack.sh start >/dev/null
set -a; . "$var/stack.env"; set +a
tokens=()
for i in $(seq 1 $((WAITERS + 2))); do
  tokens+=("$("${AGENTTEST_BIN:-bin}/agenttest" token create --user "stall-$i" --role user)")
done
runner_pid=$(head -n 1 "$var/run/runner.pid" 2>/dev/null || true)
echo "bench/api_stall: stack at $base, $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"

"$PY" - "$base" "$WAITERS" "$N_HEALTH" "$N_VERIFY" "$SLEEP_S" "${runner_pid:-0}" "${tokens[@]}" <<'PYEOF'
import concurrent.futures, datetime, http.client, json, statistics, sys, time, urllib.parse

base, waiters, n_health, n_verify, sleep_s, runner_pid = sys.argv[1:7]
waiters, n_health, n_verify, sleep_s = int(waiters), int(n_health), int(n_verify), int(sleep_s)
tokens = sys.argv[7:]
u = urllib.parse.urlsplit(base)


def call(method, path, body=None, token=None, timeout=120):
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=timeout)
    hdr = {"Content-Type": "application/json"}
    if token:
        hdr["Authorization"] = "Bearer " + token
    for _ in range(20):
        conn.request(method, path, body=json.dumps(body).encode() if body is not None else None, headers=hdr)
        r = conn.getresponse()
        data = r.read()
        if r.status != 503:
            break
        time.sleep(0.2)   # the code check could not start a sandbox yet
    conn.close()
    return r.status, json.loads(data) if data else {}


def cpu_s(pid):
    """utime + stime of a process and its reaped children, seconds (/proc)."""
    if pid == "0":
        return float("nan")
    f = open("/proc/%s/stat" % pid).read().rsplit(")", 1)[1].split()
    return sum(int(x) for x in f[11:15]) / 100.0


def ts(s):
    return datetime.datetime.strptime(s, "%Y-%m-%dT%H:%M:%S.%fZ").timestamp()


def submit(token, code, name):
    st, r = call("POST", "/strategies/submit", {"code": code, "name": name}, token)
    assert st in (200, 201), (st, r)
    return r["strategy_version_id"]


SLEEPER = "import time\ndef simulate(prices, params):\n    time.sleep(%d)\n    return [p / prices[0] for p in prices]\n" % sleep_s
BH = "def simulate(prices, params):\n    return [p / prices[0] for p in prices]\n"

# ---- item 6
vids = [submit(t, SLEEPER, "sleeper") for t in tokens[:waiters]]
def timed(*a):
    t0 = time.perf_counter()
    st, r = call(*a)
    return st, r, time.perf_counter() - t0


with concurrent.futures.ThreadPoolExecutor(max_workers=waiters) as ex:
    held = [ex.submit(timed, "POST", "/runs", {"strategy_version_id": v, "dataset_version": "v1", "wait": 60,
                                              "audit": False}, t)
            for v, t in zip(vids, tokens)]
    time.sleep(1.0)   # the waiters are in
    lat = []
    for _ in range(n_health):
        t0 = time.perf_counter()
        st, _ = call("GET", "/health", timeout=60)
        lat.append((time.perf_counter() - t0) * 1000)
        assert st == 200, st
    answered = [f.result(timeout=180) for f in held]
lat.sort()
codes = {}
for st, _, dt in answered:
    n, worst = codes.get(st, (0, 0.0))
    codes[st] = (n + 1, max(worst, dt))
print("\n6. %d concurrent POST /runs wait=60 (runs sleep %d s)" % (waiters, sleep_s))
print("   answers: %s" % ", ".join("%d x %d (slowest after %.1f s)" % (n, c, w) for c, (n, w) in sorted(codes.items())))
print("   GET /health while they wait, %d requests: median %.1f ms, p99 %.1f ms, max %.1f ms"
      % (n_health, statistics.median(lat), lat[int(0.99 * (len(lat) - 1))], lat[-1]))
for st, r, _ in answered:   # let the sleepers go
    if st in (200, 202) and r.get("status") in ("queued", "running"):
        call("POST", "/runs/%s/cancel" % r["run_id"], {}, None)

# ---- item 7
hog, other = tokens[waiters], tokens[waiters + 1]
bh = submit(hog, BH, "verified")
st, done = call("POST", "/runs", {"strategy_version_id": bh, "dataset_version": "v1", "wait": 60, "audit": False}, hog)
assert st == 200 and done["status"] == "completed", (st, done)
blocker = submit(hog, SLEEPER, "blocker")
busy = [call("POST", "/runs", {"strategy_version_id": blocker, "dataset_version": "v1", "audit": False}, hog)[1]["run_id"]
        for _ in range(2)]
accepted = refused = 0
for _ in range(n_verify):
    st, _ = call("POST", "/runs/%s/verify" % done["run_id"], {}, hog)
    accepted += st == 202
    refused += st == 429
c0 = cpu_s(runner_pid)
vb = submit(other, BH, "other")
st, r = call("POST", "/runs", {"strategy_version_id": vb, "dataset_version": "v1", "audit": False}, other)
rid = r["run_id"]
while True:
    st, r = call("GET", "/runs/" + rid, token=other)
    if r["status"] in ("completed", "failed", "cancelled"):
        break
    time.sleep(0.2)
c1 = cpu_s(runner_pid)
print("\n7. %d verifies by one user with both slots busy: %d accepted, %d refused (429)" % (n_verify, accepted, refused))
print("   another user's 5-bar run: %s, queued -> completed %.1f s (server clocks; the busy slots sleep %d s);"
      " runner CPU meanwhile %.2f s" % (r["status"], ts(r["completed_at"]) - ts(r["queued_at"]), sleep_s, c1 - c0))
PYEOF
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"

#!/usr/bin/env bash
# GET /runs at 1,000 and at 100,000 runs (issue 11 item 10): keyset
# pagination must cost O(limit) whatever the table size. On a private stack
# (runner slots 0: nothing executes), runs are inserted straight into
# MariaDB as completed rows (half for the measured user, half for others),
# then wrk measures GET /runs?limit=20 for that user (first page, a page
# deep in the table, a status filter) and for the local admin, and EXPLAIN
# shows the plan (rows examined, no filesort). Prints requests/s per case
# and table size; the figures at both sizes should be about the same.
#
# Knobs: DURATION=5s, CONNECTIONS=16, WRK_THREADS=2, N_SMALL=1000, N_BIG=100000,
# KEEP=1 (leave the stack running for a look; stop it with scripts/stack.sh).
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=/usr/bin/python3
DURATION=${DURATION:-5s}
CONNECTIONS=${CONNECTIONS:-16}
WRK_THREADS=${WRK_THREADS:-2}
N_SMALL=${N_SMALL:-1000}
N_BIG=${N_BIG:-100000}

. tests/bench/lib.sh
bench_need runs_list wrk agenttest agenttest-fcgi agenttest-runner
bench_stack_env runslist
export MANTIS_LOG_LEVEL=warning AGENTTEST_SYNTH_DAYS=1 AGENTTEST_NGINX_ACCESS_LOG=0

scripts/stack.sh start >/dev/null
set -a; . "$var/stack.env"; set +a
sql() {
  mariadb --no-defaults --protocol=socket --socket="$var/run/mysqld.sock" -u "$(id -un)" -N -B agenttest -e "$1"
}

tok=$("${AGENTTEST_BIN:-bin}/agenttest" token create --user bench-alice --role user)
other=$("${AGENTTEST_BIN:-bin}/agenttest" token create --user bench-bob --role user)
submit() {
  curl -sf -H "Authorization: Bearer $1" -H 'Content-Type: application/json' \
    -d '{"code":"def simulate(prices, params):\n    return [1.0] * len(prices)\n","name":"list-bench"}' \
    "$base/strategies/submit" | "$PY" -c 'import json, sys; print(json.load(sys.stdin)["strategy_version_id"])'
}
vid_a=$(submit "$tok")
vid_b=$(submit "$other")
uid_a=$(sql "SELECT id FROM users WHERE name = 'bench-alice'")
uid_b=$(sql "SELECT id FROM users WHERE name = 'bench-bob'")
ds=$(sql "SELECT CONCAT(id, ' ', dataset_hash) FROM datasets WHERE version = 'v1'")
did=${ds%% *}
dhash=${ds#* }

# add_runs N: insert N completed runs, alternating between the two users.
add_runs() {
  sql "SET SESSION max_recursive_iterations = 1000000;
       INSERT INTO runs (id, owner_id, strategy_version_id, dataset_id, dataset_version, dataset_hash,
                         code_hash, config_hash, params, status, completed_at)
       WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < $1)
       SELECT UUID(), IF(i % 2, $uid_a, $uid_b), IF(i % 2, $vid_a, $vid_b), $did, 'v1', '$dhash',
              REPEAT('0', 64), REPEAT('0', 64), '{}', IF(i % 7 = 0, 'failed', 'completed'), NOW(6)
       FROM n"
}

measure() {  # measure LABEL URL [AUTH]: prints requests/s
  local hdr=()
  [ -n "${3:-}" ] && hdr=(-H "Authorization: Bearer $3")
  curl -sf "${hdr[@]}" "$2" >/dev/null || { echo "bench/runs_list: $2 failed" >&2; exit 1; }
  wrk -t"$WRK_THREADS" -c"$CONNECTIONS" -d"$DURATION" "${hdr[@]}" "$2" |
    awk '/^Requests\/sec:/ {printf "%d", $2}'
}

explain() {  # explain INDEX FILTER CURSOR: the plan of the runs part of h_runs_list's query
  sql "EXPLAIN SELECT STRAIGHT_JOIN r.id FROM runs r FORCE INDEX ($1)
       JOIN strategy_versions v FORCE INDEX (PRIMARY) ON v.id = r.strategy_version_id
       JOIN strategies s FORCE INDEX (PRIMARY) ON s.id = v.strategy_id
       JOIN users u FORCE INDEX (PRIMARY) ON u.id = r.owner_id
       LEFT JOIN run_metrics m FORCE INDEX (PRIMARY) ON m.run_id = r.id
       WHERE r.seq < $3 $2 ORDER BY r.seq DESC LIMIT 21" |
    awk -F'\t' 'NR == 1 {printf "type %s, key %s, rows %s, extra %s", $4, $6, $9, $10}'
}

# mid_cursor K: the next_cursor after the user's first K runs (pages of 200).
mid_cursor() {
  "$PY" - "$base" "$tok" "$1" <<'PYEOF'
import json, sys, urllib.request
base, tok, want = sys.argv[1], sys.argv[2], int(sys.argv[3])
seen, cursor = 0, None
while seen < want:
    url = f"{base}/runs?limit={min(200, want - seen)}" + (f"&cursor={cursor}" if cursor else "")
    req = urllib.request.Request(url, headers={"Authorization": f"Bearer {tok}"})
    page = json.load(urllib.request.urlopen(req))
    seen += len(page["runs"])
    cursor = page["next_cursor"]
    if cursor is None:
        sys.exit("bench/runs_list: fewer runs than expected")
print(cursor)
PYEOF
}

printf '%-8s %-28s %12s\n' runs case "requests/s"
have=0
for n in $N_SMALL $N_BIG; do
  add_runs $((n - have))
  have=$n
  # let InnoDB purge the insert's history first: until it has, reading the
  # newest rows checks their undo records, which is the bulk insert's cost,
  # not the query's
  sql "SET GLOBAL innodb_max_purge_lag_wait = 0; ANALYZE TABLE runs" >/dev/null
  # the cursors are opaque (issue 11 item 15): reach the middle of the
  # user's runs (half of the table's) by paging, as a client does
  mid=$(mid_cursor $((n / 4)))
  mid_seq=$(sql "SELECT seq FROM runs WHERE owner_id = $uid_a ORDER BY seq DESC LIMIT 1 OFFSET $((n / 4 - 1))")
  printf '%-8s %-28s %12s\n' "$n" "user, first page" "$(measure first "$base/runs?limit=20" "$tok")"
  printf '%-8s %-28s %12s\n' "$n" "user, page in the middle" "$(measure mid "$base/runs?limit=20&cursor=$mid" "$tok")"
  printf '%-8s %-28s %12s\n' "$n" "user, status=failed" "$(measure failed "$base/runs?limit=20&status=failed" "$tok")"
  printf '%-8s %-28s %12s\n' "$n" "admin (loopback), first page" "$(measure admin "$base/runs?limit=20")"
  echo "$n runs: plan, user, middle page: $(explain ix_runs_owner_seq "AND r.owner_id = $uid_a" "$mid_seq")"
  echo "$n runs: plan, admin, first page: $(explain uq_runs_seq "" 9223372036854775806)"
done
echo "calibration: GET /health $(measure health "$base/health") requests/s"

# shellcheck shell=bash
# The FastCGI pool (bin/agenttest-fcgi) and the CLI steps that prepare the
# database for it. Sourced by scripts/stack.sh.

# pool_check_config: run the application's own configuration check with the
# stack's environment; refuse to start anything when it fails.
pool_check_config() {
  local out
  if ! out=$("$BIN/agenttest-fcgi" --check-config 2>&1); then
    echo "stack: refusing to start: ${out:-agenttest-fcgi --check-config failed}" >&2
    exit 1
  fi
}

# db_migrate: apply the sql/ migrations (agenttest db migrate).
db_migrate() {
  if ! "$BIN/agenttest" db migrate >>"$LOG/migrate.log" 2>&1; then
    tail_log "$LOG/migrate.log"
    die "agenttest db migrate failed"
  fi
}

# prepare_data: make sure the data the stack serves exists, and export what
# the pool and the runner read (issue 5, owned by the runs engineer).
#   - the default market (agenttest data synth) under $VAR/data/<label>,
#     registered as DATASET_VERSION (default synth-v1); when DATASET_DIR is
#     set, that directory (an `agenttest data` dataset or a prices.csv
#     directory) is registered under DATASET_VERSION instead, as the
#     original agenttest's users expect;
#   - the original agenttest's 5-bar demo series (prices 100..104) as "v1",
#     so its README flows give their documented numbers;
#   - STRATEGIES_DIR, ARTIFACTS_DIR, RUNNER_NOTIFY_DIR under $VAR, and the
#     repository's examples/ as a trusted strategy directory;
#   - AGENTTEST_CHECK_SOCKET, where the runner answers the pool's code checks
#     (default $RUNNER_NOTIFY_DIR/check.sock, the rule both programs apply).
prepare_data() {
  local data label days dir user_dir
  data=$(cfg AGENTTEST_DATA_DIR "$VAR/data")
  label=$(cfg DATASET_VERSION synth-v1)
  days=$(cfg AGENTTEST_SYNTH_DAYS 60)
  require_uint AGENTTEST_SYNTH_DAYS "$days" 1 3650
  [[ $label =~ ^[A-Za-z0-9._-]{1,64}$ ]] || die "DATASET_VERSION is not a valid label: '$label'"
  mkdir -p "$data"
  dir=$data/$label
  user_dir=$(cfg DATASET_DIR "")
  if [ -n "$user_dir" ]; then
    [ -d "$user_dir" ] || die "DATASET_DIR is not a directory: '$user_dir'"
    [ "$label" != v1 ] || die "DATASET_DIR needs a DATASET_VERSION other than v1 (v1 is the demo series)"
    dir=$(cd "$user_dir" && pwd)
  elif [ "$label" != v1 ] && [ ! -f "$dir/manifest.json" ]; then
    "$BIN/agenttest" data synth --out "$dir" --version "$label" --days "$days" >>"$LOG/data.log" 2>&1 ||
      { tail_log "$LOG/data.log"; die "agenttest data synth failed"; }
  fi
  if [ ! -f "$data/v1/prices.csv" ]; then
    mkdir -p "$data/v1"
    printf 'ts,price\n1,100\n2,101\n3,102\n4,103\n5,104\n' >"$data/v1/prices.csv.tmp"
    mv "$data/v1/prices.csv.tmp" "$data/v1/prices.csv"
  fi
  if [ "$label" != v1 ]; then
    register_dataset "$dir" "$label"
  fi
  register_dataset "$data/v1" v1
  export DATASET_VERSION=$label DATASET_DIR=$dir
  export STRATEGIES_DIR=${STRATEGIES_DIR:-$VAR/strategies}
  export ARTIFACTS_DIR=${ARTIFACTS_DIR:-$VAR/run_artifacts}
  export RUNNER_NOTIFY_DIR=${RUNNER_NOTIFY_DIR:-$RUN/runners}
  export TRUSTED_STRATEGY_DIRS=${TRUSTED_STRATEGY_DIRS:-$REPO/examples}
  export AGENTTEST_AGENTS_DIR=${AGENTTEST_AGENTS_DIR:-$VAR/agents}
  mkdir -p "$STRATEGIES_DIR" "$ARTIFACTS_DIR" "$RUNNER_NOTIFY_DIR" "$AGENTTEST_AGENTS_DIR"
  CHECK_SOCKET=$(cfg AGENTTEST_CHECK_SOCKET "$RUNNER_NOTIFY_DIR/check.sock")
  export AGENTTEST_CHECK_SOCKET=$CHECK_SOCKET
}

# register_dataset DIR LABEL: record the dataset version in the database
# (idempotent; a label already bound to other bytes is refused).
register_dataset() {
  "$BIN/agenttest" dataset register "$1" --version "$2" >>"$LOG/data.log" 2>&1 ||
    { tail_log "$LOG/data.log"; die "agenttest dataset register $2 failed"; }
}

# pool_socket_ready: succeed when the pool's unix socket accepts connections.
pool_socket_ready() {
  [ -S "$FCGI_SOCKET" ] && pid_of pool >/dev/null
}

# pool_start: start the master (it forks the workers) and wait for its socket.
pool_start() {
  if pid_of pool >/dev/null; then
    return 0
  fi
  rm -f "$FCGI_SOCKET"
  spawn pool "$LOG/pool.log" "$BIN/agenttest-fcgi" --socket "$FCGI_SOCKET"
  if ! wait_for 20 "the FastCGI pool on $FCGI_SOCKET" pool_socket_ready; then
    tail_log "$LOG/pool.log"
    die "the FastCGI pool did not start"
  fi
}

# pool_stop: graceful stop (SIGTERM lets workers finish their request).
pool_stop() {
  stop_proc pool TERM 20
  rm -f "$FCGI_SOCKET"
}

# start_runner: start the job runner (agenttest-runner) with
# AGENTTEST_RUNNER_SLOTS slots (default: the number of CPUs).
start_runner() {
  local slots
  [ -x "$BIN/agenttest-runner" ] || die "$BIN/agenttest-runner is missing (run make build)"
  pid_of runner >/dev/null && return 0
  slots=$(cfg AGENTTEST_RUNNER_SLOTS "$(nproc)")
  require_uint AGENTTEST_RUNNER_SLOTS "$slots" 0 64
  spawn runner "$LOG/runner.log" "$BIN/agenttest-runner" --slots "$slots"
  # up means the code checker answers: the zygotes are imported by then, so
  # the first submission does not race the runner's start (60 s: a loaded
  # machine imports numpy and pandas once per zygote)
  if ! wait_for 60 "the runner and its code checker" runner_ready; then
    tail_log "$LOG/runner.log"
    die "the runner did not start"
  fi
}

# runner_ready: the runner is up (its wake-up socket exists) and its code
# checker answers a ping (unless AGENTTEST_CHECK_SOCKET=off).
runner_ready() {
  local pid
  pid=$(pid_of runner) && [ -S "$RUNNER_NOTIFY_DIR/runner-$pid.sock" ] || return 1
  [ "$CHECK_SOCKET" = off ] && return 0
  [ -S "$CHECK_SOCKET" ] && check_ping "$CHECK_SOCKET"
}

# check_ping SOCKET: succeed when the check service on SOCKET answers a ping
# with {"ready":true} (its zygotes are up): a 12-byte request header "ATCQ",
# version 1, op 0, length 0; the answer's header starts "ATCA", version 1,
# status 0 and gives the body length (little-endian, bytes 8-11).
check_ping() {
  "$PYTHON" - "$1" >/dev/null 2>&1 <<'PY'
import json, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.settimeout(2)
s.connect(sys.argv[1])
s.sendall(b"ATCQ\x01\x00\x00\x00\x00\x00\x00\x00")
h = b""
while len(h) < 12:
    c = s.recv(12 - len(h))
    if not c:
        sys.exit(1)
    h += c
n = int.from_bytes(h[8:12], "little")
if h[:6] != b"ATCA\x01\x00" or n > 16384:
    sys.exit(1)
b = b""
while len(b) < n:
    c = s.recv(n - len(b))
    if not c:
        sys.exit(1)
    b += c
sys.exit(0 if json.loads(b).get("ready") is True else 1)
PY
}

# stop_runner: SIGTERM (running jobs finish or are handed back), then wait.
stop_runner() {
  stop_proc runner TERM 40
}

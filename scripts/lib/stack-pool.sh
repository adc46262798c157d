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

# prepare_data: make sure the data the stack serves exists.
prepare_data() {
  # The default dataset (agenttest data synth) is created here once the evaluator provides it.
  :
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

# start_runner: start the job runner (agenttest-runner).
start_runner() {
  # The runner (bin/agenttest-runner) is started here once it exists; stop_runner mirrors it.
  :
}

# stop_runner: stop what start_runner started.
stop_runner() {
  :
}

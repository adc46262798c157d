#!/usr/bin/env bash
# agenttest dev stack: a private MariaDB, the FastCGI pool and nginx, all
# living in one directory ($AGENTTEST_VAR, default ./var).
#
#   scripts/stack.sh run      start everything in the foreground; Ctrl-C stops it
#   scripts/stack.sh start    start everything in the background
#   scripts/stack.sh stop     stop everything start/run started (idempotent)
#   scripts/stack.sh status   what runs (exit 0 all, 3 nothing, 1 partly)
#   scripts/stack.sh db-stop | db-start   stop or start only MariaDB (tests, ops)
#
# Theory of operation. Start order: the application's configuration check
# (agenttest-fcgi --check-config; a failure refuses the start), MariaDB
# (data directory created on first start, unix socket only), the database
# and its migrations (agenttest db migrate), prepare_data, the pool, nginx
# rendered from nginx/ (tested with nginx -t first), the runner slot, then a
# health check through nginx before the URL is printed. Stop runs the same
# list backwards. Each process runs in its own session with its pid in
# $VAR/run and its log in $VAR/log; stop signals exactly those pids. A lock
# file serialises concurrent start/stop. A start that fails half-way stops
# what it had started. `start` writes $VAR/stack.env (AGENTTEST_URL, and
# AGENTTEST_TOKEN when MANTIS_AUTH_TOKEN is set, plus what the CLI needs to
# reach the same database) so scripts and tests find the stack.
#
# Configuration (environment, else $AGENTTEST_CONFIG, else the default; see
# docs/configuration.md, "Stack"): MANTIS_HOST, MANTIS_PORT,
# MANTIS_RATE_LIMIT_RPM, MANTIS_AUTH_TOKEN, AGENTTEST_WORKERS,
# AGENTTEST_BODY_LIMIT, AGENTTEST_RATE_BURST, AGENTTEST_NGINX_WORKERS,
# AGENTTEST_NGINX_KEEPALIVE, AGENTTEST_NGINX_ACCESS_LOG,
# AGENTTEST_DB_BUFFER_POOL, AGENTTEST_ALLOWED_HOSTS, AGENTTEST_VAR, AGENTTEST_BIN.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# nginx and mariadbd live in /usr/sbin, which a user's PATH may lack.
PATH=$PATH:/usr/sbin:/sbin
# shellcheck source=lib/stack-common.sh
. "$REPO/scripts/lib/stack-common.sh"
# shellcheck source=lib/stack-mariadb.sh
. "$REPO/scripts/lib/stack-mariadb.sh"
# shellcheck source=lib/stack-pool.sh
. "$REPO/scripts/lib/stack-pool.sh"
# shellcheck source=lib/stack-nginx.sh
. "$REPO/scripts/lib/stack-nginx.sh"

# load_config: read and validate every setting into globals, and export
# what the application reads.
load_config() {
  VAR=$(cfg AGENTTEST_VAR "$REPO/var")
  mkdir -p "$VAR"
  VAR=$(cd "$VAR" && pwd)
  RUN=$VAR/run
  LOG=$VAR/log
  BIN=$(cfg AGENTTEST_BIN "$REPO/bin")
  PYTHON=${PYTHON:-/usr/bin/python3}
  STATIC_ROOT=$REPO/static
  FCGI_SOCKET=$RUN/fcgi.sock

  HOST=$(cfg MANTIS_HOST 127.0.0.1)
  PORT=$(cfg MANTIS_PORT 8000)
  RATE_RPM=$(cfg MANTIS_RATE_LIMIT_RPM 120)
  AUTH_TOKEN=$(cfg MANTIS_AUTH_TOKEN "")
  WORKERS=$(cfg AGENTTEST_WORKERS "")
  BODY_LIMIT=$(cfg AGENTTEST_BODY_LIMIT 1048576)
  NGINX_WORKERS=$(cfg AGENTTEST_NGINX_WORKERS 1)
  UPSTREAM_KEEPALIVE=$(cfg AGENTTEST_NGINX_KEEPALIVE 0)
  NGINX_ACCESS_LOG=$(cfg AGENTTEST_NGINX_ACCESS_LOG 1)
  DB_BUFFER_POOL=$(cfg AGENTTEST_DB_BUFFER_POOL 128M)
  ALLOWED_HOSTS=$(cfg AGENTTEST_ALLOWED_HOSTS "localhost,127.0.0.1,[::1]")

  [[ $HOST =~ ^[A-Za-z0-9.:-]{1,253}$ ]] || die "MANTIS_HOST is not a host name or address: '$HOST'"
  require_uint MANTIS_PORT "$PORT" 1 65535
  require_uint MANTIS_RATE_LIMIT_RPM "$RATE_RPM" 0 1000000
  require_uint AGENTTEST_BODY_LIMIT "$BODY_LIMIT" 1024 1073741824
  require_uint AGENTTEST_NGINX_KEEPALIVE "$UPSTREAM_KEEPALIVE" 0 1024
  [ -z "$WORKERS" ] || require_uint AGENTTEST_WORKERS "$WORKERS" 1 256
  [ "$NGINX_WORKERS" = auto ] || require_uint AGENTTEST_NGINX_WORKERS "$NGINX_WORKERS" 1 64
  [[ $NGINX_ACCESS_LOG =~ ^[01]$ ]] || die "AGENTTEST_NGINX_ACCESS_LOG must be 0 or 1"
  local hosts_re='^[][A-Za-z0-9.:,-]{1,1000}$'
  [[ $ALLOWED_HOSTS =~ $hosts_re ]] ||
    die "AGENTTEST_ALLOWED_HOSTS must be host names separated by commas: '$ALLOWED_HOSTS'"
  [[ $DB_BUFFER_POOL =~ ^[0-9]{1,6}[KMG]?$ ]] || die "AGENTTEST_DB_BUFFER_POOL must be a size like 128M"

  # A burst of half a minute's allowance by default, so a page load's
  # parallel requests pass while a sustained flood is cut to the rate.
  local default_burst=$((RATE_RPM / 2))
  [ "$default_burst" -ge 1 ] || default_burst=1
  RATE_BURST=$(cfg AGENTTEST_RATE_BURST "$default_burst")
  require_uint AGENTTEST_RATE_BURST "$RATE_BURST" 1 1000000
  RETRY_AFTER=1
  [ "$RATE_RPM" -gt 0 ] && RETRY_AFTER=$(((60 + RATE_RPM - 1) / RATE_RPM))
  # nginx's own cap sits 64 KiB above the application's limit.
  CLIENT_MAX_BODY=$((BODY_LIMIT + 65536))

  case $HOST in
    localhost) LISTEN="127.0.0.1:$PORT"; URL_HOST=127.0.0.1 ;;
    0.0.0.0) LISTEN="$PORT"; URL_HOST=127.0.0.1 ;;
    ::) LISTEN="[::]:$PORT"; URL_HOST="[::1]" ;;
    *:*) LISTEN="[$HOST]:$PORT"; URL_HOST="[$HOST]" ;;
    *) LISTEN="$HOST:$PORT"; URL_HOST=$HOST ;;
  esac
  URL="http://$URL_HOST:$PORT"

  export DATABASE_URL="mariadb://$(mariadb_account)@localhost/agenttest?socket=$RUN/mysqld.sock"
  export AGENTTEST_SECRET_FILE=$VAR/secret.key
  export AGENTTEST_FCGI_SOCKET=$FCGI_SOCKET
  export MANTIS_HOST=$HOST MANTIS_PORT=$PORT MANTIS_RATE_LIMIT_RPM=$RATE_RPM
  export AGENTTEST_BODY_LIMIT=$BODY_LIMIT AGENTTEST_ALLOWED_HOSTS=$ALLOWED_HOSTS
  # The repository's migrations, wherever stack.sh is run from.
  export AGENTTEST_SQL_DIR=${AGENTTEST_SQL_DIR:-$REPO/sql}
  [ -z "$AUTH_TOKEN" ] || export MANTIS_AUTH_TOKEN=$AUTH_TOKEN
  [ -z "$WORKERS" ] || export AGENTTEST_WORKERS=$WORKERS
}

# make_dirs: the VAR layout (private: it holds the secret key and the DB).
make_dirs() {
  mkdir -p "$RUN" "$LOG" "$VAR/tmp" "$VAR/nginx/tmp"
  chmod 0700 "$VAR"
}

# lock: serialise start/stop/run on $RUN/stack.lock (fd 9).
lock() {
  exec 9>"$RUN/stack.lock"
  flock -w 120 9 || die "another stack.sh holds $RUN/stack.lock"
}

# COMPONENTS: the processes of the stack, in start order.
COMPONENTS=(mariadb pool nginx runner)

# count_running: how many COMPONENTS run.
count_running() {
  local n=0 c
  for c in "${COMPONENTS[@]}"; do
    pid_of "$c" >/dev/null && n=$((n + 1))
  done
  echo "$n"
}

# shq VALUE: VALUE single-quoted for a shell (and for Python's shlex).
shq() {
  local squote="'"
  printf "'%s'" "${1//$squote/$squote\\$squote$squote}"
}

# write_env: $VAR/stack.env for scripts and tests (0600: it may hold a token).
write_env() {
  local f=$VAR/stack.env
  (
    umask 077
    {
      echo "AGENTTEST_URL=$(shq "$URL")"
      [ -z "$AUTH_TOKEN" ] || echo "AGENTTEST_TOKEN=$(shq "$AUTH_TOKEN")"
      echo "AGENTTEST_VAR=$(shq "$VAR")"
      echo "DATABASE_URL=$(shq "$DATABASE_URL")"
      echo "AGENTTEST_SECRET_FILE=$(shq "$AGENTTEST_SECRET_FILE")"
      echo "AGENTTEST_FCGI_SOCKET=$(shq "$AGENTTEST_FCGI_SOCKET")"
      echo "AGENTTEST_CHECK_SOCKET=$(shq "$AGENTTEST_CHECK_SOCKET")"
      [ -z "${AGENTTEST_CONFIG:-}" ] || echo "AGENTTEST_CONFIG=$(shq "$AGENTTEST_CONFIG")"
    } >"$f.tmp"
  )
  mv "$f.tmp" "$f"
}

# env_url: the URL recorded by the running stack (falls back to ours).
env_url() {
  local u
  u=$(sed -n "s/^AGENTTEST_URL='\(.*\)'\$/\1/p" "$VAR/stack.env" 2>/dev/null)
  printf '%s' "${u:-$URL}"
}

# stack_stop: stop everything, last started first.
stack_stop() {
  rm -f "$VAR/stack.env"
  stop_runner
  nginx_stop
  pool_stop
  mariadb_stop
}

STARTING=0
# on_exit: a start that fails half-way stops what it had started.
on_exit() {
  local rc=$?
  if [ "$STARTING" = 1 ] && [ "$rc" -ne 0 ]; then
    echo "stack: start failed; stopping what was started (logs in $LOG)" >&2
    STARTING=0
    stack_stop
  fi
}

# stack_start: bring everything up in order and write stack.env.
stack_start() {
  STARTING=1
  trap on_exit EXIT
  [ -x "$BIN/agenttest-fcgi" ] || die "$BIN/agenttest-fcgi is missing (run make build)"
  [ -x "$BIN/agenttest" ] || die "$BIN/agenttest is missing (run make build)"
  pool_check_config
  mariadb_start
  db_migrate
  prepare_data
  pool_start
  nginx_start
  start_runner
  write_env
  STARTING=0
}

# cmd_start: background start; a running stack is left alone (exit 0).
cmd_start() {
  lock
  local n
  n=$(count_running)
  if [ "$n" -eq "${#COMPONENTS[@]}" ]; then
    say "already running at $(env_url)"
    return 0
  fi
  if [ "$n" -gt 0 ]; then
    say "a partly running stack was found in $VAR; stopping it first"
    stack_stop
  fi
  stack_start
  say "agenttest is up at $URL (logs in $LOG; stop with: make stop)"
}

# cmd_run: foreground start; Ctrl-C (or any component dying) stops it all.
cmd_run() {
  lock
  if [ "$(count_running)" -gt 0 ]; then
    die "a stack already runs in $VAR (make stop first, or set AGENTTEST_VAR)"
  fi
  trap 'echo; say "stopping"; stack_stop; exit 130' INT TERM
  stack_start
  flock -u 9
  say "agenttest is up at $URL (Ctrl-C stops it; logs in $LOG)"
  local c
  while :; do
    sleep 1 &
    wait $! || true
    [ -f "$VAR/stack.env" ] || { say "stopped from elsewhere"; exit 0; }
    for c in "${COMPONENTS[@]}"; do
      if ! pid_of "$c" >/dev/null; then
        echo "stack: $c exited unexpectedly; stopping the stack" >&2
        tail_log "$LOG/$( [ "$c" = mariadb ] && echo mariadbd || echo "$c").log"
        stack_stop
        exit 1
      fi
    done
  done
}

# cmd_stop: stop everything; quiet success when nothing runs.
cmd_stop() {
  lock
  if [ "$(count_running)" -eq 0 ]; then
    stack_stop
    say "not running"
    return 0
  fi
  stack_stop
  say "stopped"
}

# cmd_status: one line per component and the URL; exit 0 all, 3 none, 1 some.
cmd_status() {
  local c pid n=0
  for c in "${COMPONENTS[@]}"; do
    if pid=$(pid_of "$c"); then
      printf '%-8s running (pid %s)\n' "$c" "$pid"
      n=$((n + 1))
    else
      printf '%-8s stopped\n' "$c"
    fi
  done
  if [ "$n" -eq "${#COMPONENTS[@]}" ]; then
    echo "url      $(env_url)"
    return 0
  fi
  [ "$n" -eq 0 ] && return 3
  return 1
}

main() {
  local cmd=${1:-}
  case $cmd in
    run | start | stop | status | db-stop | db-start) ;;
    *)
      echo "usage: scripts/stack.sh run|start|stop|status|db-stop|db-start" >&2
      exit 2
      ;;
  esac
  load_config
  make_dirs
  case $cmd in
    run) cmd_run ;;
    start) cmd_start ;;
    stop) cmd_stop ;;
    status) cmd_status ;;
    db-stop) lock; mariadb_stop ;;
    db-start) lock; mariadb_start ;;
  esac
}

main "$@"

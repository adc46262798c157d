# shellcheck shell=bash
# nginx for the dev stack: renders nginx/ into $VAR/nginx and runs it with
# that prefix, its own pid file, temp paths and logs, in the foreground
# ("daemon off") under our own pid bookkeeping. Sourced by scripts/stack.sh.

# nginx_render: write $VAR/nginx/nginx.conf and agenttest-site.conf.
nginx_render() {
  local user_line="" access_log="off"
  mkdir -p "$VAR/nginx/tmp"
  # As root the workers would otherwise drop to "nobody", which cannot reach
  # the pool's socket or the temp dirs in $VAR: the dev stack is one user.
  [ "$(id -u)" -eq 0 ] && user_line="user root root;"
  [ "$NGINX_ACCESS_LOG" = 1 ] &&
    access_log="$LOG/nginx-access.log agenttest_json buffer=64k flush=1s"
  python_render "$REPO/nginx/nginx-dev.conf.in" >"$VAR/nginx/nginx.conf" \
    "USER_LINE=$user_line" "WORKER_PROCESSES=$NGINX_WORKERS" \
    "VAR_RUN=$RUN" "VAR_LOG=$LOG" "VAR_NGINX=$VAR/nginx" || die "rendering nginx.conf failed"
  python_render "$REPO/nginx/agenttest-site.conf.in" >"$VAR/nginx/agenttest-site.conf" \
    "LISTEN=$LISTEN" "SERVER_NAME=_" "ACCESS_LOG=$access_log" \
    "FCGI_SOCKET=$FCGI_SOCKET" "STATIC_ROOT=$STATIC_ROOT" \
    "BODY_LIMIT=$BODY_LIMIT" "CLIENT_MAX_BODY=$CLIENT_MAX_BODY" \
    "RATE_RPM=$RATE_RPM" "RATE_BURST=$RATE_BURST" "RETRY_AFTER=$RETRY_AFTER" \
    "UPSTREAM_KEEPALIVE=$UPSTREAM_KEEPALIVE" "ALLOWED_HOSTS=$ALLOWED_HOSTS" || die "rendering the nginx site failed"
}

# python_render TEMPLATE NAME=VALUE...: nginx/render.py with Debian's python.
python_render() {
  "$PYTHON" "$REPO/nginx/render.py" "$@"
}

# nginx_cmd ARGS...: nginx with the stack's prefix, config and error log.
nginx_cmd() {
  nginx -p "$VAR/nginx/" -c "$VAR/nginx/nginx.conf" -e "$LOG/nginx-error.log" "$@"
}

# nginx_health: succeed when /health answers 200 through nginx.
nginx_health() {
  curl -fsS -o /dev/null --max-time 2 "$URL/health" 2>/dev/null
}

# nginx_start: render, test the configuration, start, wait for /health.
nginx_start() {
  if pid_of nginx >/dev/null; then
    return 0
  fi
  nginx_render
  local out
  if ! out=$(nginx_cmd -t -q 2>&1); then
    echo "$out" >&2
    die "the rendered nginx configuration is invalid ($VAR/nginx/nginx.conf)"
  fi
  spawn nginx "$LOG/nginx-error.log" nginx -p "$VAR/nginx/" -c "$VAR/nginx/nginx.conf" -e "$LOG/nginx-error.log"
  if ! wait_for 20 "$URL/health through nginx" nginx_health; then
    tail_log "$LOG/nginx-error.log"
    tail_log "$LOG/pool.log"
    die "the stack does not answer on $URL/health"
  fi
}

# nginx_stop: graceful shutdown (SIGQUIT finishes open requests).
nginx_stop() {
  stop_proc nginx QUIT 10
}

# shellcheck shell=bash
# The dev stack's private MariaDB server. Sourced by scripts/stack.sh.
#
# The data directory is $VAR/mysql (created by mariadb-install-db on first
# start), the only way in is the unix socket $VAR/run/mysqld.sock
# (--skip-networking), and the account is the invoking OS user through
# unix_socket authentication, so there is no password anywhere. --no-defaults
# keeps /etc/mysql out of it, so it runs next to a system MariaDB.

# mariadb_account: the MariaDB account the stack connects as (the OS user;
# root in CI, where the server itself runs with --user=root).
mariadb_account() {
  id -un
}

# mariadb_client ARGS...: the mariadb client connected to the stack's server.
mariadb_client() {
  mariadb --no-defaults --protocol=socket --socket="$RUN/mysqld.sock" \
    -u "$(mariadb_account)" "$@"
}

# mariadb_install: create the data directory on first start.
mariadb_install() {
  [ -d "$VAR/mysql/mysql" ] && return 0
  say "creating the MariaDB data directory in $VAR/mysql"
  rm -rf "$VAR/mysql"
  mkdir -p "$VAR/mysql"
  local user_args=()
  if [ "$(id -u)" -eq 0 ]; then
    user_args=(--user=root)
  else
    user_args=(--auth-root-socket-user="$(id -un)")
  fi
  # The bootstrap server's temporary tables go under $VAR/tmp, not /tmp:
  # their names carry only the server's pid, so two stacks bootstrapping at
  # once in different pid namespaces that share /tmp collided ("Could not
  # remove temporary table: '/tmp/#sql-temptable-...'", install failed).
  mkdir -p "$VAR/tmp"
  if ! mariadb-install-db --no-defaults --datadir="$VAR/mysql" "${user_args[@]}" \
      --auth-root-authentication-method=socket --skip-test-db --tmpdir="$VAR/tmp" \
      >>"$LOG/mariadb-install.log" 2>&1; then
    tail_log "$LOG/mariadb-install.log"
    rm -rf "$VAR/mysql"
    die "mariadb-install-db failed"
  fi
}

# mariadb_ping: succeed when the server answers on its socket.
mariadb_ping() {
  mariadb_client -N -e 'SELECT 1' >/dev/null 2>&1
}

# mariadb_start: install if needed, start the server unless it already runs,
# wait until it answers, and create the agenttest database.
mariadb_start() {
  if pid_of mariadb >/dev/null; then
    return 0
  fi
  mariadb_install
  local user_args=()
  [ "$(id -u)" -eq 0 ] && user_args=(--user=root)
  rm -f "$RUN/mysqld.sock"
  spawn mariadb "$LOG/mariadbd.log" mariadbd --no-defaults \
    --datadir="$VAR/mysql" --socket="$RUN/mysqld.sock" --skip-networking \
    --pid-file="$RUN/mariadbd.pid" --log-error="$LOG/mariadbd.log" \
    --tmpdir="$VAR/tmp" --innodb-buffer-pool-size="$DB_BUFFER_POOL" \
    --character-set-server=utf8mb4 --collation-server=utf8mb4_unicode_ci \
    "${user_args[@]}"
  if ! wait_for 60 "MariaDB on $RUN/mysqld.sock" mariadb_ping; then
    tail_log "$LOG/mariadbd.log"
    die "MariaDB did not start"
  fi
  mariadb_client -e 'CREATE DATABASE IF NOT EXISTS agenttest CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci' ||
    die "could not create the agenttest database"
}

# mariadb_stop: shut the server down cleanly (SIGTERM), waiting for InnoDB.
mariadb_stop() {
  stop_proc mariadb TERM 60
  rm -f "$RUN/mysqld.sock" "$RUN/mariadbd.pid"
}

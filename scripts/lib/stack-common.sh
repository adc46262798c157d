# shellcheck shell=bash
# Shared helpers of scripts/stack.sh: configuration lookup, messages, and
# process bookkeeping through pid files. Sourced, never run.
#
# Every process the stack starts gets its own session (setsid), its pid in
# $VAR/run/<name>.pid, and its output in $VAR/log/. A pid file is trusted
# only while the process it names still runs the expected executable, so a
# stale file left by a crash can never make us signal an unrelated process.

# die MSG...: print "stack: MSG" on stderr and exit 1.
die() {
  echo "stack: $*" >&2
  exit 1
}

# say MSG...: progress message on stdout.
say() {
  echo "stack: $*"
}

# cfg KEY DEFAULT: the configuration value of KEY. The environment wins, then
# the last "KEY = value" line of $AGENTTEST_CONFIG (the same file the
# application reads; surrounding double quotes are stripped), then DEFAULT.
cfg() {
  local key=$1 def=$2 line val
  if [ -n "${!key+x}" ]; then
    printf '%s' "${!key}"
    return
  fi
  if [ -n "${AGENTTEST_CONFIG:-}" ] && [ -r "$AGENTTEST_CONFIG" ]; then
    line=$(grep -E "^[[:space:]]*${key}[[:space:]]*=" "$AGENTTEST_CONFIG" | tail -n 1 || true)
    if [ -n "$line" ]; then
      val=${line#*=}
      val=$(printf '%s' "$val" | sed -e 's/^[[:space:]]*//' -e 's/[[:space:]]*$//' -e 's/^"\(.*\)"$/\1/')
      printf '%s' "$val"
      return
    fi
  fi
  printf '%s' "$def"
}

# require_uint NAME VALUE MIN MAX: exit unless VALUE is a decimal integer in
# [MIN, MAX].
require_uint() {
  local name=$1 val=$2 min=$3 max=$4
  if ! [[ $val =~ ^[0-9]{1,10}$ ]] || [ "$val" -lt "$min" ] || [ "$val" -gt "$max" ]; then
    die "$name must be an integer between $min and $max (got '$val')"
  fi
}

# pid_of NAME: print the pid recorded for NAME if that process is alive and
# still runs the executable NAME was started from; return 1 otherwise.
pid_of() {
  local name=$1 file="$RUN/$1.pid" exe pid want
  [ -r "$file" ] || return 1
  pid=$(head -n 1 "$file" 2>/dev/null)
  [[ $pid =~ ^[0-9]+$ ]] || return 1
  kill -0 "$pid" 2>/dev/null || return 1
  want=$(cat "$RUN/$name.exe" 2>/dev/null) || return 1
  exe=$(readlink "/proc/$pid/exe" 2>/dev/null) || return 1
  exe=${exe% (deleted)}
  [ "$exe" = "$want" ] || return 1
  printf '%s' "$pid"
}

# spawn NAME LOGFILE CMD...: start CMD in its own session with stdin from
# /dev/null and stdout+stderr appended to LOGFILE; record its pid and
# executable for pid_of. Prints nothing.
spawn() {
  local name=$1 log=$2 exe
  shift 2
  exe=$(readlink -f "$(command -v "$1")") || die "$1: not found"
  setsid "$@" </dev/null >>"$log" 2>&1 9>&- &
  echo $! >"$RUN/$name.pid"
  printf '%s\n' "$exe" >"$RUN/$name.exe"
}

# wait_for TIMEOUT_S DESCRIPTION CMD...: retry CMD every 0.1 s until it
# succeeds; return 1 after TIMEOUT_S seconds.
wait_for() {
  local timeout=$1 what=$2 i
  shift 2
  for ((i = 0; i < timeout * 10; i++)); do
    "$@" && return 0
    sleep 0.1
  done
  echo "stack: timed out after ${timeout}s waiting for $what" >&2
  return 1
}

# stop_proc NAME SIGNAL TIMEOUT_S: send SIGNAL to NAME's recorded process,
# wait up to TIMEOUT_S for it to exit, then SIGKILL its whole process group
# (workers included). Removes the pid file. Quiet and successful when NAME
# is not running.
stop_proc() {
  local name=$1 sig=$2 timeout=$3 pid i
  if pid=$(pid_of "$name"); then
    kill "-$sig" "$pid" 2>/dev/null || true
    for ((i = 0; i < timeout * 10; i++)); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
      echo "stack: $name did not stop in ${timeout}s, killing it" >&2
      kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true
    fi
    # Leftover members of the group (e.g. workers of a master that died).
    kill -KILL -- "-$pid" 2>/dev/null || true
  else
    kill_orphans "$name"
  fi
  rm -f "$RUN/$name.pid" "$RUN/$name.exe"
}

# kill_orphans NAME: NAME's recorded process is gone, but members of its
# process group (it was a session leader, so the group id is its pid) may
# live on, e.g. workers of a master killed with SIGKILL. Kill those that run
# NAME's executable; anything else is left alone.
kill_orphans() {
  local name=$1 pgid want p exe
  pgid=$(head -n 1 "$RUN/$name.pid" 2>/dev/null) || return 0
  [[ $pgid =~ ^[0-9]+$ ]] || return 0
  want=$(cat "$RUN/$name.exe" 2>/dev/null) || return 0
  for p in $(pgrep -g "$pgid" 2>/dev/null); do
    exe=$(readlink "/proc/$p/exe" 2>/dev/null) || continue
    [ "${exe% (deleted)}" = "$want" ] && kill -KILL "$p" 2>/dev/null
  done
  return 0
}

# tail_log FILE: show the end of a log after a failure.
tail_log() {
  [ -r "$1" ] || return 0
  echo "--- last lines of $1 ---" >&2
  tail -n 20 "$1" >&2
}

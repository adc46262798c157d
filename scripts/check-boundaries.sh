#!/usr/bin/env bash
# Component boundaries of DESIGN, checked on the sources and on what the
# linker produced (make boundaries, run by `make lint` and so by stage
# 05-lint). Usage: check-boundaries.sh BUILD_DIR BIN_DIR
#
#   1. The API tier (fcgi/) includes no runner or sandbox header: what it
#      shares with the runner is in common/ (notify.h, check_wire.h, uuid.h).
#   2. bin/agenttest-fcgi defines no symbol of librunner.a or libsandbox.a:
#      it links neither archive, so no runner or sandbox code can ride along.
#   3. libevaluator.a is pure computation: it references no sandbox call,
#      no memfd, futex (syscall) or prctl, no process creation and no
#      environment. Driving a sandbox lives in evaluator/runner/drive/.
#
# Prints every violation and exits 1 if there is one.
set -uo pipefail
build=${1:?build dir}
bindir=${2:?bin dir}
bad=0

# fail MSG: report one violation.
fail() {
  echo "boundaries: $*" >&2
  bad=1
}

# 1. includes from fcgi/
while IFS= read -r hit; do
  fail "fcgi/ includes a runner or sandbox header: $hit"
done < <(grep -rnE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"(evaluator/runner/|sandbox/)' fcgi/ || true)

# defined global symbols of an archive or a binary, one a line, sorted.
defined() {
  nm --defined-only -g "$1" 2>/dev/null | awk 'NF >= 3 { print $3 }' | sort -u
}

# 2. what agenttest-fcgi contains
fcgi_bin=$bindir/agenttest-fcgi
for lib in "$build/librunner.a" "$build/libsandbox.a"; do
  [ -f "$lib" ] && [ -f "$fcgi_bin" ] || { fail "missing $lib or $fcgi_bin (build first)"; continue; }
  while IFS= read -r sym; do
    fail "agenttest-fcgi contains $sym from $(basename "$lib")"
  done < <(comm -12 <(defined "$lib") <(defined "$fcgi_bin"))
done

# 3. what libevaluator.a calls
forbidden='^(sbx_.*|memfd_create|syscall|prctl|getenv|secure_getenv|fork|vfork|clone|clone3|execve?|execvpe?|posix_spawnp?)$'
if [ -f "$build/libevaluator.a" ]; then
  while IFS= read -r sym; do
    fail "libevaluator.a calls $sym (sandbox driving belongs to evaluator/runner/drive/)"
  done < <(nm -u "$build/libevaluator.a" | awk '{ print $NF }' | sort -u | grep -E "$forbidden" || true)
else
  fail "missing $build/libevaluator.a (build first)"
fi

exit $bad

#!/usr/bin/env bash
# `make bench`: run every tests/bench/*.sh except this one, in name order,
# each printing its own figures. Keeps going after a failing benchmark and
# exits non-zero at the end if any failed. BENCH="api sandbox" selects some.
set -uo pipefail
cd "$(dirname "$0")/../.."
failed=()
for b in tests/bench/*.sh; do
  name=$(basename "$b" .sh)
  [ "$name" = run ] && continue
  if [ -n "${BENCH:-}" ] && [[ " $BENCH " != *" $name "* ]]; then
    continue
  fi
  echo "=== bench $name ==="
  if ! bash "$b"; then
    failed+=("$name")
    echo "=== bench $name: FAILED ==="
  fi
done
[ "${#failed[@]}" -eq 0 ] || { echo "failed benchmarks: ${failed[*]}"; exit 1; }

#!/usr/bin/env bash
# The same unit tests built with ASan + UBSan (leaks included), then under
# valgrind (normal build) for the uninitialised-read class ASan cannot see.
set -euo pipefail
make --no-print-directory -s -j"$(nproc)" SANITIZER=address,undefined unit-tests
mapfile -t bins < <(find build/san/tests/unit -type f -executable -name 'test_*' | sort)
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:halt_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
rc=0
tests/lib/run_cmocka.sh asan "${bins[@]}" || rc=1
mapfile -t rel < <(find build/release/tests/unit -type f -executable -name 'test_*' | sort)
for t in "${rel[@]}"; do
  if ! valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite \
       "$t" >/dev/null 2>"$AGENTTEST_TEST_OUT/valgrind-$(basename "$t").log"; then
    echo "FAIL valgrind $(basename "$t")"; tail -30 "$AGENTTEST_TEST_OUT/valgrind-$(basename "$t").log"; rc=1
  else
    echo "ok   valgrind $(basename "$t")"
  fi
done
exit $rc

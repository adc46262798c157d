#!/usr/bin/env bash
# C unit tests (cmocka), normal build.
set -euo pipefail
make --no-print-directory -s -j"$(nproc)" unit-tests
mapfile -t bins < <(find build/release/tests/unit -type f -executable -name 'test_*' | sort)
[ "${#bins[@]}" -gt 0 ] || { echo "no unit tests built"; exit 1; }
tests/lib/run_cmocka.sh unit "${bins[@]}"

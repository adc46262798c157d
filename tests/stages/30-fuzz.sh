#!/usr/bin/env bash
# Fuzz smoke: each libFuzzer driver (request pipeline, JSON bodies,
# configuration and DATABASE_URL) for a bounded time over its committed
# corpus; one JUnit testcase per fuzzer.
set -euo pipefail
FUZZ_SECONDS=${FUZZ_SECONDS:-12} tests/fuzz/run.sh short

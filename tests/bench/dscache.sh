#!/usr/bin/env bash
# The runner's dataset cache on the default market (60 days, 29 assets,
# 97 MiB): time of a verified open (what every run paid before the cache)
# against a cached acquire (what a run pays now: list and stat the files).
# usage: tests/bench/dscache.sh [DAYS]   (needs make build and the unit tests)
set -euo pipefail
cd "$(dirname "$0")/../.."
days=${1:-60}
make --no-print-directory -s bin/agenttest build/release/tests/unit/runner/test_dscache
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bin/agenttest data synth --out "$tmp/ds" --version "bench-$days" --days "$days" >/dev/null
cat "$tmp/ds"/* > /dev/null   # warm the page cache, as on a runner host
DSCACHE_BENCH_DIR="$tmp/ds" build/release/tests/unit/runner/test_dscache | grep '^dataset'

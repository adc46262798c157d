#!/usr/bin/env bash
# Build and run the libFuzzer drivers (tests/fuzz/fuzz_*.c).
#
#   tests/fuzz/run.sh short   bounded pass (FUZZ_SECONDS per fuzzer, default 15;
#                             about a minute in all), used by stage 30
#   tests/fuzz/run.sh long    longer pass (FUZZ_SECONDS default 300), `make fuzz`
#
# Each fuzzer starts from its committed corpus (tests/fuzz/corpus/<name>/,
# copied, so runs never modify it) with its dictionary. A crash, leak or
# sanitizer report fails that fuzzer; the reproducer is kept under
# build/fuzz/artifacts/. With $AGENTTEST_JUNIT_DIR set, one JUnit testcase
# per fuzzer is written to fuzz.xml there.
set -uo pipefail
cd "$(dirname "$0")/../.."

mode=${1:-short}
case $mode in
  short) secs=${FUZZ_SECONDS:-15} ;;
  long)  secs=${FUZZ_SECONDS:-300} ;;
  *) echo "usage: $0 short|long" >&2; exit 2 ;;
esac

out=build/fuzz
mkdir -p "$out/artifacts" "$out/logs"
if ! make --no-print-directory -s -j2 -f tests/fuzz/fuzz.mk >"$out/logs/build.log" 2>&1; then
  cat "$out/logs/build.log" | tail -30
  if [ -n "${AGENTTEST_JUNIT_DIR:-}" ]; then
    printf '<testsuite name="fuzz" tests="1" failures="1"><testcase classname="fuzz" name="build"><failure message="fuzz build failed"/></testcase></testsuite>\n' \
      > "$AGENTTEST_JUNIT_DIR/fuzz.xml"
  fi
  exit 1
fi

declare -A dict=( [fuzz_request]=tests/fuzz/request.dict [fuzz_json]=tests/fuzz/request.dict [fuzz_config]=tests/fuzz/config.dict [fuzz_klines]=tests/fuzz/klines.dict )
cases=""
failures=0
total=0
for f in fuzz_request fuzz_json fuzz_config fuzz_klines; do
  name=${f#fuzz_}
  work=$(mktemp -d "$out/corpus-$name.XXXXXX")
  cp tests/fuzz/corpus/"$name"/* "$work"/
  start=$(date +%s)
  "$out/$f" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -max_len=8192 \
    -dict="${dict[$f]}" -artifact_prefix="$out/artifacts/$name-" -print_final_stats=1 \
    "$work" >"$out/logs/$name.log" 2>&1
  rc=$?
  took=$(( $(date +%s) - start ))
  execs=$(grep -m1 -o 'stat::number_of_executed_units: *[0-9]*' "$out/logs/$name.log" | grep -o '[0-9]*$')
  rm -rf "$work"
  total=$((total + 1))
  if [ $rc -eq 0 ]; then
    echo "ok   fuzz $name (${execs:-?} runs in ${took}s)"
    cases+="<testcase classname=\"fuzz\" name=\"$name\" time=\"$took\"/>"
  else
    failures=$((failures + 1))
    echo "FAIL fuzz $name (exit $rc); log: $out/logs/$name.log"
    grep -E 'ERROR|SUMMARY|runtime error|Test unit written' "$out/logs/$name.log" | head -10
    msg=$(grep -m1 -E 'SUMMARY|ERROR' "$out/logs/$name.log" | sed 's/[<>&"]/_/g')
    cases+="<testcase classname=\"fuzz\" name=\"$name\" time=\"$took\"><failure message=\"${msg:-fuzzer exited $rc}\"/></testcase>"
  fi
done
if [ -n "${AGENTTEST_JUNIT_DIR:-}" ]; then
  printf '<testsuite name="fuzz" tests="%d" failures="%d">%s</testsuite>\n' "$total" "$failures" "$cases" \
    > "$AGENTTEST_JUNIT_DIR/fuzz.xml"
fi
[ "$failures" -eq 0 ]

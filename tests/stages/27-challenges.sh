#!/usr/bin/env bash
# The MANTIS challenge core through libagenttest_eval.so (pytest,
# tests/challenges/): every label and metric against an independent
# numpy/scikit-learn/scipy reference on seeded series (bitwise where both
# sides use the same arithmetic, within documented bounds where numpy or BLAS
# dispatch per CPU), whole evaluations of every challenge against the
# reference, the original suite's label/metric/window ideas, the strict-mode
# fixes, our own results pinned by golden hashes (test_golden.py), and the
# original's SDK names, inference parity and the copy-on-write views
# (test_sdk_compat.py).
#
# Runs twice: (1) as this machine dispatches; (2) with numpy's AVX-512 code
# paths off, OPENBLAS_CORETYPE unset and glibc's libm forced onto its
# non-FMA variants (GLIBC_TUNABLES), so the bounds are not tuned to one
# path and the goldens of both libm variants are checked on any CPU. Two
# JUnit files, so the totals add up. Builds nothing: `make test` built the
# library first.
set -uo pipefail
cd "$(dirname "$0")/../.."
PYTHON=${PYTHON:-/usr/bin/python3}
export AGENTTEST_EVAL_LIB=${AGENTTEST_EVAL_LIB:-$PWD/build/release/libagenttest_eval.so}
[ -f "$AGENTTEST_EVAL_LIB" ] || { echo "27-challenges: $AGENTTEST_EVAL_LIB missing (make build)"; exit 1; }
files=(tests/challenges/test_labels_metrics.py tests/challenges/test_evaluate.py
       tests/challenges/test_original_ports.py tests/challenges/test_strict.py
       tests/challenges/test_golden.py tests/challenges/test_sdk_compat.py)
rc=0
"$PYTHON" -m pytest -q -p no:cacheprovider "${files[@]}" \
  --junitxml="$AGENTTEST_JUNIT_DIR/challenges.xml" -o junit_suite_name=challenges "$@" || rc=1
# numpy 1.24 honours the variable: it prints a warning for a name it does
# not dispatch, and reports the disabled features as absent. Check both.
npy_off="AVX512F AVX512CD AVX512_SKX AVX512_CLX AVX512_CNL AVX512_ICL"
chk=$(NPY_DISABLE_CPU_FEATURES="$npy_off" "$PYTHON" -c \
  'from numpy.core._multiarray_umath import __cpu_features__ as f; assert not f["AVX512F"]' 2>&1)
if [ $? -ne 0 ] || [ -n "$chk" ]; then
  echo "27-challenges: numpy did not honour NPY_DISABLE_CPU_FEATURES: $chk"; rc=1
fi
env -u OPENBLAS_CORETYPE \
  NPY_DISABLE_CPU_FEATURES="$npy_off" GLIBC_TUNABLES=glibc.cpu.hwcaps=-AVX2,-FMA \
  "$PYTHON" -m pytest -q -p no:cacheprovider "${files[@]}" \
  --junitxml="$AGENTTEST_JUNIT_DIR/challenges-noavx512.xml" -o junit_suite_name=challenges-noavx512 "$@" || rc=1
exit $rc

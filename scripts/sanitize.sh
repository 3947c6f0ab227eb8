#!/usr/bin/env bash
# Builds the CPU test suite with AddressSanitizer + UndefinedBehaviorSanitizer (SCN_SANITIZE=ON,
# no CUDA) in ${SCN_ASAN_BUILD_DIR:-build-asan} and runs it with ctest. Any sanitizer report
# fails the run (halt_on_error, and UBSan is built with -fno-sanitize-recover).
# A build folder that is already configured with SCN_SANITIZE=ON is reused as it is (e.g. the clang
# SCN_SANITIZE + SCN_FUZZ build of scripts/ci_sanitize.sh); otherwise it is configured here
# (default compiler, RelWithDebInfo).
# Excluded: the Python reference tests (a Python interpreter cannot load an ASan-instrumented
# libscn without LD_PRELOAD of the runtime) and the install test (its consumer build does not link
# the sanitizer runtimes). SCN_ASAN_EXCLUDE adds a regex of tests to leave out (CI,
# scripts/ci_sanitize.sh, leaves out the Python-driven end-to-end, zoo and INT8 CenterPoint tests,
# run un-instrumented by scripts/test.sh). Extra arguments go to ctest (e.g. -R Catalogue).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${SCN_ASAN_BUILD_DIR:-build-asan}
JOBS=${SCN_JOBS:-2}
start=$(date +%s)
if [ -f "$BUILD/CMakeCache.txt" ]; then
  if ! grep -q '^SCN_SANITIZE:BOOL=ON$' "$BUILD/CMakeCache.txt"; then
    echo "sanitize: $BUILD is configured without SCN_SANITIZE=ON; remove it or set SCN_ASAN_BUILD_DIR" >&2
    exit 2
  fi
else
  cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSCN_SANITIZE=ON -DSCN_WITH_CUDA=OFF >/dev/null
fi
cmake --build "$BUILD" -j"$JOBS"
echo "sanitize: build took $(( $(date +%s) - start )) s"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:halt_on_error=1:abort_on_error=0:strict_string_checks=1:detect_stack_use_after_return=1:check_initialization_order=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
start=$(date +%s)
ctest --test-dir "$BUILD" --output-on-failure -j"$JOBS" --timeout 1800 \
  -E "^(python_reference|install_find_package)\$${SCN_ASAN_EXCLUDE:+|$SCN_ASAN_EXCLUDE}" "$@"
echo "sanitize: ctest took $(( $(date +%s) - start )) s"

#!/usr/bin/env bash
# Fuzzes the ONNX importer and the .tensor loader with libFuzzer (clang, ASan + UBSan) for a
# bounded time each, starting from the seed corpus in tests/fuzz/corpus, and prints how many
# inputs each target executed. Exits non-zero when a target found a crash; its reproducer is in
# ${BUILD}/artifacts/<target>/ (add it to tests/fuzz/corpus/<target>/ once fixed: ctest replays it).
#   SCN_FUZZ_SECONDS  time per target (default 60)
#   SCN_FUZZ_BUILD_DIR  build folder (default build-fuzz); one already configured with SCN_FUZZ=ON
#                       is reused as it is (scripts/ci_sanitize.sh passes its own), otherwise it
#                       is configured here (clang, RelWithDebInfo, ASan + UBSan, no CUDA)
#   SCN_FUZZ_TARGETS  targets to run (default "onnx tensor")
# Needs clang and libFuzzer (Debian: apt-get install clang libclang-rt-14-dev).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
BUILD=${SCN_FUZZ_BUILD_DIR:-build-fuzz}
SECONDS_PER_TARGET=${SCN_FUZZ_SECONDS:-60}
TARGETS=${SCN_FUZZ_TARGETS:-onnx tensor}
JOBS=${SCN_JOBS:-2}

if [ -f "$BUILD/CMakeCache.txt" ]; then
  if ! grep -q '^SCN_FUZZ:BOOL=ON$' "$BUILD/CMakeCache.txt"; then
    echo "fuzz: $BUILD is configured without SCN_FUZZ=ON; remove it or set SCN_FUZZ_BUILD_DIR" >&2
    exit 2
  fi
else
  CXX_BIN=$(command -v clang++ || command -v clang++-14 || true)
  C_BIN=$(command -v clang || command -v clang-14 || true)
  if [ -z "$CXX_BIN" ] || [ -z "$C_BIN" ]; then
    echo "fuzz: clang not found (apt-get install clang libclang-rt-14-dev)" >&2
    exit 2
  fi
  cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_COMPILER="$CXX_BIN" -DCMAKE_C_COMPILER="$C_BIN" \
    -DSCN_FUZZ=ON -DSCN_SANITIZE=ON -DSCN_WITH_CUDA=OFF >/dev/null
fi
build_targets=""
for t in $TARGETS; do build_targets="$build_targets fuzz_$t"; done
cmake --build "$BUILD" -j"$JOBS" --target $build_targets scn_fuzz_seeds

# A working corpus per target: the committed seeds plus what earlier runs found (kept in the
# build folder, so the repository's corpus stays small and reviewed).
"$BUILD"/tests/fuzz/scn_fuzz_seeds "$BUILD/seeds" >/dev/null
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
status=0
summary=""
for t in $TARGETS; do
  work="$BUILD/corpus/$t"
  art="$BUILD/artifacts/$t"
  mkdir -p "$work" "$art"
  cp -n "$ROOT/tests/fuzz/corpus/$t/"* "$work/" 2>/dev/null || true
  cp -n "$BUILD/seeds/$t/"* "$work/" 2>/dev/null || true
  log="$BUILD/fuzz_$t.log"
  echo "fuzz: fuzz_$t for ${SECONDS_PER_TARGET} s (corpus $work, log $log)"
  set +e
  "$BUILD/tests/fuzz/fuzz_$t" "$work" -max_total_time="$SECONDS_PER_TARGET" -timeout=20 -rss_limit_mb=2048 \
    -max_len=65536 -print_final_stats=1 -artifact_prefix="$art/" >"$log" 2>&1
  rc=$?
  set -e
  execs=$(grep -Eo 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -Eo '[0-9]+$' | tail -1 || true)
  cov=$(grep -Eo 'cov: [0-9]+' "$log" | tail -1 | grep -Eo '[0-9]+' || true)
  if [ "$rc" -ne 0 ]; then
    status=1
    summary="$summary\n  fuzz_$t: CRASH (exit $rc) after ${execs:-?} executions; reproducer in $art/; see $log"
    grep -E 'ERROR:|SUMMARY:|Test unit written' "$log" | head -5 >&2 || true
  else
    summary="$summary\n  fuzz_$t: ${execs:-?} executions in ${SECONDS_PER_TARGET} s, no crash (coverage ${cov:-?} edges, corpus $(ls "$work" | wc -l) files)"
  fi
done
echo -e "fuzz summary:$summary"
exit $status

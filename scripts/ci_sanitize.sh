#!/usr/bin/env bash
# CI's sanitizer and fuzzing stage (run by scripts/test.sh after the main tests; SCN_TEST_SANITIZE=0
# skips it there). ONE extra build, CPU only, with clang: ASan + UBSan (SCN_SANITIZE) and the
# libFuzzer targets (SCN_FUZZ) in ${SCN_CI_SANITIZE_BUILD_DIR:-build-sanitize}. libscn is built at
# -O1 -gline-tables-only; the tests, fuzz harnesses and CLI at -O0 (SCN_HARNESS_COMPILE_OPTIONS),
# which halves the build on two cores. Then
#  1. scripts/sanitize.sh: the CPU test suite under ASan + UBSan on that build. Left out besides
#     sanitize.sh's own exclusions (Python reference, install test): the Python-driven end-to-end,
#     zoo and INT8 CenterPoint tests (e2e_*, zoo_*, int8_centerpoint_*, int8_quant_sim_*). They run whole
#     networks, many times or on real-size frames, and are minutes each when instrumented; the main build
#     runs them.
#  2. scripts/fuzz.sh: fuzz_onnx and fuzz_tensor for SCN_FUZZ_SECONDS each (default here 60), on
#     the same build; prints the executions per target, fails on a crash.
# Any sanitizer report or fuzzer crash fails the stage.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${SCN_CI_SANITIZE_BUILD_DIR:-build-sanitize}
CXX_BIN=$(command -v clang++ || command -v clang++-14 || true)
C_BIN=$(command -v clang || command -v clang-14 || true)
if [ -z "$CXX_BIN" ] || [ -z "$C_BIN" ]; then
  echo "ci_sanitize: clang not found (scripts/install_deps.sh installs clang-14 and libclang-rt-14-dev)" >&2
  exit 2
fi

stage_start=$(date +%s)
flags="-O1 -gline-tables-only"
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Sanitize \
  -DCMAKE_CXX_COMPILER="$CXX_BIN" -DCMAKE_C_COMPILER="$C_BIN" \
  -DCMAKE_CXX_FLAGS_SANITIZE="$flags" -DCMAKE_C_FLAGS_SANITIZE="$flags" \
  -DSCN_HARNESS_COMPILE_OPTIONS=-O0 \
  -DSCN_SANITIZE=ON -DSCN_FUZZ=ON -DSCN_WITH_CUDA=OFF >/dev/null

start=$(date +%s)
SCN_ASAN_BUILD_DIR="$BUILD" SCN_ASAN_EXCLUDE="^(e2e_.*|zoo_.*|int8_centerpoint_.*|int8_quant_sim_.*)\$" scripts/sanitize.sh
sanitize_s=$(( $(date +%s) - start ))

start=$(date +%s)
SCN_FUZZ_BUILD_DIR="$BUILD" SCN_FUZZ_SECONDS=${SCN_FUZZ_SECONDS:-60} scripts/fuzz.sh
fuzz_s=$(( $(date +%s) - start ))

echo "ci_sanitize: sanitized build + ctest ${sanitize_s} s, fuzzing ${fuzz_s} s," \
     "stage $(( $(date +%s) - stage_start )) s"

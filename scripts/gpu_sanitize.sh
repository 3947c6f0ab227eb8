#!/usr/bin/env bash
# compute-sanitizer over the GPU tests, one device call (after scripts/gpu_check.sh built build-gpu,
# or it builds it). A tool's report fails the run (--error-exitcode). Logs: $OUT/sanitize_<tool>.log,
# summary in $OUT/sanitize.log.
#
#   bash scripts/gpu_sanitize.sh            # on the device machine, from the repository root
# Environment: SCN_SANITIZE_TOOLS (default "memcheck racecheck initcheck"),
# SCN_SANITIZE_TIMEOUT (seconds per binary and tool, default 280; a binary cut by it prints rc 124),
# SCN_SANITIZE_ONLY (the binaries to run, by name, space-separated; default all of the list below),
# SCN_MEMCHECK_FILTER (memcheck's scn_cuda_tests filter, default all), SCN_POINTS_FILTER
# (test_points_to_bev's filter for every tool, default all): under memcheck scn_cuda_tests takes
# longer than one device call, so a run can be split in two by filters.
# What each tool runs (racecheck and initcheck slow the kernels 100x or more):
#   memcheck   every test of scn_cuda_tests, every CUDA case of test_robustness (soak: 4 frames),
#              every test of the voxelizer's CUDA binaries (test_voxelize_cuda, test_points_to_bev)
#   racecheck  SCN_RACECHECK_FILTER of scn_cuda_tests: the conv cases (every channel count, kernel shape,
#              stride, padding, dilation, batch), inverse conv, densify tails, empty/one voxel, overflow,
#              device inputs, with heuristic tiles (SCN_TEST_AUTOTUNE=0, below); every osplit config
#              once on the real frame's first 3,000 voxels, one epilogue per level (offset_split_check:
#              also the configs only the tuner picks); the voxelizer's CUDA binaries; the fusions and the
#              every-tile-config sweep are left to memcheck
#   initcheck  SCN_INITCHECK_FILTER of scn_cuda_tests (all but the real frame), the CUDA cases of
#              test_robustness, the voxelizer's CUDA binaries
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
OUT=${OUT:-$ROOT/gpu_out}
BUILD=${SCN_BUILD_DIR:-$ROOT/build-gpu}
mkdir -p "$OUT"
if [ ! -x "$BUILD/tests/cuda/scn_cuda_tests" ]; then
  SCN_SKIP_TESTS=1 SCN_SKIP_ZOO=1 SCN_SKIP_BENCH=1 SCN_SKIP_INT8=1 SCN_SKIP_GOLDEN=1 SCN_SKIP_KERN=1 \
    SCN_SKIP_VOX=1 SCN_SKIP_CACHE=1 bash scripts/gpu_check.sh > /dev/null 2>&1
fi
CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
TOOLS=${SCN_SANITIZE_TOOLS:-memcheck racecheck initcheck}
RACE_FILTER=${SCN_RACECHECK_FILTER:-All/CudaConv.MatchesCpuReference/*:CudaBackend.InverseConv:CudaBackend.DensifyTails:CudaBackend.EmptyOneVoxelAndBatch:CudaBackend.CapacityOverflowIsReported:CudaBackend.DeviceInputsAndDeviceValidation}
INIT_FILTER=${SCN_INITCHECK_FILTER:-*:-*RealFrame*}
MEM_FILTER=${SCN_MEMCHECK_FILTER:-*}
POINTS_FILTER=${SCN_POINTS_FILTER:-*}
ONLY=${SCN_SANITIZE_ONLY:-}
LIMIT=${SCN_SANITIZE_TIMEOUT:-280}
# One line per run: "<folder under tests> <binary> <gtest filter, or args after -- >".
runs_for() {
  case "$1" in
    memcheck)
      echo "cuda scn_cuda_tests $MEM_FILTER"
      echo "robustness test_robustness *Cuda*"
      echo "voxelize test_voxelize_cuda *"
      echo "voxelize test_points_to_bev $POINTS_FILTER" ;;
    racecheck)
      echo "cuda scn_cuda_tests $RACE_FILTER"
      echo "cuda offset_split_check -- --runs 1 --quick --voxels 3000"
      echo "voxelize test_voxelize_cuda *"
      echo "voxelize test_points_to_bev $POINTS_FILTER" ;;
    *)
      echo "cuda scn_cuda_tests $INIT_FILTER"
      echo "robustness test_robustness *Cuda*"
      echo "voxelize test_voxelize_cuda *"
      echo "voxelize test_points_to_bev $POINTS_FILTER" ;;
  esac
}
: > "$OUT/sanitize.log"
for tool in $TOOLS; do
  t0=$(date +%s)
  log="$OUT/sanitize_$tool.log"
  # racecheck's host memory grows with every instrumented launch and is not returned while the process
  # runs: with the autotuner's launches one conv test passed 120 GB and the OOM killer ended it (the
  # "abort" of sessions 8-12), so the conv tests build their engines with the heuristic tiles
  # (SCN_TEST_AUTOTUNE=0; the configs only the tuner picks are raced through offset_split_check), and the
  # robustness binary (two engines on two threads, hundreds of forwards: host-side concurrency, which
  # racecheck does not look at) is left to memcheck and initcheck
  if [ "$tool" = racecheck ]; then export SCN_TEST_AUTOTUNE=0; else unset SCN_TEST_AUTOTUNE; fi
  : > "$log"
  while read -r dir bin arg; do
    if [ -n "$ONLY" ] && [[ " $ONLY " != *" $bin "* ]]; then continue; fi
    exe="$BUILD/tests/$dir/$bin"
    if [ ! -x "$exe" ]; then
      echo "== $tool: $bin missing in $BUILD/tests/$dir" >> "$log"
      echo "rc 1" >> "$log"
      continue
    fi
    if [ "${arg%% *}" = "--" ]; then args=(${arg#-- }); else args=(--gtest_filter="$arg" --gtest_color=no); fi
    echo "== $tool: $bin ${args[*]}" >> "$log"
    ( cd "$(dirname "$exe")" && SCN_SOAK_FRAMES=4 SCN_SOAK_UNDER_SANITIZER=1 timeout "$LIMIT" "$CS" --tool "$tool" --error-exitcode 97 \
        "./$bin" "${args[@]}" ) >> "$log" 2>&1
    echo "rc $?" >> "$log"
  done < <(runs_for "$tool")
  {
    echo "$tool ($(( $(date +%s) - t0 )) s):"
    grep -E "^== |^rc |ERROR SUMMARY|PASSED|FAILED|Hazard|Race reported|Invalid|Uninitialized|RACECHECK SUMMARY|failure" "$log" | awk '/^(rc|==) / || !seen[$0]++' | head -60
  } >> "$OUT/sanitize.log"
done
cat "$OUT/sanitize.log"

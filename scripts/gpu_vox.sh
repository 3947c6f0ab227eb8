#!/usr/bin/env bash
# The voxelizer's focused device check (one short device call while working on the CUDA voxelizer;
# scripts/gpu_check.sh runs the same checks inside the full suite): builds the voxelizer targets,
# runs its GPU tests, compares the CUDA voxel set with the CPU oracle's bit for bit on the
# 272,736-point synthetic cloud, times it per call and inside a CUDA graph, prints the graph's
# per-kernel timeline (tools/trace), runs compute-sanitizer (memcheck, racecheck) on the tests and
# profiles the six kernels with Nsight Compute. Logs under $OUT.
#   run tool, carry [".deps", ".devdata"]:   bash scripts/gpu_vox.sh
set -o pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/gpu_out}
mkdir -p "$OUT"
B=${SCN_BUILD_DIR:-/tmp/b}
M=.devdata/int8_plans/cp.onnx C=/tmp/scn-cloud.bin P=nuscenes-centerpoint
cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DSCN_WITH_CUDA=ON \
  -DSCN_DEPS_DIR="$PWD/.deps" -DSCN_BUILD_TESTS=ON > "$OUT/build.log" 2>&1 &&
  ninja -C $B -j16 scn bench_points_to_bev scn_trace test_voxelize_cuda test_points_to_bev >> "$OUT/build.log" 2>&1 ||
  { grep -E "error" -A3 "$OUT/build.log" | head -40; exit 1; }
S=$B/tools/cli/scn
$S synth --seed 1 --points $C > /dev/null
{ $B/tests/voxelize/test_voxelize_cuda; $B/tests/voxelize/test_points_to_bev; } > "$OUT/tests.txt" 2>&1
grep -E "^\[ *(OK|FAILED|PASSED) |Failure|differ" "$OUT/tests.txt" | head -30
for d in cuda cpu; do
  $S voxelize $C --preset $P --device $d --features /tmp/scn-vf-$d.tensor --indices /tmp/scn-vi-$d.tensor | tail -1
done
cmp /tmp/scn-vf-cuda.tensor /tmp/scn-vf-cpu.tensor && cmp /tmp/scn-vi-cuda.tensor /tmp/scn-vi-cpu.tensor &&
  echo "voxel sets: CUDA and CPU bitwise equal"
$S voxelize $C --preset $P --device cuda --bench 1000 | tail -1
[ -f $M ] && for r in 1 2; do $B/tests/voxelize/bench_points_to_bev $M $C --preset $P --runs 500 | grep median; done
if [ -f $M ]; then
  CUDA_INJECTION64_PATH=$B/tools/libscn_trace.so SCN_TRACE_FILE=/tmp/scn-vox-trace.csv \
    $B/tests/voxelize/bench_points_to_bev $M $C --preset $P --runs 300 > /dev/null 2>&1
  python3 tools/trace/trace_report.py /tmp/scn-vox-trace.csv --last 200 --width 60 > "$OUT/trace.txt" 2>&1
  sed -n 1,12p "$OUT/trace.txt"
fi
compute-sanitizer --tool memcheck $B/tests/voxelize/test_voxelize_cuda \
  --gtest_filter='*Crowded*:*Options*:*Overflow*:*Empty*' 2>&1 | tail -2
compute-sanitizer --tool racecheck $B/tests/voxelize/test_voxelize_cuda --gtest_filter='*Options*:*Crowded*' 2>&1 | tail -2
timeout 200 ncu --clock-control none --cache-control none \
  -k regex:'classify|rank_kernel|count_kernel|features_kernel|spill_kernel|big_voxels' --launch-skip 60 \
  --launch-count 6 --section SpeedOfLight --section LaunchStats --section Occupancy --section WarpStateStats \
  $S voxelize $C --preset $P --device cuda --bench 15 > "$OUT/ncu.txt" 2>&1
grep -E "^  [a-z_:]+.*\(|Duration|Achieved Occupancy|Warp Cycles Per Issued" "$OUT/ncu.txt" | head -40

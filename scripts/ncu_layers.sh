#!/usr/bin/env bash
# Nsight Compute of single CenterPoint convs under forced tile configs (device tool; the real frame in
# .devdata). Each argument is LAUNCH:CONFIG, LAUNCH the 0-based index of the implicit-GEMM launch in
# one forward (conv0 = 0 ... conv20 = 20), CONFIG a compiled tile name (CudaOptions::tile), e.g.
#   OUT=$OUT bash scripts/ncu_layers.sh 16:m64n128k64s4twg 16:m32n128k64s3t 12:m128n64k64s3tw8wg
# Writes $OUT/ncu.log (speed of light, memory, warp states, occupancy) and prints the key lines.
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/gpu_out}
B=${SCN_BUILD_DIR:-build-gpu}
mkdir -p "$OUT"
cmake -S . -B "$B" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DSCN_WITH_CUDA=ON \
  -DSCN_DEPS_DIR="$PWD/.deps" -DSCN_SHARED_DATA_DIR="$PWD/.devdata" -DSCN_BUILD_TESTS=ON > "$OUT/build.log" 2>&1 &&
  ninja -C "$B" -j16 bench_centerpoint >> "$OUT/build.log" 2>&1 || { tail -20 "$OUT/build.log"; exit 1; }
for spec in "$@"; do
  echo "=== launch ${spec%%:*} config ${spec#*:}"
  timeout 120 ncu --clock-control none -k regex:igemm_kernel --launch-skip "${spec%%:*}" \
    --launch-count 1 --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats \
    --section Occupancy --section LaunchStats \
    "$B/tests/cuda/bench_centerpoint" --data .devdata/nuscenes-centerpoint --ncu --variant "tile=${spec#*:}" 2>&1 | grep -vE "^\s*$|----"
done > "$OUT/ncu.log" 2>&1
grep -E "===|igemm_kernel|Duration|Throughput|Hit Rate|Achieved Occupancy|Warp Cycles Per Issued|Block Limit" \
  "$OUT/ncu.log" | head -150

#!/usr/bin/env bash
# The main job: CenterPoint (SpMiddleResNetFHD, seeded weights) on a synthetic LiDAR frame.
# Builds scn, generates the frame, exports the model + the PyTorch reference, runs the engine
# (CUDA fp16 when a GPU is present, else CPU fp32), and compares against the reference.
# Builds only what this job needs, in its own folder (build-demo; scripts/test.sh's build keeps
# its tests): the `scn` target, no tests; with a GPU present the CUDA kernels for that GPU's
# architecture only, else CPU-only (-DSCN_WITH_CUDA=OFF).
# Usage: scripts/demo.sh [VOXELS] [SEED]
set -euo pipefail
cd "$(dirname "$0")/.."
VOXELS=${1:-60000}
SEED=${2:-1}
BUILD=${SCN_DEMO_BUILD_DIR:-build-demo}
OUT=workspace/generated
scripts/install_deps.sh
if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then export PATH=/usr/local/cuda/bin:$PATH; fi
flags=(-DSCN_BUILD_TESTS=OFF)
# The present GPUs' compute capabilities ("8.6" -> 86; CMake's "native" where the driver cannot
# say); no GPU (or no nvcc): a CPU-only build.
if nvidia-smi -L >/dev/null 2>&1 && command -v nvcc >/dev/null; then
  cap=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | tr -d ' .' | sort -u |
        paste -sd ';' || true)
  [[ "$cap" =~ ^[0-9]+(;[0-9]+)*$ ]] || cap=native
  flags+=(-DSCN_WITH_CUDA=ON "-DCMAKE_CUDA_ARCHITECTURES=$cap")
  echo "== build: scn with CUDA for this machine's GPU ($cap)"
else
  flags+=(-DSCN_WITH_CUDA=OFF)
  echo "== build: scn, CPU only (no GPU found)"
fi
start=$(date +%s)
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release "${flags[@]}" >/dev/null
cmake --build "$BUILD" -j"$(nproc)" --target scn
echo "== build took $(( $(date +%s) - start )) s"
SCN=$BUILD/tools/cli/scn
mkdir -p "$OUT"
echo "== synthetic frame: $VOXELS voxels, seed $SEED"
"$SCN" synth --voxels "$VOXELS" --seed "$SEED" --features "$OUT/features.tensor" --indices "$OUT/indices.tensor"
echo "== export CenterPoint to ONNX and compute the PyTorch reference (float64, on the CPU)"
PYTHONPATH=tools/python /usr/bin/python3 -m scn_tools.make_reference --model centerpoint --order zyx \
  --features "$OUT/features.tensor" --indices "$OUT/indices.tensor" --grid 41x1440x1440 --seed 0 \
  --onnx "$OUT/centerpoint.onnx" --output "$OUT/reference.tensor" --quiet
if nvidia-smi -L >/dev/null 2>&1 && grep -q "SCN_WITH_CUDA:BOOL=ON" "$BUILD/CMakeCache.txt"; then
  DEVICE=cuda; PRECISION=fp16; BOUND="--max-rel-l2 1e-3 --min-cosine 0.99999"
else
  DEVICE=cpu; PRECISION=fp32; BOUND="--max-rel-l2 1e-5"
fi
echo "== scn run ($DEVICE, $PRECISION)"
"$SCN" run "$OUT/centerpoint.onnx" --features "$OUT/features.tensor" --indices "$OUT/indices.tensor" \
  --grid 41x1440x1440 --device "$DEVICE" --precision "$PRECISION" --repeat 3 --output "$OUT/output.tensor"
echo "== scn compare (engine vs PyTorch reference)"
# shellcheck disable=SC2086
"$SCN" compare "$OUT/output.tensor" "$OUT/reference.tensor" $BOUND

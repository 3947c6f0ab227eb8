#!/usr/bin/env bash
# The Python package on the device (no network): pip install --no-build-isolation --target a folder, used
# through PYTHONPATH beside python3's own torch / nanobind / scikit-build-core / pytest (the device's
# python3 is itself a virtual environment, so a nested venv would not see them), the package tests (tests/python/package, CUDA ones included),
# and python -m scn.bench on CenterPoint (zoo weights) and the real frame (and, with the CLI built, on raw points).
# Logs under $OUT.
#
#   bash scripts/gpu_python.sh            (after scripts/gpu_check.sh, whose build-gpu/tools/cli/scn the
#                                          bitwise CLI test uses; without it that test skips)
# Environment: OUT (default ./gpu_out), SCN_CUDA_ARCHS (default 90), SCN_DATA_DIR (the real frame,
# default .devdata/nuscenes-centerpoint), SCN_BENCH_RUNS (default 500).
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
OUT=${OUT:-$ROOT/gpu_out}
mkdir -p "$OUT"
DATA=${SCN_DATA_DIR:-$ROOT/.devdata/nuscenes-centerpoint}
TARGET=/tmp/scn-py-target
PY=${SCN_PYTHON:-python3}
if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then export PATH=/usr/local/cuda/bin:$PATH; fi

t0=$(date +%s)
{
  rm -rf "$TARGET"
  "$PY" -m pip install --no-build-isolation --no-deps --no-index -v --target "$TARGET" . \
    --config-settings=cmake.define.CMAKE_CUDA_ARCHITECTURES="${SCN_CUDA_ARCHS:-90}"
} > "$OUT/py_install.log" 2>&1
echo "pip install rc $? in $(( $(date +%s) - t0 )) s" | tee "$OUT/py_env.log"
PYTHONPATH="$TARGET" "$PY" -c "import scn, torch; print('scn', scn.__file__, 'cuda', scn.cuda_available(), 'torch', torch.__version__)" \
  2>&1 | tee -a "$OUT/py_env.log"

t1=$(date +%s)
CLI=${SCN_CLI:-$ROOT/build-gpu/tools/cli/scn}
( cd /tmp && SCN_CLI="$CLI" SCN_SHARED_DATA_DIR="$(dirname "$DATA")" PYTHONDONTWRITEBYTECODE=1 \
    PYTHONPATH="$TARGET" timeout 600 "$PY" -m pytest -q -p no:cacheprovider -rs "$ROOT/tests/python/package" ) > "$OUT/py_tests.log" 2>&1
echo "package tests rc $? in $(( $(date +%s) - t1 )) s" | tee -a "$OUT/py_env.log"
tail -20 "$OUT/py_tests.log"

t2=$(date +%s)
{
  PYTHONPATH=tools/python python3 -m scn_tools.zoo_export_all --out /tmp/scn-py-zoo --models centerpoint &&
  PYTHONPATH="$TARGET" "$PY" -m scn.bench /tmp/scn-py-zoo/centerpoint/model.onnx --data "$DATA" --grid 41x1440x1440 \
    --runs "${SCN_BENCH_RUNS:-500}" --max-gap 0.05
} > "$OUT/py_bench.log" 2>&1
echo "scn.bench rc $? in $(( $(date +%s) - t2 )) s" | tee -a "$OUT/py_env.log"
tail -8 "$OUT/py_bench.log"
if [ -x "$CLI" ]; then  # raw points -> BEV from Python: the call beside time_points' graph (scn synth's cloud)
  {
    "$CLI" synth --seed 1 --points /tmp/scn-py-cloud.bin > /dev/null &&
    PYTHONPATH="$TARGET" "$PY" -m scn.bench /tmp/scn-py-zoo/centerpoint/model.onnx --points /tmp/scn-py-cloud.bin \
      --runs "${SCN_BENCH_RUNS:-500}"
  } > "$OUT/py_bench_points.log" 2>&1
  echo "scn.bench --points rc $?" | tee -a "$OUT/py_env.log"
  tail -3 "$OUT/py_bench_points.log"
fi

#!/usr/bin/env bash
# The test command: installs what is missing, builds (CUDA code included when nvcc exists, for
# the CI list below), runs every test with ctest. GPU tests skip visibly without a GPU.
# Then scripts/ci_sanitize.sh: a clang CPU build with ASan + UBSan + libFuzzer, the CPU tests on
# it, and each fuzz target for 60 s. SCN_TEST_SANITIZE=0 skips that stage (quick local runs).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
BUILD=${SCN_BUILD_DIR:-build}
# The real spconv 2.x (CPU, from PyPI) for the exporter's tests on spconv's own modules; those tests
# skip with a message when it cannot be installed.
extra=()
if [ -x "$BUILD/spconv-venv/bin/python" ] || tools/python/install_spconv.sh "$BUILD/spconv-venv"; then
  extra+=("-DSCN_SPCONV_PYTHON=$PWD/$BUILD/spconv-venv/bin/python")
else
  echo "scn: spconv could not be installed: the real-spconv exporter tests will not run"
fi
# CUDA architectures of the CI build: CI has no GPU, so its CUDA build only proves the kernels
# compile. Each architecture costs the same CUDA compile time again (docs/benchmarks.md), so CI
# compiles 3 of the default 7: sm_80 (Ampere; its SASS also runs on 86/87/89), sm_90 (Hopper,
# with the sm_90a wgmma object) and sm_120 (the newest) -- shorter than the 4 (80;86;89;90) CI
# compiled before. SCN_CUDA_ARCHITECTURES overrides it (e.g. "native" on a GPU machine).
if command -v nvcc >/dev/null || [ -x /usr/local/cuda/bin/nvcc ]; then
  extra+=("-DCMAKE_CUDA_ARCHITECTURES=${SCN_CUDA_ARCHITECTURES:-80;90;120}")
fi
# scikit-build-core + nanobind for the Python package tests (wheel built without network in ctest).
if [ -x "$BUILD/pybuild-venv/bin/python" ] || tools/python/install_pybuild.sh "$BUILD/pybuild-venv"; then
  extra+=("-DSCN_PYBUILD_PYTHON=$PWD/$BUILD/pybuild-venv/bin/python")
else
  echo "scn: scikit-build-core/nanobind could not be installed: the Python package tests will not run"
fi
start=$(date +%s)
scripts/build.sh "${extra[@]}" "$@"
echo "scn: build took $(( $(date +%s) - start )) s"
start=$(date +%s)
ctest --test-dir "${SCN_BUILD_DIR:-build}" --output-on-failure -j2 --timeout 900
echo "scn: ctest took $(( $(date +%s) - start )) s"
if [ "${SCN_TEST_SANITIZE:-1}" != 0 ]; then
  scripts/ci_sanitize.sh
else
  echo "scn: SCN_TEST_SANITIZE=0: sanitizer and fuzzing stage skipped"
fi

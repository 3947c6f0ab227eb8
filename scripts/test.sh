#!/usr/bin/env bash
# The test command: installs what is missing, builds (CUDA code included when nvcc exists, for
# sm_80/86/89/90), runs every test with ctest. GPU tests skip visibly without a GPU.
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

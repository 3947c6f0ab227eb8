#!/bin/sh
# Builds the scn wheel from the repository with the project's CMake (scikit-build-core + nanobind,
# CPU only, ccache when present) and installs it into a fresh virtual environment that sees the system
# site packages (torch, numpy, onnx). ctest fixture of python_package.
#   build_and_install.sh REPO WORKDIR BUILD_PYTHON
# BUILD_PYTHON: an interpreter with scikit-build-core and nanobind (tools/python/install_pybuild.sh), so the
# build needs no network (--no-build-isolation). Leaves WORKDIR/venv with scn installed.
set -eu
REPO=$1 WORK=$2 PY=$3
launcher=""
if command -v ccache >/dev/null; then
  launcher="--config-settings=cmake.define.CMAKE_CXX_COMPILER_LAUNCHER=ccache"
fi
start=$(date +%s)
rm -rf "$WORK/wheel" "$WORK/venv"
mkdir -p "$WORK/wheel"
cd "$REPO"
"$PY" -m pip wheel --quiet --no-build-isolation --no-deps -w "$WORK/wheel" . \
  --config-settings=cmake.define.SCN_WITH_CUDA=OFF --config-settings=build-dir="$WORK/build" $launcher
built=$(date +%s)
/usr/bin/python3 -m venv --system-site-packages "$WORK/venv"
"$WORK/venv/bin/python" -m pip install --quiet --no-deps --no-index "$WORK"/wheel/scn-*.whl
"$WORK/venv/bin/python" -c "import scn, sys; print('scn', scn.__version__, 'installed in', sys.prefix)"
echo "wheel build $(( built - start )) s, venv + install $(( $(date +%s) - built )) s"

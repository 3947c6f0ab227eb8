#!/usr/bin/env bash
# The test command: installs what is missing, builds (CUDA code included when nvcc exists, for
# sm_80/86/89/90), runs every test with ctest. GPU tests skip visibly without a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
start=$(date +%s)
scripts/build.sh "$@"
echo "scn: build took $(( $(date +%s) - start )) s"
ctest --test-dir "${SCN_BUILD_DIR:-build}" --output-on-failure -j2 --timeout 900

#!/usr/bin/env bash
# Configures and builds scn into ${SCN_BUILD_DIR:-build} with ninja. CUDA is enabled when nvcc is
# found (add it to PATH from /usr/local/cuda/bin when present); extra CMake flags pass through.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${SCN_BUILD_DIR:-build}
if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then export PATH=/usr/local/cuda/bin:$PATH; fi
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
cmake --build "$BUILD" -j"$(nproc)"

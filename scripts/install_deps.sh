#!/usr/bin/env bash
# Installs what scn needs on a Debian machine (idempotent; skips when everything is present).
# The CUDA toolkit is not installed here: scn builds its CUDA backend when nvcc is found.
# clang-14 + libclang-rt-14-dev (ASan/UBSan runtimes, libFuzzer) are for scripts/ci_sanitize.sh;
# libpng-dev is for `scn viz` (the CLI builds without it, and scn viz then says so).
set -euo pipefail
pkgs=(cmake ninja-build g++ protobuf-compiler libprotobuf-dev libonnx-dev libcli11-dev libgtest-dev
      python3-torch python3-onnx python3-numpy python3-pytest python3-matplotlib python3-venv python3-pip
      clang-14 libclang-rt-14-dev libpng-dev)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "scn: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

#!/usr/bin/env bash
# libscn must not need a CUDA library at run time (the CUDA runtime is linked statically, cuBLAS not
# at all), so that a CPU-only user's program starts on a machine without them.
# Usage: check_no_cuda_needed.sh LIBSCN
set -u
lib=$1
needed=$(readelf -d "$lib" 2>/dev/null | grep NEEDED) || { echo "readelf found no NEEDED entries in $lib"; exit 1; }
echo "$needed"
if echo "$needed" | grep -E 'lib(cublas|cublasLt|cudart|cuda)\.so'; then
  echo "FAIL: $lib needs a CUDA library at run time (above)"
  exit 1
fi
echo "OK: $lib needs no CUDA library"

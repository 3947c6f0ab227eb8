// Host-side CUDA error checks of the CUDA backend (usable from .cpp and .cu files).
#pragma once

#include <cuda_runtime_api.h>

#include "scn/error.h"

#define SCN_CUDA_CHECK(expr)                                                                  \
  do {                                                                                        \
    const cudaError_t scn_e_ = (expr);                                                        \
    if (scn_e_ != cudaSuccess)                                                                \
      throw ::scn::Error(::scn::detail::concat("CUDA error in ", #expr, ": ",                 \
                                               cudaGetErrorString(scn_e_), " (", __FILE__, \
                                               ":", __LINE__, ")"));                          \
  } while (0)

/// After a launch: a bad configuration is reported at once (no synchronisation).
#define SCN_CUDA_LAUNCHED() SCN_CUDA_CHECK(cudaGetLastError())

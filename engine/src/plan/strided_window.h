// The window constraint of the CUDA backend's strided_bits_kernel (backends/cuda/site_index.cu), shared by the plan's
// choice of how a strided set is made (plan/arena_layout.h strided_sites_from_bitmap) and the kernel's launcher: per
// kernel row (k0 x k1 of them unrolled or looped, at most 32 each) one window of 192 input sites, shifted by the
// kernel's reach along the last axis, (k2 - 1) x d2, within one 64-bit word.
#pragma once

#include <cstdint>

namespace scn {

inline bool strided_bits_window_fits(int k0, int k1, int k2, int d2) {
  return k0 >= 1 && k1 >= 1 && k2 >= 1 && k0 <= 32 && k1 <= 32 && d2 >= 1 && int64_t(k2 - 1) * d2 <= 63;
}

}  // namespace scn

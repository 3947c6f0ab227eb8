// The INT8 arithmetic of scn (docs/int8.md), as a handful of float32 / int32 primitives that the
// CPU backend, the calibration tool and the CUDA kernels must all evaluate identically:
//
//   scale(R)     = R / 127.0f                         (float32 division, round to nearest even)
//   inv_scale(R) = 127.0f / R
//   quantize(x)  = clamp(rne(x * inv_scale(R)), -127, 127)   NaN -> 0, +-inf -> +-127
//   dequantize(q)= float(q) * scale(R)
//
// Every operation is one IEEE-754 float32 operation rounded to nearest even: no FMA contraction
// (scn compiles in ISO C++ mode, where GCC does not contract), no reciprocal approximations.
// Round-half-to-even is what CUDA's __float2int_rn / cvt.rni and PyTorch's torch.round do.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "scn/tensor.h"

namespace scn::int8 {

constexpr int32_t kQMax = 127;  ///< symmetric range [-127, 127]; -128 is never produced

/// Step of the int8 grid for dynamic range R (absmax): R / 127.
inline float scale(float range) { return range / 127.0f; }
/// Multiplier that maps a float onto the int8 grid: 127 / R.
inline float inv_scale(float range) { return 127.0f / range; }

/// q = clamp(round_half_to_even(x * inv_scale), -127, 127); NaN gives 0.
inline int32_t quantize(float x, float inv) {
  const float v = x * inv;
  if (!(v == v)) return 0;
  if (v >= 127.0f) return kQMax;
  if (v <= -127.0f) return -kQMax;
  // |v| < 127: nearbyint in the default rounding mode (to nearest, ties to even) is exact.
  return int32_t(std::nearbyint(v));
}

/// float(q) * scale (one float32 multiplication).
inline float dequantize(int32_t q, float scl) { return float(q) * scl; }

/// Per-output-channel absmax of a weight [Cout, k0, k1, k2, Cin] (float16 or float32), as float.
/// This is the documented rule for weight_dynamic_ranges when a model does not give them.
std::vector<float> weight_absmax_per_channel(const Tensor& weight);

}  // namespace scn::int8

// The CPU reference int8 sparse convolution (docs/int8.md):
//   acc[o][c] = sum over (r, ci) with in = out_in[o][r] >= 0 of q_x[in][ci] * q_w[r][ci][c]   (int32, exact)
//   y[o][c]   = act(float(acc[o][c]) * multiplier[c] + bias[c])                             (float32)
// The caller stores y (fp16 rounding or requantization to int8). Integer accumulation is exact, so
// the summation order does not matter; the epilogue is two float32 roundings (mul, then add).
#pragma once

#include <cstdint>

#include "plan/int8_plan.h"
#include "backends/cpu/kernel_map.h"

namespace scn::cpu {

/// xq: [num_in x cin] int8 rows; y: [map.num_out x cout] float epilogue values.
void int8_conv_forward(const int8_t* xq, const KernelMap& map, const int8::ConvPlan& plan, float* y, int threads);

/// The int32 accumulators only (tests): acc [map.num_out x cout].
void int8_conv_accumulate(const int8_t* xq, const KernelMap& map, const int8::ConvPlan& plan, int32_t* acc,
                          int threads);

/// The epilogue of one accumulator: act(float(acc) * multiplier + bias), evaluated as two float32
/// roundings (no FMA).
float int8_epilogue(int32_t acc, float multiplier, float bias, Activation act, float alpha);

}  // namespace scn::cpu

// The CPU reference convolution: out[o] = act(bias + sum_r W[r]^T x[out_in[o][r]]), accumulated
// in float32 in a fixed order (offset r ascending, then input channel), one output row per
// iteration, so it is deterministic and independent of the thread count.
#pragma once

#include <vector>

#include "backends/cpu/kernel_map.h"
#include "scn/graph.h"

namespace scn::cpu {

/// Weights repacked as [K][Cin][Cout] float so the innermost loop runs over output channels.
struct PackedConv {
  int cin = 0, cout = 0, kernel_volume = 0;
  std::vector<float> weight;
  std::vector<float> bias;  ///< Cout values (zeros when the conv has no bias)
  Activation activation = Activation::None;
  float alpha = 0.f;
};

PackedConv pack_conv(const ConvAttrs& conv);

/// x: [num_in x cin] rows, y: [map.num_out x cout] rows.
void sparse_conv_forward(const float* x, const KernelMap& map, const PackedConv& pc, float* y, int threads);

/// The activation in float32, as every backend applies it.
float apply_activation(float v, Activation a, float alpha);

}  // namespace scn::cpu

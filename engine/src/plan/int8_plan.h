// What an INT8 engine (BuildOptions::precision = Int8: "every node runs with its own precision
// attribute") stores for every value, and the quantized weights of its int8 convolutions.
// docs/int8.md states the rules; this is their one implementation, used by the CPU backend and
// meant to be reused by the CUDA backend (it is backend-neutral: no CPU types).
//
// Storage of a value:
//   - graph input, Concat, ScatterDense, Transpose, Reshape: fp16;
//   - SparseConvolution / Add: int8 when the node's output_precision is int8, else fp16;
//   - Relu: the storage (and the scale) of its input: max(q, 0) is exact on the int8 grid.
// A value stored as int8 has one scale. Its "group" is the value plus every Relu output chained
// on it; the scale is the dynamic range that the group's int8 readers state (an int8
// SparseConvolution's input_dynamic_range, an int8 Add's input0/1_dynamic_range, a
// ScatterDense's input_dynamic_range). They must all agree, and there must be at least one.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "scn/graph.h"

namespace scn::int8 {

enum class Storage : uint8_t { Fp16, Int8 };

struct ValuePlan {
  Storage storage = Storage::Fp16;
  float range = -1.f;  ///< Int8 storage: the dynamic range of the stored q (scale = range / 127)
  int group = -1;      ///< the value whose storage this one shares (itself, or a Relu chain's root)
};

/// An int8 SparseConvolution: y[o][c] = act(float(acc[o][c]) * multiplier[c] + bias[c]),
/// acc = sum over the kernel map of q_x * q_w in int32.
struct ConvPlan {
  bool int8 = false;                ///< precision int8 (else the node runs in fp16)
  float input_range = 0.f;          ///< R_x: the input is quantized with scale R_x / 127
  int cin = 0, cout = 0, kernel_volume = 0;
  std::vector<int8_t> weight;       ///< q_w packed [K][Cin][Cout]
  std::vector<float> weight_range;  ///< R_w[c]: weight_dynamic_ranges, or the per-channel absmax
  bool weight_range_from_absmax = false;
  std::vector<float> multiplier;    ///< scale(R_x) * scale(R_w[c]) (float32 product)
  std::vector<float> bias;          ///< Cout values as float (zeros when the conv has no bias)
  Activation activation = Activation::None;
  float alpha = 0.f;
};

struct Plan {
  std::vector<ValuePlan> values;  ///< per value
  std::vector<ConvPlan> convs;    ///< per node (int8 = false for every node but int8 convs)
};

/// Per value: the root of its Relu chain (a Relu output shares its input's storage).
std::vector<int> value_groups(const Graph& graph);

/// The plan of an INT8 engine. Throws scn::Error naming the node and attribute when an int8
/// node lacks a range, when a value stored as int8 has no range or conflicting ones, or when an
/// int8 convolution's int32 accumulator could overflow.
Plan plan(const Graph& graph);

/// The quantized weights and epilogue multipliers of one int8 convolution with input range R_x.
ConvPlan plan_conv(const ConvAttrs& conv, const QuantAttrs& quant, float input_range, const std::string& where);

}  // namespace scn::int8

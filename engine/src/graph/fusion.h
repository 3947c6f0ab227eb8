// Fusion decided from the graph alone, shared by the backends that fuse (the CUDA backend; the CPU
// oracle runs every node as written):
//  - conv (activation None or ReLU) -> Relu, the conv its only reader: the activation becomes ReLU;
//  - conv -> Add(conv, identity) [-> Relu]: the Add (and the Relu) join the conv's epilogue when
//    the conv's value is read only by the Add (and the Add's only by the Relu), the identity is
//    written before the conv, and none of them is a graph output;
//  - ScatterDense -> Transpose(s), sole readers, not graph outputs: folded into the densify's
//    output layout.
// Reshape is always a view (buffer groups, plan/buffer_groups.h).
#pragma once

#include <map>
#include <vector>

#include "scn/graph.h"

namespace scn {

/// A convolution with what fused into it.
struct FusedConv {
  int node = -1;
  Activation act = Activation::None;  ///< after conv -> Relu folding
  float alpha = 0.f;
  bool relu_after = false;    ///< ReLU after the fused residual add
  int residual = -1;          ///< the identity value added in the epilogue, or -1
  int add_node = -1;          ///< the fused Add node
  int add_conv_operand = 0;   ///< which input (0 / 1) of the Add is the conv's value
  int out_value = -1;         ///< the value the conv writes after fusion
  std::vector<int> absorbed;  ///< Relu / Add nodes folded into it
};

struct FusionPlan {
  std::vector<std::vector<int>> consumers;   ///< per value: nodes reading it
  std::vector<bool> is_output;               ///< per value: a graph output
  std::vector<bool> absorbed;                ///< per node: folded into another node's step
  std::vector<int> conv_of_node;             ///< per node: index into convs, or -1
  std::vector<FusedConv> convs;              ///< in node order
  std::vector<int> written_by;               ///< per value: the node whose step writes it
  std::vector<bool> materialized;            ///< per value: stored in a buffer of its own
  std::map<int, int> densify_out;            ///< ScatterDense node -> the value its step writes
  std::vector<std::vector<int>> dense_perm;  ///< per densify output value: source axis of each axis
};

FusionPlan plan_fusion(const Graph& graph);

}  // namespace scn

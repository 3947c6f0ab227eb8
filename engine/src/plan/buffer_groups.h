// Buffer groups: values that share one activation buffer. A Reshape views its input; a fused
// residual conv (graph/fusion.h) writes in place over its identity when every other reader of the
// identity runs before the conv, the identity is not a graph output, and both are stored alike
// (an int8 row over an fp16 one would race).
#pragma once

#include <vector>

#include "graph/fusion.h"
#include "plan/int8_plan.h"
#include "scn/graph.h"

namespace scn {

struct BufferGroups {
  std::vector<int> parent;  ///< per value: the value whose buffer it uses (itself for a root)
  int root(int v) const {
    while (parent[size_t(v)] != v) v = parent[size_t(v)];
    return v;
  }
};

/// `int8`: the INT8 storage plan of an INT8 engine, nullptr for fp16 engines.
BufferGroups plan_buffer_groups(const Graph& graph, const FusionPlan& fusion, const int8::Plan* int8);

}  // namespace scn

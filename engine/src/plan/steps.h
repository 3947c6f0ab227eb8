// The step list of a fused graph: what a backend enqueues, in order. A conv's step is preceded by
// the build of its kernel map (at the first conv of each map slot); nodes folded into another
// node's step (graph/fusion.h) and Reshape views have none. Backends add their own steps where they
// need them (the CUDA INT8 engine: Convert steps between int8 and fp16 storage).
#pragma once

#include <vector>

#include "graph/analysis.h"
#include "graph/fusion.h"
#include "scn/graph.h"

namespace scn {

enum class StepKind { Input, Map, Conv, Add, Relu, Concat, Densify, Permute, Convert };

struct Step {
  StepKind kind;
  int node = -1;  ///< graph node (Map: the first conv of the slot)
  int slot = -1;  ///< Map / Conv: map slot; Input: input index; Convert: backend's converted copy
};

std::vector<Step> plan_steps(const Graph& graph, const GraphAnalysis& analysis, const FusionPlan& fusion);

}  // namespace scn

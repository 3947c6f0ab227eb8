#include "plan/steps.h"

#include <algorithm>

namespace scn {

std::vector<Step> plan_steps(const Graph& g, const GraphAnalysis& an, const FusionPlan& f) {
  std::vector<Step> steps;
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    const Node& node = g.nodes[n];
    if (f.absorbed[n]) continue;
    switch (node.op) {
      case OpType::Input: {
        const auto it = std::find(g.inputs.begin(), g.inputs.end(), node.output);
        steps.push_back({StepKind::Input, int(n), int(it - g.inputs.begin())});
        break;
      }
      case OpType::SparseConv: {
        const int m = an.node_map[n];
        if (an.maps[size_t(m)].first_node == int(n)) steps.push_back({StepKind::Map, int(n), m});
        steps.push_back({StepKind::Conv, int(n), m});
        break;
      }
      case OpType::Add:
        steps.push_back({StepKind::Add, int(n), -1});
        break;
      case OpType::Relu:
        steps.push_back({StepKind::Relu, int(n), -1});
        break;
      case OpType::Concat:
        steps.push_back({StepKind::Concat, int(n), -1});
        break;
      case OpType::ScatterDense:
        steps.push_back({StepKind::Densify, int(n), -1});
        break;
      case OpType::Transpose:
        steps.push_back({StepKind::Permute, int(n), -1});
        break;
      case OpType::Reshape:
        break;
    }
  }
  return steps;
}

}  // namespace scn

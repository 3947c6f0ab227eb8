#include "plan/buffer_groups.h"

#include <algorithm>
#include <numeric>

namespace scn {

BufferGroups plan_buffer_groups(const Graph& g, const FusionPlan& f, const int8::Plan* int8) {
  BufferGroups b;
  b.parent.resize(g.values.size());
  std::iota(b.parent.begin(), b.parent.end(), 0);
  for (const Node& node : g.nodes)
    if (node.op == OpType::Reshape) b.parent[size_t(node.output)] = b.root(node.inputs[0]);
  auto q8 = [&](int v) { return int8 && int8->values[size_t(v)].storage == int8::Storage::Int8; };
  for (const FusedConv& c : f.convs) {
    if (c.residual < 0 || f.is_output[size_t(c.residual)]) continue;
    if (q8(c.residual) != q8(c.out_value)) continue;
    bool only_before = true;
    for (int r : f.consumers[size_t(c.residual)]) {
      const bool is_fused_add = std::find(c.absorbed.begin(), c.absorbed.end(), r) != c.absorbed.end();
      if (!is_fused_add && r >= c.node) only_before = false;
    }
    if (only_before) b.parent[size_t(c.out_value)] = b.root(c.residual);
  }
  return b;
}

}  // namespace scn

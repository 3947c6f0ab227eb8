#include "graph/rebuild.h"

#include <string>
#include <vector>

namespace scn {

EngineBuilder rebuild_graph(const Graph& g, const RebuildHooks& hooks) {
  EngineBuilder b(g.source);
  std::vector<ValueId> id(g.values.size(), -1);
  for (const Node& n : g.nodes) {
    auto in = [&](size_t k) {
      const ValueId v = id[size_t(n.inputs[k])];
      return hooks.input ? hooks.input(n, k, v, b) : v;
    };
    const QuantAttrs q = hooks.quant ? hooks.quant(n) : n.quant;
    const std::string& out = n.output >= 0 ? g.values[size_t(n.output)].name : n.name;
    ValueId v = -1;
    switch (n.op) {
      case OpType::Input:
        v = b.push_input(n.name, g.values[size_t(n.output)].channels);
        break;
      case OpType::SparseConv: {
        const ValueId x = in(0);
        v = b.push_sparse_conv(n.name, x, hooks.conv ? hooks.conv(n) : n.conv, q, out);
        break;
      }
      case OpType::Add: {
        const ValueId x0 = in(0), x1 = in(1);  // operands in order: a hook may push nodes for each
        v = b.push_add(n.name, x0, x1, q, out);
        break;
      }
      case OpType::Relu:
        v = b.push_relu(n.name, in(0), out);
        break;
      case OpType::Concat: {
        std::vector<ValueId> xs;
        for (size_t k = 0; k < n.inputs.size(); ++k) xs.push_back(in(k));
        v = b.push_concat(n.name, xs, out);
        break;
      }
      case OpType::ScatterDense:
        v = b.push_dense(n.name, in(0), n.dense, q, out);
        break;
      case OpType::Reshape:
        v = b.push_reshape(n.name, in(0), n.dims, out);
        break;
      case OpType::Transpose:
        v = b.push_transpose(n.name, in(0), n.dims, out);
        break;
    }
    for (const auto& [key, text] : n.info) b.annotate_last(key, text);
    id[size_t(n.output)] = v;
  }
  for (int o : g.outputs) b.push_output(id[size_t(o)]);
  return b;
}

}  // namespace scn

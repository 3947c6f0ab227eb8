#include "graph/fusion.h"

namespace scn {

namespace {

/// True (and the node in *node) when value v is not a graph output and its only reader is one
/// node of type `op`.
bool sole_consumer(const Graph& g, const FusionPlan& f, int v, OpType op, int* node) {
  if (f.is_output[size_t(v)] || f.consumers[size_t(v)].size() != 1) return false;
  const int n = f.consumers[size_t(v)][0];
  if (g.nodes[size_t(n)].op != op) return false;
  *node = n;
  return true;
}

}  // namespace

FusionPlan plan_fusion(const Graph& g) {
  FusionPlan f;
  f.consumers.assign(g.values.size(), {});
  for (size_t n = 0; n < g.nodes.size(); ++n)
    for (int v : g.nodes[n].inputs) f.consumers[size_t(v)].push_back(int(n));
  f.is_output.assign(g.values.size(), false);
  for (int v : g.outputs) f.is_output[size_t(v)] = true;
  f.absorbed.assign(g.nodes.size(), false);
  f.conv_of_node.assign(g.nodes.size(), -1);
  f.written_by.assign(g.values.size(), -1);
  f.materialized.assign(g.values.size(), true);
  for (size_t n = 0; n < g.nodes.size(); ++n) f.written_by[size_t(g.nodes[n].output)] = int(n);

  for (size_t n = 0; n < g.nodes.size(); ++n) {
    const Node& node = g.nodes[n];
    if (node.op != OpType::SparseConv) continue;
    f.convs.emplace_back();
    FusedConv& c = f.convs.back();
    f.conv_of_node[n] = int(f.convs.size()) - 1;
    c.node = int(n);
    c.act = node.conv.activation;
    c.alpha = node.conv.activation_alpha;
    int cur = node.output, next = -1;
    while ((c.act == Activation::None || c.act == Activation::ReLU) && sole_consumer(g, f, cur, OpType::Relu, &next)) {
      c.act = Activation::ReLU;
      c.absorbed.push_back(next);
      cur = g.nodes[size_t(next)].output;
    }
    if (sole_consumer(g, f, cur, OpType::Add, &next)) {
      const Node& add = g.nodes[size_t(next)];
      const int id = add.inputs[0] == cur ? add.inputs[1] : add.inputs[0];
      // the identity must be written before the conv (by a node, or an earlier fused conv)
      if (id != cur && f.written_by[size_t(id)] < int(n)) {
        c.residual = id;
        c.add_node = next;
        c.add_conv_operand = add.inputs[0] == cur ? 0 : 1;
        c.absorbed.push_back(next);
        cur = add.output;
        if (sole_consumer(g, f, cur, OpType::Relu, &next)) {
          c.relu_after = true;
          c.absorbed.push_back(next);
          cur = g.nodes[size_t(next)].output;
        }
      }
    }
    c.out_value = cur;
    for (int a : c.absorbed) {
      f.absorbed[size_t(a)] = true;
      f.materialized[size_t(g.nodes[size_t(a)].output)] = false;
    }
    if (cur != node.output) f.materialized[size_t(node.output)] = false;
    f.materialized[size_t(cur)] = true;
    f.written_by[size_t(cur)] = int(n);
  }

  f.dense_perm.assign(g.values.size(), {});
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    const Node& node = g.nodes[n];
    if (node.op != OpType::ScatterDense || f.absorbed[n]) continue;
    std::vector<int> perm{0, 1, 2, 3, 4};
    int cur = node.output, next = -1;
    while (sole_consumer(g, f, cur, OpType::Transpose, &next)) {
      const Node& t = g.nodes[size_t(next)];
      std::vector<int> p(5);
      for (int j = 0; j < 5; ++j) p[size_t(j)] = perm[size_t(t.dims[size_t(j)])];
      perm = p;
      f.absorbed[size_t(next)] = true;
      f.materialized[size_t(cur)] = false;
      cur = t.output;
    }
    f.materialized[size_t(cur)] = true;
    f.densify_out[int(n)] = cur;
    f.dense_perm[size_t(cur)] = perm;
    f.written_by[size_t(cur)] = int(n);
  }
  return f;
}

}  // namespace scn

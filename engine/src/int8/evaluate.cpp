// INT8 plans in memory and their accuracy (scn/calibrate.h): a model rebuilt with new INT8
// attributes, the count of int8 nodes, and INT8-vs-FP32 comparisons on the CPU backend (the oracle).
#include <algorithm>
#include <cmath>

#include "backends/cpu/int8_observer.h"
#include "graph/rebuild.h"
#include "int8/agreement.h"
#include "scn/calibrate.h"
#include "scn/error.h"

namespace scn {

EngineBuilder with_int8_attributes(const EngineBuilder& model, const std::map<std::string, QuantAttrs>& quant) {
  const Graph& g = model.graph();
  for (const auto& entry : quant) {
    const std::string& name = entry.first;  // (a structured binding cannot be captured in C++17)
    const auto it = std::find_if(g.nodes.begin(), g.nodes.end(), [&](const Node& n) { return n.name == name; });
    SCN_CHECK(it != g.nodes.end(), g.source, ": INT8 attributes for node '", name, "', which the graph does not have");
  }
  RebuildHooks hooks;
  hooks.quant = [&](const Node& n) {
    const auto qit = quant.find(n.name);
    return qit == quant.end() ? n.quant : qit->second;
  };
  return rebuild_graph(g, hooks);
}

bool has_precision(OpType op) { return op == OpType::SparseConv || op == OpType::Add; }

CalibrationOptions with_int8_nodes(const CalibrationOptions& base, const std::set<std::string>& nodes) {
  CalibrationOptions o = base;
  o.explicit_int8 = true;
  o.int8_nodes = nodes;
  return o;
}

Int8NodeCount count_int8_nodes(const Graph& graph) {
  Int8NodeCount c;
  for (const Node& n : graph.nodes) {
    if (!has_precision(n.op)) continue;
    ++c.total;
    c.int8 += n.quant.precision == Precision::Int8;
  }
  return c;
}

std::string int8_node_notice(const Graph& graph) {
  const Int8NodeCount c = count_int8_nodes(graph);
  if (c.int8 == 0)
    return detail::concat(graph.source, ": no node carries INT8 attributes (precision int8); the int8 engine runs ",
                          "every node in fp16 (calibrate the model with `scn calibrate` first)");
  return detail::concat(graph.source, ": ", c.int8, " of ", c.total,
                        " SparseConvolution / Add nodes run int8, the others fp16");
}

AccuracyReport evaluate_int8(Calibrator& cal, const std::map<std::string, QuantAttrs>& quant,
                             const CalibrationFrame& frame, bool per_layer) {
  BuildOptions i8;
  i8.backend = Backend::Cpu;
  i8.precision = Precision::Int8;
  i8.num_threads = cal.num_threads();
  std::unique_ptr<Engine> e8 = with_int8_attributes(cal.model(), quant).build(i8);
  Engine& e32 = cal.fp32_engine();
  const Graph& g = cal.graph();

  std::vector<std::vector<float>> ref(per_layer ? g.values.size() : 0);
  std::vector<LayerAccuracy> layer(per_layer ? g.values.size() : 0);
  std::vector<bool> seen(layer.size(), false);
  if (per_layer)
    cpu::set_value_observer(e32, [&](const cpu::ObservedValue& v) {
      if (v.coords) ref[size_t(v.value)].assign(v.data, v.data + v.rows * v.channels);
    });
  try {
    e32.set_input(0, frame.features, frame.indices, frame.grid, frame.batch_size, frame.labels);
    e32.forward();
  } catch (...) {
    cpu::set_value_observer(e32, {});
    throw;
  }
  cpu::set_value_observer(e32, {});
  if (per_layer)
    cpu::set_value_observer(*e8, [&](const cpu::ObservedValue& v) {
      const std::vector<float>& r = ref[size_t(v.value)];
      if (!v.coords || r.size() != size_t(v.rows * v.channels)) return;
      const float s = v.int8 ? v.range / 127.0f : 1.f;
      Agreement st;
      for (size_t i = 0; i < r.size(); ++i) st.add(v.int8 ? double(v.data[i]) * s : double(v.data[i]), r[i]);
      const Node& n = g.nodes[size_t(v.node)];
      layer[size_t(v.value)] = {n.name, g.values[size_t(v.value)].name, v.int8, st.cosine(), st.rel_l2()};
      seen[size_t(v.value)] = true;
    });
  e8->set_input(0, frame.features, frame.indices, frame.grid, frame.batch_size, frame.labels);
  e8->forward();

  AccuracyReport rep;
  for (const Node& n : g.nodes)
    if (n.op != OpType::Input && n.output >= 0 && per_layer && seen[size_t(n.output)])
      rep.layers.push_back(layer[size_t(n.output)]);
  for (int i = 0; i < e32.num_outputs(); ++i) {
    const Tensor r = e32.output(i).to_dtype(DType::Float32);
    const Tensor x = e8->output(i).to_dtype(DType::Float32);
    SCN_CHECK(r.numel() == x.numel(), g.source, ": output '", e32.output_name(i), "' has ", x.numel(),
              " values in the INT8 engine and ", r.numel(), " in the FP32 engine");
    const Agreement st = agreement(x, r);
    rep.outputs.push_back({e32.output_name(i), st.cosine(), st.rel_l2(), st.max_abs});
    rep.min_cosine = std::min(rep.min_cosine, st.cosine());
  }
  return rep;
}

}  // namespace scn

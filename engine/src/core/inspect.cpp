// scn/inspect.h: the public face of the graph analysis (engine/src/graph/analysis.h) for tools.
#include "scn/inspect.h"

#include <cctype>

#include "graph/analysis.h"

namespace scn {

namespace {

const char* map_kind_name(MapKind k) {
  switch (k) {
    case MapKind::Subm:
      return "subm";
    case MapKind::Strided:
      return "strided";
    case MapKind::Inverse:
      return "inverse";
  }
  return "?";
}

// "[41, 1440, 1440]" (the text the importer keeps for attributes it only reports) -> 41x1440x1440.
bool parse_int3_text(const std::string& s, Int3& out) {
  std::vector<int64_t> v;
  int64_t cur = 0;
  bool in_num = false;
  for (char ch : s) {
    if (std::isdigit(static_cast<unsigned char>(ch))) {
      cur = cur * 10 + (ch - '0');
      if (cur > (int64_t(1) << 31)) return false;
      in_num = true;
    } else if (ch == '-') {
      return false;
    } else if (in_num) {
      v.push_back(cur);
      cur = 0;
      in_num = false;
    }
  }
  if (in_num) v.push_back(cur);
  if (v.size() != 3) return false;
  for (int d = 0; d < 3; ++d) {
    if (v[size_t(d)] < 1 || v[size_t(d)] > int64_t(INT32_MAX)) return false;
    out[size_t(d)] = int32_t(v[size_t(d)]);
  }
  return true;
}

}  // namespace

KernelMapPlan kernel_map_plan(const Graph& graph) {
  const GraphAnalysis a = analyze_graph(graph);
  KernelMapPlan p;
  p.node_map = a.node_map;
  p.value_sites = a.value_sites;
  for (const MapSlot& s : a.maps) {
    KernelMapInfo m;
    m.kind = map_kind_name(s.kind);
    m.source_map = s.source_slot;
    m.kernel_size = s.kernel_size;
    m.stride = s.stride;
    m.padding = s.padding;
    m.dilation = s.dilation;
    m.in_sites = s.in_sites;
    m.out_sites = s.out_sites;
    m.nodes = s.nodes;
    p.maps.push_back(m);
  }
  return p;
}

GraphShapes graph_shapes(const Graph& graph, const Int3& grid, int batch_size) {
  const GraphAnalysis a = analyze_graph(graph);
  const ShapeInfo s = infer_shapes(graph, a, std::vector<Int3>(graph.inputs.size(), grid), batch_size);
  GraphShapes out;
  out.spatial.assign(graph.values.size(), Int3{0, 0, 0});
  out.dense = s.dense_shape;
  out.dense.resize(graph.values.size());
  for (size_t v = 0; v < graph.values.size(); ++v)
    if (a.value_sites[v] >= 0) out.spatial[v] = s.site_shape[size_t(a.value_sites[v])];
  return out;
}

std::array<int64_t, 3> conv_output_extent(const Int3& in, const ConvAttrs& conv) {
  return conv_output_shape_wide(in, conv);
}

InputLayout expected_input(const Graph& graph) {
  InputLayout l;
  for (const Node& n : graph.nodes)
    if (n.op == OpType::ScatterDense) {
      l.order = n.dense.format;
      l.order_stated = true;
      break;
    }
  for (const Node& n : graph.nodes) {
    if (n.op != OpType::SparseConv || graph.inputs.empty() || n.inputs.empty() || n.inputs[0] != graph.inputs[0])
      continue;
    for (const auto& [key, text] : n.info)
      if (key == "input_spatial_shape" && parse_int3_text(text, l.grid)) {
        l.grid_node = n.name;
        return l;
      }
  }
  return l;
}

}  // namespace scn

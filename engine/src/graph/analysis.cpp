#include "graph/analysis.h"

#include <algorithm>
#include <limits>

#include "scn/error.h"

namespace scn {

std::array<int64_t, 3> conv_output_shape_wide(const Int3& in, const ConvAttrs& c) {
  std::array<int64_t, 3> out{};
  for (int d = 0; d < 3; ++d) {
    SCN_CHECK(c.stride[d] >= 1, "conv_output_shape: stride ", int3_string(c.stride), " must be >= 1");
    const int64_t num = int64_t(in[d]) + 2 * int64_t(c.padding[d]) -
                        int64_t(c.dilation[d]) * (int64_t(c.kernel_size[d]) - 1) - 1;
    // floor division (num may be negative for a grid smaller than the kernel)
    const int64_t q = num >= 0 ? num / c.stride[d] : -((-num + c.stride[d] - 1) / c.stride[d]);
    out[d] = q + 1;
  }
  return out;
}

Int3 conv_output_shape(const Int3& in, const ConvAttrs& c) {
  const std::array<int64_t, 3> w = conv_output_shape_wide(in, c);
  Int3 out{};
  for (int d = 0; d < 3; ++d) {
    SCN_CHECK(w[d] <= std::numeric_limits<int32_t>::max(), "convolution output shape ", w[0], "x", w[1], "x",
              w[2], " of input ", int3_string(in), " does not fit int32");
    out[d] = static_cast<int32_t>(w[d]);
  }
  return out;
}

namespace {

bool same_geometry(const MapSlot& s, const ConvAttrs& c, bool compare_stride_padding) {
  if (s.kernel_size != c.kernel_size || s.dilation != c.dilation) return false;
  if (compare_stride_padding && (s.stride != c.stride || s.padding != c.padding)) return false;
  return true;
}

}  // namespace

GraphAnalysis analyze_graph(const Graph& g) {
  GraphAnalysis a;
  a.value_sites.assign(g.values.size(), -1);
  a.node_map.assign(g.nodes.size(), -1);
  a.last_use.assign(g.values.size(), -1);

  auto new_sites = [&](int producer, int input) {
    a.site_producer.push_back(producer);
    a.site_input.push_back(input);
    return a.num_site_sets++;
  };
  // Strided slots by rulebook name, for inverse convs (the latest one with that name wins, as in
  // spconv where a later conv with the same indice_key overwrites the stored pairs).
  std::vector<std::pair<std::string, int>> strided_by_key;

  for (size_t n = 0; n < g.nodes.size(); ++n) {
    const Node& node = g.nodes[n];
    for (int v : node.inputs) a.last_use[size_t(v)] = int(n);
    const int out = node.output;
    switch (node.op) {
      case OpType::Input: {
        const auto it = std::find(g.inputs.begin(), g.inputs.end(), out);
        a.value_sites[size_t(out)] = new_sites(int(n), int(it - g.inputs.begin()));
        break;
      }
      case OpType::SparseConv: {
        const ConvAttrs& c = node.conv;
        const int in_sites = a.value_sites[size_t(node.inputs[0])];
        if (c.subm) {
          int slot = -1;
          for (size_t s = 0; s < a.maps.size(); ++s)
            if (a.maps[s].kind == MapKind::Subm && a.maps[s].in_sites == in_sites &&
                same_geometry(a.maps[s], c, false))
              slot = int(s);
          if (slot < 0) {
            MapSlot m;
            m.kind = MapKind::Subm;
            m.in_sites = m.out_sites = in_sites;
            m.kernel_size = c.kernel_size;
            m.dilation = c.dilation;
            for (int d = 0; d < 3; ++d) m.padding[d] = (c.kernel_size[d] / 2) * c.dilation[d];
            m.first_node = int(n);
            a.maps.push_back(m);
            slot = int(a.maps.size()) - 1;
          }
          a.node_map[n] = slot;
          a.value_sites[size_t(out)] = in_sites;
        } else if (c.inverse) {
          int src = -1;
          for (auto it = strided_by_key.rbegin(); it != strided_by_key.rend(); ++it)
            if (it->first == c.rulebook) {
              src = it->second;
              break;
            }
          SCN_CHECK(!c.rulebook.empty(), g.source, ": ", g.describe(int(n)),
                    ": inverse convolution needs attribute 'rulebook' naming a strided conv");
          SCN_CHECK(src >= 0, g.source, ": ", g.describe(int(n)), ": inverse convolution's rulebook '",
                    c.rulebook, "' names no earlier strided (non-submanifold) convolution");
          const MapSlot s = a.maps[size_t(src)];  // a copy: maps grows below
          SCN_CHECK(s.out_sites == in_sites, g.source, ": ", g.describe(int(n)),
                    ": inverse convolution's input does not live on the output sites of the conv '",
                    g.nodes[size_t(s.first_node)].name, "' that rulebook '", c.rulebook, "' names");
          SCN_CHECK(s.kernel_size == c.kernel_size, g.source, ": ", g.describe(int(n)),
                    ": inverse convolution kernel_size ", int3_string(c.kernel_size),
                    " differs from the kernel ", int3_string(s.kernel_size), " of conv '",
                    g.nodes[size_t(s.first_node)].name, "' (rulebook '", c.rulebook, "')");
          int slot = -1;
          for (size_t k = 0; k < a.maps.size(); ++k)
            if (a.maps[k].kind == MapKind::Inverse && a.maps[k].source_slot == src) slot = int(k);
          if (slot < 0) {
            MapSlot m = s;
            m.kind = MapKind::Inverse;
            m.in_sites = s.out_sites;
            m.out_sites = s.in_sites;
            m.source_slot = src;
            m.first_node = int(n);
            m.nodes.clear();
            a.maps.push_back(m);
            slot = int(a.maps.size()) - 1;
          }
          a.node_map[n] = slot;
          a.value_sites[size_t(out)] = s.in_sites;
        } else {
          int slot = -1;
          for (size_t s = 0; s < a.maps.size(); ++s)
            if (a.maps[s].kind == MapKind::Strided && a.maps[s].in_sites == in_sites &&
                same_geometry(a.maps[s], c, true))
              slot = int(s);
          if (slot < 0) {
            MapSlot m;
            m.kind = MapKind::Strided;
            m.in_sites = in_sites;
            m.out_sites = new_sites(int(n), -1);
            m.kernel_size = c.kernel_size;
            m.stride = c.stride;
            m.padding = c.padding;
            m.dilation = c.dilation;
            m.first_node = int(n);
            a.maps.push_back(m);
            slot = int(a.maps.size()) - 1;
          }
          if (!c.rulebook.empty()) strided_by_key.emplace_back(c.rulebook, slot);
          a.node_map[n] = slot;
          a.value_sites[size_t(out)] = a.maps[size_t(slot)].out_sites;
        }
        a.maps[size_t(a.node_map[n])].nodes.push_back(int(n));
        break;
      }
      case OpType::Add:
      case OpType::Concat: {
        const int s0 = a.value_sites[size_t(node.inputs[0])];
        for (size_t i = 1; i < node.inputs.size(); ++i)
          SCN_CHECK(a.value_sites[size_t(node.inputs[i])] == s0, g.source, ": ", g.describe(int(n)),
                    ": input '", g.values[size_t(node.inputs[i])].name, "' lives on other voxel sites than input '",
                    g.values[size_t(node.inputs[0])].name, "' (only tensors on the same sites can be ",
                    node.op == OpType::Add ? "added" : "concatenated", ")");
        a.value_sites[size_t(out)] = s0;
        break;
      }
      case OpType::Relu:
        a.value_sites[size_t(out)] = a.value_sites[size_t(node.inputs[0])];
        break;
      case OpType::ScatterDense:
      case OpType::Reshape:
      case OpType::Transpose:
        break;
    }
  }
  SCN_CHECK(!g.outputs.empty(), g.source, ": the graph has no output");
  for (int v : g.outputs) a.last_use[size_t(v)] = int(g.nodes.size());
  return a;
}

namespace {
ShapeInfo infer_shapes_impl(const Graph& g, const GraphAnalysis& a, const std::vector<Int3>& grids, int batch,
                            bool try_reversed);

// Appended to a ScatterDense shape mismatch: whether the reversed input grid would fit, i.e. the
// frame and its grid are most likely in the other index order than the model's.
std::string index_order_hint(const Graph& g, const GraphAnalysis& a, const std::vector<Int3>& grids, int batch,
                             const std::string& format) {
  if (grids.size() != 1) return "";
  const Int3 rev{grids[0][2], grids[0][1], grids[0][0]};
  try {
    infer_shapes_impl(g, a, {rev}, batch, false);
  } catch (const Error&) {
    return "; check the input grid " + int3_string(grids[0]) + " and its index order (the model's is '" + format + "')";
  }
  return "; the reversed input grid " + int3_string(rev) +
         " fits the model: the frame and its grid look like they are in the other index order than the model's '" +
         format + "' (reverse the grid and the columns i0, i2 of the indices)";
}
}  // namespace

ShapeInfo infer_shapes(const Graph& g, const GraphAnalysis& a, const std::vector<Int3>& grids, int batch) {
  return infer_shapes_impl(g, a, grids, batch, true);
}

namespace {
ShapeInfo infer_shapes_impl(const Graph& g, const GraphAnalysis& a, const std::vector<Int3>& grids, int batch,
                            bool try_reversed) {
  SCN_CHECK(grids.size() == g.inputs.size(), g.source, ": ", grids.size(),
            " input grids given for ", g.inputs.size(), " graph inputs");
  SCN_CHECK(batch >= 1, "batch size must be >= 1, got ", batch);
  ShapeInfo s;
  s.site_shape.assign(size_t(a.num_site_sets), Int3{0, 0, 0});
  s.dense_shape.assign(g.values.size(), {});
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    const Node& node = g.nodes[n];
    const int out = node.output;
    switch (node.op) {
      case OpType::Input: {
        const Int3& grid = grids[size_t(a.site_input[size_t(a.value_sites[size_t(out)])])];
        for (int d = 0; d < 3; ++d)
          SCN_CHECK(grid[d] >= 1, "input '", node.name, "': grid ", int3_string(grid),
                    " must be positive on every axis");
        s.site_shape[size_t(a.value_sites[size_t(out)])] = grid;
        break;
      }
      case OpType::SparseConv: {
        const MapSlot& m = a.maps[size_t(a.node_map[n])];
        if (m.kind == MapKind::Strided && m.first_node == int(n)) {
          const Int3 in = s.site_shape[size_t(m.in_sites)];
          const std::array<int64_t, 3> w = conv_output_shape_wide(in, node.conv);
          Int3 o{};
          for (int d = 0; d < 3; ++d) {
            SCN_CHECK(w[d] >= 1, g.source, ": ", g.describe(int(n)), ": input spatial shape ",
                      int3_string(in), " is too small for kernel ", int3_string(node.conv.kernel_size),
                      " (output shape would be ", w[0], "x", w[1], "x", w[2], ")");
            SCN_CHECK(w[d] <= std::numeric_limits<int32_t>::max(), g.source, ": ", g.describe(int(n)),
                      ": output spatial shape ", w[0], "x", w[1], "x", w[2], " for input ", int3_string(in),
                      " does not fit int32 (padding ", int3_string(node.conv.padding), ")");
            o[d] = static_cast<int32_t>(w[d]);
          }
          s.site_shape[size_t(m.out_sites)] = o;
        }
        break;
      }
      case OpType::Add:
      case OpType::Relu:
      case OpType::Concat:
        break;
      case OpType::ScatterDense: {
        const int in = node.inputs[0];
        const Int3 sp = s.site_shape[size_t(a.value_sites[size_t(in)])];
        const DenseAttrs& d = node.dense;
        SCN_CHECK(d.input_spatial_shape == sp, g.source, ": ", g.describe(int(n)), ": attribute 'input_spatial_shape' ",
                  int3_string(d.input_spatial_shape), " does not match the spatial shape ", int3_string(sp),
                  " of its input", try_reversed ? index_order_hint(g, a, grids, batch, d.format) : std::string());
        const int64_t c = g.values[size_t(in)].channels;
        const std::vector<int64_t> want{d.output_shape[0], c, sp[0], sp[1], sp[2]};
        SCN_CHECK(d.output_shape == want, g.source, ": ", g.describe(int(n)),
                  ": attribute 'output_shape' does not match [N, ", c, ", ", sp[0], ", ", sp[1],
                  ", ", sp[2], "] of its input");
        SCN_CHECK(d.output_shape[0] == 1 || d.output_shape[0] == batch, g.source, ": ",
                  g.describe(int(n)), ": output_shape batch ", d.output_shape[0],
                  " differs from the bound batch size ", batch);
        s.dense_shape[size_t(out)] = {batch, c, sp[0], sp[1], sp[2]};
        int64_t elems = 1;
        for (int64_t v : s.dense_shape[size_t(out)])
          SCN_CHECK(!__builtin_mul_overflow(elems, v, &elems) && elems <= (int64_t(1) << 60), g.source, ": ",
                    g.describe(int(n)), ": dense output [", batch, ", ", c, ", ", sp[0], ", ", sp[1], ", ", sp[2],
                    "] for batch size ", batch, " is too large");
        break;
      }
      case OpType::Transpose: {
        const auto& in = s.dense_shape[size_t(node.inputs[0])];
        std::vector<int64_t> o(in.size());
        for (size_t i = 0; i < in.size(); ++i) o[i] = in[size_t(node.dims[i])];
        s.dense_shape[size_t(out)] = o;
        break;
      }
      case OpType::Reshape: {
        const auto& in = s.dense_shape[size_t(node.inputs[0])];
        const auto& static_in = g.values[size_t(node.inputs[0])].shape;
        std::vector<int64_t> o = g.values[size_t(out)].shape;
        // The leading (batch) axis follows the bound batch size when it did so statically.
        if (!o.empty() && !static_in.empty() && o[0] == static_in[0] && in[0] != static_in[0])
          o[0] = in[0];
        int64_t ni = 1, no = 1;
        bool overflow = false;
        for (auto v : in) overflow |= __builtin_mul_overflow(ni, v, &ni);
        for (auto v : o) overflow |= __builtin_mul_overflow(no, v, &no);
        SCN_CHECK(!overflow && ni == no, g.source, ": ", g.describe(int(n)), ": cannot reshape ", ni,
                  " elements to ", no);
        s.dense_shape[size_t(out)] = o;
        break;
      }
    }
  }
  return s;
}
}  // namespace

}  // namespace scn

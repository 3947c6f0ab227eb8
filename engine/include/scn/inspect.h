// scn — what a model plans and expects, for `scn inspect`, importers and embedders: the kernel-map
// plan (which convolutions share a map, which values share voxel sites), the shapes for a grid, and
// the input grid and index order the model states.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "scn/graph.h"

namespace scn {

/// One kernel map, used by every convolution listed in `nodes`.
struct KernelMapInfo {
  std::string kind;     ///< "subm", "strided" or "inverse"
  int source_map = -1;  ///< inverse: the strided map whose pairs it reverses
  Int3 kernel_size{1, 1, 1}, stride{1, 1, 1}, padding{0, 0, 0}, dilation{1, 1, 1};
  int in_sites = -1, out_sites = -1;  ///< site sets read and written
  std::vector<int> nodes;             ///< node ids
};

struct KernelMapPlan {
  std::vector<int> node_map;     ///< per node: map index (SparseConvolution) or -1
  std::vector<int> value_sites;  ///< per value: site set (sparse) or -1 (dense)
  std::vector<KernelMapInfo> maps;
};

/// The whole-graph checks every engine build runs (inverse convs find their strided conv, Adds and
/// Concats join values on the same sites, outputs are produced) and the kernel-map plan. Throws
/// scn::Error naming the node at fault.
KernelMapPlan kernel_map_plan(const Graph& graph);

/// Shapes for an input grid (in the model's index order) and a batch size: per value, the spatial
/// shape of a sparse value or the shape of a dense one (the other is empty / zero). Throws
/// scn::Error naming the node whose attributes disagree with the grid.
struct GraphShapes {
  std::vector<Int3> spatial;                ///< per value: sparse spatial shape, {0,0,0} for dense
  std::vector<std::vector<int64_t>> dense;  ///< per value: dense shape, empty for sparse
};
GraphShapes graph_shapes(const Graph& graph, const Int3& grid, int batch_size = 1);

/// out_d = floor((s_d + 2 p_d - dil_d (K_d - 1) - 1) / st_d) + 1 (spconv's regular conv) in 64-bit
/// arithmetic. Needs stride >= 1.
std::array<int64_t, 3> conv_output_extent(const Int3& in, const ConvAttrs& conv);

/// The input layout a model states.
struct InputLayout {
  /// "zyx" or "xyz": the ScatterDense `format` (the order of the indices' three grid columns and of
  /// the grid); "zyx" when no ScatterDense states one (NVIDIA's default).
  std::string order = "zyx";
  bool order_stated = false;  ///< a ScatterDense states it
  /// The input grid from the `input_spatial_shape` the exporter writes on the convolution(s)
  /// reading the graph input; {0,0,0} when none states it.
  Int3 grid{0, 0, 0};
  std::string grid_node;  ///< the node that states it
};
InputLayout expected_input(const Graph& graph);

}  // namespace scn

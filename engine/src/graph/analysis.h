// Static analysis of a builder graph shared by every backend:
//  - site sets: which sparse values live on the same voxel sites (subm, Add, Relu, Concat keep
//    them; a strided conv makes new ones; an inverse conv returns to its strided conv's input),
//  - kernel-map slots: which convolutions share one kernel map (the rulebook plan),
//  - shapes: the spatial shape of every sparse value and the shape of every dense value for a
//    given input grid and batch size.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "scn/graph.h"

namespace scn {

enum class MapKind {
  Subm,     ///< output sites = input sites; pairs for offsets within the kernel
  Strided,  ///< new output sites; pairs (input -> output)
  Inverse,  ///< the pairs of a Strided slot used backwards
};

/// One kernel map, built once per forward and used by every conv assigned to it.
struct MapSlot {
  MapKind kind = MapKind::Subm;
  int in_sites = -1;   ///< site set the map reads from
  int out_sites = -1;  ///< site set the map writes to
  Int3 kernel_size{1, 1, 1};
  Int3 stride{1, 1, 1};
  Int3 padding{0, 0, 0};
  Int3 dilation{1, 1, 1};
  int source_slot = -1;   ///< Inverse: the Strided slot whose pairs it reverses
  int first_node = -1;    ///< first conv that uses it
  std::vector<int> nodes; ///< every conv that uses it
  int kernel_volume() const { return kernel_size[0] * kernel_size[1] * kernel_size[2]; }
};

struct GraphAnalysis {
  std::vector<int> value_sites;   ///< per value: site set id (sparse values) or -1 (dense)
  int num_site_sets = 0;
  std::vector<int> site_producer; ///< per site set: node that created it (-1: graph input k)
  std::vector<int> site_input;    ///< per site set: graph input index it belongs to, or -1
  std::vector<int> node_map;      ///< per node: map slot (SparseConv) or -1
  std::vector<MapSlot> maps;
  std::vector<int> last_use;      ///< per value: last node reading it (graph outputs: nodes.size())
};

/// Throws scn::Error naming the node for an inverse conv without a matching strided conv, an Add or
/// Concat over different sites, or an output that is not produced.
GraphAnalysis analyze_graph(const Graph& graph);

struct ShapeInfo {
  std::vector<Int3> site_shape;                  ///< per site set: spatial shape
  std::vector<std::vector<int64_t>> dense_shape; ///< per value: dense shape (empty for sparse)
};

/// Spatial shapes for the input grids (one per graph input) and the batch size; checks every
/// ScatterDense's input_spatial_shape / output_shape against them and throws naming the node.
ShapeInfo infer_shapes(const Graph& graph, const GraphAnalysis& analysis,
                       const std::vector<Int3>& input_grids, int batch_size);

/// out_d = floor((s_d + 2 p_d - dil_d (K_d - 1) - 1) / st_d) + 1 (spconv's regular conv), in
/// 64-bit arithmetic (the result may not fit int32). Needs stride >= 1.
std::array<int64_t, 3> conv_output_shape_wide(const Int3& in, const ConvAttrs& conv);
/// The same as Int3; throws scn::Error when an axis does not fit int32.
Int3 conv_output_shape(const Int3& in, const ConvAttrs& conv);

}  // namespace scn

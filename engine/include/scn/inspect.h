// scn — what a model plans and expects, for `scn inspect`, importers and embedders: the kernel-map
// plan (which convolutions share a map, which values share voxel sites), the shapes for a grid, and
// the input grid and index order the model states.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "scn/engine.h"
#include "scn/graph.h"
#include "scn/tensor.h"

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

/// One buffer of the CUDA engine's device arena.
struct ArenaBuffer {
  std::string name;  ///< e.g. "sites1 coords", "map3 (conv5)", "value 'x'"
  size_t bytes = 0;
  int first_step = 0, last_step = 0;  ///< alive over these node steps
  size_t offset = 0;                  ///< in the arena
};

struct ArenaReport {
  std::vector<int64_t> capacity;       ///< per site set: rows planned (clipped by the grid)
  std::vector<int64_t> measured_rows;  ///< per site set: the frame's rows (empty without a frame)
  std::vector<ArenaBuffer> buffers;
  size_t total = 0;      ///< arena bytes
  size_t peak_live = 0;  ///< most bytes alive at one step (a lower bound on total)
};

/// The device arena an FP16 CUDA engine plans for `grid` and `batch` under `options`
/// (max_input_voxels, max_batch, cuda.map_lookahead), computed on the host without a GPU. With
/// `frame_indices` ([N, 4] int32 on the host, (batch, i0, i1, i2) inside `grid`) the frame's rows per
/// site set are measured (CPU kernel maps) and, under CapacitySource::FirstFrame, every capacity is
/// those rows x capacity_margin as the engine fits them. Weights, input staging and error slots
/// live outside the arena (Engine::workspace_bytes() adds them). Throws scn::Error naming a bad row.
ArenaReport cuda_arena_report(const Graph& graph, const Int3& grid, int batch, const BuildOptions& options,
                              const Tensor* frame_indices = nullptr);
/// The same with the frame's rows per site set measured already (frame_site_rows), e.g. to report the
/// bounds and the fitted arena of one frame without measuring it twice.
ArenaReport cuda_arena_report(const Graph& graph, const Int3& grid, int batch, const BuildOptions& options,
                              const std::vector<int64_t>& frame_rows);
/// A frame's rows per site set: the input sets hold its rows, every strided level the sites the CPU
/// kernel maps generate from them. `label` (e.g. the file) starts every error message.
std::vector<int64_t> frame_site_rows(const Graph& graph, const Int3& grid, int batch, const Tensor& frame_indices,
                                     const std::string& label = "frame indices");

}  // namespace scn

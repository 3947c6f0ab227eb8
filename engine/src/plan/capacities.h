// Row capacities per site set, planned once from BuildOptions (docs/cuda_backend.md "Memory and
// capacities"): backends that allocate before the first frame (CUDA) size every buffer by them.
#pragma once

#include <cstdint>
#include <vector>

#include "graph/analysis.h"
#include "scn/graph.h"

namespace scn {

/// The rows planned per sample when no conv states an output_bound (NVIDIA's exporters write 200000).
constexpr int64_t kDefaultCapacity = 200000;

struct Capacities {
  std::vector<int64_t> site_rows;  ///< per site set: rows planned at build (before clipping by a grid)
};

/// Input sets: max_input_voxels (0: the largest output_bound of the graph, else kDefaultCapacity) x
/// max_batch. A strided conv's output set: output_bound x max_batch (the largest of the convs of its
/// map slot); without one, the larger of its input capacity and the default x max_batch, but never
/// more than every input site reaching all its output sites.
Capacities plan_capacities(const Graph& graph, const GraphAnalysis& analysis, int64_t max_input_voxels, int max_batch);

}  // namespace scn

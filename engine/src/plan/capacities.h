// Row capacities per site set (level), planned from BuildOptions (docs/cuda_backend.md "Memory and
// capacities"): backends that allocate before the first frame (CUDA) size every buffer by them. The
// CUDA engine may later fit them to a measured frame (CapacitySource::FirstFrame) or grow them when
// a frame needs more (CapacityOverflow::Grow) through the functions below.
#pragma once

#include <cstdint>
#include <vector>

#include "graph/analysis.h"
#include "scn/graph.h"

namespace scn {

/// The rows planned per sample when no conv states an output_bound (NVIDIA's exporters write 200000).
constexpr int64_t kDefaultCapacity = 200000;
/// The fewest rows a capacity fitted to a frame holds (a near-empty frame still plans usable buffers).
constexpr int64_t kMinFittedCapacity = 256;

struct Capacities {
  std::vector<int64_t> site_rows;  ///< per site set: rows planned at build (before clipping by a grid)
};

/// Input sets: max_input_voxels (0: the largest output_bound of the graph, else kDefaultCapacity) x
/// max_batch. A strided conv's output set: output_bound x max_batch (the largest of the convs of its
/// map slot), never more than every input site reaching all its output sites (input capacity x
/// prod(ceil(k/s))); without an output_bound, the larger of its input capacity and the default x
/// max_batch under the same reach bound. (A frame's grid clips every generated set further to
/// batch x grid cells: plan/arena_layout.cpp.)
Capacities plan_capacities(const Graph& graph, const GraphAnalysis& analysis, int64_t max_input_voxels, int max_batch);

/// The rows planned for `count` measured rows: ceil(count x margin), at least kMinFittedCapacity.
int64_t fitted_capacity(int64_t count, double margin);

/// The first guess of a frame-fitted plan before its counts are measured: input sets at their
/// fitted capacity for `input_rows` (per input set, -1: keep), every generated set at the largest
/// of its map slot's input capacity, never above `bounds` (the measuring forward grows what it
/// must: grow_capacities).
std::vector<int64_t> first_frame_capacities(const GraphAnalysis& analysis, const std::vector<int64_t>& bounds,
                                            const std::vector<int64_t>& input_rows, double margin);

/// After a forward that overflowed: per site set, the rows it needed (0: it did not overflow) ->
/// the grown capacities (needed x margin where it overflowed, unchanged elsewhere).
std::vector<int64_t> grow_capacities(const std::vector<int64_t>& current, const std::vector<int64_t>& needed,
                                     double margin);

/// After a forward without overflow: per site set its measured rows -> the fitted capacities.
std::vector<int64_t> fit_capacities(const std::vector<int64_t>& counts, double margin);

}  // namespace scn

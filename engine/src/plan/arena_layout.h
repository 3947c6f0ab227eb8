// The device arena of a frame, planned on the host (docs/cuda_backend.md "Memory and capacities"):
// every buffer a CUDA forward writes -- site coordinates, bitmaps / ranks / permutations, kernel
// maps, activations by buffer group, INT8 converted copies -- requested with its lifetime in steps,
// the kernel-map release points that lower the most bytes alive at once, and the placement by
// plan_memory. The CUDA backend allocates it and points into it (backends/cuda/arena.cpp); `scn
// inspect --memory` prints it for any grid, batch and capacities without a GPU.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "graph/analysis.h"
#include "graph/fusion.h"
#include "plan/buffer_groups.h"
#include "plan/memory_plan.h"
#include "plan/steps.h"
#include "scn/engine.h"
#include "scn/graph.h"

namespace scn {

/// Words per rank block of a site bitmap (1024 x 64 bits < 65536: the local ranks fit 16 bits).
constexpr int64_t kRankBlockWords = 1024;

/// A generated set in neighbour-row order (CudaSiteOrder::NeighbourRows) is ordered by a stable counting sort of
/// kSiteOrderBuckets keys in blocks of kSiteOrderBlockRows rows (backends/cuda/site_order.cu).
constexpr int64_t kSiteOrderBlockRows = 256;
constexpr int64_t kSiteOrderBuckets = 64;
inline int64_t site_order_blocks(int64_t cap) { return (cap + kSiteOrderBlockRows - 1) / kSiteOrderBlockRows; }

/// CudaSiteOrder::Auto orders a set when every submanifold conv reading it has at least this many input channels:
/// the wgmma tiles of those convs skip whole offset steps (docs/benchmarks.md, session 22).
constexpr int kSiteOrderAutoChannels = 64;

/// Site sets the CUDA backend keeps in neighbour-row order under `order`: generated sets that a submanifold conv
/// reads (Auto: of kSiteOrderAutoChannels or more) and that no graph output returns as a sparse tensor (whose
/// indices stay in bitmap order).
std::vector<bool> neighbour_row_sets(const Graph& graph, const GraphAnalysis& analysis, CudaSiteOrder order);

/// A strided slot's output sites come from its input set's bitmap words (the CUDA backend's strided_bits_kernel)
/// rather than from its input rows: CudaStridedSites, where the kernel reaches at most 64 sites along the last axis.
bool strided_sites_from_bitmap(const GraphAnalysis& analysis, const MapSlot& slot, CudaStridedSites how);

/// A site set's buffers in the arena.
struct ArenaSite {
  int64_t cap = 0;  ///< rows: the capacity clipped by batch x grid cells (input sets: not clipped)
  Int3 grid{0, 0, 0};
  int64_t words = 0;      ///< 64-bit bitmap words over batch x grid cells
  int producer_step = 0;  ///< written from this step (built ahead: its root slot's release)
  int index_last = 0;     ///< last step reading bitmap / rank / perm
  int coords_last = 0;    ///< last step reading coords
  int req_coords = -1, req_bits = -1, req_rank_local = -1, req_rank_block = -1, req_perm = -1;
  /// neighbour-row order: coords in rank order, sort keys and block histograms, alive while the set is built
  int req_order_coords = -1, req_order_keys = -1, req_order_hist = -1;
};

/// A converted copy of a value for one reader (INT8 engines).
struct ArenaShadow {
  int value = -1;
  int reader = -1;
  int producer = -1;  ///< written by this conv's epilogue (alive from it), or -1: at the reader only
  int stride = 0;     ///< row stride in elements
  bool to_q = false;  ///< int8 (1 byte) rather than fp16 (2 bytes)
};

/// Kernel-map release points: slot j of the build order is released when the main stream reaches
/// the first conv of slot j - lookahead (the first `lookahead` right after the inputs).
struct ReleasePoints {
  std::vector<int> release;    ///< per map slot: the step its build is released at
  std::vector<int> map_order;  ///< map slots in build order
  int lookahead = 0;           ///< as applied: 0 when an input is bound after other steps
};
ReleasePoints plan_release_points(const std::vector<Step>& steps, const GraphAnalysis& analysis, int lookahead);

/// Per map slot: for a strided slot whose output site set is built ahead (CudaOptions::sites_ahead: from the bitmap of
/// a generated set, with a map stream), the strided slot built in its release order after whose sites it follows, one
/// level after another; -1 for every other slot.
std::vector<int> sites_ahead_roots(const GraphAnalysis& analysis, const CudaOptions& options,
                                   const ReleasePoints& release);

struct ArenaInputs {
  const Graph* graph = nullptr;
  const GraphAnalysis* analysis = nullptr;
  const FusionPlan* fusion = nullptr;
  const BufferGroups* groups = nullptr;
  const ShapeInfo* shapes = nullptr;  ///< of the frame (EnginePlan::replan)
  int batch = 1;
  std::vector<int64_t> site_capacity;    ///< per site set, before clipping by the grid
  std::vector<bool> site_generated;      ///< per site set: produced by a strided map (no perm unless ordered)
  std::vector<bool> site_ordered;        ///< per site set: in neighbour-row order (neighbour_row_sets)
  std::vector<int> sites_ahead;          ///< per map slot: sites_ahead_roots (empty: none built ahead)
  std::function<size_t(int)> row_bytes;  ///< per value: bytes of one stored row
  std::vector<ArenaShadow> shadows;
  ReleasePoints release;
};

struct ArenaLayout {
  std::vector<BufferRequest> requests;
  std::vector<std::string> labels;  ///< per request
  std::vector<ArenaSite> sites;
  std::vector<int> map_req;     ///< per map slot
  std::vector<int> value_req;   ///< per value: the request of its group root (-1: none)
  std::vector<int> shadow_req;  ///< per shadow
  std::vector<int> release;     ///< per map slot, after the memory-aware delays
  MemoryPlan memory;
  size_t peak_live = 0;  ///< most bytes alive at one step (a lower bound on memory.total)
};

/// Requests under the base release points; from the last map backwards, a map is released one
/// slot later when that lowers the most bytes alive at once; then placed by plan_memory.
ArenaLayout plan_arena_layout(const ArenaInputs& inputs);

}  // namespace scn

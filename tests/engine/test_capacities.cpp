// Capacity planning (plan/capacities.h) and the CUDA arena planned on the host
// (plan/arena_layout.h): geometry bounds, margins, batch, growth, and what the arena of CenterPoint
// holds at the build bounds and fitted to a frame's measured rows per level (printed per buffer).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>

#include "backends/cpu/kernel_map.h"
#include "engine/centerpoint_graph.h"
#include "plan/arena_layout.h"
#include "plan/engine_plan.h"

namespace scn {
namespace {

struct Planned {
  std::shared_ptr<const Graph> graph;
  std::shared_ptr<const GraphAnalysis> analysis;
  EnginePlan plan;
};

Planned plan_of(const EngineBuilder& b, const BuildOptions& o) {
  Planned p;
  p.graph = std::make_shared<const Graph>(b.graph());
  p.analysis = std::make_shared<const GraphAnalysis>(analyze_graph(*p.graph));
  p.plan = make_plan(p.graph, p.analysis, o);
  return p;
}

/// The fp16 CUDA arena of `p` for one grid and batch with these capacities (the CUDA engine's
/// defaults: rows padded to 16 channels, maps released 3 slots ahead).
ArenaLayout fp16_arena(const Planned& p, const Int3& grid, int batch, const std::vector<int64_t>& caps) {
  const FramePlan f = p.plan.replan({grid}, batch);
  ArenaInputs in;
  in.graph = p.graph.get();
  in.analysis = p.analysis.get();
  in.fusion = &p.plan.fusion;
  in.groups = &p.plan.groups;
  in.shapes = &f.shapes;
  in.batch = batch;
  in.site_capacity = caps;
  for (int s = 0; s < p.analysis->num_site_sets; ++s)
    in.site_generated.push_back(p.analysis->site_input[size_t(s)] < 0);
  const Graph* g = p.graph.get();
  in.row_bytes = [g](int v) { return size_t((g->values[size_t(v)].channels + 15) / 16 * 16) * 2; };
  in.release = plan_release_points(p.plan.steps, *p.analysis, 3);
  return plan_arena_layout(in);
}

/// Bytes by kind (coords, bitmaps, maps, activations) and the buffers alive at the arena's peak.
void print_breakdown(const char* what, const ArenaLayout& a) {
  std::map<std::string, size_t> kind;
  for (size_t i = 0; i < a.requests.size(); ++i) {
    const std::string& l = a.labels[i];
    const std::string k = l.rfind("map", 0) == 0          ? "kernel maps"
                          : l.find("coords") != l.npos    ? "site coords"
                          : l.find("bits/rank") != l.npos ? "bitmaps/ranks/perms"
                                                          : "activations";
    kind[k] += a.requests[i].bytes;
  }
  std::printf("[arena] %s: %.2f MB placed, %.2f MB most alive at one step\n", what, double(a.memory.total) / 1e6,
              double(a.peak_live) / 1e6);
  for (const auto& [k, b] : kind) std::printf("[arena]   sum of %-20s %8.2f MB\n", k.c_str(), double(b) / 1e6);
  for (size_t i = 0; i < a.requests.size(); ++i)
    std::printf("[arena]   %-40s %8.3f MB  steps %3d..%3d  @%7.2f MB\n", a.labels[i].c_str(),
                double(a.requests[i].bytes) / 1e6, a.requests[i].first, a.requests[i].last,
                double(a.memory.offsets[i]) / 1e6);
}

/// Measured rows per site set of a frame (CPU kernel maps), in site-set order.
std::vector<int64_t> level_rows(const Planned& p, const std::vector<int32_t>& coords, const Int3& grid, int batch) {
  const GraphAnalysis& an = *p.analysis;
  const FramePlan f = p.plan.replan({grid}, batch);
  std::vector<cpu::SiteSet> sets(size_t(an.num_site_sets));
  std::vector<int64_t> rows(size_t(an.num_site_sets), 0);
  for (int s = 0; s < an.num_site_sets; ++s)
    if (an.site_input[size_t(s)] >= 0) {
      sets[size_t(s)].shape = grid;
      sets[size_t(s)].batch = batch;
      sets[size_t(s)].coords = coords;
      sets[size_t(s)].index();
    }
  for (const MapSlot& m : an.maps)
    if (m.kind == MapKind::Strided) {
      cpu::SiteSet& out = sets[size_t(m.out_sites)];
      out.batch = batch;
      cpu::build_strided_map(sets[size_t(m.in_sites)], m, f.shapes.site_shape[size_t(m.out_sites)], out, 1);
    }
  for (int s = 0; s < an.num_site_sets; ++s) rows[size_t(s)] = sets[size_t(s)].size();
  return rows;
}

TEST(Capacities, FitGrowAndMargins) {
  EXPECT_EQ(fitted_capacity(1000, 1.0), 1000);
  EXPECT_EQ(fitted_capacity(1000, 1.125), 1125);
  EXPECT_EQ(fitted_capacity(1001, 1.5), 1502);  // rounded up
  EXPECT_EQ(fitted_capacity(3, 2.0), kMinFittedCapacity);
  EXPECT_EQ(fit_capacities({80000, 0, 40000}, 1.25), (std::vector<int64_t>{100000, kMinFittedCapacity, 50000}));
  // only the sets that overflowed grow, to the rows they needed x margin
  EXPECT_EQ(grow_capacities({1000, 2000, 3000}, {0, 2500, 3000}, 1.2), (std::vector<int64_t>{1000, 3000, 3000}));
  // a margin of 1 still grows past the needed rows
  EXPECT_EQ(grow_capacities({1000}, {1000}, 1.0), (std::vector<int64_t>{1000}));
  EXPECT_EQ(grow_capacities({1000}, {1001}, 1.0), (std::vector<int64_t>{1001}));
}

TEST(Capacities, GeometryBoundsAndBatch) {
  const EngineBuilder b = test::centerpoint_builder({41, 160, 160});
  BuildOptions o;
  o.max_batch = 3;
  const Planned p = plan_of(b, o);
  const GraphAnalysis& an = *p.analysis;
  // inputs: the largest output_bound (200000) x batch; strided sets: output_bound x batch, below
  // input capacity x reach (3x3x3 stride 2: 2^3 = 8)
  for (int s = 0; s < an.num_site_sets; ++s) EXPECT_EQ(p.plan.capacities.site_rows[size_t(s)], 600000) << s;
  // a small input capacity bounds the levels after it through the kernels' reach
  o.max_input_voxels = 1000;
  const Planned q = plan_of(b, o);
  std::vector<int64_t> expect(size_t(an.num_site_sets), 0);
  for (int s = 0; s < an.num_site_sets; ++s)
    if (an.site_input[size_t(s)] >= 0) expect[size_t(s)] = 3000;
  int strided = 0;
  for (const MapSlot& m : an.maps)
    if (m.kind == MapKind::Strided) {
      int64_t reach = 1;  // every CenterPoint strided conv has dilation 1
      for (int d = 0; d < 3; ++d) reach *= (m.kernel_size[d] + m.stride[d] - 1) / m.stride[d];
      expect[size_t(m.out_sites)] = std::min<int64_t>(200000 * 3, expect[size_t(m.in_sites)] * reach);
      ++strided;
    }
  ASSERT_EQ(strided, 4);
  EXPECT_EQ(q.plan.capacities.site_rows, expect);
  int64_t first_strided = 0;
  for (const MapSlot& m : an.maps)
    if (m.kind == MapKind::Strided && first_strided == 0) first_strided = expect[size_t(m.out_sites)];
  EXPECT_EQ(first_strided, 3000 * 8);  // 3x3x3 stride 2 from 3000 input rows
  // the first guess of a frame-fitted plan: inputs at rows x margin, every level at its input's
  const std::vector<int64_t> guess = first_frame_capacities(an, p.plan.capacities.site_rows, {4000}, 1.5);
  for (int s = 0; s < an.num_site_sets; ++s) EXPECT_EQ(guess[size_t(s)], 6000) << s;
}

TEST(ArenaLayout, CenterPointAtTheBoundsAndFittedToAFrame) {
  const Int3 grid{41, 1440, 1440};
  // a frame: the real nuScenes one when present, else a seeded synthetic one
  std::vector<int32_t> coords;
  const char* dir = std::getenv("SCN_SHARED_DATA_DIR");
  const std::string path =
      std::string(dir ? dir : SCN_SHARED_DATA_DIR) + "/nuscenes-centerpoint/in_indices_zyx.torch.int32.tensor";
  const bool real = bool(std::ifstream(path));
  if (real) {
    const Tensor t = Tensor::load(path);
    coords.assign(t.ptr<int32_t>(), t.ptr<int32_t>() + t.numel());
  } else {
    const test::SparseInput s = test::random_input(20000, 5, grid, 1, 7);
    coords.assign(s.indices.ptr<int32_t>(), s.indices.ptr<int32_t>() + s.indices.numel());
  }
  const char* frame = real ? "real frame" : "synthetic frame";
  // at the bounds, as `scn bench` builds it: input rows = the frame's, every level at output_bound
  BuildOptions o;
  o.max_input_voxels = int64_t(coords.size() / 4);
  const Planned p = plan_of(test::centerpoint_builder(grid), o);
  const ArenaLayout bounds = fp16_arena(p, grid, 1, p.plan.capacities.site_rows);
  print_breakdown((std::string(frame) + ", capacities at the bounds").c_str(), bounds);
  EXPECT_GE(bounds.memory.total, bounds.peak_live);
  for (size_t v = 0; v < p.graph->values.size(); ++v) {  // every level's activations hold its capacity
    const int r = bounds.value_req[v];
    if (r < 0 || !p.graph->values[v].sparse) continue;
    const int s = p.analysis->value_sites[v];
    EXPECT_GE(bounds.requests[size_t(r)].bytes, size_t(bounds.sites[size_t(s)].cap) * 32) << p.graph->values[v].name;
  }
  const std::vector<int64_t> rows = level_rows(p, coords, grid, 1);
  for (size_t s = 0; s < rows.size(); ++s) {
    std::printf("[arena] %s: site set %zu has %lld rows\n", frame, s, (long long)rows[s]);
    EXPECT_GT(rows[s], 0);
    EXPECT_LE(rows[s], p.plan.capacities.site_rows[s]);
  }
  size_t previous = 0;
  for (double margin : {1.0, 1.125, 1.25}) {
    const ArenaLayout fit = fp16_arena(p, grid, 1, fit_capacities(rows, margin));
    print_breakdown((std::string(frame) + ", capacities = rows x " + std::to_string(margin)).c_str(), fit);
    EXPECT_LT(fit.memory.total, bounds.memory.total);
    EXPECT_GT(fit.memory.total, previous);
    previous = fit.memory.total;
  }
  // batch 8 at the bounds: 8x the rows of every level
  BuildOptions o8 = o;
  o8.max_batch = 8;
  const Planned p8 = plan_of(test::centerpoint_builder(grid), o8);
  const ArenaLayout b8 = fp16_arena(p8, grid, 8, p8.plan.capacities.site_rows);
  std::printf("[arena] batch 8 at the bounds: %.2f MB\n", double(b8.memory.total) / 1e6);
  EXPECT_GT(b8.memory.total, 4 * bounds.memory.total);
}

}  // namespace
}  // namespace scn

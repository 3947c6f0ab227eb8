// Capacity planning (plan/capacities.h) and the CUDA arena planned on the host
// (plan/arena_layout.h, through scn/inspect.h cuda_arena_report): geometry bounds, margins, batch, growth, and what the
// arena of CenterPoint holds at the build bounds and fitted to a frame's measured rows per level (printed per buffer).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <string>

#include "engine/centerpoint_graph.h"
#include "engine/test_helpers.h"
#include "plan/engine_plan.h"
#include "scn/inspect.h"

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

/// The buffer of that name, or nullptr.
const ArenaBuffer* buffer_named(const ArenaReport& a, const std::string& name) {
  for (const ArenaBuffer& b : a.buffers)
    if (b.name == name) return &b;
  return nullptr;
}

/// Bytes by kind (coords, bitmaps, maps, activations) and every buffer with its lifetime and offset.
void print_breakdown(const std::string& what, const ArenaReport& a) {
  std::map<std::string, size_t> kind;
  for (const ArenaBuffer& b : a.buffers) {
    const std::string& l = b.name;
    const std::string k = l.rfind("map", 0) == 0       ? "kernel maps"
                          : l.find("coords") != l.npos ? "site coords"
                          : l.rfind("sites", 0) == 0   ? "bitmaps, ranks, perms"
                                                       : "activations";
    kind[k] += b.bytes;
  }
  std::printf("[arena] %s: %.2f MB placed, %.2f MB most alive at one step\n", what.c_str(), double(a.total) / 1e6,
              double(a.peak_live) / 1e6);
  for (const auto& [k, b] : kind) std::printf("[arena]   sum of %-20s %8.2f MB\n", k.c_str(), double(b) / 1e6);
  for (const ArenaBuffer& b : a.buffers)
    std::printf("[arena]   %-40s %8.3f MB  steps %3d..%3d  @%7.2f MB\n", b.name.c_str(), double(b.bytes) / 1e6,
                b.first_step, b.last_step, double(b.offset) / 1e6);
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

// Site sets hold at most kMaxSiteRows rows (int32 on the device): an output_bound beyond it is refused by the
// builder, a bound or input capacity that passes it alone but not times max_batch by the plan, each naming what; a
// strided set's reach bound saturates instead of wrapping (a bound of 2^62 once wrapped the buffers' bytes to 0).
TEST(Capacities, RowsStayWithinTheDeviceRowLimit) {
  auto error_of = [](auto&& f) -> std::string {
    try {
      f();
    } catch (const Error& e) {
      return e.what();
    }
    return "no error";
  };
  auto model = [](int64_t bound) {
    EngineBuilder b("rows.onnx");
    ValueId x = b.push_input("x", 4);
    x = b.push_sparse_conv("down", x, test::random_conv(4, 8, {3, 3, 3}, {2, 2, 2}, {1, 1, 1}, {1, 1, 1}, false, 1));
    ConvAttrs c = test::random_conv(8, 8, {3, 3, 3}, {2, 2, 2}, {1, 1, 1}, {1, 1, 1}, false, 2);
    c.output_bound = bound;
    x = b.push_sparse_conv("bounded", x, c);
    DenseAttrs d;
    d.input_spatial_shape = {3, 3, 3};  // an 11^3 grid after two stride-2 convs
    d.output_shape = {1, 8, 3, 3, 3};
    b.push_output(b.push_dense("dense", x, d));
    return b;
  };
  ConvAttrs big = test::random_conv(4, 8, {3, 3, 3}, {2, 2, 2}, {1, 1, 1}, {1, 1, 1}, false, 1);
  big.output_bound = int64_t(1) << 62;
  const std::string refused = error_of([&] {
    EngineBuilder b;
    b.push_sparse_conv("huge", b.push_input("x", 4), big);
  });
  EXPECT_NE(refused.find("output_bound must be in [0, 2147483647]"), std::string::npos) << refused;
  EXPECT_NE(refused.find("huge"), std::string::npos) << refused;

  BuildOptions o;
  o.max_batch = 4;
  o.max_input_voxels = int64_t(1) << 30;  // within the limit alone, not x 4
  const std::string inputs = error_of([&] { plan_of(model(0), o); });
  EXPECT_NE(inputs.find("rows.onnx"), std::string::npos) << inputs;
  EXPECT_NE(inputs.find("BuildOptions.max_input_voxels) x max_batch 4"), std::string::npos) << inputs;
  o.max_input_voxels = 1000;
  const std::string bound = error_of([&] { plan_of(model(int64_t(1) << 30), o); });
  EXPECT_NE(bound.find("node 'bounded': output_bound 1073741824 x max_batch 4"), std::string::npos) << bound;

  // at the limit: the input set plans every row, a strided set's reach bound (x 8) saturates at the limit
  o.max_batch = 1;
  o.max_input_voxels = kMaxSiteRows;
  const Planned p = plan_of(model(0), o);
  for (int64_t rows : p.plan.capacities.site_rows) {
    EXPECT_GT(rows, 0);
    EXPECT_LE(rows, kMaxSiteRows);
  }
  EXPECT_EQ(p.plan.capacities.site_rows[0], kMaxSiteRows);
}

TEST(ArenaLayout, CenterPointAtTheBoundsAndFittedToAFrame) {
  const Int3 grid{41, 1440, 1440};
  // a frame: the real nuScenes one when present, else a seeded synthetic one
  const char* dir = std::getenv("SCN_SHARED_DATA_DIR");
  const std::string path =
      std::string(dir ? dir : SCN_SHARED_DATA_DIR) + "/nuscenes-centerpoint/in_indices_zyx.torch.int32.tensor";
  const bool real = bool(std::ifstream(path));
  const Tensor idx = real ? Tensor::load(path) : test::random_input(20000, 5, grid, 1, 7).indices;
  const std::string frame = real ? "real frame" : "synthetic frame";
  const Graph g = test::centerpoint_builder(grid).graph();
  // at the bounds, as `scn bench` builds it: input rows = the frame's, every level at output_bound
  BuildOptions o;
  o.max_input_voxels = idx.dim(0);
  const ArenaReport bounds = cuda_arena_report(g, grid, 1, o, &idx);
  print_breakdown(frame + ", capacities at the bounds", bounds);
  EXPECT_GE(bounds.total, bounds.peak_live);
  ASSERT_EQ(bounds.capacity.size(), bounds.measured_rows.size());
  EXPECT_EQ(bounds.capacity[0], idx.dim(0));
  for (size_t s = 0; s < bounds.capacity.size(); ++s) {
    std::printf("[arena] %s: site set %zu has %lld rows, %lld planned at the bounds\n", frame.c_str(), s,
                (long long)bounds.measured_rows[s], (long long)bounds.capacity[s]);
    EXPECT_GT(bounds.measured_rows[s], 0);
    EXPECT_LE(bounds.measured_rows[s], bounds.capacity[s]);
  }
  o.capacity_source = CapacitySource::FirstFrame;
  size_t previous = 0;
  for (double margin : {1.0, 1.1, 1.25}) {
    o.capacity_margin = margin;
    const ArenaReport fit = cuda_arena_report(g, grid, 1, o, &idx);
    print_breakdown(frame + ", capacities = rows x " + std::to_string(margin), fit);
    for (size_t s = 0; s < fit.capacity.size(); ++s)
      EXPECT_EQ(fit.capacity[s], fitted_capacity(bounds.measured_rows[s], margin)) << s;
    EXPECT_LT(fit.total, bounds.total);
    EXPECT_GT(fit.total, previous);
    if (real) {  // the level-1 submanifold map is released at its level's first conv (conv5), not beside level 0's peak
      const ArenaBuffer* m1 = buffer_named(fit, "map1 (conv5)");
      const ArenaBuffer* m2 = buffer_named(fit, "map2 (conv6)");
      ASSERT_TRUE(m1 && m2);
      EXPECT_EQ(m2->first_step, m1->last_step) << "margin " << margin;
      EXPECT_EQ(m1->first_step, 0);
    }
    previous = fit.total;
  }
  // batch 8 at the bounds: 8x the rows of every level
  BuildOptions o8;
  o8.max_input_voxels = idx.dim(0);
  o8.max_batch = 8;
  const ArenaReport b8 = cuda_arena_report(g, grid, 8, o8);
  std::printf("[arena] batch 8 at the bounds: %.2f MB\n", double(b8.total) / 1e6);
  EXPECT_GT(b8.total, 4 * bounds.total);
  // a bad frame is an error naming the row: outside the grid, or a site given twice
  const int32_t rows[8] = {0, 3, 4, 5, 0, 3, 4, 1440};
  const Tensor bad = Tensor::from_host(rows, {2, 4}, DType::Int32);
  try {
    cuda_arena_report(g, grid, 1, o, &bad);
    ADD_FAILURE() << "a row outside the grid was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("frame: row 1 coordinate (3, 4, 1440) lies outside the grid 41x1440x1440"),
              std::string::npos)
        << e.what();
  }
  // a grid the engine refuses is refused here too (its site keys wrapped: two rows were reported as one site, and
  // the report planned an arena for it)
  const Int3 huge{1 << 22, 1 << 21, 1 << 21};
  const int32_t two[8] = {0, 5, 5, 5, 1, 5, 5, 5};
  const Tensor two_rows = Tensor::from_host(two, {2, 4}, DType::Int32);
  for (auto&& call : std::vector<std::function<void()>>{[&] { frame_site_rows(g, huge, 2, two_rows, "f.tensor"); },
                                                        [&] { cuda_arena_report(g, huge, 1, o); }}) {
    try {
      call();
      ADD_FAILURE() << "the grid 4194304x2097152x2097152 was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("grid 4194304x2097152x2097152 is too large"), std::string::npos) << e.what();
    }
  }
  const int32_t twice[8] = {0, 3, 4, 5, 0, 3, 4, 5};
  try {
    frame_site_rows(g, grid, 1, Tensor::from_host(twice, {2, 4}, DType::Int32), "twice.tensor");
    ADD_FAILURE() << "a site given twice was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("twice.tensor: frame: rows 0 and 1 are the same site (0, 3, 4, 5)"),
              std::string::npos)
        << e.what();
  }
}

/// CenterPoint at the nuScenes grid with options for 80k input voxels, and its arena report under given options: the
/// case of the arena tests below.
struct CenterPointArena {
  Int3 grid{41, 1440, 1440};
  Graph graph = test::centerpoint_builder(grid).graph();
  BuildOptions options = [] {
    BuildOptions o;
    o.max_input_voxels = 80000;
    return o;
  }();
  ArenaReport report(const BuildOptions& o) const { return cuda_arena_report(graph, grid, 1, o); }
};

// Generated levels in neighbour-row order (CudaSiteOrder::NeighbourRows; Auto: those of 64 or more channels) carry a
// perm and, while the map stream builds them, the order's temporaries; the input set and the last level (read by no
// submanifold conv) do not; in bitmap order no generated set has any of them.
TEST(ArenaLayout, NeighbourRowOrderBuffers) {
  const CenterPointArena cp;
  BuildOptions o = cp.options;
  auto bytes_of = [](const ArenaReport& a, const std::string& name) -> size_t {
    const ArenaBuffer* b = buffer_named(a, name);
    return b ? b->bytes : 0;
  };
  const ArenaReport automatic = cp.report(o);
  o.cuda.site_order = CudaSiteOrder::NeighbourRows;
  const ArenaReport ordered = cp.report(o);
  o.cuda.site_order = CudaSiteOrder::Bitmap;
  const ArenaReport bitmap = cp.report(o);
  ASSERT_EQ(ordered.capacity.size(), 5u) << "CenterPoint: the input set and four generated levels";
  for (size_t s = 0; s < ordered.capacity.size(); ++s) {
    SCOPED_TRACE("site set " + std::to_string(s));
    const std::string p = "sites" + std::to_string(s);
    const bool expect_order = s >= 1 && s <= 3;  // levels 1-3 hold submanifold convs; level 4 feeds the densify
    const bool expect_auto = s == 2 || s == 3;   // Auto: the levels of 64 and 128 channels, not the 32-channel one
    const size_t cap = size_t(ordered.capacity[s]);
    EXPECT_EQ(bytes_of(automatic, p + " perm"), s == 0 || expect_auto ? cap * 4 : 0);
    EXPECT_EQ(bytes_of(automatic, p + " order: keys"), expect_auto ? cap : 0);
    EXPECT_EQ(bytes_of(ordered, p + " perm"), s == 0 || expect_order ? cap * 4 : 0);
    EXPECT_EQ(bytes_of(bitmap, p + " perm"), s == 0 ? cap * 4 : 0);
    EXPECT_EQ(bytes_of(ordered, p + " order: coords by rank"), expect_order ? cap * 16 : 0);
    EXPECT_EQ(bytes_of(ordered, p + " order: keys"), expect_order ? cap : 0);
    const size_t groups = (cap + 255) / 256;  // counts per (key, group of 256 rows), then the 64 key totals
    EXPECT_EQ(bytes_of(ordered, p + " order: key counts"), expect_order ? (groups + 1) * 64 * 4 : 0);
    EXPECT_EQ(bytes_of(bitmap, p + " order: keys"), 0u);
  }
  EXPECT_GE(ordered.peak_live, bitmap.peak_live) << "the order adds buffers, it removes none";
}

// CudaOptions::sites_ahead: the levels made from a generated level's bitmap (CenterPoint's levels 2-4, from level 1)
// are built on the sites stream from the release of the level-1 build on, so all their buffers start there; by
// default, without a map stream, or with every strided set made from rows, each set starts at its own map's release.
TEST(ArenaLayout, SitesBuiltAheadStartWithTheirRoot) {
  const CenterPointArena cp;
  const BuildOptions& o = cp.options;
  auto first_of = [](const ArenaReport& a, const std::string& name) -> int {
    const ArenaBuffer* b = buffer_named(a, name);
    EXPECT_TRUE(b) << "no buffer " << name;
    return b ? b->first_step : -1;
  };
  BuildOptions on = o;
  on.cuda.sites_ahead = true;
  const ArenaReport ahead = cp.report(on), plain = cp.report(o);
  const int root = first_of(ahead, "sites1 bitmap");
  for (int s = 2; s <= 4; ++s) {
    SCOPED_TRACE("site set " + std::to_string(s));
    const std::string p = "sites" + std::to_string(s);
    for (const char* b : {" bitmap", " rank (local)", " rank (blocks)", " coords"})
      EXPECT_EQ(first_of(ahead, p + b), root) << b;
    EXPECT_GT(first_of(plain, p + " coords"), root) << "by default from their own map's release";
  }
  EXPECT_EQ(first_of(ahead, "sites2 order: keys"), root);
  auto expect_own_release = [&](BuildOptions opt, const char* what) {
    const ArenaReport r = cp.report(opt);
    for (int s = 2; s <= 4; ++s) {
      const std::string p = "sites" + std::to_string(s);
      EXPECT_EQ(first_of(r, p + " bitmap"), first_of(plain, p + " bitmap")) << what << ", site set " << s;
    }
  };
  BuildOptions rows = on;
  rows.cuda.strided_sites = CudaStridedSites::FromRows;
  expect_own_release(rows, "every strided set from rows");
  BuildOptions one_stream = on;
  one_stream.cuda.map_lookahead = 0;
  const ArenaReport single = cp.report(one_stream);
  one_stream.cuda.sites_ahead = false;
  const ArenaReport single_plain = cp.report(one_stream);
  for (int s = 2; s <= 4; ++s) {
    const std::string p = "sites" + std::to_string(s);
    EXPECT_EQ(first_of(single, p + " bitmap"), first_of(single_plain, p + " bitmap")) << "one stream, set " << s;
  }
  EXPECT_GT(ahead.peak_live, plain.peak_live) << "sets built ahead are alive beside the first levels";
}

}  // namespace
}  // namespace scn

// Capacities that follow the frame (docs/cuda_backend.md "Memory and capacities"): an engine fitted
// to a first frame (CapacitySource::FirstFrame), then given a larger one, either reports the clear
// error naming the input or node (CapacityOverflow::Error) or grows and returns the result a fresh
// engine gives, bitwise (CapacityOverflow::Grow); and the real frame fits spconv's peak allocation.
#include <fstream>
#include <functional>

#include "common/error_message.h"
#include "cuda/cuda_test_util.h"
#include "engine/centerpoint_graph.h"

namespace scn::cudatest {
namespace {

using test::random_conv;
using test::random_input;
using test::SparseInput;

constexpr int kChannels = 5;
const Int3 kGrid{41, 160, 160};

/// `n` voxels packed into the corner 41 x 40 x 40 of kGrid (few sites per level), or spread over
/// all of it (many): the same input rows, different rows at every strided level.
SparseInput frame(int64_t n, bool packed, uint64_t seed) {
  SparseInput in = random_input(n, kChannels, packed ? Int3{41, 40, 40} : kGrid, 1, seed);
  in.grid = kGrid;
  return in;
}

BuildOptions fitted_options(CapacityOverflow overflow, double margin) {
  BuildOptions o = cuda_options();
  o.capacity_source = CapacitySource::FirstFrame;
  o.on_capacity_overflow = overflow;
  o.capacity_margin = margin;
  return o;
}

std::string first_strided_conv(const Graph& g) {
  for (const Node& n : g.nodes)
    if (n.op == OpType::SparseConv && !n.conv.subm) return n.name;
  return {};
}

std::string error_of(const std::function<void()>& f) { return test::error_message(f); }

TEST(CudaCapacity, FirstFrameFitsAndMatchesTheBoundsPlan) {
  SCN_REQUIRE_CUDA();
  const EngineBuilder b = test::centerpoint_builder(kGrid, kChannels);
  const SparseInput a = frame(6000, true, 301);
  auto bounds = b.build(cuda_options());
  auto fitted = b.build(fitted_options(CapacityOverflow::Error, 1.125));
  const RunResult rb = run(*bounds, {a});
  const RunResult rf = run(*fitted, {a});
  EXPECT_EQ(to_bytes(rf.outputs[0]), to_bytes(rb.outputs[0])) << "a fitted plan changes no output bit";
  std::printf("[capacity] workspace at the bounds %.2f MB, fitted to the frame %.2f MB\n",
              double(bounds->workspace_bytes()) / 1e6, double(fitted->workspace_bytes()) / 1e6);
  EXPECT_LT(fitted->workspace_bytes() * 2, bounds->workspace_bytes());
  auto cpu = b.build(cpu_options());
  const Metrics m = compare(to_floats(rf.outputs[0]), to_floats(run(*cpu, {a}).outputs[0]));
  EXPECT_LE(m.rel_l2, 1e-3) << describe(m);
}

TEST(CudaCapacity, ALargerFrameIsAClearErrorWithError) {
  SCN_REQUIRE_CUDA();
  const EngineBuilder b = test::centerpoint_builder(kGrid, kChannels);
  auto e = b.build(fitted_options(CapacityOverflow::Error, 1.0));
  run(*e, {frame(6000, true, 301)});
  // more input rows: set_input refuses them at once, naming the input
  const SparseInput more = frame(7000, true, 302);
  std::string m = error_of([&] { e->set_input(0, more.features, more.indices, more.grid, 1); });
  EXPECT_NE(m.find("input '0'"), std::string::npos) << m;
  EXPECT_NE(m.find("7000 voxels exceed the capacity 6000"), std::string::npos) << m;
  EXPECT_NE(m.find("CapacityOverflow::Grow"), std::string::npos) << m;
  // the same input rows spread out: more sites at the first strided level, reported naming its conv
  const SparseInput spread = frame(6000, false, 303);
  e->set_input(0, spread.features, spread.indices, spread.grid, 1);
  e->forward();
  m = error_of([&] { e->check_errors(); });
  EXPECT_NE(m.find(first_strided_conv(b.graph())), std::string::npos) << m;
  EXPECT_NE(m.find("output sites exceed the capacity"), std::string::npos) << m;
  EXPECT_NE(m.find("fitted to the first frame"), std::string::npos) << m;
}

TEST(CudaCapacity, ALargerFrameGrowsWithGrow) {
  SCN_REQUIRE_CUDA();
  const EngineBuilder b = test::centerpoint_builder(kGrid, kChannels);
  auto e = b.build(fitted_options(CapacityOverflow::Grow, 1.0));
  run(*e, {frame(6000, true, 301)});
  const size_t small = e->workspace_bytes();
  auto cpu = b.build(cpu_options());
  // spread (level overflow found by check_errors / output) and then more rows (grown at set_input)
  for (const SparseInput& next : {frame(6000, false, 303), frame(9000, false, 304)}) {
    SCOPED_TRACE(std::to_string(next.indices.dim(0)) + " voxels");
    const RunResult rg = run(*e, {next});
    auto fresh = b.build(cuda_options());
    const RunResult rf = run(*fresh, {next});
    EXPECT_EQ(to_bytes(rg.outputs[0]), to_bytes(rf.outputs[0])) << "the grown engine's output is a fresh engine's";
    const Metrics m = compare(to_floats(rg.outputs[0]), to_floats(run(*cpu, {next}).outputs[0]));
    EXPECT_LE(m.rel_l2, 1e-3) << describe(m);
    EXPECT_GE(m.cosine, 0.99999) << describe(m);
  }
  EXPECT_GT(e->workspace_bytes(), small);
  // grown for good: the spread frame again needs no growth and gives the same bits
  const SparseInput spread = frame(6000, false, 303);
  const size_t grown = e->workspace_bytes();
  const RunResult again = run(*e, {spread});
  auto fresh = b.build(cuda_options());
  EXPECT_EQ(to_bytes(again.outputs[0]), to_bytes(run(*fresh, {spread}).outputs[0]));
  EXPECT_EQ(e->workspace_bytes(), grown);
}

// With Grow, an overflow is grown into and the forward re-run only while that forward's inputs are bound: after
// another binding, check_errors() reports the overflowed frame's error (its outputs were truncated; a re-run would be
// of the other frame), and the next frame's forward runs on its own.
TEST(CudaCapacity, AnOverflowIsReportedNotRerunAfterARebinding) {
  SCN_REQUIRE_CUDA();
  const EngineBuilder b = test::centerpoint_builder(kGrid, kChannels);
  auto e = b.build(fitted_options(CapacityOverflow::Grow, 1.0));
  const SparseInput packed = frame(6000, true, 301), spread = frame(6000, false, 303);
  const RunResult first = run(*e, {packed});
  e->set_input(0, spread.features, spread.indices, spread.grid, 1);
  e->forward();  // overflows the levels fitted to the packed frame
  e->set_input(0, packed.features, packed.indices, packed.grid, 1);
  const std::string m = error_of([&] { e->check_errors(); });
  EXPECT_NE(m.find("output sites exceed the capacity"), std::string::npos) << m;
  const RunResult again = run(*e, {packed});
  EXPECT_EQ(to_bytes(again.outputs[0]), to_bytes(first.outputs[0]));
}

// A graph whose output_bound is too small (CapacityOverflowIsReported's): Grow passes it by.
TEST(CudaCapacity, GrowPassesATooSmallOutputBound) {
  SCN_REQUIRE_CUDA();
  const Int3 grid{20, 40, 40};
  const SparseInput in = random_input(3000, 8, grid, 1, 61);
  auto model = [](int64_t bound) {
    EngineBuilder b("overflow");
    ValueId x = b.push_input("0", 8);
    ConvAttrs c = random_conv(8, 16, {3, 3, 3}, {2, 2, 2}, {1, 1, 1}, {1, 1, 1}, false, 62, Activation::ReLU);
    c.output_bound = bound;
    x = b.push_sparse_conv("conv_down7", x, c);
    x = b.push_sparse_conv("conv8", x,
                           random_conv(16, 16, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, true, 63, Activation::ReLU));
    b.push_output(x);
    return b;
  };
  BuildOptions o = cuda_options(true, 5000);
  o.on_capacity_overflow = CapacityOverflow::Grow;
  auto grown = model(100).build(o);
  auto fresh = model(0).build(cuda_options(true, 5000));
  const RunResult rg = run(*grown, {in});
  const RunResult rf = run(*fresh, {in});
  ASSERT_GT(rg.outputs[0].dim(0), 100) << "the frame has more output sites than output_bound";
  EXPECT_EQ(to_bytes(rg.outputs[0]), to_bytes(rf.outputs[0]));
  EXPECT_EQ(to_ints(rg.indices[0]), to_ints(rf.indices[0]));
  // input rows beyond max_input_voxels: grown at set_input
  const SparseInput big = random_input(6000, 8, grid, 1, 64);
  EXPECT_NO_THROW(grown->set_input(0, big.features, big.indices, big.grid, 1));
  grown->forward();
  EXPECT_NO_THROW(grown->check_errors());
}

// The real nuScenes frame: an engine fitted to it holds no more device memory than spconv 2.3.8's
// peak allocation for it (59 MB, issue 19), with the same output bits as the bounds plan.
TEST(CudaCapacity, RealFrameFitsSpconvsPeak) {
  SCN_REQUIRE_CUDA();
  SparseInput in;
  std::string dir;
  if (!load_real_frame(&in, &dir)) GTEST_SKIP() << "real frame not found in " << dir << " (set SCN_DATA_DIR)";
  const EngineBuilder b = test::centerpoint_builder();
  BuildOptions o = cuda_options(true, in.indices.dim(0));  // as `scn bench` builds it
  auto bounds = b.build(o);
  o.capacity_source = CapacitySource::FirstFrame;  // default margin
  auto fitted = b.build(o);
  const RunResult rb = run(*bounds, {in});
  const RunResult rf = run(*fitted, {in});
  std::printf("[capacity] real frame: workspace at the bounds %.2f MB, fitted %.2f MB\n",
              double(bounds->workspace_bytes()) / 1e6, double(fitted->workspace_bytes()) / 1e6);
  EXPECT_LE(fitted->workspace_bytes(), size_t(59e6));
  EXPECT_EQ(to_bytes(rf.outputs[0]), to_bytes(rb.outputs[0]));
}

}  // namespace
}  // namespace scn::cudatest

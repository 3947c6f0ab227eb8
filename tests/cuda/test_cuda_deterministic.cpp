// Bitwise determinism of the CUDA backend on a CenterPoint-shaped graph: two forwards of one engine, two engines,
// graph and no graph, launch orders and priorities, every tile and osplit configuration, split classes, and the
// tuner's skip list. Every test skips visibly without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "cuda/cuda_test_util.h"
#include "engine/centerpoint_graph.h"

namespace {

using namespace scn;
using namespace scn::cudatest;
using test::random_conv;
using test::random_input;
using test::SparseInput;

// Bitwise determinism: two forwards of one engine, two engines, graph and no graph.
TEST(CudaBackend, Deterministic) {
  SCN_REQUIRE_CUDA();
  const Int3 grid{41, 160, 160};
  const SparseInput in = random_input(20000, 5, grid, 1, 51);
  const EngineBuilder b = test::centerpoint_builder(grid);
  auto e1 = b.build(cuda_options(true));
  auto e2 = b.build(cuda_options(false));
  const RunResult a1 = run(*e1, {in});
  const std::vector<uint8_t> first = to_bytes(a1.outputs[0]);
  e1->forward();
  const std::vector<uint8_t> second = to_bytes(e1->output(0));
  const RunResult a2 = run(*e2, {in});
  EXPECT_TRUE(first == second) << "two forwards of one engine differ";
  EXPECT_TRUE(first == to_bytes(a2.outputs[0])) << "two engines (graph / no graph) differ";
  {
    // convs launched in plain stream order, graph nodes at two priorities (convs above the map stream), against the
    // default programmatic launches (each conv stages its map before waiting for the previous conv) at one
    BuildOptions o = cuda_options(true);
    o.cuda.programmatic_launch = CudaProgrammaticLaunch::Off;
    o.cuda.stream_priorities = true;
    auto e0 = b.build(o);
    EXPECT_TRUE(first == to_bytes(run(*e0, {in}).outputs[0])) << "plain stream-ordered launches differ";
  }
  // the tile configuration (autotuned or heuristic) and the map stream never change the bits
  BuildOptions plain = cuda_options(true);
  plain.cuda.autotune = false;
  plain.cuda.map_lookahead = 0;
  auto e3 = b.build(plain);
  EXPECT_TRUE(first == to_bytes(run(*e3, {in}).outputs[0])) << "heuristic configs differ from tuned ones";
  {
    // every generated level in neighbour-row order, and every one in bitmap order, against the default (the
    // 64- and 128-channel levels in neighbour-row order): a row's sum does not depend on where the row sits
    for (const CudaSiteOrder order : {CudaSiteOrder::NeighbourRows, CudaSiteOrder::Bitmap}) {
      BuildOptions o = cuda_options(true);
      o.cuda.site_order = order;
      auto e6 = b.build(o);
      EXPECT_TRUE(first == to_bytes(run(*e6, {in}).outputs[0])) << "site order " << int(order) << " differs";
    }
  }
  {
    // the default map kernels (by kernel rows) against the plain one-lookup-per-entry baseline
    BuildOptions o = plain;
    o.cuda.map_kernel = CudaMapKernel::General;
    auto e5 = b.build(o);
    EXPECT_TRUE(first == to_bytes(run(*e5, {in}).outputs[0])) << "the general map kernel differs";
  }
  // strided site sets from the input bitmap's words at every strided conv, and from the input rows (atomics) at
  // every one, against the default's choice per conv; and the default's choice with the sites built ahead
  for (const CudaStridedSites how : {CudaStridedSites::FromBitmap, CudaStridedSites::FromRows}) {
    BuildOptions o = plain;
    o.cuda.strided_sites = how;
    auto e7 = b.build(o);
    EXPECT_TRUE(first == to_bytes(run(*e7, {in}).outputs[0])) << "strided sites " << int(how) << " differ";
  }
  {
    BuildOptions o = cuda_options(true);
    o.cuda.sites_ahead = true;
    auto e8 = b.build(o);
    EXPECT_TRUE(first == to_bytes(run(*e8, {in}).outputs[0])) << "sites built ahead differ";
  }
  {
    // the default split class follows the planned batch: an engine planned for two frames sums the 128-channel
    // convs unsplit (the bits of split = 1, tuned or heuristic), one planned for a single frame splits them on sm_90
    auto split_convs = [](Engine& e) {
      int n = 0;
      for (const auto& l : e.profile_layers()) n += l.split_k > 1;
      return n;
    };
    const int default_split = split_convs(*e1);
    BuildOptions o = cuda_options(true, 0, 2);
    auto eb = b.build(o);
    o.cuda.split = 1;
    o.cuda.autotune = false;
    auto eb1 = b.build(o);
    const auto ob = to_bytes(run(*eb, {in}).outputs[0]);
    EXPECT_TRUE(ob == to_bytes(run(*eb1, {in}).outputs[0])) << "a batch engine's default is not the unsplit class";
    EXPECT_EQ(split_convs(*eb), 0) << "an engine planned for two frames splits a conv";
    EXPECT_EQ(ob == first, default_split == 0) << "the one-frame engine's class";
  }
  // split-K over kernel offsets (clusters): a different summation order, but one per class (by
  // default the 128-channel level splits in two on sm_90; 1 = no split anywhere, 2 = every deep layer)
  for (int classes : {1, 2}) {
    BuildOptions o = cuda_options(true);
    o.cuda.split = classes;
    auto s1 = b.build(o);
    o.cuda_graph = false;
    auto s2 = b.build(o);
    const auto o1 = to_bytes(run(*s1, {in}).outputs[0]);
    EXPECT_TRUE(o1 == to_bytes(run(*s2, {in}).outputs[0])) << "two engines of split class " << classes << " differ";
    const Metrics m = compare(to_floats(run(*s1, {in}).outputs[0]), to_floats(a1.outputs[0]));
    EXPECT_LE(m.rel_l2, 1e-3) << "split class " << classes << ": " << describe(m);
  }
  // offset groups of the 16/32-channel convs (the osplit kernel): one summation order per class,
  // tuned or heuristic, graph or not; class 1 runs no osplit kernel, class 2 runs it where it fits,
  // and the default engine is of class 2 exactly when it runs osplit (sm_90)
  int default_osplit = 0;
  for (const auto& l : e1->profile_layers()) default_osplit += l.algorithm.rfind("osplit", 0) == 0;
  for (int groups : {1, 2}) {
    SCOPED_TRACE("offset_groups " + std::to_string(groups));
    BuildOptions o = cuda_options(true);
    o.cuda.offset_groups = groups;
    auto g1 = b.build(o);
    o.cuda_graph = false;
    o.cuda.autotune = false;
    auto g2 = b.build(o);
    const auto o1 = to_bytes(run(*g1, {in}).outputs[0]);
    EXPECT_TRUE(o1 == to_bytes(run(*g2, {in}).outputs[0])) << "tuned and heuristic engines of one class differ";
    EXPECT_EQ(o1 == first, (groups == 2) == (default_osplit > 0)) << "the default engine's class";
    const Metrics m = compare(to_floats(run(*g1, {in}).outputs[0]), to_floats(a1.outputs[0]));
    EXPECT_LE(m.rel_l2, 1e-3) << describe(m);
    int osplit_layers = 0;
    for (const auto& l : g1->profile_layers()) osplit_layers += l.algorithm.rfind("osplit", 0) == 0;
    if (groups == 1)
      EXPECT_EQ(osplit_layers, 0);
    else
      EXPECT_GE(osplit_layers, 4) << "CenterPoint's 16- and 32-channel subm convs run osplit";
  }
  {
    // the strided 32 -> 64 conv also has one-group osplit configs, which sum in the tiles' order: with every
    // tile skipped the tuner runs one of them there (sm_90), and the output keeps the tiles' bits
    BuildOptions o = cuda_options(true);
    o.cuda.tune_skip = cuda_tile_configs(Precision::Fp16);
    auto e10 = b.build(o);
    EXPECT_TRUE(first == to_bytes(run(*e10, {in}).outputs[0])) << "the 32 -> 64 osplit configs differ from the tiles";
    int c3264 = 0;
    for (const auto& l : e10->profile_layers()) c3264 += l.algorithm.rfind("osplit c32x64", 0) == 0;
    EXPECT_EQ(c3264 > 0, default_osplit > 0) << "the 32 -> 64 conv runs a one-group osplit config where osplit runs";
  }
  {
    // the tuner without the tile shapes it picked (CudaOptions::tune_skip): other tiles, the same bits
    std::vector<std::string> picked;
    for (const auto& l : e1->profile_layers()) {
      const size_t at = l.algorithm.rfind("igemm", 0) == 0 ? l.algorithm.find(' ') : std::string::npos;
      if (at == std::string::npos) continue;
      const std::string shape = l.algorithm.substr(at + 1, l.algorithm.find(' ', at + 1) - at - 1);
      if (std::find(picked.begin(), picked.end(), shape) == picked.end()) picked.push_back(shape);
    }
    ASSERT_FALSE(picked.empty()) << "no layer reports an implicit-GEMM tile";
    BuildOptions o = cuda_options(true);
    o.cuda.tune_skip = picked;
    auto e7 = b.build(o);
    EXPECT_TRUE(first == to_bytes(run(*e7, {in}).outputs[0])) << "tiles other than the skipped ones differ";
    for (const auto& l : e7->profile_layers())
      for (const std::string& p : picked)
        EXPECT_EQ(l.algorithm.find(" " + p + " "), std::string::npos) << l.node << " still runs skipped tile " << p;
    // a name that is no tile is an error naming the option, not a silently ignored entry
    o.cuda.tune_skip.push_back("m7n7k7");
    try {
      b.build(o);
      ADD_FAILURE() << "CudaOptions::tune_skip with an unknown tile was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("BuildOptions.cuda.tune_skip"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("m7n7k7"), std::string::npos) << e.what();
    }
  }
  {
    // tune_skip names osplit configs too: without the 32 -> 32 config the tuner picked for the first level-1 conv,
    // the level-1 convs run another of their offset-group class (the same summation order, so the same bits);
    // without every config of a class whose convs the tiles may not run, the build fails naming the option and the
    // conv. One config only: the tuner may pick each of the class's configs for some conv (timings this close
    // differ conv to conv), and skipping all of them is the error case below.
    std::vector<std::string> picked;
    for (const auto& l : e1->profile_layers())
      if (picked.empty() && l.algorithm.rfind("osplit c32x32", 0) == 0)
        picked.push_back(l.algorithm.substr(0, l.algorithm.find(' ', 7)));
    if (!picked.empty()) {  // sm_90: CenterPoint's 16- and 32-channel convs run osplit
      BuildOptions o = cuda_options(true);
      o.cuda.tune_skip = picked;
      auto e11 = b.build(o);
      EXPECT_TRUE(first == to_bytes(run(*e11, {in}).outputs[0])) << "other osplit configs of the class differ";
      int other32 = 0;
      for (const auto& l : e11->profile_layers()) {
        other32 += l.algorithm.rfind("osplit c32x32", 0) == 0;
        for (const std::string& p : picked)
          EXPECT_NE(l.algorithm.rfind(p + " ", 0), 0u) << l.node << " still runs skipped " << p;
      }
      EXPECT_GT(other32, 0) << "the 32 -> 32 convs keep their class: another osplit config";
      // every fp16 16 -> 16 osplit config (cuda_osplit_configs: this file also builds without CUDA, against the
      // public API only)
      std::vector<std::string> all16;
      for (const std::string& n : cuda_osplit_configs())
        if (n.rfind("osplit c16x16", 0) == 0) all16.push_back(n);
      ASSERT_FALSE(all16.empty()) << "no fp16 16 -> 16 osplit config compiled";
      o.cuda.tune_skip = all16;
      try {
        run(*b.build(o), {in});
        ADD_FAILURE() << "every 16 -> 16 osplit config skipped was accepted";
      } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("BuildOptions.cuda.tune_skip leaves no osplit configuration"),
                  std::string::npos)
            << e.what();
      }
    }
  }
}

}  // namespace

// CUDA backend (fp16) against the CPU reference backend (fp32) on random sparse inputs: kernel maps beyond 32-bit
// keys, rank scans, every tile configuration, wgmma against mma.sync, inverse convs, fusions, densify tails, empty /
// one-voxel inputs, batch 2, capacity overflow, device inputs and device-side validation, the default streams,
// rebinding, timing, and the real nuScenes frame end to end (one conv at a time: test_cuda_conv_cases.cpp; bitwise
// determinism: test_cuda_deterministic.cpp). Every test skips visibly without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>

#include "common/error_message.h"
#include "cuda/conv_case.h"
#include "cuda/cuda_test_util.h"
#include "engine/centerpoint_graph.h"

namespace {

using namespace scn;
using namespace scn::cudatest;
using test::random_conv;
using test::random_input;
using test::SparseInput;

// Kernel maps on a grid whose bitmap keys exceed 32 bits (2^26 words or more: the map kernels keep 64-bit keys
// there, 32-bit ones below): voxels in a box far out in a 1100 x 2048 x 2048 grid (their keys above 2^32), a
// subm conv and a strided conv against the CPU oracle (the strided map looks the sites up in the big grid).
TEST(CudaBackend, KernelMapsBeyond32BitKeys) {
  SCN_REQUIRE_CUDA();
  const Int3 big{1100, 2048, 2048}, box{8, 20, 20}, at{1050, 2020, 2020};
  ASSERT_GE(int64_t(big[0]) * big[1] * big[2] / 64, int64_t(1) << 26) << "the grid must need 64-bit keys";
  SparseInput in = random_input(2500, 16, box, 1, 311);
  int32_t* idx = in.indices.ptr<int32_t>();
  for (int64_t i = 0; i < in.indices.dim(0); ++i)
    for (int a = 0; a < 3; ++a) idx[4 * i + 1 + a] += at[a];
  in.grid = big;
  const int64_t first_key = (int64_t(idx[1]) * big[1] + idx[2]) * big[2] + idx[3];
  ASSERT_GT(first_key, int64_t(1) << 32) << "the voxels' keys must not fit 32 bits";
  const Int3 k3{3, 3, 3}, one{1, 1, 1}, two{2, 2, 2};
  for (const ConvCase& cc : {ConvCase{16, 16, k3, one, one, one, true, Activation::ReLU, 1, 2500, big, "subm"},
                             ConvCase{16, 32, k3, two, one, one, false, Activation::ReLU, 1, 2500, big, "strided"}}) {
    SCOPED_TRACE(cc.name);
    expect_close(single_conv(cc, 312), {in}, 1e-3, cuda_options(true, 0, 1));
  }
}

// Site ranks past the first pass of the block-sum scan (rank_blocks_kernel scans 2,048 block sums of 1,024 words
// per pass): a batch of two real-size grids has 2,594 of them, and voxels spread over both frames get ranks whose
// carry comes from the first pass; a wrong carry makes ranks collide (rows lost, maps wrong) against the CPU oracle.
TEST(CudaBackend, RanksAcrossScanPasses) {
  SCN_REQUIRE_CUDA();
  const Int3 grid{41, 1440, 1440};
  const int batch = 2;
  const int64_t words = (int64_t(batch) * grid[0] * grid[1] * grid[2] + 63) / 64;
  ASSERT_GT((words + 1023) / 1024, 2048) << "the bitmap must need more than one scan pass";
  // 12,000 voxels: their strided outputs (up to 8 per isolated voxel) stay below single_conv's output bound
  const SparseInput in = random_input(12000, 16, grid, batch, 321);
  const Int3 k3{3, 3, 3}, one{1, 1, 1}, two{2, 2, 2};
  for (const ConvCase& cc :
       {ConvCase{16, 16, k3, one, one, one, true, Activation::ReLU, batch, 12000, grid, "subm"},
        ConvCase{16, 32, k3, two, one, one, false, Activation::ReLU, batch, 12000, grid, "strided"}}) {
    SCOPED_TRACE(cc.name);
    expect_close(single_conv(cc, 322), {in}, 1e-3, cuda_options(true, 0, batch));
  }
}

// Every compiled implicit-GEMM tile configuration on the same layers.
TEST(CudaBackend, EveryTileConfigMatches) {
  SCN_REQUIRE_CUDA();
  const std::vector<std::string> cfgs = cuda_tile_configs();
  // a conv the config can run: G > 1 configs need Cin == BK (one channel chunk), others a multiple of BK
  auto cin_for = [](const std::string& name) {
    const int bk = std::atoi(name.c_str() + name.find('k') + 1);
    if (name.find('g') == std::string::npos) return std::max(64, bk);
    return bk;
  };
  ASSERT_GE(cfgs.size(), 20u) << "the CUDA backend lists its compiled tile configurations";
  for (const std::string& cfg_name : cfgs) {
    const char* cfg = cfg_name.c_str();
    SCOPED_TRACE(cfg);
    const int cin = cin_for(cfg);
    const SparseInput in = random_input(3000, cin, {20, 30, 30}, 1, 91);
    ConvCase cc{cin, 96,   {3, 3, 3},    {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, true, Activation::ReLU,
                1,   3000, {20, 30, 30}, "x"};
    const EngineBuilder b = single_conv(cc, 92);
    auto cpu = b.build(cpu_options());
    const RunResult rc = run(*cpu, {in});
    auto gpu = b.build(with_tile(cuda_options(), cfg));
    const RunResult rg = run(*gpu, {in});
    std::string err;
    const auto got = align_sparse(rg.outputs[0], rg.indices[0], rc.indices[0], 96, &err);
    ASSERT_TRUE(err.empty()) << err;
    const Metrics m = compare(got, to_floats(rc.outputs[0]));
    EXPECT_LE(m.rel_l2, 1e-3) << describe(m);
    const auto prof = gpu->profile_layers();
    bool named = false;
    for (const auto& l : prof)
      named = named || l.algorithm.find(std::string("igemm ") + cfg + " ") != std::string::npos;
    EXPECT_TRUE(named) << "profile_layers does not report " << cfg;
  }
}

// The wgmma tiles (sm_90a, "wg", and the warp-specialised "wgws" / "wgwsa") against an mma.sync tile of the
// same summation order: the output must be bitwise equal (both sum 16-channel blocks in
// offset-then-channel order into float32), so the autotuner may pick either without changing a
// result. The same within the split-K class of two ("x2": the mma.sync and wgmma split tiles against
// the mma.sync split tile). 64, 128 and 256 input channels (one to four chunks per offset), a partial
// last N tile (96 outputs), a strided conv, a 3x1x1 kernel (K = 3: in a split, one CTA has a single
// offset), and a frame with several tiles per resident block (the persistent loops, the
// warp-specialised ring across tiles, and the "wsa" tiles' next map fetched ahead: full tiles from the
// bulk copy, the last partial tile from global memory).
TEST(CudaBackend, WgmmaTilesMatchMmaSyncBitwise) {
  SCN_REQUIRE_CUDA();
  auto ends_with = [](const std::string& c, const char* t) {
    const size_t n = std::strlen(t);
    return c.size() > n && c.compare(c.size() - n, n, t) == 0;
  };
  struct Group {
    const char* reference;
    std::vector<std::string> tiles;
  };
  Group unsplit{"m64n64k64s2t", {}}, split{"m64n128k64s3tx2", {}};
  for (const std::string& c : cuda_tile_configs()) {
    const bool wgmma = ends_with(c, "wg") || ends_with(c, "wgws") || ends_with(c, "wgwsa");
    if (c.find("x2") != std::string::npos) {
      if (c != split.reference) split.tiles.push_back(c);
    } else if (wgmma) {
      unsplit.tiles.push_back(c);
    }
  }
  if (unsplit.tiles.empty()) GTEST_SKIP() << "no wgmma tiles on this GPU / build (they need compute capability 9.0)";
  EXPECT_FALSE(split.tiles.empty()) << "the split class has wgmma tiles besides its mma.sync reference";
  const Int3 g{20, 30, 30}, k3{3, 3, 3}, one{1, 1, 1}, two{2, 2, 2};
  const std::vector<ConvCase> cases = {
      {64, 96, k3, one, one, one, true, Activation::ReLU, 1, 3000, g, "subm64"},
      {128, 128, k3, one, one, one, true, Activation::None, 1, 3000, g, "subm128"},
      {64, 128, k3, two, one, one, false, Activation::ReLU, 1, 3000, g, "strided64"},
      {256, 64, k3, one, one, one, true, Activation::ReLU, 1, 2000, g, "subm256"},
      {64, 64, {3, 1, 1}, one, {1, 0, 0}, one, true, Activation::ReLU, 1, 3000, g, "subm64k311"},
      {64, 64, k3, one, one, one, true, Activation::ReLU, 1, 45000, {40, 80, 80}, "subm64many"},
  };
  for (const ConvCase& cc : cases) {
    const SparseInput in = random_input(cc.n, cc.cin, cc.grid, cc.batch, 131);
    const EngineBuilder b = single_conv(cc, 132);
    for (const Group& group : {unsplit, split}) {
      std::vector<uint8_t> ref;
      {
        auto e = b.build(with_tile(cuda_options(), group.reference));
        ref = to_bytes(run(*e, {in}).outputs[0]);
      }
      size_t nonzero = 0;
      for (size_t i = 0; i + 1 < ref.size(); i += 2) nonzero += (ref[i] | ref[i + 1]) != 0;
      ASSERT_GT(nonzero, ref.size() / 8) << cc.name << ": the reference output is mostly zeros";
      for (const std::string& cfg : group.tiles) {
        const int bk = std::atoi(cfg.c_str() + cfg.find('k') + 1);
        if (cc.cin % bk != 0) continue;                                     // 128 channels per step
        if (cfg.find("tg") != std::string::npos && cc.cin != bk) continue;  // G > 1: one channel chunk only
        SCOPED_TRACE(cc.name + " " + cfg);
        auto e = b.build(with_tile(cuda_options(), cfg));
        const RunResult r = run(*e, {in});
        const std::vector<uint8_t> got = to_bytes(r.outputs[0]);
        ASSERT_EQ(got.size(), ref.size());
        size_t diff = 0;
        for (size_t i = 0; i < got.size(); i += 2) diff += got[i] != ref[i] || got[i + 1] != ref[i + 1];
        EXPECT_EQ(diff, 0u) << diff << " of " << got.size() / 2 << " halves differ from " << group.reference;
        bool named = false;
        for (const auto& l : e->profile_layers())
          named = named || l.algorithm.find("igemm " + cfg + " ") != std::string::npos;
        EXPECT_TRUE(named) << "the engine did not run " << cfg;
      }
    }
  }
}

// Subm -> strided (rulebook) -> subm -> inverse (same rulebook): the inverse returns to the
// strided conv's input sites.
TEST(CudaBackend, InverseConv) {
  SCN_REQUIRE_CUDA();
  for (int batch : {1, 2}) {
    const Int3 grid{16, 16, 16};
    const SparseInput in = random_input(700 * batch, 8, grid, batch, 11 + uint64_t(batch));
    EngineBuilder b("inverse");
    ValueId x = b.push_input("0", 8);
    x = b.push_sparse_conv("conv0", x,
                           random_conv(8, 16, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, true, 1, Activation::ReLU));
    ConvAttrs down = random_conv(16, 32, {3, 3, 3}, {2, 2, 2}, {1, 1, 1}, {1, 1, 1}, false, 2, Activation::ReLU);
    down.rulebook = "down1";
    ValueId y = b.push_sparse_conv("conv1", x, down);
    y = b.push_sparse_conv("conv2", y,
                           random_conv(32, 32, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, true, 3, Activation::ReLU));
    ConvAttrs up = random_conv(32, 16, {3, 3, 3}, {1, 1, 1}, {0, 0, 0}, {1, 1, 1}, false, 4, Activation::ReLU);
    up.inverse = true;
    up.rulebook = "down1";
    ValueId z = b.push_sparse_conv("conv3", y, up);
    z = b.push_add("add0", z, x);
    b.push_output(z);
    b.push_output(y);
    BuildOptions o = cuda_options(true, 0, 2);
    expect_close(b, {in}, 1e-3, o);
  }
}

// SparseBasicBlock (fused conv -> Add -> Relu), an unfused Add of two convs, a standalone Relu,
// a Concat, and an identity that is still needed after the Add (no in-place write).
TEST(CudaBackend, AddReluConcatFusions) {
  SCN_REQUIRE_CUDA();
  const Int3 grid{14, 20, 18};
  const SparseInput in = random_input(1500, 16, grid, 1, 21);
  EngineBuilder b("fusions");
  ValueId x = b.push_input("0", 16);
  ValueId r = b.push_relu("relu_in", x);
  ValueId t = b.push_sparse_conv(
      "conv0", r, random_conv(16, 16, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, true, 5, Activation::ReLU));
  ValueId y = b.push_sparse_conv(
      "conv1", t, random_conv(16, 16, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, true, 6, Activation::None));
  y = b.push_add("add0", y, r);
  y = b.push_relu("relu0", y);  // SBB: fused into conv1, written in place over r
  ValueId a = b.push_sparse_conv(
      "conv2", y, random_conv(16, 24, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, true, 7, Activation::None));
  ValueId c = b.push_sparse_conv(
      "conv3", y, random_conv(16, 24, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, {1, 1, 1}, true, 8, Activation::None));
  ValueId s = b.push_add("add1", a, c);  // both operands are convs: the second conv fuses the add
  ValueId z = b.push_sparse_conv(
      "conv4", s, random_conv(24, 24, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, true, 9, Activation::None));
  ValueId w = b.push_add("add2", z, s);  // identity s is also used below: no in-place
  w = b.push_relu("relu1", w);
  ValueId cat = b.push_concat("cat0", {w, s, y});
  b.push_output(cat);
  b.push_output(b.push_relu("relu2", s));
  expect_close(b, {in});
}

// ScatterDense tails: CenterPoint zyx (+Reshape) and BEVFusion xyz (+Transpose +Reshape), plus a
// Transpose that cannot be folded (its input is also a graph output).
TEST(CudaBackend, DensifyTails) {
  SCN_REQUIRE_CUDA();
  for (int variant = 0; variant < 4; ++variant) {
    SCOPED_TRACE("variant " + std::to_string(variant));
    // variant 3: an innermost extent that is not a multiple of 4 (the scalar densify path)
    const Int3 grid = variant == 0 ? Int3{4, 24, 20} : variant == 3 ? Int3{5, 9, 7} : Int3{24, 20, 4};
    const SparseInput in = random_input(variant == 3 ? 150 : 600, 32, grid, 1, 31 + uint64_t(variant));
    EngineBuilder b("densify");
    ValueId x = b.push_input("0", 32);
    x = b.push_sparse_conv("conv0", x,
                           random_conv(32, 24, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, true, 33, Activation::ReLU));
    DenseAttrs d;
    d.input_spatial_shape = grid;
    d.output_shape = {1, 24, grid[0], grid[1], grid[2]};
    d.format = variant == 0 || variant == 3 ? "zyx" : "xyz";
    ValueId dense = b.push_dense("scatter0", x, d);
    if (variant == 0 || variant == 3) {
      b.push_output(b.push_reshape("reshape0", dense, {1, 24 * grid[0], grid[1], grid[2]}));
    } else {
      ValueId t = b.push_transpose("transpose0", dense, {0, 1, 4, 2, 3});
      b.push_output(b.push_reshape("reshape0", t, {1, 24 * grid[2], grid[0], grid[1]}));
      if (variant == 2) b.push_output(dense);
    }
    expect_close(b, {in});
  }
}

// Empty input, one voxel, a batch of 2 through the dense tail.
TEST(CudaBackend, EmptyOneVoxelAndBatch) {
  SCN_REQUIRE_CUDA();
  const Int3 grid{9, 16, 16};
  auto make = [&](int batch) {
    EngineBuilder b("small");
    ValueId x = b.push_input("0", 5);
    x = b.push_sparse_conv("conv0", x,
                           random_conv(5, 16, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, true, 41, Activation::ReLU));
    ValueId y = b.push_sparse_conv(
        "conv1", x, random_conv(16, 64, {3, 3, 3}, {2, 2, 2}, {1, 1, 1}, {1, 1, 1}, false, 42, Activation::ReLU));
    // a 64-channel submanifold conv on the generated set: that set is in neighbour-row order by default
    // (CudaSiteOrder::Auto), so its order is run on no site, one site and a batch
    y = b.push_sparse_conv("conv2", y,
                           random_conv(64, 64, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, true, 45, Activation::ReLU));
    DenseAttrs d;
    d.input_spatial_shape = {5, 8, 8};
    d.output_shape = {batch, 64, 5, 8, 8};
    ValueId dense = b.push_dense("scatter0", y, d);
    b.push_output(b.push_reshape("reshape0", dense, {batch, 64 * 5, 8, 8}));
    b.push_output(x);
    return b;
  };
  for (int64_t n : {int64_t(0), int64_t(1)}) {
    SCOPED_TRACE("voxels " + std::to_string(n));
    const SparseInput in = random_input(n, 5, grid, 1, 43);
    expect_close(make(1), {in});
  }
  const SparseInput in2 = random_input(500, 5, grid, 2, 44);
  expect_close(make(2), {in2}, 1e-3, cuda_options(true, 0, 2));
}

// More output sites than output_bound: forward stays safe, check_errors and output() name the
// node and the counts.
TEST(CudaBackend, CapacityOverflowIsReported) {
  SCN_REQUIRE_CUDA();
  const Int3 grid{20, 40, 40};
  const SparseInput in = random_input(3000, 8, grid, 1, 61);
  EngineBuilder b("overflow");
  ValueId x = b.push_input("0", 8);
  ConvAttrs c = random_conv(8, 16, {3, 3, 3}, {2, 2, 2}, {1, 1, 1}, {1, 1, 1}, false, 62, Activation::ReLU);
  c.output_bound = 100;
  x = b.push_sparse_conv("conv_down7", x, c);
  x = b.push_sparse_conv("conv8", x,
                         random_conv(16, 16, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, true, 63, Activation::ReLU));
  b.push_output(x);
  auto gpu = b.build(cuda_options(true, 5000));
  gpu->set_input(0, in.features, in.indices, in.grid, 1);
  gpu->forward();
  try {
    gpu->check_errors();
    FAIL() << "no error reported";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("conv_down7"), std::string::npos) << m;
    EXPECT_NE(m.find("100"), std::string::npos) << m;
    EXPECT_NE(m.find("capacity"), std::string::npos) << m;
  }
  gpu->forward();
  EXPECT_THROW(gpu->output(0), Error);
  // input capacity: rejected on the host at once
  const SparseInput big = random_input(6000, 8, grid, 1, 64);
  EXPECT_THROW(gpu->set_input(0, big.features, big.indices, big.grid, 1), Error);
}

// One 16 -> 16 3x3x3 subm conv with ReLU (weights from `seed`): for the tests of how inputs are bound and forwards
// enqueued.
EngineBuilder one_subm_conv_builder(const std::string& name, uint64_t seed) {
  EngineBuilder b(name);
  const ValueId x = b.push_input("0", 16);
  b.push_output(b.push_sparse_conv(
      "conv0", x, random_conv(16, 16, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, true, seed, Activation::ReLU)));
  return b;
}
std::unique_ptr<Engine> one_subm_conv_engine(const std::string& name, uint64_t seed) {
  return one_subm_conv_builder(name, seed).build(cuda_options());
}

// Device tensors as input (read in place by the graph's input step): same result as host tensors (both within fp16
// tolerance of the CPU engine), also when the binding moves to other buffers and back; bad device input reported by
// check_errors, naming the row and its site.
TEST(CudaBackend, DeviceInputsAndDeviceValidation) {
  SCN_REQUIRE_CUDA();
  const Int3 grid{10, 20, 20};
  const SparseInput in = random_input(800, 16, grid, 1, 71);
  const EngineBuilder builder = one_subm_conv_builder("device_input", 72);
  auto gpu = builder.build(cuda_options());
  auto cpu = builder.build(cpu_options());
  const RunResult host = run(*gpu, {in});
  const auto expect_cpu_result = [&](const Tensor& got, const SparseInput& frame) {
    const Metrics m = compare(to_floats(got), to_floats(run(*cpu, {frame}).outputs[0]));
    EXPECT_LE(m.rel_l2, 2e-3) << describe(m);
    EXPECT_GT(m.ref_max, 0.1) << describe(m);
  };
  expect_cpu_result(host.outputs[0], in);
  const Tensor df = in.features.to(Device::Cuda), di = in.indices.to(Device::Cuda);
  gpu->set_input(0, df, di, grid, 1);
  gpu->forward();
  gpu->check_errors();
  EXPECT_TRUE(to_bytes(gpu->output(0)) == to_bytes(host.outputs[0]));
  gpu->forward();  // the same buffers bound: nothing rewritten before the graph
  EXPECT_TRUE(to_bytes(gpu->output(0)) == to_bytes(host.outputs[0]));
  // other buffers with another frame (other addresses and row count), then the first buffers again
  const SparseInput in2 = random_input(650, 16, grid, 1, 73);
  const RunResult host2 = run(*gpu, {in2});
  expect_cpu_result(host2.outputs[0], in2);
  const Tensor df2 = in2.features.to(Device::Cuda), di2 = in2.indices.to(Device::Cuda);
  ASSERT_NE(to_bytes(host2.outputs[0]), to_bytes(host.outputs[0]));
  for (int round = 0; round < 2; ++round) {
    gpu->set_input(0, df2, di2, grid, 1);
    gpu->forward();
    EXPECT_TRUE(to_bytes(gpu->output(0)) == to_bytes(host2.outputs[0])) << "round " << round;
    gpu->set_input(0, df, di, grid, 1);
    gpu->forward();
    EXPECT_TRUE(to_bytes(gpu->output(0)) == to_bytes(host.outputs[0])) << "round " << round;
  }
  // fp32 device features
  const Tensor f32 = in.features.to_dtype(DType::Float32).to(Device::Cuda);
  gpu->set_input(0, f32, di, grid, 1);
  gpu->forward();
  EXPECT_TRUE(to_bytes(gpu->output(0)) == to_bytes(host.outputs[0]));
  // fp32 host features (the first staged fp32 input: the staging grows to fp32 size), then fp16 again
  gpu->set_input(0, in.features.to_dtype(DType::Float32), in.indices, grid, 1);
  gpu->forward();
  EXPECT_TRUE(to_bytes(gpu->output(0)) == to_bytes(host.outputs[0]));
  gpu->set_input(0, in.features, in.indices, grid, 1);
  gpu->forward();
  EXPECT_TRUE(to_bytes(gpu->output(0)) == to_bytes(host.outputs[0]));

  auto expect_device_error = [&](const Tensor& idx_host, const char* what) {
    SCOPED_TRACE(what);
    gpu->set_input(0, df, idx_host.to(Device::Cuda), grid, 1);
    gpu->forward();
    try {
      gpu->check_errors();
      FAIL() << "no error for " << what;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  Tensor dup = in.indices.clone();
  std::memcpy(dup.ptr<int32_t>() + 4 * 5, dup.ptr<int32_t>() + 4 * 3, 16);
  expect_device_error(dup, "duplicate");
  Tensor out = in.indices.clone();
  out.ptr<int32_t>()[4 * 7 + 2] = grid[1] + 3;
  const int32_t* o7 = out.ptr<int32_t>() + 4 * 7;
  const std::string site7 = "row 7 (" + std::to_string(o7[0]) + ", " + std::to_string(o7[1]) + ", " +
                            std::to_string(o7[2]) + ", " + std::to_string(o7[3]) + ") lies outside the grid";
  expect_device_error(out, site7.c_str());
  Tensor bat = in.indices.clone();
  bat.ptr<int32_t>()[4 * 9] = 1;
  const int32_t* b9 = bat.ptr<int32_t>() + 4 * 9;
  const std::string site9 = "row 9 (1, " + std::to_string(b9[1]) + ", " + std::to_string(b9[2]) + ", " +
                            std::to_string(b9[3]) + ") has batch index 1";
  expect_device_error(bat, site9.c_str());
  // device features float16 cannot hold, found where the input step converts them: the row named
  auto expect_feature_error = [&](const Tensor& features_host, int row) {
    gpu->set_input(0, features_host.to(Device::Cuda), di, grid, 1);
    gpu->forward();
    const std::string m = test::error_message([&] { gpu->check_errors(); });
    EXPECT_NE(m.find("row " + std::to_string(row) + " has a feature that is NaN, infinite or beyond the float16"),
              std::string::npos)
        << m;
  };
  Tensor nan_features = in.features.clone();
  nan_features.ptr<uint16_t>()[16 * 11 + 3] = 0x7e00;  // fp16 NaN in row 11
  expect_feature_error(nan_features, 11);
  // a finite float32 feature beyond float16's range (it would become an fp16 infinity in the input step)
  Tensor wide = in.features.to_dtype(DType::Float32);
  wide.ptr<float>()[16 * 13 + 2] = 70000.f;
  expect_feature_error(wide, 13);
  // host inputs are validated on the host
  EXPECT_THROW(gpu->set_input(0, in.features, dup, grid, 1), Error);
}

// forward() on CUDA's default streams (cudaStreamLegacy = 0x1, cudaStreamPerThread = 0x2: this file is built
// without the CUDA headers), which a CUDA graph cannot be captured on: the first forward after the new binding mode
// captures on the engine's own stream (joined to the default stream by events), the later ones replay the graph on
// the default stream itself; both give the bits of the engine's own stream; output() and check_errors() wait.
TEST(CudaBackend, ForwardOnTheDefaultStreams) {
  SCN_REQUIRE_CUDA();
  const Int3 grid{10, 20, 20};
  const SparseInput in = random_input(700, 16, grid, 1, 74);
  const SparseInput in2 = random_input(500, 16, grid, 1, 75);
  auto gpu = one_subm_conv_engine("default_streams", 76);
  const RunResult own = run(*gpu, {in}), own2 = run(*gpu, {in2});
  ASSERT_NE(to_bytes(own.outputs[0]), to_bytes(own2.outputs[0]));
  for (const uintptr_t handle : {uintptr_t(1), uintptr_t(2)}) {
    SCOPED_TRACE(handle == 1 ? "cudaStreamLegacy" : "cudaStreamPerThread");
    const Tensor df = in.features.to(Device::Cuda), di = in.indices.to(Device::Cuda);
    const Tensor df2 = in2.features.to(Device::Cuda), di2 = in2.indices.to(Device::Cuda);
    for (int round = 0; round < 2; ++round) {
      gpu->set_input(0, df, di, grid, 1);
      gpu->forward(reinterpret_cast<void*>(handle));
      gpu->check_errors();
      EXPECT_TRUE(to_bytes(gpu->output(0)) == to_bytes(own.outputs[0])) << "round " << round;
      gpu->set_input(0, df2, di2, grid, 1);
      gpu->forward(reinterpret_cast<void*>(handle));
      EXPECT_TRUE(to_bytes(gpu->output(0)) == to_bytes(own2.outputs[0])) << "round " << round;
    }
  }
}

// Re-binding inputs of other sizes replays the same CUDA graph correctly.
TEST(CudaBackend, RebindOtherSizes) {
  SCN_REQUIRE_CUDA();
  const Int3 grid{41, 64, 64};
  const EngineBuilder b = test::centerpoint_builder(grid);
  auto cpu = b.build(cpu_options());
  auto gpu = b.build(cuda_options(true, 30000));
  for (int64_t n : {int64_t(5000), int64_t(12000), int64_t(300)}) {
    SCOPED_TRACE("voxels " + std::to_string(n));
    const SparseInput in = random_input(n, 5, grid, 1, 80 + uint64_t(n));
    const RunResult rc = run(*cpu, {in});
    const RunResult rg = run(*gpu, {in});
    const Metrics m = compare(to_floats(rg.outputs[0]), to_floats(rc.outputs[0]));
    EXPECT_LE(m.rel_l2, 2e-3) << describe(m);
  }
}

TEST(CudaBackend, TimingProfileAndWorkspace) {
  SCN_REQUIRE_CUDA();
  const Int3 grid{41, 64, 64};
  const SparseInput in = random_input(4000, 5, grid, 1, 91);
  auto gpu = test::centerpoint_builder(grid).build(cuda_options(true, 10000));
  gpu->set_input(0, in.features, in.indices, grid, 1);
  const auto t = gpu->time_forward(3, 10);
  ASSERT_EQ(t.size(), 10u);
  for (double v : t) EXPECT_GT(v, 0.0);
  const auto p = gpu->profile_layers();
  int convs = 0;
  for (const auto& l : p) {
    EXPECT_FALSE(l.node.empty());
    EXPECT_FALSE(l.algorithm.empty());
    convs += l.op == op_type_name(OpType::SparseConv);
  }
  EXPECT_EQ(convs, 21);
  EXPECT_GT(gpu->workspace_bytes(), size_t(1) << 20);
  BuildOptions o = cuda_options();
  o.precision = Precision::Fp32;  // fp32 runs on the CPU backend only: a clear error, never a silent fp16
  EXPECT_THROW(test::centerpoint_builder(grid).build(o), Error);
}

// The real nuScenes frame through CenterPoint, end to end: fp16 GPU vs fp32 CPU.
TEST(CudaBackend, RealFrameCenterPoint) {
  SCN_REQUIRE_CUDA();
  SparseInput in;
  std::string dir;
  if (!load_real_frame(&in, &dir)) GTEST_SKIP() << "real frame not found in " << dir << " (set SCN_DATA_DIR)";
  const EngineBuilder b = test::centerpoint_builder();
  auto cpu = b.build(cpu_options());
  auto gpu = b.build(cuda_options());
  const RunResult rc = run(*cpu, {in});
  const RunResult rg = run(*gpu, {in});
  ASSERT_EQ(rg.outputs[0].shape(), (std::vector<int64_t>{1, 256, 180, 180}));
  const Metrics m = compare(to_floats(rg.outputs[0]), to_floats(rc.outputs[0]));
  std::printf("[real frame] CUDA fp16 vs CPU fp32: %s\n", describe(m).c_str());
  EXPECT_GE(m.cosine, 0.99999) << describe(m);
  EXPECT_LE(m.rel_l2, 1e-3) << describe(m);
  // the same storage precision on both sides: only the summation order differs
  auto cpu16 = b.build(cpu_options(Precision::Fp16));
  const RunResult r16 = run(*cpu16, {in});
  const Metrics m16 = compare(to_floats(rg.outputs[0]), to_floats(r16.outputs[0]));
  std::printf("[real frame] CUDA fp16 vs CPU fp16: %s\n", describe(m16).c_str());
  EXPECT_LE(m16.rel_l2, 1e-3) << describe(m16);
}

}  // namespace

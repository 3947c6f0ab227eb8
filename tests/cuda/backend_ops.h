// The backend-ops table (in the style of ggml's test-backend-ops): op cases x CUDA option variants.
// Every case runs on the CPU oracle and on the CUDA backend under every variant; outputs are
// compared with the oracle (close for fp16, bitwise for all-int8 graphs) and bitwise between the
// CUDA variants of one split class. The table and the case builders are plain C++ (no GPU): the CPU
// test in test_backend_ops.cpp runs every case on the CPU so they stay exercised without a GPU.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "engine/test_helpers.h"
#include "int8/int8_graphs.h"
#include "scn/engine.h"

namespace scn::backendops {

struct OpCase {
  std::string name;
  Precision precision = Precision::Fp16;  ///< the CUDA engine's precision (Int8: mixed / all-int8 graphs)
  bool bitwise_with_cpu = false;          ///< all-int8: the CUDA outputs equal the CPU int8 oracle's bits
  std::function<EngineBuilder()> build;
  std::vector<test::SparseInput> inputs;
};

/// How a variant relates to the default engine's bits.
enum class SplitClass {
  Default,        ///< the default split classes: bitwise equal to the default engine
  Unsplit,        ///< every conv unsplit, offsets in one chain (split = 1 and offset_groups = 1, or a forced
                  ///< unsplit tile): bitwise equal to the split-1 variant
  OffsetGroups2,  ///< 16/32-channel 3x3x3 convs on osplit with two offset groups wherever it fits
};

struct Variant {
  std::string name;
  std::function<void(CudaOptions&)> apply;
  SplitClass split_class = SplitClass::Default;
};

inline ConvAttrs conv(int cin, int cout, Int3 k, Int3 stride, bool subm, uint64_t seed,
                      Activation act = Activation::ReLU, const std::string& rulebook = "") {
  const Int3 pad{k[0] / 2, k[1] / 2, k[2] / 2};
  ConvAttrs a = test::random_conv(cin, cout, k, stride, subm ? pad : Int3{1, 1, 1}, {1, 1, 1}, subm, seed, act);
  a.rulebook = rulebook;
  return a;
}

/// One submanifold (or strided) conv on a random input of `n` voxels.
inline OpCase single_conv_case(const std::string& name, int cin, int cout, Int3 k, Int3 stride, int64_t n,
                               int batch = 1) {
  const bool subm = stride == Int3{1, 1, 1};
  OpCase c;
  c.name = name;
  c.build = [=]() {
    EngineBuilder b(name);
    ValueId x = b.push_input("0", cin);
    b.push_output(
        b.push_sparse_conv("conv", x, conv(cin, cout, k, stride, subm, 7 + uint64_t(cin) * 131 + uint64_t(cout))));
    return b;
  };
  c.inputs = {test::random_input(n, cin, {16, 40, 40}, batch, 1000 + uint64_t(cin + cout))};
  return c;
}

/// The op cases: subm / strided / inverse convs over channels 16-128 and kernel sizes 1, 3, 5;
/// conv -> Relu and conv -> Add -> Relu (fused residual), Concat, densify with transposes, INT8
/// graphs (mixed and all-int8 convs), batch 2.
inline std::vector<OpCase> op_cases() {
  std::vector<OpCase> v;
  const Int3 k1{1, 1, 1}, k3{3, 3, 3}, k5{5, 5, 5}, s1{1, 1, 1}, s2{2, 2, 2};
  v.push_back(single_conv_case("subm16_k3", 16, 16, k3, s1, 3000));
  v.push_back(single_conv_case("subm32_k3", 32, 32, k3, s1, 3000));
  v.push_back(single_conv_case("subm64_k3", 64, 64, k3, s1, 2500));
  v.push_back(single_conv_case("subm128_k3", 128, 128, k3, s1, 2000));  // split class 2 on sm_90
  v.push_back(single_conv_case("subm5to24_k1", 5, 24, k1, s1, 2000));
  v.push_back(single_conv_case("subm16to32_k5", 16, 32, k5, s1, 1500));  // K = 125: map from global memory
  v.push_back(single_conv_case("strided16to32_k3", 16, 32, k3, s2, 3000));
  v.push_back(single_conv_case("strided64to128_k3", 64, 128, k3, s2, 2500));
  v.push_back(single_conv_case("subm32_k3_batch2", 32, 32, k3, s1, 3000, 2));
  // An inverse conv's own stride and padding are not used (spconv semantics: it reuses the strided
  // conv's rulebook): the same case with the strided conv's attributes and with stride 1 / pad 0.
  for (const bool own_attrs : {true, false}) {
    OpCase c;
    c.name = own_attrs ? "strided_then_inverse" : "strided_then_inverse_s1p0";
    c.build = [own_attrs, name = c.name]() {
      EngineBuilder b(name);
      ValueId x = b.push_input("0", 16);
      ValueId y =
          b.push_sparse_conv("down", x, conv(16, 32, {3, 3, 3}, {2, 2, 2}, false, 21, Activation::ReLU, "spconv1"));
      ConvAttrs inv = conv(32, 16, {3, 3, 3}, {2, 2, 2}, false, 22, Activation::ReLU, "spconv1");
      if (!own_attrs) {
        inv.stride = {1, 1, 1};
        inv.padding = {0, 0, 0};
      }
      inv.inverse = true;
      b.push_output(b.push_sparse_conv("up", y, inv));
      return b;
    };
    c.inputs = {test::random_input(3000, 16, {16, 40, 40}, 1, 23)};
    v.push_back(c);
  }
  // A generated set read by a submanifold conv (CudaSiteOrder: in neighbour-row order by default at 64 channels,
  // in bitmap order by default at 32), through a densify and through an inverse conv's lookups into it.
  for (const bool dense : {true, false}) {
    OpCase c;
    c.name = dense ? "strided_subm64_dense" : "strided_subm32_inverse";
    c.build = [dense, name = c.name]() {
      const int ch = dense ? 64 : 32;
      EngineBuilder b(name);
      ValueId x = b.push_input("0", 16);
      ValueId y =
          b.push_sparse_conv("down", x, conv(16, ch, {3, 3, 3}, {2, 2, 2}, false, 27, Activation::ReLU, "spconv1"));
      y = b.push_sparse_conv("subm", y, conv(ch, ch, {3, 3, 3}, {1, 1, 1}, true, 28, Activation::ReLU, "subm1"));
      if (dense) {
        DenseAttrs d;
        d.input_spatial_shape = {8, 20, 20};
        d.output_shape = {1, ch, 8, 20, 20};
        b.push_output(b.push_dense("scatter", y, d));
      } else {
        ConvAttrs inv = conv(ch, 16, {3, 3, 3}, {2, 2, 2}, false, 29, Activation::ReLU, "spconv1");
        inv.inverse = true;
        b.push_output(b.push_sparse_conv("up", y, inv));
      }
      return b;
    };
    c.inputs = {test::random_input(3000, 16, {16, 40, 40}, 1, 30)};
    v.push_back(c);
  }
  {
    OpCase c;  // the first map is strided: the second level's map reads the sites it generates
    c.name = "strided_twice";
    c.build = []() {
      EngineBuilder b("strided_twice");
      ValueId x = b.push_input("0", 16);
      ValueId y = b.push_sparse_conv("down0", x, conv(16, 32, {3, 3, 3}, {2, 2, 2}, false, 24));
      b.push_output(b.push_sparse_conv("down1", y, conv(32, 64, {3, 3, 3}, {2, 2, 2}, false, 25)));
      return b;
    };
    c.inputs = {test::random_input(3000, 16, {16, 40, 40}, 1, 26)};
    v.push_back(c);
  }
  {
    OpCase c;  // SparseBasicBlock: conv -> Relu, conv -> Add(identity) -> Relu, both fused
    c.name = "basic_block_add_relu";
    c.build = []() {
      EngineBuilder b("basic_block_add_relu");
      ValueId x = b.push_input("0", 32);
      ValueId a = b.push_relu(
          "relu0",
          b.push_sparse_conv("conv1", x, conv(32, 32, {3, 3, 3}, {1, 1, 1}, true, 31, Activation::None, "subm0")));
      ValueId c2 =
          b.push_sparse_conv("conv2", a, conv(32, 32, {3, 3, 3}, {1, 1, 1}, true, 32, Activation::None, "subm0"));
      b.push_output(b.push_relu("relu1", b.push_add("add", c2, x)));
      return b;
    };
    c.inputs = {test::random_input(3000, 32, {16, 40, 40}, 1, 33)};
    v.push_back(c);
  }
  {
    OpCase c;
    c.name = "concat";
    c.build = []() {
      EngineBuilder b("concat");
      ValueId x = b.push_input("0", 16);
      ValueId p =
          b.push_sparse_conv("conv_a", x, conv(16, 24, {3, 3, 3}, {1, 1, 1}, true, 41, Activation::ReLU, "subm0"));
      ValueId q = b.push_sparse_conv("conv_b", x, conv(16, 40, {1, 1, 1}, {1, 1, 1}, true, 42, Activation::None));
      b.push_output(b.push_concat("cat", {p, q}));
      return b;
    };
    c.inputs = {test::random_input(2500, 16, {16, 40, 40}, 1, 43)};
    v.push_back(c);
  }
  {
    OpCase c;  // ScatterDense -> Transpose folded into the densify's layout (BEVFusion xyz tail)
    c.name = "densify_transpose";
    c.build = []() {
      EngineBuilder b("densify_transpose");
      ValueId x = b.push_input("0", 16);
      ValueId y = b.push_sparse_conv("conv", x, conv(16, 32, {3, 3, 3}, {1, 1, 1}, true, 51));
      DenseAttrs d;
      d.input_spatial_shape = {16, 40, 40};
      d.output_shape = {1, 32, 16, 40, 40};
      ValueId dn = b.push_dense("scatter", y, d);
      ValueId t = b.push_transpose("transpose", dn, {0, 1, 4, 2, 3});
      b.push_output(b.push_reshape("reshape", t, {1, 32 * 40, 16, 40}));
      return b;
    };
    c.inputs = {test::random_input(2500, 16, {16, 40, 40}, 1, 53)};
    v.push_back(c);
  }
  {
    OpCase c;  // INT8 engine on a graph mixing int8 and fp16 convs, int8 Add, Relu, Concat, ScatterDense
    c.name = "int8_mixed";
    c.precision = Precision::Int8;
    c.inputs = {test::random_input(2000, 4, test::int8graphs::kGrid, 1, 61)};
    const test::int8graphs::Ranges r = test::int8graphs::fp32_absmax(c.inputs[0]);
    c.build = [r]() { return test::int8graphs::mixed_graph(&r); };
    v.push_back(c);
  }
  return v;
}

/// The first compiled fp16 tile (unsplit) whose name satisfies `pred`, or "" (tile names:
/// cuda_tile_configs(), kernels.h igemm_config_name).
inline std::string first_tile(const std::vector<std::string>& names,
                              const std::function<bool(const std::string&)>& pred) {
  for (const std::string& n : names)
    if (n.find('x') == std::string::npos && pred(n)) return n;
  return "";
}

/// The CUDA option variants: autotune off, map stream off / 3 ahead, priorities on, each
/// programmatic-launch mode, the general map kernel (the baseline), generated sets in neighbour-row and in bitmap
/// order, split 1, and one forced tile of each family the build has (plain mma.sync, TMA weights, 8 warps, offset
/// groups, register cap, wgmma).
inline std::vector<Variant> cuda_variants(const std::vector<std::string>& tiles) {
  std::vector<Variant> v;
  v.push_back({"default", [](CudaOptions&) {}, SplitClass::Default});
  v.push_back({"autotune_off", [](CudaOptions& o) { o.autotune = false; }, SplitClass::Default});
  v.push_back({"lookahead0", [](CudaOptions& o) { o.map_lookahead = 0; }, SplitClass::Default});
  v.push_back({"lookahead3_priorities", [](CudaOptions& o) { o.stream_priorities = true; }, SplitClass::Default});
  v.push_back(
      {"pdl_off", [](CudaOptions& o) { o.programmatic_launch = CudaProgrammaticLaunch::Off; }, SplitClass::Default});
  v.push_back({"pdl_last_tile_start",
               [](CudaOptions& o) { o.programmatic_launch = CudaProgrammaticLaunch::LastTileStart; },
               SplitClass::Default});
  v.push_back(
      {"map_kernel_general", [](CudaOptions& o) { o.map_kernel = CudaMapKernel::General; }, SplitClass::Default});
  v.push_back({"strided_sites_from_rows", [](CudaOptions& o) { o.strided_sites = CudaStridedSites::FromRows; },
               SplitClass::Default});
  v.push_back({"sites_ahead", [](CudaOptions& o) { o.sites_ahead = true; }, SplitClass::Default});
  v.push_back({"strided_sites_from_bitmap", [](CudaOptions& o) { o.strided_sites = CudaStridedSites::FromBitmap; },
               SplitClass::Default});
  v.push_back({"site_order_neighbour_rows", [](CudaOptions& o) { o.site_order = CudaSiteOrder::NeighbourRows; },
               SplitClass::Default});
  v.push_back({"site_order_bitmap", [](CudaOptions& o) { o.site_order = CudaSiteOrder::Bitmap; }, SplitClass::Default});
  v.push_back({"split1",
               [](CudaOptions& o) {
                 o.split = 1;
                 o.offset_groups = 1;
               },
               SplitClass::Unsplit});
  v.push_back({"offset_groups2", [](CudaOptions& o) { o.offset_groups = 2; }, SplitClass::OffsetGroups2});
  v.push_back({"offset_groups2_autotune_off",
               [](CudaOptions& o) {
                 o.offset_groups = 2;
                 o.autotune = false;
               },
               SplitClass::OffsetGroups2});
  auto has = [](const std::string& n, const char* s) { return n.find(s) != std::string::npos; };
  const std::vector<std::pair<std::string, std::function<bool(const std::string&)>>> families = {
      {"mma", [&](const std::string& n) { return !has(n, "t") && !has(n, "w") && !has(n, "g") && !has(n, "r"); }},
      {"tma", [&](const std::string& n) { return has(n, "t") && !has(n, "w") && !has(n, "g") && !has(n, "r"); }},
      {"w8", [&](const std::string& n) { return has(n, "w8") && !has(n, "wg"); }},
      {"group", [&](const std::string& n) { return has(n, "g2") && !has(n, "wg"); }},
      {"regcap", [&](const std::string& n) { return has(n, "r") && !has(n, "wg"); }},
      {"wgmma", [&](const std::string& n) { return n.size() > 2 && n.compare(n.size() - 2, 2, "wg") == 0; }},
  };
  for (const auto& [family, pred] : families) {
    const std::string t = first_tile(tiles, pred);
    if (t.empty()) continue;
    v.push_back({"tile_" + family + "_" + t, [t](CudaOptions& o) { o.tile = t; }, SplitClass::Unsplit});
  }
  return v;
}

}  // namespace scn::backendops

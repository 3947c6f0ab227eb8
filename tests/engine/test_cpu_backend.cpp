// CPU reference backend vs an independent brute-force reference (double precision), for every
// convolution kind and the dense tail; plus builder and input validation.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <set>

#include "test_helpers.h"

namespace {

using namespace scn;
using test::random_conv;
using test::random_input;

struct ConvCase {
  int cin, cout;
  Int3 k, stride, pad, dil;
  bool subm;
  int batch;
};

std::vector<int32_t> brute_strided_sites(const Tensor& idx, Int3 grid, const ConvAttrs& c, Int3* out_shape) {
  ConvAttrs tmp = c;
  Int3 os{};
  for (int d = 0; d < 3; ++d)
    os[d] = (grid[d] + 2 * c.padding[d] - c.dilation[d] * (c.kernel_size[d] - 1) - 1) / c.stride[d] + 1;
  *out_shape = os;
  std::set<std::tuple<int, int, int, int>> s;
  for (int64_t i = 0; i < idx.dim(0); ++i) {
    const int32_t* r = idx.ptr<int32_t>() + 4 * i;
    for (int a = 0; a < c.kernel_size[0]; ++a)
      for (int b = 0; b < c.kernel_size[1]; ++b)
        for (int e = 0; e < c.kernel_size[2]; ++e) {
          const int off[3] = {a, b, e};
          int o[3];
          bool ok = true;
          for (int d = 0; d < 3; ++d) {
            const int n = r[d + 1] + c.padding[d] - off[d] * c.dilation[d];
            ok = ok && n >= 0 && n % c.stride[d] == 0 && n / c.stride[d] < os[d];
            o[d] = n / c.stride[d];
          }
          if (ok) s.insert({r[0], o[0], o[1], o[2]});
        }
  }
  std::vector<int32_t> v;
  for (const auto& t : s) v.insert(v.end(), {std::get<0>(t), std::get<1>(t), std::get<2>(t), std::get<3>(t)});
  return v;
}

// Builds input -> conv -> output, runs on the CPU in fp32 and checks against the brute force.
void check_conv(const ConvCase& cc, uint64_t seed) {
  const Int3 grid{9, 11, 10};
  auto in = random_input(120, cc.cin, grid, cc.batch, seed);
  ConvAttrs c = random_conv(cc.cin, cc.cout, cc.k, cc.stride, cc.pad, cc.dil, cc.subm, seed + 1, Activation::ReLU);
  EngineBuilder b;
  ValueId x = b.push_input("0", cc.cin);
  x = b.push_sparse_conv("conv0", x, c);
  b.push_output(x);
  BuildOptions o;
  o.backend = Backend::Cpu;
  o.precision = Precision::Fp32;
  auto e = b.build(o);
  e->set_input(0, in.features, in.indices, grid, cc.batch);
  e->forward();
  Tensor y = e->output(0), yi = e->output_indices(0);
  ASSERT_EQ(y.dtype(), DType::Float32);
  std::vector<int32_t> sites(yi.ptr<int32_t>(), yi.ptr<int32_t>() + yi.numel());
  if (cc.subm) {
    // same sites in the same order
    ASSERT_EQ(sites, std::vector<int32_t>(in.indices.ptr<int32_t>(), in.indices.ptr<int32_t>() + in.indices.numel()));
  } else {
    Int3 os;
    std::vector<int32_t> want = brute_strided_sites(in.indices, grid, c, &os);
    std::vector<int32_t> got = sites;
    // compare as sets of sites
    auto as_set = [](const std::vector<int32_t>& v) {
      std::set<std::tuple<int, int, int, int>> s;
      for (size_t i = 0; i < v.size(); i += 4) s.insert({v[i], v[i + 1], v[i + 2], v[i + 3]});
      return s;
    };
    ASSERT_EQ(as_set(got), as_set(want));
    ASSERT_EQ(got.size(), want.size());
  }
  const std::vector<double> ref = test::reference_conv(in.features, in.indices, grid, c, sites);
  ASSERT_EQ(size_t(y.numel()), ref.size());
  double maxref = 0;
  for (double v : ref) maxref = std::max(maxref, std::abs(v));
  ASSERT_GT(maxref, 0.1) << "degenerate test: output is ~zero";
  EXPECT_LT(test::rel_l2(y.ptr<float>(), ref, ref.size()), 1e-6);
}

TEST(CpuConv, Submanifold3x3x3) { check_conv({5, 16, {3, 3, 3}, {1, 1, 1}, {0, 0, 0}, {1, 1, 1}, true, 1}, 11); }
TEST(CpuConv, SubmanifoldDilation2) { check_conv({8, 8, {3, 3, 3}, {1, 1, 1}, {0, 0, 0}, {2, 2, 2}, true, 1}, 12); }
TEST(CpuConv, SubmanifoldKernel311And113) {
  check_conv({4, 6, {3, 1, 1}, {1, 1, 1}, {0, 0, 0}, {1, 1, 1}, true, 1}, 13);
  check_conv({4, 6, {1, 1, 3}, {1, 1, 1}, {0, 0, 0}, {1, 1, 1}, true, 1}, 14);
}
TEST(CpuConv, Kernel1) { check_conv({7, 3, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, {1, 1, 1}, true, 1}, 15); }
TEST(CpuConv, StridedPad1) { check_conv({16, 32, {3, 3, 3}, {2, 2, 2}, {1, 1, 1}, {1, 1, 1}, false, 1}, 16); }
TEST(CpuConv, StridedAsymmetricPadding) { check_conv({3, 5, {3, 3, 3}, {2, 2, 2}, {0, 1, 1}, {1, 1, 1}, false, 1}, 17); }
TEST(CpuConv, StridedKernel311) { check_conv({8, 8, {3, 1, 1}, {2, 1, 1}, {0, 0, 0}, {1, 1, 1}, false, 1}, 18); }
TEST(CpuConv, StridedDilation2Stride1) { check_conv({4, 4, {3, 3, 3}, {1, 1, 1}, {2, 1, 0}, {2, 2, 1}, false, 1}, 19); }
TEST(CpuConv, StridedKernel2Stride2) { check_conv({6, 12, {2, 2, 2}, {2, 2, 2}, {0, 0, 0}, {1, 1, 1}, false, 1}, 20); }
TEST(CpuConv, Batch2) {
  check_conv({5, 16, {3, 3, 3}, {1, 1, 1}, {0, 0, 0}, {1, 1, 1}, true, 2}, 21);
  check_conv({5, 9, {3, 3, 3}, {2, 2, 2}, {1, 0, 1}, {1, 1, 1}, false, 2}, 22);
}

// Inverse conv: out[i] += W[r] x[o] for every stored pair (i -> o, r) of the strided conv.
TEST(CpuConv, InverseUsesTheStridedPairsBackwards) {
  const Int3 grid{8, 9, 10};
  auto in = random_input(90, 4, grid, 1, 31);
  ConvAttrs down = random_conv(4, 8, {3, 3, 3}, {2, 2, 2}, {1, 1, 1}, {1, 1, 1}, false, 32, Activation::ReLU);
  down.rulebook = "spconv1";
  ConvAttrs up = random_conv(8, 6, {3, 3, 3}, {1, 1, 1}, {0, 0, 0}, {1, 1, 1}, false, 33);
  up.inverse = true;
  up.rulebook = "spconv1";
  EngineBuilder b;
  ValueId x = b.push_input("0", 4);
  ValueId d = b.push_sparse_conv("down", x, down);
  ValueId u = b.push_sparse_conv("up", d, up);
  b.push_output(u);
  b.push_output(d);
  BuildOptions o;
  o.backend = Backend::Cpu;
  o.precision = Precision::Fp32;
  auto e = b.build(o);
  e->set_input(0, in.features, in.indices, grid);
  e->forward();
  Tensor y = e->output(0), yi = e->output_indices(0), dn = e->output(1), dni = e->output_indices(1);
  // Output sites are the input sites of the strided conv, in their order.
  ASSERT_EQ(yi.numel(), in.indices.numel());
  for (int64_t i = 0; i < yi.numel(); ++i) ASSERT_EQ(yi.ptr<int32_t>()[i], in.indices.ptr<int32_t>()[i]);
  // Brute force over the pairs.
  std::map<std::tuple<int, int, int, int>, int64_t> down_row;
  for (int64_t j = 0; j < dni.dim(0); ++j) {
    const int32_t* r = dni.ptr<int32_t>() + 4 * j;
    down_row[{r[0], r[1], r[2], r[3]}] = j;
  }
  std::vector<double> ref(size_t(in.indices.dim(0) * 6), 0.0);
  for (int64_t i = 0; i < in.indices.dim(0); ++i) {
    const int32_t* c = in.indices.ptr<int32_t>() + 4 * i;
    for (int co = 0; co < 6; ++co) ref[size_t(i * 6 + co)] = test::tensor_value(up.bias, co);
    for (int r = 0; r < 27; ++r) {
      const int off[3] = {r / 9, (r / 3) % 3, r % 3};
      int oc[3];
      bool ok = true;
      for (int dd = 0; dd < 3; ++dd) {
        const int n = c[dd + 1] + 1 - off[dd];
        ok = ok && n >= 0 && n % 2 == 0;
        oc[dd] = n / 2;
      }
      if (!ok) continue;
      const auto it = down_row.find({c[0], oc[0], oc[1], oc[2]});
      if (it == down_row.end()) continue;  // output outside the grid is never created
      for (int co = 0; co < 6; ++co)
        for (int ci = 0; ci < 8; ++ci)
          ref[size_t(i * 6 + co)] += double(test::tensor_value(up.weight, (int64_t(co) * 27 + r) * 8 + ci)) *
                                     double(dn.ptr<float>()[it->second * 8 + ci]);
    }
  }
  EXPECT_LT(test::rel_l2(y.ptr<float>(), ref, ref.size()), 1e-6);
}

TEST(CpuGraph, InverseWithoutStridedConvIsAnError) {
  EngineBuilder b("model.onnx");
  ValueId x = b.push_input("0", 4);
  ConvAttrs up = random_conv(4, 4, {3, 3, 3}, {1, 1, 1}, {0, 0, 0}, {1, 1, 1}, false, 3);
  up.inverse = true;
  up.rulebook = "nokey";
  b.push_output(b.push_sparse_conv("conv7", x, up));
  try {
    b.build({});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("conv7"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("nokey"), std::string::npos) << e.what();
  }
}

// The CenterPoint tail: ScatterDense -> Reshape, and the xyz tail with Transpose, give one map.
TEST(CpuGraph, DenseTailsZyxAndXyzAgree) {
  const Int3 grid_zyx{2, 6, 5};
  auto in = random_input(25, 3, grid_zyx, 1, 41);
  // xyz copy of the same voxels
  Tensor idx_xyz = Tensor::empty({25, 4}, DType::Int32);
  for (int i = 0; i < 25; ++i) {
    const int32_t* r = in.indices.ptr<int32_t>() + 4 * i;
    int32_t* w = idx_xyz.ptr<int32_t>() + 4 * i;
    w[0] = r[0];
    w[1] = r[3];
    w[2] = r[2];
    w[3] = r[1];
  }
  BuildOptions o;
  o.backend = Backend::Cpu;
  o.precision = Precision::Fp32;
  EngineBuilder a;
  DenseAttrs da;
  da.input_spatial_shape = grid_zyx;
  da.output_shape = {1, 3, 2, 6, 5};
  da.format = "zyx";
  a.push_output(a.push_reshape("reshape0", a.push_dense("scatter0", a.push_input("0", 3), da), {1, 6, 6, 5}));
  auto ea = a.build(o);
  ea->set_input(0, in.features, in.indices, grid_zyx);
  ea->forward();
  // xyz: dense [1,3,5,6,2] -> transpose(0,1,4,3,2)? CenterPoint channel = c*2+z, H = y, W = x.
  EngineBuilder bb;
  DenseAttrs db;
  db.input_spatial_shape = {5, 6, 2};
  db.output_shape = {1, 3, 5, 6, 2};
  db.format = "xyz";
  ValueId t = bb.push_transpose("transpose0", bb.push_dense("scatter0", bb.push_input("0", 3), db), {0, 1, 4, 3, 2});
  bb.push_output(bb.push_reshape("reshape0", t, {1, 6, 6, 5}));
  auto eb = bb.build(o);
  eb->set_input(0, in.features, idx_xyz, {5, 6, 2});
  eb->forward();
  Tensor ya = ea->output(0), yb = eb->output(0);
  ASSERT_EQ(ya.shape(), (std::vector<int64_t>{1, 6, 6, 5}));
  ASSERT_EQ(yb.shape(), ya.shape());
  int nonzero = 0;
  for (int64_t i = 0; i < ya.numel(); ++i) {
    EXPECT_EQ(ya.ptr<float>()[i], yb.ptr<float>()[i]) << i;
    nonzero += ya.ptr<float>()[i] != 0.f;
  }
  EXPECT_GE(nonzero, 25 * 3 - 3);
  // Spot-check the layout: voxel 0 channel 1 lands at [0, 1*2 + z, y, x].
  const int32_t* r = in.indices.ptr<int32_t>();
  EXPECT_EQ(ya.ptr<float>()[((1 * 2 + r[1]) * 6 + r[2]) * 5 + r[3]], test::tensor_value(in.features, 1));
}

// SparseBasicBlock: conv(ReLU) -> conv -> Add(identity) -> Relu, in fp16 mode every stored value is
// a float16 value and the result is close to fp32.
TEST(CpuGraph, BasicBlockFp16MatchesFp32) {
  const Int3 grid{10, 12, 12};
  auto in = random_input(300, 16, grid, 1, 51);
  auto build = [&](Precision p) {
    EngineBuilder b;
    ValueId x = b.push_input("0", 16);
    ValueId c1 = b.push_sparse_conv("conv1", x, random_conv(16, 16, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, true, 52, Activation::ReLU));
    ValueId c2 = b.push_sparse_conv("conv2", c1, random_conv(16, 16, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, true, 53));
    b.push_output(b.push_relu("relu0", b.push_add("add0", c2, x)));
    BuildOptions o;
    o.backend = Backend::Cpu;
    o.precision = p;
    auto e = b.build(o);
    e->set_input(0, in.features, in.indices, grid);
    e->forward();
    return e->output(0);
  };
  Tensor a = build(Precision::Fp32), h = build(Precision::Fp16);
  ASSERT_EQ(h.dtype(), DType::Float16);
  Tensor hf = h.to_dtype(DType::Float32);
  EXPECT_LT(test::rel_l2(hf.ptr<float>(), a.ptr<float>(), size_t(a.numel())), 3e-3);
  int positive = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    EXPECT_GE(a.ptr<float>()[i], 0.f);
    positive += a.ptr<float>()[i] > 0.f;
  }
  EXPECT_GT(positive, a.numel() / 4);
}

TEST(CpuGraph, DeterministicAcrossRunsAndThreadCounts) {
  const Int3 grid{12, 30, 30};
  auto in = random_input(2000, 8, grid, 1, 61);
  std::vector<Tensor> outs;
  for (int threads : {1, 2, 3}) {
    EngineBuilder b;
    ValueId x = b.push_input("0", 8);
    x = b.push_sparse_conv("c0", x, random_conv(8, 16, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, true, 62, Activation::ReLU));
    x = b.push_sparse_conv("c1", x, random_conv(16, 32, {3, 3, 3}, {2, 2, 2}, {1, 1, 1}, {1, 1, 1}, false, 63, Activation::ReLU));
    b.push_output(x);
    BuildOptions o;
    o.backend = Backend::Cpu;
    o.num_threads = threads;
    auto e = b.build(o);
    e->set_input(0, in.features, in.indices, grid);
    e->forward();
    outs.push_back(e->output(0).clone());
    e->forward();
    Tensor again = e->output(0);
    ASSERT_EQ(0, std::memcmp(again.data(), outs.back().data(), again.bytes()));
  }
  for (size_t i = 1; i < outs.size(); ++i) ASSERT_EQ(0, std::memcmp(outs[0].data(), outs[i].data(), outs[0].bytes()));
}

/// A CPU fp32 engine of a subm conv (4 -> 8), a strided one (8 -> 8, weights of seeds `seed`, `seed` + 1) and a
/// dense tail of `cells` cells per axis.
std::unique_ptr<Engine> subm_strided_dense(int cells, uint64_t seed) {
  EngineBuilder b;
  ValueId x = b.push_input("0", 4);
  x = b.push_sparse_conv("c0", x, random_conv(4, 8, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, true, seed));
  x = b.push_sparse_conv("c1", x, random_conv(8, 8, {3, 3, 3}, {2, 2, 2}, {1, 1, 1}, {1, 1, 1}, false, seed + 1));
  DenseAttrs d;
  d.input_spatial_shape = {cells, cells, cells};
  d.output_shape = {1, 8, cells, cells, cells};
  b.push_output(b.push_dense("scatter0", x, d));
  BuildOptions o;
  o.backend = Backend::Cpu;
  o.precision = Precision::Fp32;
  return b.build(o);
}

TEST(CpuGraph, EmptyInputAndOneVoxel) {
  for (int64_t n : {0, 1}) {
    auto e = subm_strided_dense(3, 71);
    auto in = random_input(n, 4, {5, 5, 5}, 1, 73);
    e->set_input(0, in.features, in.indices, {5, 5, 5});
    e->forward();
    Tensor y = e->output(0);
    ASSERT_EQ(y.numel(), 8 * 27);
    int nonzero = 0;
    for (int64_t i = 0; i < y.numel(); ++i) nonzero += y.ptr<float>()[i] != 0.f;
    if (n == 0) EXPECT_EQ(nonzero, 0);
    else EXPECT_GT(nonzero, 0);
  }
}

// A dense output's view (output_async: fp32, no copy) stays valid when a larger frame moves the engine to a larger
// arena: the view shares the old one and keeps the values of its own forward (it once pointed into freed memory;
// the CI's AddressSanitizer build reads it).
TEST(CpuGraph, DenseViewsOutliveALargerFramesArena) {
  auto e = subm_strided_dense(8, 74);
  const auto small = random_input(20, 4, {16, 16, 16}, 1, 76), large = random_input(3000, 4, {16, 16, 16}, 1, 77);
  e->set_input(0, small.features, small.indices, {16, 16, 16});
  e->forward();
  const Tensor view = e->output_async(0);
  const Tensor kept = view.clone();
  e->set_input(0, large.features, large.indices, {16, 16, 16});
  e->forward();
  const Tensor moved = e->output_async(0);
  ASSERT_NE(moved.data(), view.data()) << "the larger frame must move the arena for this test";
  ASSERT_EQ(view.bytes(), kept.bytes());
  EXPECT_EQ(std::memcmp(view.data(), kept.data(), kept.bytes()), 0) << "the old view changed";
  const Tensor fresh = e->output(0);
  EXPECT_EQ(std::memcmp(moved.data(), fresh.data(), fresh.bytes()), 0);
}

// ---- input validation: every bad input names the file and what is wrong --------------------------
std::unique_ptr<Engine> tiny_engine() {
  EngineBuilder b("tiny.onnx");
  ValueId x = b.push_input("0", 4);
  b.push_output(b.push_sparse_conv("c0", x, random_conv(4, 4, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, true, 81)));
  BuildOptions o;
  o.backend = Backend::Cpu;
  return b.build(o);
}

std::string bind_error(const Tensor& f, const Tensor& i, Int3 grid, int batch = 1) {
  auto e = tiny_engine();
  try {
    e->set_input(0, f, i, grid, batch, {"F.tensor", "I.tensor"});
  } catch (const Error& err) {
    return err.what();
  }
  return "";
}

TEST(InputValidation, EveryBadInputIsNamed) {
  const Int3 grid{6, 7, 8};
  auto in = random_input(20, 4, grid, 1, 91);
  EXPECT_EQ(bind_error(in.features, in.indices, grid), "");
  // float indices
  Tensor fidx = Tensor::empty({20, 4}, DType::Float32);
  std::string e = bind_error(in.features, fidx, grid);
  EXPECT_NE(e.find("I.tensor"), std::string::npos) << e;
  EXPECT_NE(e.find("int32"), std::string::npos) << e;
  // not N x 4
  e = bind_error(in.features, in.indices.reshaped({40, 2}), grid);
  EXPECT_NE(e.find("[N, 4]"), std::string::npos) << e;
  // outside the grid / negative
  Tensor bad = in.indices.clone();
  bad.ptr<int32_t>()[4 * 3 + 2] = 7;
  e = bind_error(in.features, bad, grid);
  EXPECT_NE(e.find("row 3"), std::string::npos) << e;
  EXPECT_NE(e.find("outside the grid"), std::string::npos) << e;
  bad = in.indices.clone();
  bad.ptr<int32_t>()[4 * 5 + 1] = -1;
  EXPECT_NE(bind_error(in.features, bad, grid).find("row 5"), std::string::npos);
  // batch index >= batch size
  bad = in.indices.clone();
  bad.ptr<int32_t>()[4 * 2] = 1;
  e = bind_error(in.features, bad, grid, 1);
  EXPECT_NE(e.find("batch index 1"), std::string::npos) << e;
  // rows differ
  auto in2 = random_input(19, 4, grid, 1, 92);
  e = bind_error(in2.features, in.indices, grid);
  EXPECT_NE(e.find("19 feature rows"), std::string::npos) << e;
  // channels differ
  auto in3 = random_input(20, 5, grid, 1, 93);
  e = bind_error(in3.features, in.indices, grid);
  EXPECT_NE(e.find("5 channels"), std::string::npos) << e;
  // duplicates
  bad = in.indices.clone();
  for (int k = 0; k < 4; ++k) bad.ptr<int32_t>()[4 * 9 + k] = bad.ptr<int32_t>()[4 * 4 + k];
  e = bind_error(in.features, bad, grid);
  EXPECT_NE(e.find("duplicate"), std::string::npos) << e;
  EXPECT_NE(e.find("rows 4 and 9"), std::string::npos) << e;
  // non-finite features
  Tensor nanf = in.features.clone();
  nanf.ptr<uint16_t>()[7] = 0x7e00;
  e = bind_error(nanf, in.indices, grid);
  EXPECT_NE(e.find("finite"), std::string::npos) << e;
  EXPECT_NE(e.find("F.tensor"), std::string::npos) << e;
}

TEST(Builder, RejectsInconsistentNodes) {
  auto expect_error = [](auto&& fn, const std::string& needle) {
    try {
      fn();
      ADD_FAILURE() << "no error for " << needle;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  expect_error([] {
    EngineBuilder b("m.onnx");
    ValueId x = b.push_input("0", 4);
    b.push_sparse_conv("conv3", x, random_conv(5, 4, {3, 3, 3}, {1, 1, 1}, {0, 0, 0}, {1, 1, 1}, true, 1));
  }, "conv3");
  expect_error([] {
    EngineBuilder b;
    ValueId x = b.push_input("0", 4);
    ConvAttrs c = random_conv(4, 4, {3, 3, 3}, {1, 1, 1}, {0, 0, 0}, {1, 1, 1}, true, 1);
    c.kernel_size = {3, 3, 1};
    b.push_sparse_conv("conv1", x, c);
  }, "kernel_size");
  expect_error([] {
    EngineBuilder b;
    ValueId x = b.push_input("0", 4);
    b.push_sparse_conv("conv1", x, random_conv(4, 4, {2, 2, 2}, {1, 1, 1}, {0, 0, 0}, {1, 1, 1}, true, 1));
  }, "odd kernel");
  expect_error([] {
    EngineBuilder b;
    ValueId x = b.push_input("0", 4);
    b.push_sparse_conv("conv1", x, random_conv(4, 4, {3, 3, 3}, {0, 1, 1}, {0, 0, 0}, {1, 1, 1}, false, 1));
  }, "stride");
  expect_error([] {
    EngineBuilder b;
    ValueId x = b.push_input("0", 4);
    b.push_sparse_conv("conv1", x, random_conv(4, 4, {3, 3, 3}, {1, 1, 1}, {-1, 0, 0}, {1, 1, 1}, false, 1));
  }, "padding");
  expect_error([] {
    EngineBuilder b;
    ValueId x = b.push_input("0", 4);
    ValueId y = b.push_sparse_conv("c", x, random_conv(4, 4, {3, 3, 3}, {2, 2, 2}, {1, 1, 1}, {1, 1, 1}, false, 1));
    b.push_output(b.push_add("add5", x, y));
    b.build({});
  }, "add5");
  expect_error([] {
    EngineBuilder b;
    DenseAttrs d;
    d.input_spatial_shape = {2, 3, 4};
    d.output_shape = {1, 4, 2, 3, 4};
    ValueId y = b.push_dense("s", b.push_input("0", 4), d);
    b.push_reshape("reshape2", y, {1, 4, 25});
  }, "reshape2");
  expect_error([] {
    EngineBuilder b;
    DenseAttrs d;
    d.input_spatial_shape = {2, 3, 4};
    d.output_shape = {1, 4, 2, 3, 4};
    ValueId y = b.push_dense("s", b.push_input("0", 4), d);
    b.push_transpose("transpose1", y, {0, 1, 2, 2, 3});
  }, "permutation");
  expect_error([] {
    EngineBuilder b;
    QuantAttrs q;
    q.weight_dynamic_ranges = {1.f, 2.f};
    b.push_sparse_conv("conv9", b.push_input("0", 4), random_conv(4, 4, {3, 3, 3}, {1, 1, 1}, {0, 0, 0}, {1, 1, 1}, true, 1), q);
  }, "weight_dynamic_ranges");
}

TEST(CpuGraph, ScatterDenseShapeMismatchAtBindIsNamed) {
  EngineBuilder b("m.onnx");
  DenseAttrs d;
  d.input_spatial_shape = {4, 4, 4};
  d.output_shape = {1, 3, 4, 4, 4};
  b.push_output(b.push_dense("scatter0", b.push_input("0", 3), d));
  BuildOptions o;
  o.backend = Backend::Cpu;
  auto e = b.build(o);
  auto in = random_input(5, 3, {5, 4, 4}, 1, 3);
  e->set_input(0, in.features, in.indices, {5, 4, 4});
  try {
    e->forward();
    FAIL();
  } catch (const Error& err) {
    EXPECT_NE(std::string(err.what()).find("scatter0"), std::string::npos) << err.what();
    EXPECT_NE(std::string(err.what()).find("input_spatial_shape"), std::string::npos) << err.what();
  }
}

}  // namespace

// The CPU backend's INT8 engine vs an independent float64 model of docs/int8.md (int8_reference.h):
//  - node by node, each node evaluated by the reference from the engine's own stored inputs: every
//    element equal up to the final rounding (one int8 step / one fp16 ulp), and how many differ;
//  - the whole graph evaluated by the reference alone: the dense output agrees to within a few
//    flipped roundings;
//  - an INT8 engine on a model without INT8 attributes is bit-for-bit the FP16 engine.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <map>

#include "plan/int8_arith.h"
#include "backends/cpu/int8_observer.h"
#include "plan/int8_plan.h"
#include "centerpoint_graph.h"
#include "int8_graphs.h"
#include "int8_reference.h"
#include "test_helpers.h"

namespace {

using namespace scn;
using test::random_conv;
using test::random_input;
using test::int8graphs::Capture;
using test::int8graphs::fp32_absmax;
using test::int8graphs::kGrid;
using test::int8graphs::mixed_graph;
using test::int8graphs::Ranges;
using test::int8graphs::run_capture;
namespace ref = test::int8ref;

// ---- primitives ---------------------------------------------------------------------------------

TEST(Int8Arith, RoundHalfToEvenAndClamp) {
  const float inv = 1.f;  // range 127
  EXPECT_EQ(int8::quantize(0.5f, inv), 0);
  EXPECT_EQ(int8::quantize(1.5f, inv), 2);
  EXPECT_EQ(int8::quantize(2.5f, inv), 2);
  EXPECT_EQ(int8::quantize(-2.5f, inv), -2);
  EXPECT_EQ(int8::quantize(-0.5f, inv), 0);
  EXPECT_EQ(int8::quantize(126.5f, inv), 126);
  EXPECT_EQ(int8::quantize(126.51f, inv), 127);
  EXPECT_EQ(int8::quantize(1000.f, inv), 127);
  EXPECT_EQ(int8::quantize(-1000.f, inv), -127);  // never -128
  EXPECT_EQ(int8::quantize(INFINITY, inv), 127);
  EXPECT_EQ(int8::quantize(-INFINITY, inv), -127);
  EXPECT_EQ(int8::quantize(NAN, inv), 0);
  // scale / inv_scale are single float32 divisions
  EXPECT_EQ(int8::scale(2.54f), 2.54f / 127.0f);
  EXPECT_EQ(int8::inv_scale(2.54f), 127.0f / 2.54f);
  EXPECT_EQ(int8::dequantize(-127, int8::scale(2.54f)), -127.f * (2.54f / 127.0f));
  // x * inv, not x / scale: the value 1.0 with range 2.54 -> 1.0 * 50.0 = 50
  EXPECT_EQ(int8::quantize(1.f, int8::inv_scale(2.54f)), 50);
}

TEST(Int8Arith, WeightAbsmaxPerChannel) {
  Tensor w = Tensor::empty({3, 1, 1, 2, 2}, DType::Float32);
  const float v[] = {0.5f, -2.f, 1.f, 0.f, 0.f, 0.f, 0.f, 0.f, 3.f, -3.5f, 0.25f, 1.f};
  std::copy(v, v + 12, w.ptr<float>());
  EXPECT_EQ(int8::weight_absmax_per_channel(w), (std::vector<float>{2.f, 0.f, 3.5f}));
}

// ulps of binary16 between two fp16 values (same sign assumed when both are non-zero)
int half_ulps(double a, double b) {
  const int ha = float_to_half(float(a)), hb = float_to_half(float(b));
  auto ordered = [](int h) { return h & 0x8000 ? -(h & 0x7fff) : h; };
  return std::abs(ordered(ha) - ordered(hb));
}

TEST(Int8Cpu, NodeByNodeMatchesFloat64Reference) {
  const test::SparseInput in = random_input(2000, 4, kGrid, 1, 5);
  const Ranges ranges = fp32_absmax(in);
  EngineBuilder b = mixed_graph(&ranges);
  auto e = b.build(test::cpu_build_options(Precision::Int8));
  const Graph& g = e->graph();
  const Capture c = run_capture(*e, in);
  const ref::StoragePlan plan = ref::storage_plan(g);

  int64_t total = 0, differ = 0;
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    const Node& node = g.nodes[n];
    const int out = node.output;
    ASSERT_TRUE(c.seen[size_t(out)]) << node.name;
    const ref::Stored& got = c.values[size_t(out)];
    // The storage the engine chose is the documented one.
    EXPECT_EQ(got.int8, plan.int8[size_t(out)]) << node.name;
    if (got.int8) {
      EXPECT_EQ(double(got.range), plan.range[size_t(out)]) << node.name;
    }
    if (node.op == OpType::Input) continue;
    const ref::Stored want =
        ref::eval_node(g, int(n), plan, [&](int v) -> const ref::Stored& { return c.values[size_t(v)]; }, got.coords);
    ASSERT_EQ(want.v.size(), got.v.size()) << node.name;
    int64_t node_differ = 0, worst = 0;
    const bool fp16_compute = node.op == OpType::SparseConv && node.quant.precision != Precision::Int8;
    for (size_t i = 0; i < want.v.size(); ++i) {
      if (want.v[i] == got.v[i]) continue;
      ++node_differ;
      const int64_t d = got.int8 ? int64_t(std::llround(std::fabs(want.v[i] - got.v[i]))) : half_ulps(want.v[i], got.v[i]);
      worst = std::max(worst, d);
    }
    // One step / one ulp: the final rounding of a float32 vs float64 evaluation. fp16 layers sum in
    // float32 from the bias (the fp16 engine's arithmetic), which can cost a second ulp.
    EXPECT_LE(worst, fp16_compute ? 2 : 1) << node.name;
    if (node.op == OpType::Relu || node.op == OpType::Concat || node.op == OpType::Reshape) {
      EXPECT_EQ(node_differ, 0) << node.name << ": exact ops";
    }
    std::printf("  %-9s %-17s %-5s -> %-5s %8zu elements, %5lld differ by the final rounding (max %lld)\n",
                node.name.c_str(), op_type_name(node.op), precision_name(node.quant.precision),
                got.int8 ? "int8" : "fp16", want.v.size(), static_cast<long long>(node_differ),
                static_cast<long long>(worst));
    total += int64_t(want.v.size());
    differ += node_differ;
  }
  std::printf("  all nodes: %lld of %lld elements differ from the float64 reference by one rounding step\n",
              static_cast<long long>(differ), static_cast<long long>(total));
  EXPECT_LT(double(differ), 1e-3 * double(total));
  ::testing::Test::RecordProperty("elements", std::to_string(total));
  ::testing::Test::RecordProperty("differ", std::to_string(differ));
}

TEST(Int8Cpu, WholeGraphMatchesFloat64Reference) {
  const test::SparseInput in = random_input(2000, 4, kGrid, 1, 6);
  const Ranges ranges = fp32_absmax(in);
  EngineBuilder b = mixed_graph(&ranges);
  auto e = b.build(test::cpu_build_options(Precision::Int8));
  const Graph& g = e->graph();
  const Capture c = run_capture(*e, in);
  const ref::StoragePlan plan = ref::storage_plan(g);
  // The reference runs alone: each node reads the reference's own outputs (sites from the engine).
  std::vector<ref::Stored> mine(g.values.size());
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    const Node& node = g.nodes[n];
    if (node.op == OpType::Input) {
      mine[size_t(node.output)] = c.values[size_t(node.output)];  // the fp16-rounded features
      continue;
    }
    mine[size_t(node.output)] = ref::eval_node(g, int(n), plan, [&](int v) -> const ref::Stored& { return mine[size_t(v)]; },
                                               c.values[size_t(node.output)].coords);
  }
  const Tensor y = e->output(0).to_dtype(DType::Float32);
  const std::vector<double>& want = mine[size_t(g.outputs[0])].v;
  ASSERT_EQ(int64_t(want.size()), y.numel());
  int64_t differ = 0;
  double max_abs = 0, dot = 0, na = 0, nb = 0;
  for (int64_t i = 0; i < y.numel(); ++i) {
    const double a = y.ptr<float>()[i], w = want[size_t(i)];
    differ += a != w;
    max_abs = std::max(max_abs, std::fabs(a - w));
    dot += a * w;
    na += a * a;
    nb += w * w;
  }
  const double cosine = dot / std::sqrt(na * nb);
  std::printf("  dense output: %lld of %lld elements differ from the chained float64 reference, max |diff| %.3g, "
              "cosine %.9f\n",
              static_cast<long long>(differ), static_cast<long long>(y.numel()), max_abs, cosine);
  // A rounding flipped early moves later values by about one step of their scale.
  EXPECT_LT(double(differ), 0.02 * double(y.numel()));
  EXPECT_GT(cosine, 0.99999);
}

TEST(Int8Cpu, ThreadCountDoesNotChangeResults) {
  const test::SparseInput in = random_input(2000, 4, kGrid, 1, 7);
  const Ranges ranges = fp32_absmax(in);
  EngineBuilder b = mixed_graph(&ranges);
  Tensor y[2];
  for (int t = 0; t < 2; ++t) {
    BuildOptions o;
    o.backend = Backend::Cpu;
    o.precision = Precision::Int8;
    o.num_threads = t == 0 ? 1 : 3;
    auto e = b.build(o);
    e->set_input(0, in.features, in.indices, in.grid, 1);
    e->forward();
    y[t] = e->output(0).clone();
  }
  ASSERT_EQ(y[0].bytes(), y[1].bytes());
  EXPECT_EQ(std::memcmp(y[0].data(), y[1].data(), y[0].bytes()), 0);
}

TEST(Int8Cpu, WithoutInt8AttributesIsTheFp16Engine) {
  const Int3 grid{41, 64, 64};
  const test::SparseInput in = random_input(6000, 5, grid, 1, 8);
  EngineBuilder b = test::centerpoint_builder(grid);
  Tensor y[2];
  for (int t = 0; t < 2; ++t) {
    auto e = b.build(test::cpu_build_options(t == 0 ? Precision::Fp16 : Precision::Int8));
    e->set_input(0, in.features, in.indices, in.grid, 1);
    e->forward();
    y[t] = e->output(0).clone();
  }
  ASSERT_EQ(y[0].dtype(), DType::Float16);
  ASSERT_EQ(y[1].dtype(), DType::Float16);
  ASSERT_EQ(y[0].bytes(), y[1].bytes());
  EXPECT_EQ(std::memcmp(y[0].data(), y[1].data(), y[0].bytes()), 0);
}

TEST(Int8Cpu, SparseInt8OutputIsDequantizedToFp16) {
  const test::SparseInput in = random_input(300, 4, kGrid, 1, 9);
  EngineBuilder b;
  ValueId x = b.push_input("0", 4);
  QuantAttrs q0;
  q0.output_precision = Precision::Int8;
  x = b.push_sparse_conv("conv0", x, random_conv(4, 8, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, true, 3), q0);
  QuantAttrs q1;
  q1.precision = Precision::Int8;
  q1.input_dynamic_range = 2.f;
  q1.output_precision = Precision::Int8;
  ValueId y = b.push_sparse_conv("conv1", x, random_conv(8, 8, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, true, 4), q1);
  QuantAttrs q2 = q1;
  q2.input_dynamic_range = 3.f;
  q2.output_precision = Precision::Fp16;
  b.push_output(b.push_sparse_conv("conv2", y, random_conv(8, 8, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, {1, 1, 1}, true, 5), q2));
  b.push_output(y);  // conv1's int8 output (range 3 from conv2) is also a graph output
  BuildOptions o;
  o.backend = Backend::Cpu;
  o.precision = Precision::Int8;
  auto e = b.build(o);
  Capture c = run_capture(*e, in);
  const Tensor out = e->output(1);
  ASSERT_EQ(out.dtype(), DType::Float16);
  const ref::Stored& s = c.values[size_t(y)];
  ASSERT_TRUE(s.int8);
  EXPECT_EQ(s.range, 3.f);
  for (int64_t i = 0; i < out.numel(); ++i)
    ASSERT_EQ(out.ptr<uint16_t>()[i], float_to_half(float(s.v[size_t(i)]) * (3.f / 127.f))) << i;
}

}  // namespace

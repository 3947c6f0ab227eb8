// INT8 test graphs shared by the CPU INT8 tests (tests/int8) and the CUDA INT8 tests (tests/cuda):
// a graph that crosses every FP16 <-> INT8 boundary, and the helpers that calibrate it from a
// float32 CPU run (absmax of every value) and capture every stored value of a CPU engine.
#pragma once

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "plan/int8_arith.h"
#include "backends/cpu/int8_observer.h"
#include "int8_reference.h"
#include "test_helpers.h"

namespace scn::test::int8graphs {

namespace ref = test::int8ref;
using test::random_conv;

// ---- a graph that crosses every boundary ---------------------------------------------------------

// conv0 fp16 -> int8 out | conv1 int8 (ReLU) | conv2 int8 (None, given weight ranges, some clamping)
// | add0 int8 (conv2, conv0) -> relu0 (int8) | conv3 strided int8 -> fp16 out | conv4 int8 reads
// fp16 (LeakyReLU) -> int8 | add1 fp16 (conv4 int8, conv3 fp16) | conv5 fp16 | concat (fp16, int8
// inputs dequantized) | conv6 k(3,1,1) s(2,1,1) int8 -> int8 | scatter0 (int8 input) -> reshape0;
// add2 (int8, reads fp16 add1 with its own range) -> int8 read by concat0 and scatter1 (2nd output).
struct Ranges {
  std::map<std::string, float> v;  ///< by value name ("c0", "r0", ...): absmax of the fp32 run
  float operator()(const std::string& name) const {
    const auto it = v.find(name);
    return it == v.end() ? 1.f : it->second;
  }
};

inline const Int3 kGrid{7, 24, 24};

inline EngineBuilder mixed_graph(const Ranges* r, uint64_t seed = 11) {
  EngineBuilder b("int8-mixed(builder)");
  auto q = [&](Precision p, Precision out, float in = -1.f) {
    QuantAttrs a;
    a.precision = p;
    a.output_precision = out;
    a.input_dynamic_range = in;
    return a;
  };
  const Precision I8 = Precision::Int8, F16 = Precision::Fp16;
  const bool quant = r != nullptr;
  auto R = [&](const char* name, float f = 0.8f) { return quant ? (*r)(name) * f : -1.f; };
  auto P = [&](Precision p) { return quant ? p : F16; };
  uint64_t s = seed;
  ValueId x = b.push_input("0", 4);
  ConvAttrs c0 = random_conv(4, 16, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, true, s++, Activation::ReLU);
  c0.rulebook = "subm0";
  ValueId v0 = b.push_sparse_conv("conv0", x, c0, q(F16, P(I8)), "c0");
  ConvAttrs c1 = random_conv(16, 16, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, true, s++, Activation::ReLU);
  c1.rulebook = "subm0";
  ValueId v1 = b.push_sparse_conv("conv1", v0, c1, q(P(I8), P(I8), R("c0", 0.9f)), "c1");
  ConvAttrs c2 = random_conv(16, 16, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, true, s++, Activation::None);
  c2.rulebook = "subm0";
  QuantAttrs q2 = q(P(I8), P(I8), R("c1"));
  if (quant) {  // explicit weight ranges: 0.7x absmax (clamps) for even channels, 1.3x for odd ones
    q2.weight_dynamic_ranges = int8::weight_absmax_per_channel(c2.weight);
    for (size_t i = 0; i < q2.weight_dynamic_ranges.size(); ++i) q2.weight_dynamic_ranges[i] *= i % 2 ? 1.3f : 0.7f;
  }
  ValueId v2 = b.push_sparse_conv("conv2", v1, c2, q2, "c2");
  QuantAttrs qa0 = q(P(I8), P(I8));
  qa0.input0_dynamic_range = R("c2");
  qa0.input1_dynamic_range = R("c0", 0.9f);  // conv0's output is int8: same range as conv1 reads it
  ValueId a0 = b.push_add("add0", v2, v0, qa0, "a0");
  ValueId r0 = b.push_relu("relu0", a0, "r0");
  ConvAttrs c3 = random_conv(16, 32, {3, 3, 3}, {2, 2, 2}, {1, 1, 1}, {1, 1, 1}, false, s++, Activation::ReLU);
  ValueId v3 = b.push_sparse_conv("conv3", r0, c3, q(P(I8), F16, R("r0")), "c3");
  ConvAttrs c4 = random_conv(32, 32, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, true, s++, Activation::LeakyReLU);
  c4.activation_alpha = 0.1f;
  c4.rulebook = "subm1";
  // conv4 reads conv3's fp16 output and quantizes it with its own (clipping) range.
  ValueId v4 = b.push_sparse_conv("conv4", v3, c4, q(P(I8), F16, R("c3", 0.7f)), "c4");
  ValueId a1 = b.push_add("add1", v4, v3, q(F16, F16), "a1");
  ConvAttrs c5 = random_conv(32, 32, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, true, s++, Activation::ReLU);
  c5.rulebook = "subm1";
  // conv5 (fp16) writes int8 for its int8 reader add2; add2 (int8) reads a1 (fp16) with its own range.
  ValueId v5 = b.push_sparse_conv("conv5", a1, c5, q(F16, P(I8)), "c5");
  QuantAttrs qa2 = q(P(I8), P(I8));
  qa2.input0_dynamic_range = R("c5");
  qa2.input1_dynamic_range = R("a1", 0.6f);
  ValueId a2 = b.push_add("add2", v5, a1, qa2, "a2");
  // add2's int8 output is read by the Concat (dequantized) and by scatter1, whose range is its scale.
  DenseAttrs d1;
  d1.input_spatial_shape = {4, 12, 12};
  d1.output_shape = {1, 32, 4, 12, 12};
  QuantAttrs qs1;
  qs1.input_dynamic_range = R("a2");
  ValueId dense1 = b.push_dense("scatter1", a2, d1, qs1, "dense1");
  ValueId cat = b.push_concat("concat0", {a2, v3}, "cat");
  ConvAttrs c6 = random_conv(64, 32, {3, 1, 1}, {2, 1, 1}, {0, 0, 0}, {1, 1, 1}, false, s++, Activation::ReLU);
  ValueId v6 = b.push_sparse_conv("conv6", cat, c6, q(P(I8), P(I8), R("cat")), "c6");
  // ScatterDense of kGrid after two downsamplings: (7,24,24) -> (4,12,12) -> (1,12,12)
  DenseAttrs d;
  d.input_spatial_shape = {1, 12, 12};
  d.output_shape = {1, 32, 1, 12, 12};
  QuantAttrs qs;
  qs.input_dynamic_range = R("c6");
  ValueId dense = b.push_dense("scatter0", v6, d, qs, "dense");
  b.push_output(b.push_reshape("reshape0", dense, {1, 32, 12, 12}, "out"));
  b.push_output(dense1);
  return b;
}

struct Capture {
  std::vector<ref::Stored> values;
  std::vector<bool> seen;
};

inline Capture run_capture(Engine& e, const test::SparseInput& in) {
  Capture c;
  c.values.resize(e.graph().values.size());
  c.seen.assign(c.values.size(), false);
  cpu::set_value_observer(e, [&](const cpu::ObservedValue& o) {
    ref::Stored& s = c.values[size_t(o.value)];
    s.v.assign(o.data, o.data + o.rows * o.channels);
    s.rows = o.rows;
    s.channels = o.channels;
    s.sparse = o.coords != nullptr;
    if (o.coords) s.coords.assign(o.coords, o.coords + 4 * o.rows);
    s.int8 = o.int8;
    s.range = o.range;
    c.seen[size_t(o.value)] = true;
  });
  e.set_input(0, in.features, in.indices, in.grid, in.batch);
  e.forward();
  cpu::set_value_observer(e, {});
  return c;
}

inline Ranges fp32_absmax(const test::SparseInput& in) {
  EngineBuilder b = mixed_graph(nullptr);
  auto e = b.build(test::cpu_build_options(Precision::Fp32));
  Capture c = run_capture(*e, in);
  Ranges r;
  for (size_t v = 0; v < c.values.size(); ++v) {
    double m = 0;
    for (double x : c.values[v].v) m = std::max(m, std::fabs(x));
    r.v[e->graph().values[v].name] = m > 0 ? float(m) : 1.f;
  }
  return r;
}

}  // namespace scn::test::int8graphs

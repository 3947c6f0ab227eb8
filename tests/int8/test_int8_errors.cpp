// INT8 validation: bad or missing dynamic ranges are errors naming the node and the attribute (in
// the builder, the importer, and the INT8 engine's storage plan); write_onnx_with_quant round trip.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cmath>
#include <fstream>

#include "common/error_message.h"
#include "onnx_writer.h"
#include "scn/onnx.h"
#include "test_helpers.h"

namespace {

using namespace scn;
using test::random_conv;

std::string error_of(const std::function<void()>& f) { return test::error_message(f); }

#define EXPECT_HAS(msg, ...)                                                   \
  do {                                                                         \
    const std::string m_ = (msg);                                              \
    for (const char* part : {__VA_ARGS__}) EXPECT_NE(m_.find(part), std::string::npos) << "missing '" << part << "' in: " << m_; \
  } while (0)

ConvAttrs conv(int cin, int cout, uint64_t seed) {
  return random_conv(cin, cout, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, true, seed, Activation::ReLU);
}

QuantAttrs int8(float in = 2.f, Precision out = Precision::Fp16) {
  QuantAttrs q;
  q.precision = Precision::Int8;
  q.output_precision = out;
  q.input_dynamic_range = in;
  return q;
}

TEST(Int8Errors, BuilderNamesNodeAndAttribute) {
  EngineBuilder b("m.onnx");
  const ValueId x = b.push_input("0", 4);
  // int8 without input_dynamic_range
  EXPECT_HAS(error_of([&] { b.push_sparse_conv("conv7", x, conv(4, 8, 1), int8(-1.f)); }), "m.onnx", "node 'conv7'",
             "precision is int8", "'input_dynamic_range' is missing");
  // zero, NaN, infinite ranges
  EXPECT_HAS(error_of([&] { b.push_sparse_conv("conv7", x, conv(4, 8, 1), int8(0.f)); }), "node 'conv7'",
             "'input_dynamic_range'", "positive finite");
  EXPECT_HAS(error_of([&] { b.push_sparse_conv("conv7", x, conv(4, 8, 1), int8(NAN)); }), "node 'conv7'",
             "'input_dynamic_range'", "nan");
  EXPECT_HAS(error_of([&] { b.push_sparse_conv("conv7", x, conv(4, 8, 1), int8(INFINITY)); }), "node 'conv7'",
             "'input_dynamic_range'", "inf");
  // weight ranges: wrong count, zero, negative, NaN
  QuantAttrs q = int8();
  q.weight_dynamic_ranges = {1.f, 2.f};
  EXPECT_HAS(error_of([&] { b.push_sparse_conv("conv7", x, conv(4, 8, 1), q); }), "node 'conv7'",
             "'weight_dynamic_ranges' has 2 values for 8 output channels");
  for (float bad : {0.f, -1.f, NAN}) {
    q.weight_dynamic_ranges.assign(8, 1.f);
    q.weight_dynamic_ranges[5] = bad;
    EXPECT_HAS(error_of([&] { b.push_sparse_conv("conv7", x, conv(4, 8, 1), q); }), "node 'conv7'",
               "'weight_dynamic_ranges'[5]", "positive finite");
  }
  // an fp16 node may leave its ranges out
  const ValueId y = b.push_sparse_conv("conv0", x, conv(4, 8, 1));
  const ValueId z = b.push_sparse_conv("conv1", y, conv(8, 8, 2), int8(3.f));
  // int8 Add needs both operand ranges
  QuantAttrs qa;
  qa.precision = Precision::Int8;
  qa.input0_dynamic_range = 1.f;
  EXPECT_HAS(error_of([&] { b.push_add("add3", z, y, qa); }), "node 'add3'", "'input1_dynamic_range' is missing");
  qa.input1_dynamic_range = 0.f;
  EXPECT_HAS(error_of([&] { b.push_add("add3", z, y, qa); }), "node 'add3'", "'input1_dynamic_range'", "positive");
  qa.input1_dynamic_range = 1.f;
  qa.input0_dynamic_range = -1.f;
  EXPECT_HAS(error_of([&] { b.push_add("add3", z, y, qa); }), "node 'add3'", "'input0_dynamic_range' is missing");
  DenseAttrs d;
  d.input_spatial_shape = {5, 5, 5};
  d.output_shape = {1, 8, 5, 5, 5};
  QuantAttrs qs;
  qs.input_dynamic_range = NAN;
  EXPECT_HAS(error_of([&] { b.push_dense("scatter0", z, d, qs); }), "node 'scatter0'", "'input_dynamic_range'");
}

BuildOptions int8_options() {
  BuildOptions o;
  o.backend = Backend::Cpu;
  o.precision = Precision::Int8;
  return o;
}

TEST(Int8Errors, StoragePlanNeedsOneRangePerInt8Value) {
  // conv0 writes int8 but its only reader is an fp16 conv: nobody gives the scale.
  {
    EngineBuilder b("m.onnx");
    QuantAttrs q0;
    q0.output_precision = Precision::Int8;
    ValueId x = b.push_sparse_conv("conv0", b.push_input("0", 4), conv(4, 8, 1), q0);
    b.push_output(b.push_sparse_conv("conv1", x, conv(8, 8, 2)));
    EXPECT_HAS(error_of([&] { b.build(int8_options()); }), "m.onnx", "node 'conv0'", "output_precision is int8",
               "no reader");
    BuildOptions fp16 = int8_options();
    fp16.precision = Precision::Fp16;
    EXPECT_NO_THROW(b.build(fp16));  // the fp16 engine ignores INT8 attributes
  }
  // two int8 readers (through a Relu) with different ranges
  {
    EngineBuilder b("m.onnx");
    QuantAttrs q0;
    q0.output_precision = Precision::Int8;
    ValueId x = b.push_sparse_conv("conv0", b.push_input("0", 4), conv(4, 8, 1), q0);
    ValueId r = b.push_relu("relu0", x);
    ValueId y = b.push_sparse_conv("conv1", r, conv(8, 8, 2), int8(2.f));
    QuantAttrs qa;
    qa.precision = Precision::Int8;
    qa.input0_dynamic_range = 1.f;
    qa.input1_dynamic_range = 2.5f;
    b.push_output(b.push_add("add0", y, r, qa));
    EXPECT_HAS(error_of([&] { b.build(int8_options()); }), "node 'conv0'", "different ranges",
               "node 'conv1' (SparseConvolution) input_dynamic_range=2", "node 'add0' (Add) input1_dynamic_range=2.5");
  }
  // agreeing readers build
  {
    EngineBuilder b("m.onnx");
    QuantAttrs q0;
    q0.output_precision = Precision::Int8;
    ValueId x = b.push_sparse_conv("conv0", b.push_input("0", 4), conv(4, 8, 1), q0);
    ValueId y = b.push_sparse_conv("conv1", x, conv(8, 8, 2), int8(2.f));
    QuantAttrs qa;
    qa.precision = Precision::Int8;
    qa.input0_dynamic_range = 1.f;
    qa.input1_dynamic_range = 2.f;
    b.push_output(b.push_add("add0", y, x, qa));
    EXPECT_NO_THROW(b.build(int8_options()));
  }
}

TEST(Int8Errors, AccumulatorOverflowIsRejected) {
  // K * Cin * 127^2 > 2^31 - 1: 27 * 5000 = 135000 > 133143
  EngineBuilder b("m.onnx");
  ConvAttrs c = random_conv(5000, 2, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, true, 1, Activation::None, false);
  b.push_output(b.push_sparse_conv("conv0", b.push_input("0", 5000), c, int8(1.f)));
  EXPECT_HAS(error_of([&] { b.build(int8_options()); }), "node 'conv0'", "int32 accumulator");
}

// ---- ONNX -------------------------------------------------------------------------------------

TEST(Int8Errors, OnnxInt8WithoutRangeNamesNodeAndAttribute) {
  test::ModelDef m = test::small_centerpoint();
  m.node("conv1").set(test::attr_string("precision", "int8"));
  EXPECT_HAS(error_of([&] { parse_onnx(test::write_model(m, "int8_norange.onnx")); }), "int8_norange.onnx",
             "node 'conv1'", "'input_dynamic_range' is missing");
  m = test::small_centerpoint();
  m.node("add0").set(test::attr_string("precision", "int8")).set(test::attr_float("input1_dynamic_range", 2.f));
  EXPECT_HAS(error_of([&] { parse_onnx(test::write_model(m, "int8_noadd.onnx")); }), "node 'add0'",
             "'input0_dynamic_range' is missing");
  m = test::small_centerpoint();
  m.node("conv2").set(test::attr_float("input_dynamic_range", NAN));
  EXPECT_HAS(error_of([&] { parse_onnx(test::write_model(m, "int8_nan.onnx")); }), "node 'conv2'",
             "'input_dynamic_range'", "positive and finite");
  m = test::small_centerpoint();
  m.node("conv2").set(test::attr_floats("weight_dynamic_ranges", std::vector<float>(8, -1.f)));
  EXPECT_HAS(error_of([&] { parse_onnx(test::write_model(m, "int8_negw.onnx")); }), "node 'conv2'",
             "'weight_dynamic_ranges'[0]", "positive");
}

bool exists(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0;
}

TEST(Int8Onnx, WriteWithQuantRoundTrip) {
  const std::string src = test::write_model(test::small_centerpoint(), "rewrite_src.onnx");
  const std::string dst = test::temp_dir() + "/rewrite_dst.onnx";
  std::map<std::string, QuantAttrs> q;
  QuantAttrs c1 = int8(2.5f, Precision::Int8);
  c1.weight_dynamic_ranges.assign(8, 0.5f);
  q["conv1"] = c1;
  q["conv2"] = int8(1.25f, Precision::Int8);
  QuantAttrs a;
  a.precision = Precision::Int8;
  a.output_precision = Precision::Int8;
  a.input0_dynamic_range = 3.f;
  a.input1_dynamic_range = 1.5f;
  q["add0"] = a;
  QuantAttrs conv3 = int8(4.f, Precision::Fp16);  // reads relu0 (add0's group): agree below
  q["conv3"] = conv3;
  QuantAttrs s;
  s.input_dynamic_range = 7.f;
  q["scatter0"] = s;
  // conv0 is fp16 writing int8 for conv1 (2.5) and add0 input1 (must then be 2.5 as well)
  QuantAttrs c0;
  c0.output_precision = Precision::Int8;
  q["conv0"] = c0;
  q["add0"].input1_dynamic_range = 2.5f;
  // the add0 -> relu0 group is read by conv3 with range 4
  write_onnx_with_quant(src, dst, q);
  EXPECT_FALSE(exists(dst + ".partial"));
  const EngineBuilder b = parse_onnx(dst);
  const Graph& g = b.graph();
  auto node = [&](const std::string& n) -> const Node& {
    for (const Node& x : g.nodes)
      if (x.name == n) return x;
    throw std::runtime_error("no node " + n);
  };
  EXPECT_EQ(node("conv1").quant.precision, Precision::Int8);
  EXPECT_EQ(node("conv1").quant.output_precision, Precision::Int8);
  EXPECT_EQ(node("conv1").quant.input_dynamic_range, 2.5f);
  EXPECT_EQ(node("conv1").quant.weight_dynamic_ranges, std::vector<float>(8, 0.5f));
  EXPECT_TRUE(node("conv2").quant.weight_dynamic_ranges.empty());
  EXPECT_EQ(node("add0").quant.input0_dynamic_range, 3.f);
  EXPECT_EQ(node("add0").quant.input1_dynamic_range, 2.5f);
  EXPECT_EQ(node("scatter0").quant.input_dynamic_range, 7.f);
  EXPECT_EQ(node("conv0").quant.precision, Precision::Fp16);
  EXPECT_EQ(node("conv0").quant.input_dynamic_range, -1.f);
  // The INT8 engine builds from it and runs.
  auto e = b.build(int8_options());
  const test::SparseInput in = test::random_input(200, 5, {9, 8, 8}, 1, 3);
  e->set_input(0, in.features, in.indices, in.grid, 1);
  e->forward();
  EXPECT_EQ(e->output(0).dtype(), DType::Float16);

  // Rewriting again replaces (not duplicates) attributes, and a negative range removes one.
  q["conv1"].input_dynamic_range = 2.5f;
  q["conv1"].weight_dynamic_ranges.clear();
  q["scatter0"].input_dynamic_range = -1.f;
  write_onnx_with_quant(dst, dst, q);
  const EngineBuilder b2 = parse_onnx(dst);
  for (const Node& x : b2.graph().nodes) {
    if (x.name == "conv1") {
      EXPECT_TRUE(x.quant.weight_dynamic_ranges.empty());
    }
    if (x.name == "scatter0") {
      EXPECT_EQ(x.quant.input_dynamic_range, -1.f);
    }
  }
}

TEST(Int8Onnx, WriteWithQuantErrors) {
  const std::string src = test::write_model(test::small_centerpoint(), "rewrite_err.onnx");
  const std::string dst = test::temp_dir() + "/rewrite_err_out.onnx";
  std::map<std::string, QuantAttrs> q;
  q["conv9"] = int8();
  EXPECT_HAS(error_of([&] { write_onnx_with_quant(src, dst, q); }), "rewrite_err.onnx", "no node named 'conv9'");
  q.clear();
  q["relu0"] = int8();
  EXPECT_HAS(error_of([&] { write_onnx_with_quant(src, dst, q); }), "node 'relu0' (Relu)", "no INT8 attributes");
  q.clear();
  q["conv1"] = int8(0.f);
  EXPECT_HAS(error_of([&] { write_onnx_with_quant(src, dst, q); }), "node 'conv1'", "'input_dynamic_range'",
             "positive finite");
  q["conv1"] = int8();
  q["conv1"].precision = Precision::Fp32;
  EXPECT_HAS(error_of([&] { write_onnx_with_quant(src, dst, q); }), "node 'conv1'", "'precision'", "fp32");
  EXPECT_FALSE(exists(dst));
  EXPECT_FALSE(exists(dst + ".partial"));
  q["conv1"] = int8();
  EXPECT_HAS(error_of([&] { write_onnx_with_quant(src, test::temp_dir() + "/no/such/dir/x.onnx", q); }),
             "cannot open for writing");
  EXPECT_HAS(error_of([&] { write_onnx_with_quant(test::temp_dir() + "/missing.onnx", dst, q); }), "missing.onnx",
             "cannot open");
}

}  // namespace

// Valid models: what the importer builds from them.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

#include "onnx_parser/parser_test_util.h"
#include "scn/onnx.h"

namespace scn::test {
namespace {

const Node& find_node(const Graph& g, const std::string& name) {
  for (const Node& n : g.nodes)
    if (n.name == name) return n;
  throw std::runtime_error("no node " + name);
}

const std::string* find_info(const Node& n, const std::string& key) {
  for (const auto& kv : n.info)
    if (kv.first == key) return &kv.second;
  return nullptr;
}

std::vector<uint16_t> bits_of(const Tensor& t) {
  EXPECT_EQ(t.dtype(), DType::Float16);
  std::vector<uint16_t> v(static_cast<size_t>(t.numel()));
  std::memcpy(v.data(), t.data(), v.size() * 2);
  return v;
}

void expect_topological(const Graph& g) {
  for (size_t n = 0; n < g.nodes.size(); ++n)
    for (int v : g.nodes[n].inputs)
      EXPECT_LT(g.values[size_t(v)].producer, int(n))
          << "node " << g.nodes[n].name << " reads '" << g.values[size_t(v)].name
          << "' before it is produced";
}

TEST(OnnxImport, SmallCenterPoint) {
  const ModelDef m = small_centerpoint();
  const std::string path = write_model(m, test_file_name());
  const EngineBuilder b = parse_onnx(path);
  const Graph& g = b.graph();
  EXPECT_EQ(g.source, path);
  ASSERT_EQ(g.nodes.size(), 10u);  // the input + 9 ONNX nodes
  const char* names[] = {"0",     "conv0", "conv1", "conv2",    "add0",
                         "relu0", "conv3", "conv4", "scatter0", "reshape0"};
  for (size_t i = 0; i < g.nodes.size(); ++i) EXPECT_EQ(g.nodes[i].name, names[i]);
  expect_topological(g);
  ASSERT_EQ(g.inputs.size(), 1u);
  EXPECT_EQ(g.values[size_t(g.inputs[0])].name, "0");
  EXPECT_EQ(g.values[size_t(g.inputs[0])].channels, 5);
  ASSERT_EQ(g.outputs.size(), 1u);
  const Value& out = g.values[size_t(g.outputs[0])];
  EXPECT_EQ(out.name, "9");
  EXPECT_FALSE(out.sparse);
  EXPECT_EQ(out.shape, (std::vector<int64_t>{1, 32, 4, 4}));

  const Node& conv0 = find_node(g, "conv0");
  EXPECT_EQ(conv0.op, OpType::SparseConv);
  EXPECT_TRUE(conv0.conv.subm);
  EXPECT_FALSE(conv0.conv.inverse);
  EXPECT_EQ(conv0.conv.rulebook, "subm1");
  EXPECT_EQ(conv0.conv.activation, Activation::ReLU);
  EXPECT_EQ(conv0.conv.in_channels, 5);
  EXPECT_EQ(conv0.conv.out_channels, 8);
  EXPECT_EQ(conv0.conv.kernel_size, (Int3{3, 3, 3}));
  EXPECT_EQ(conv0.conv.output_bound, 200000);
  EXPECT_EQ(conv0.quant.precision, Precision::Fp16);
  EXPECT_EQ(g.values[size_t(conv0.output)].name, "1");

  const Node& conv2 = find_node(g, "conv2");
  EXPECT_EQ(conv2.conv.activation, Activation::None);

  const Node& conv4 = find_node(g, "conv4");
  EXPECT_FALSE(conv4.conv.subm);
  EXPECT_TRUE(conv4.conv.rulebook.empty());
  EXPECT_EQ(conv4.conv.kernel_size, (Int3{3, 1, 1}));
  EXPECT_EQ(conv4.conv.stride, (Int3{2, 1, 1}));
  EXPECT_EQ(conv4.conv.padding, (Int3{0, 0, 0}));
  EXPECT_EQ(conv4.conv.dilation, (Int3{1, 1, 1}));

  const Node& add0 = find_node(g, "add0");
  EXPECT_EQ(add0.op, OpType::Add);
  ASSERT_EQ(add0.inputs.size(), 2u);
  EXPECT_EQ(g.values[size_t(add0.inputs[0])].name, "3");
  EXPECT_EQ(g.values[size_t(add0.inputs[1])].name, "1");
  EXPECT_EQ(find_node(g, "relu0").op, OpType::Relu);

  const Node& scatter = find_node(g, "scatter0");
  EXPECT_EQ(scatter.op, OpType::ScatterDense);
  EXPECT_EQ(scatter.dense.input_spatial_shape, (Int3{2, 4, 4}));
  EXPECT_EQ(scatter.dense.output_shape, (std::vector<int64_t>{1, 16, 2, 4, 4}));
  EXPECT_EQ(scatter.dense.format, "zyx");
  EXPECT_EQ(scatter.dense.layout, "NCHW");
  const Node& reshape = find_node(g, "reshape0");
  EXPECT_EQ(reshape.op, OpType::Reshape);
  EXPECT_EQ(reshape.dims, (std::vector<int64_t>{1, 32, 4, 4}));
}

TEST(OnnxImport, WeightsRoundTripAsFp16Bits) {
  ModelDef m = small_centerpoint();
  const EngineBuilder b = parse_onnx(write_model(m, test_file_name()));
  for (const char* name : {"conv0", "conv1", "conv2", "conv3", "conv4"}) {
    const Node& n = find_node(b.graph(), name);
    const InitDef& w = m.init(std::string(name) + ".weight");
    const InitDef& bias = m.init(std::string(name) + ".bias");
    EXPECT_EQ(n.conv.weight.shape(), w.dims) << name;
    EXPECT_EQ(n.conv.weight.device(), Device::Host);
    const std::vector<uint16_t> wb = bits_of(n.conv.weight);
    ASSERT_EQ(wb.size() * 2, w.raw_data.size());
    EXPECT_EQ(std::memcmp(wb.data(), w.raw_data.data(), w.raw_data.size()), 0) << name;
    ASSERT_TRUE(n.conv.bias.defined()) << name;
    EXPECT_EQ(n.conv.bias.shape(), bias.dims);
    const std::vector<uint16_t> bb = bits_of(n.conv.bias);
    EXPECT_EQ(std::memcmp(bb.data(), bias.raw_data.data(), bias.raw_data.size()), 0) << name;
  }
}

TEST(OnnxImport, OutOfOrderNodesAreSorted) {
  ModelDef m = small_centerpoint();
  std::reverse(m.nodes.begin(), m.nodes.end());
  std::swap(m.nodes[2], m.nodes[6]);
  const EngineBuilder b = parse_onnx(write_model(m, test_file_name()));
  const Graph& g = b.graph();
  ASSERT_EQ(g.nodes.size(), 10u);
  expect_topological(g);
  EXPECT_EQ(g.nodes.back().name, "reshape0");
  EXPECT_EQ(g.values[size_t(g.outputs.at(0))].name, "9");
}

TEST(OnnxImport, ConvWithoutBias) {
  ModelDef m = small_centerpoint();
  m.node("conv1").inputs.pop_back();  // (x, weight)
  const EngineBuilder b = parse_onnx(write_model(m, test_file_name()));
  EXPECT_FALSE(find_node(b.graph(), "conv1").conv.bias.defined());
  EXPECT_TRUE(find_node(b.graph(), "conv0").conv.bias.defined());
}

TEST(OnnxImport, EmptyBiasNameMeansNoBias) {
  ModelDef m = small_centerpoint();
  m.node("conv1").inputs[2] = "";  // ONNX's way of leaving an optional input out
  const EngineBuilder b = parse_onnx(write_model(m, test_file_name()));
  EXPECT_FALSE(find_node(b.graph(), "conv1").conv.bias.defined());
}

TEST(OnnxImport, Int32PackedFp16Weights) {
  ModelDef m = small_centerpoint();
  InitDef& w = m.init("conv1.weight");
  std::vector<uint16_t> bits(w.raw_data.size() / 2);
  std::memcpy(bits.data(), w.raw_data.data(), w.raw_data.size());
  w.has_raw = false;
  w.int32_data.assign(bits.begin(), bits.end());
  const EngineBuilder b = parse_onnx(write_model(m, test_file_name()));
  EXPECT_EQ(bits_of(find_node(b.graph(), "conv1").conv.weight), bits);
}

TEST(OnnxImport, InputNameNeedNotBeZeroAndMayBeFloat32) {
  ModelDef m = small_centerpoint();
  m.inputs[0].name = "voxels";
  m.inputs[0].elem_type = 1;  // FLOAT
  m.node("conv0").inputs[0] = "voxels";
  const EngineBuilder b = parse_onnx(write_model(m, test_file_name()));
  EXPECT_EQ(b.graph().values[size_t(b.graph().inputs.at(0))].name, "voxels");
}

TEST(OnnxImport, InitializersListedAsGraphInputsAreNotInputs) {
  ModelDef m = small_centerpoint();
  for (const InitDef& t : m.initializers) m.inputs.push_back({t.name, 10, t.dims});
  const EngineBuilder b = parse_onnx(write_model(m, test_file_name()));
  EXPECT_EQ(b.graph().inputs.size(), 1u);
}

TEST(OnnxImport, UnnamedNodesAreNamedAfterTheirOutput) {
  ModelDef m = small_centerpoint();
  m.node("relu0").name = "";
  const EngineBuilder b = parse_onnx(write_model(m, test_file_name()));
  EXPECT_EQ(find_node(b.graph(), "node_of_5").op, OpType::Relu);
}

TEST(OnnxImport, AttributesWithoutTypeFieldAndPackedLists) {
  ModelDef m = small_centerpoint();
  for (Attr& a : m.node("conv1").attrs) a.write_type = false;  // files before IR version 3
  for (Attr& a : m.node("conv3").attrs) a.packed = true;
  const EngineBuilder b = parse_onnx(write_model(m, test_file_name()));
  EXPECT_EQ(find_node(b.graph(), "conv1").conv.rulebook, "subm1");
  EXPECT_EQ(find_node(b.graph(), "conv3").conv.stride, (Int3{2, 2, 2}));
}

TEST(OnnxImport, UnusedAttributesAreAnnotatedForInspect) {
  ModelDef m = small_centerpoint();
  m.node("conv0").set(attr_int("fixed_launch_points", 5000));
  const EngineBuilder b = parse_onnx(write_model(m, test_file_name()));
  const Node& conv0 = find_node(b.graph(), "conv0");
  for (const char* key : {"fixed_launch_points", "output_padding", "input_shape", "output_shape",
                          "in_channels", "out_channels", "ndim", "groups", "transposed",
                          "input_spatial_shape", "output_spatial_shape"})
    EXPECT_NE(find_info(conv0, key), nullptr) << key;
  // Attributes that became fields of the node are not repeated.
  for (const char* key : {"kernel_size", "stride", "subm", "rulebook", "activation"})
    EXPECT_EQ(find_info(conv0, key), nullptr) << key;
  ASSERT_NE(find_info(conv0, "fixed_launch_points"), nullptr);
  EXPECT_EQ(*find_info(conv0, "fixed_launch_points"), "5000");
  EXPECT_EQ(*find_info(conv0, "input_spatial_shape"), "[9, 8, 8]");
}

TEST(OnnxImport, Int8Attributes) {
  ModelDef m = small_centerpoint();
  NodeDef& conv = m.node("conv1");
  conv.set(attr_string("precision", "int8"));
  conv.set(attr_string("output_precision", "fp16"));
  conv.set(attr_float("input_dynamic_range", 2.5f));
  conv.set(attr_floats("weight_dynamic_ranges", std::vector<float>(8, 0.75f)));
  NodeDef& add = m.node("add0");
  add.op_type = "QuantAdd";
  add.set(attr_float("input0_dynamic_range", 3.f));
  add.set(attr_float("input1_dynamic_range", 4.f));
  add.set(attr_string("precision", "int8"));
  add.set(attr_string("output_precision", "int8"));
  const EngineBuilder b = parse_onnx(write_model(m, test_file_name()));
  const Node& c = find_node(b.graph(), "conv1");
  EXPECT_EQ(c.quant.precision, Precision::Int8);
  EXPECT_EQ(c.quant.output_precision, Precision::Fp16);
  EXPECT_FLOAT_EQ(c.quant.input_dynamic_range, 2.5f);
  EXPECT_EQ(c.quant.weight_dynamic_ranges, std::vector<float>(8, 0.75f));
  const Node& a = find_node(b.graph(), "add0");
  EXPECT_EQ(a.op, OpType::Add);
  EXPECT_EQ(a.quant.precision, Precision::Int8);
  EXPECT_EQ(a.quant.output_precision, Precision::Int8);
  EXPECT_FLOAT_EQ(a.quant.input0_dynamic_range, 3.f);
  EXPECT_FLOAT_EQ(a.quant.input1_dynamic_range, 4.f);
  ASSERT_NE(find_info(a, "onnx_op_type"), nullptr);
  EXPECT_EQ(*find_info(a, "onnx_op_type"), "QuantAdd");
}

TEST(OnnxImport, LeakyReluAndSigmoid) {
  ModelDef m = small_centerpoint();
  m.node("conv1").set(attr_string("activation", "LeakyReLU")).set(attr_float("alpha", 0.1f));
  m.node("conv2").set(attr_string("activation", "Sigmoid"));
  const EngineBuilder b = parse_onnx(write_model(m, test_file_name()));
  EXPECT_EQ(find_node(b.graph(), "conv1").conv.activation, Activation::LeakyReLU);
  EXPECT_FLOAT_EQ(find_node(b.graph(), "conv1").conv.activation_alpha, 0.1f);
  EXPECT_EQ(find_node(b.graph(), "conv2").conv.activation, Activation::Sigmoid);
}

TEST(OnnxImport, OptionalConvAttributesMayBeAbsent) {
  ModelDef m = small_centerpoint();
  for (const char* a : {"inverse", "rulebook", "output_bound", "in_channels", "out_channels",
                        "transposed", "groups", "ndim", "input_spatial_shape",
                        "output_spatial_shape", "output_padding", "input_shape", "output_shape"})
    m.node("conv3").erase(a);
  const EngineBuilder b = parse_onnx(write_model(m, test_file_name()));
  const Node& c = find_node(b.graph(), "conv3");
  EXPECT_FALSE(c.conv.inverse);
  EXPECT_TRUE(c.conv.rulebook.empty());
  EXPECT_EQ(c.conv.output_bound, 0);
}

// BEVFusion exported as xyz: ScatterDense("xyz", [1, C, X, Y, Z]) -> Transpose -> Reshape.
TEST(OnnxImport, BevFusionXyzTail) {
  ModelDef m = small_centerpoint();
  NodeDef& scatter = m.node("scatter0");
  scatter.set(attr_string("format", "xyz"));
  scatter.set(attr_ints("input_spatial_shape", {2, 4, 4}));
  m.nodes.pop_back();  // reshape0
  m.nodes.push_back(
      {"Transpose", "transpose0", {"8"}, {"9"}, {attr_ints("dims", {0, 1, 3, 4, 2})}, ""});
  m.nodes.push_back({"Reshape", "reshape0", {"9"}, {"10"}, {attr_ints("dims", {1, -1, 4, 4})}, ""});
  m.outputs[0].name = "10";
  const EngineBuilder b = parse_onnx(write_model(m, test_file_name()));
  const Node& t = find_node(b.graph(), "transpose0");
  EXPECT_EQ(t.op, OpType::Transpose);
  EXPECT_EQ(t.dims, (std::vector<int64_t>{0, 1, 3, 4, 2}));
  EXPECT_EQ(b.graph().values[size_t(t.output)].shape, (std::vector<int64_t>{1, 16, 4, 4, 2}));
  EXPECT_EQ(b.graph().values[size_t(b.graph().outputs[0])].shape,
            (std::vector<int64_t>{1, 32, 4, 4}));
}

// MinkUNet-style: strided conv, inverse conv on its rulebook, Concat with the skip.
TEST(OnnxImport, InverseConvAndConcat) {
  ModelDef m;
  m.inputs.push_back({"0", 10, {-1, 4}});
  ConvSpec c;
  c.name = "stem", c.x = "0", c.y = "1", c.cin = 4, c.cout = 8, c.rulebook = "subm0";
  add_conv(m, c);
  c = {};
  c.name = "down", c.x = "1", c.y = "2", c.cin = 8, c.cout = 8, c.kernel = {2, 2, 2};
  c.stride = {2, 2, 2}, c.padding = {0, 0, 0}, c.subm = false, c.rulebook = "down1";
  add_conv(m, c);
  c.name = "up", c.x = "2", c.y = "3", c.cout = 6, c.stride = {1, 1, 1};
  add_conv(m, c).set(attr_int("inverse", 1));
  m.nodes.push_back({"Concat", "cat", {"3", "1"}, {"4"}, {attr_int("axis", 1)}, ""});
  m.outputs.push_back({"4", 10, {-1, 14}});
  const EngineBuilder b = parse_onnx(write_model(m, test_file_name()));
  const Node& up = find_node(b.graph(), "up");
  EXPECT_TRUE(up.conv.inverse);
  EXPECT_EQ(up.conv.rulebook, "down1");
  const Node& cat = find_node(b.graph(), "cat");
  EXPECT_EQ(cat.op, OpType::Concat);
  EXPECT_EQ(b.graph().values[size_t(cat.output)].channels, 14);
  EXPECT_TRUE(b.graph().values[size_t(b.graph().outputs[0])].sparse);
}

TEST(OnnxImport, ConcatWithoutAxisOrNegativeAxis) {
  ModelDef m;
  m.inputs.push_back({"0", 10, {-1, 4}});
  m.nodes.push_back({"Relu", "r", {"0"}, {"1"}, {}, ""});
  m.nodes.push_back({"Concat", "cat0", {"0", "1"}, {"2"}, {}, ""});
  m.nodes.push_back({"Concat", "cat1", {"2", "1"}, {"3"}, {attr_int("axis", -1)}, ""});
  m.outputs.push_back({"3", 10, {-1, 12}});
  const EngineBuilder b = parse_onnx(write_model(m, test_file_name()));
  EXPECT_EQ(b.graph().values[size_t(b.graph().outputs[0])].channels, 12);
}

TEST(OnnxImport, LoadEngineOnCpu) {
  BuildOptions o;
  o.backend = Backend::Cpu;
  o.num_threads = 1;
  const auto engine = load_engine_from_onnx(write_model(small_centerpoint(), test_file_name()), o);
  ASSERT_NE(engine, nullptr);
  EXPECT_EQ(engine->num_inputs(), 1);
  EXPECT_EQ(engine->num_outputs(), 1);
  EXPECT_EQ(engine->output_name(0), "9");
}

}  // namespace
}  // namespace scn::test

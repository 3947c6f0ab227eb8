// Bad files: each must give one clear scn::Error naming the file, the node and the attribute.
#include <gtest/gtest.h>

#include <cstring>

#include "onnx_parser/parser_test_util.h"
#include "scn/onnx.h"

namespace scn::test {
namespace {

// ---- the file itself ----------------------------------------------------------------------

TEST(OnnxFileErrors, CannotOpen) {
  const std::string path = temp_dir() + "/does-not-exist.onnx";
  EXPECT_MESSAGE_HAS(parse_error_at(path), path, "cannot open");
  EXPECT_MESSAGE_HAS(parse_error_at(temp_dir()), "cannot open", "directory");
}

TEST(OnnxFileErrors, EmptyFile) {
  const std::string path = temp_dir() + "/" + test_file_name();
  write_bytes(path, "");
  EXPECT_MESSAGE_HAS(parse_error_at(path), path, "not a valid ONNX model", "empty");
}

TEST(OnnxFileErrors, NotProtobuf) {
  const std::string path = temp_dir() + "/" + test_file_name();
  for (const std::string& garbage :
       {std::string("\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff", 12),
        std::string("this is a text file, not an ONNX model\n"),
        std::string("\x0a\x05\x01\x02", 4)}) {
    write_bytes(path, garbage);
    EXPECT_MESSAGE_HAS(parse_error_at(path), path, "not a valid ONNX model");
  }
}

TEST(OnnxFileErrors, ProtobufWithoutGraph) {
  const std::string path = temp_dir() + "/" + test_file_name();
  write_bytes(path, Wire().int_field(1, 7).bytes_field(2, "pytorch").bytes());
  EXPECT_MESSAGE_HAS(parse_error_at(path), path, "not a valid ONNX model", "no graph");
}

TEST(OnnxFileErrors, RandomBytesNeverCrash) {
  const std::string path = temp_dir() + "/" + test_file_name();
  uint32_t x = 7;
  for (int round = 0; round < 200; ++round) {
    std::string bytes(size_t(1 + round * 13 % 700), '\0');
    for (char& c : bytes) {
      x = x * 1664525u + 1013904223u;
      c = char(x >> 24);
    }
    write_bytes(path, bytes);
    EXPECT_THROW(parse_onnx(path), Error) << "round " << round;
  }
}

TEST(OnnxFileErrors, TruncatedFile) {
  const std::string full = encode_model(small_centerpoint());
  const std::string path = temp_dir() + "/" + test_file_name();
  write_bytes(path, full.substr(0, full.size() / 2));
  EXPECT_MESSAGE_HAS(parse_error_at(path), path, "not a valid ONNX model");
  write_bytes(path, full.substr(0, full.size() - 1));
  EXPECT_MESSAGE_HAS(parse_error_at(path), path, "not a valid ONNX model");
  // Every cut gives an scn::Error or, where it falls between two top-level fields after the
  // graph, a complete model; never a crash or another exception type.
  const size_t step = std::max<size_t>(1, full.size() / 1500);
  for (size_t n = 1; n < full.size(); n += step) {
    write_bytes(path, full.substr(0, n));
    try {
      parse_onnx(path);
    } catch (const Error&) {
    }
  }
}

// Random byte changes anywhere in a valid file: an scn::Error or a model, never a crash (this
// test is most useful under -DSCN_SANITIZE=ON).
TEST(OnnxFileErrors, MutatedBytesNeverCrash) {
  const std::string full = encode_model(small_centerpoint());
  const std::string path = temp_dir() + "/" + test_file_name();
  uint32_t x = 12345;
  auto next = [&x] {
    x = x * 1664525u + 1013904223u;
    return x >> 8;
  };
  for (int round = 0; round < 300; ++round) {
    std::string bytes = full;
    for (int k = 0; k < 1 + round % 4; ++k) bytes[next() % bytes.size()] = char(next());
    write_bytes(path, bytes);
    try {
      parse_onnx(path);
    } catch (const Error&) {
    }
    const OnnxReport r = inspect_onnx(path);
    EXPECT_EQ(r.builder == nullptr, !r.errors.empty()) << "round " << round;
  }
}

TEST(OnnxFileErrors, ForgedLengthFields) {
  const std::string graph = encode_graph(small_centerpoint()).bytes();
  const std::string path = temp_dir() + "/" + test_file_name();
  // The graph's length field claims far more bytes than the file has.
  for (uint64_t forged :
       {uint64_t(graph.size()) + 1, uint64_t(1) << 31, uint64_t(1) << 40, ~uint64_t(0)}) {
    Wire model;
    model.int_field(1, 7).tag(7, 2).raw(Wire::varint(forged)).raw(graph);
    write_bytes(path, model.bytes());
    EXPECT_MESSAGE_HAS(parse_error_at(path), path, "not a valid ONNX model");
  }
  // A length inside the graph (an initializer's raw_data) that runs past its enclosing message.
  ModelDef m = small_centerpoint();
  Wire init;
  init.int_field(1, 8)
      .int_field(2, 10)
      .bytes_field(8, "conv0.bias")
      .tag(9, 2)
      .raw(Wire::varint(1000))
      .raw(std::string(16, '\0'));
  Wire g;
  g.raw(encode_graph(m).bytes()).message_field(5, init);
  Wire model;
  model.int_field(1, 7).raw(Wire().bytes_field(7, g.bytes()).bytes());
  write_bytes(path, model.bytes());
  EXPECT_MESSAGE_HAS(parse_error_at(path), path, "not a valid ONNX model");
}

TEST(OnnxFileErrors, ForgedInitializerDims) {
  ModelDef m = small_centerpoint();
  m.init("conv0.weight").dims = {int64_t(1) << 40, 3, 3, 3, 5};
  EXPECT_MESSAGE_HAS(parse_error(m), "conv0", "conv0.weight", "raw_data");
  m.init("conv0.weight").dims = {int64_t(1) << 40, int64_t(1) << 40, 3, 3, 5};
  EXPECT_MESSAGE_HAS(parse_error(m), "conv0", "conv0.weight", "large");
  m.init("conv0.weight").dims = {8, -3, 3, 3, 5};
  EXPECT_MESSAGE_HAS(parse_error(m), "conv0", "conv0.weight", "negative");
}

TEST(OnnxFileErrors, LoadEngineReportsTheParseError) {
  const std::string path = temp_dir() + "/" + test_file_name();
  write_bytes(path, "garbage");
  try {
    load_engine_from_onnx(path, BuildOptions{});
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_MESSAGE_HAS(e.what(), path, "not a valid ONNX model");
  }
}

// ---- graph structure -------------------------------------------------------------------------

TEST(OnnxGraphErrors, UnknownOp) {
  ModelDef m = small_centerpoint();
  m.node("relu0").op_type = "HardSwish";
  EXPECT_MESSAGE_HAS(parse_error(m), test_file_name(), "node 'relu0'",
                     "unknown op type 'HardSwish'");
  // The message lists every op type the registry knows.
  EXPECT_MESSAGE_HAS(parse_error(m),
                     "scn imports Add, Concat, QuantAdd, Relu, Reshape, ScatterDense, "
                     "SparseConvolution, Transpose");
}

TEST(OnnxGraphErrors, UnknownOpOfUnnamedNode) {
  ModelDef m = small_centerpoint();
  m.node("relu0").op_type = "Gelu";
  m.node("relu0").name = "";
  EXPECT_MESSAGE_HAS(parse_error(m), "node 'node_of_5'", "'Gelu'");
}

TEST(OnnxGraphErrors, InputNoNodeProduced) {
  ModelDef m = small_centerpoint();
  m.node("relu0").inputs = {"42"};
  EXPECT_MESSAGE_HAS(parse_error(m), test_file_name(), "node 'relu0'", "input '42'",
                     "not produced");
}

TEST(OnnxGraphErrors, Cycle) {
  ModelDef m = small_centerpoint();
  m.node("add0").inputs = {"3", "5"};  // add0 reads relu0, which reads add0
  EXPECT_MESSAGE_HAS(parse_error(m), test_file_name(), "cycle", "node 'add0'", "node 'relu0'");
}

TEST(OnnxGraphErrors, SelfLoop) {
  ModelDef m = small_centerpoint();
  m.node("relu0").inputs = {"5"};
  EXPECT_MESSAGE_HAS(parse_error(m), "cycle", "node 'relu0'");
}

TEST(OnnxGraphErrors, DuplicateOutputNames) {
  ModelDef m = small_centerpoint();
  m.node("conv2").outputs = {"2"};  // conv1 already produces "2"
  EXPECT_MESSAGE_HAS(parse_error(m), "node 'conv2'", "output '2'", "node 'conv1'");
}

TEST(OnnxGraphErrors, OutputNamedLikeTheGraphInput) {
  ModelDef m = small_centerpoint();
  m.node("conv0").outputs = {"0"};
  EXPECT_MESSAGE_HAS(parse_error(m), "node 'conv0'", "output '0'", "graph input");
}

// ONNX keeps node and value names apart; scn names an input's node after the input, so a node named like the graph
// input is refused with that said (the message once claimed only that the name was used twice)
TEST(OnnxGraphErrors, NodeNamedLikeTheGraphInput) {
  ModelDef m = small_centerpoint();
  m.node("conv1").name = "0";
  EXPECT_MESSAGE_HAS(parse_error(m), test_file_name(), "node name '0' is used twice", "name of a graph input",
                     "rename the node");
}

TEST(OnnxGraphErrors, ZeroGraphInputs) {
  ModelDef m = small_centerpoint();
  m.inputs.clear();
  EXPECT_MESSAGE_HAS(parse_error(m), test_file_name(), "no input");
}

TEST(OnnxGraphErrors, TwoGraphInputs) {
  ModelDef m = small_centerpoint();
  m.inputs.push_back({"extra", 10, {-1, 5}});
  EXPECT_MESSAGE_HAS(parse_error(m), "2 inputs", "'0'", "'extra'");
}

TEST(OnnxGraphErrors, InputChannelsUnknown) {
  ModelDef m = small_centerpoint();
  m.inputs[0].dims = {-1, -1};
  EXPECT_MESSAGE_HAS(parse_error(m), "graph input '0'", "channel count", "'N'");
  m.inputs[0].dims = {-1, 0};
  EXPECT_MESSAGE_HAS(parse_error(m), "graph input '0'", "channel count");
  m.inputs[0].dims = {-1, -2};
  EXPECT_MESSAGE_HAS(parse_error(m), "graph input '0'", "channel count");
}

TEST(OnnxGraphErrors, InputShapeAndType) {
  ModelDef m = small_centerpoint();
  m.inputs[0].dims = {-1, 5, 1};
  EXPECT_MESSAGE_HAS(parse_error(m), "graph input '0'", "3 dimensions", "[N, Cin]");
  m.inputs[0].dims = {-1, 5};
  m.inputs[0].elem_type = 6;  // INT32
  EXPECT_MESSAGE_HAS(parse_error(m), "graph input '0'", "INT32", "FLOAT16");
  m.inputs[0].has_type = false;
  EXPECT_MESSAGE_HAS(parse_error(m), "graph input '0'", "no tensor type");
}

TEST(OnnxGraphErrors, InputChannelsDisagreeWithWeight) {
  ModelDef m = small_centerpoint();
  m.inputs[0].dims = {-1, 4};
  EXPECT_MESSAGE_HAS(parse_error(m), "node 'conv0'", "5 input channels", "'0'", "4");
}

TEST(OnnxGraphErrors, GraphOutputNotProduced) {
  ModelDef m = small_centerpoint();
  m.outputs[0].name = "99";
  EXPECT_MESSAGE_HAS(parse_error(m), test_file_name(), "graph output '99'", "not produced");
  m.outputs.clear();
  EXPECT_MESSAGE_HAS(parse_error(m), "no output");
}

TEST(OnnxGraphErrors, NodeWithTwoOutputs) {
  ModelDef m = small_centerpoint();
  m.node("relu0").outputs = {"5", "5b"};
  EXPECT_MESSAGE_HAS(parse_error(m), "node 'relu0'", "2 outputs");
}

TEST(OnnxGraphErrors, DuplicateAttribute) {
  ModelDef m = small_centerpoint();
  m.node("conv1").attrs.push_back(attr_ints("stride", {1, 1, 1}));
  EXPECT_MESSAGE_HAS(parse_error(m), "node 'conv1'", "attribute 'stride'", "more than once");
}

// ---- SparseConvolution -----------------------------------------------------------------------

TEST(OnnxConvErrors, MissingInitializer) {
  ModelDef m = small_centerpoint();
  m.node("conv1").inputs[1] = "no_such_weight";
  EXPECT_MESSAGE_HAS(parse_error(m), test_file_name(), "node 'conv1'", "'no_such_weight'");
}

TEST(OnnxConvErrors, WeightComputedByTheGraph) {
  ModelDef m = small_centerpoint();
  m.node("conv1").inputs[1] = "0";
  EXPECT_MESSAGE_HAS(parse_error(m), "node 'conv1'", "weight", "initializer");
}

TEST(OnnxConvErrors, InitializerAsActivation) {
  ModelDef m = small_centerpoint();
  m.node("conv1").inputs[0] = "conv0.bias";
  EXPECT_MESSAGE_HAS(parse_error(m), "node 'conv1'", "'conv0.bias'", "is an initializer");
}

TEST(OnnxConvErrors, NonFloat16Initializer) {
  ModelDef m = small_centerpoint();
  InitDef& w = m.init("conv1.weight");
  w.data_type = 1;  // FLOAT
  w.raw_data += w.raw_data;
  EXPECT_MESSAGE_HAS(parse_error(m), "node 'conv1'", "'conv1.weight'", "FLOAT (1)", "FLOAT16 (10)");
}

TEST(OnnxConvErrors, RawDataWrongSize) {
  ModelDef m = small_centerpoint();
  m.init("conv1.weight").raw_data.pop_back();
  EXPECT_MESSAGE_HAS(parse_error(m), "node 'conv1'", "'conv1.weight'", "raw_data", "3455 bytes",
                     "3456 bytes");
  m = small_centerpoint();
  m.init("conv1.bias").raw_data += "xx";
  EXPECT_MESSAGE_HAS(parse_error(m), "node 'conv1'", "'conv1.bias'", "raw_data");
}

TEST(OnnxConvErrors, NoData) {
  ModelDef m = small_centerpoint();
  m.init("conv1.weight").has_raw = false;
  EXPECT_MESSAGE_HAS(parse_error(m), "node 'conv1'", "'conv1.weight'", "no data");
}

TEST(OnnxConvErrors, WeightShapeVsKernelSize) {
  ModelDef m = small_centerpoint();
  m.node("conv1").set(attr_ints("kernel_size", {3, 3, 1}));
  EXPECT_MESSAGE_HAS(parse_error(m), test_file_name(), "node 'conv1' (SparseConvolution)",
                     "attribute 'kernel_size'", "3x3x1", "[8, 3, 3, 3, 8]");
}

TEST(OnnxConvErrors, WeightNot5d) {
  ModelDef m = small_centerpoint();
  m.init("conv1.weight").dims = {8, 27, 8};
  EXPECT_MESSAGE_HAS(parse_error(m), "node 'conv1'", "'conv1.weight'", "[Cout, k0, k1, k2, Cin]");
}

TEST(OnnxConvErrors, BiasShape) {
  ModelDef m = small_centerpoint();
  m.init("conv1.bias").dims = {4, 2};
  EXPECT_MESSAGE_HAS(parse_error(m), "node 'conv1'", "bias", "[4, 2]", "[8]");
}

TEST(OnnxConvErrors, WeightShapeVsInOutChannels) {
  ModelDef m = small_centerpoint();
  m.node("conv1").set(attr_int("in_channels", 16));
  EXPECT_MESSAGE_HAS(parse_error(m), "node 'conv1'", "attribute 'in_channels'", "16",
                     "conv1.weight");
  m = small_centerpoint();
  m.node("conv1").set(attr_int("out_channels", 9));
  EXPECT_MESSAGE_HAS(parse_error(m), "node 'conv1'", "attribute 'out_channels'", "9");
}

TEST(OnnxConvErrors, Transposed) {
  ModelDef m = small_centerpoint();
  m.node("conv3").set(attr_int("transposed", 1));
  EXPECT_MESSAGE_HAS(parse_error(m), "node 'conv3'", "attribute 'transposed'", "not supported");
}

TEST(OnnxConvErrors, Groups) {
  ModelDef m = small_centerpoint();
  m.node("conv3").set(attr_int("groups", 2));
  EXPECT_MESSAGE_HAS(parse_error(m), "node 'conv3'", "attribute 'groups'", "groups=2");
}

TEST(OnnxConvErrors, Ndim) {
  ModelDef m = small_centerpoint();
  m.node("conv3").set(attr_int("ndim", 2));
  EXPECT_MESSAGE_HAS(parse_error(m), "node 'conv3'", "attribute 'ndim'");
}

TEST(OnnxConvErrors, MissingKernelSize) {
  ModelDef m = small_centerpoint();
  m.node("conv1").erase("kernel_size");
  EXPECT_MESSAGE_HAS(parse_error(m), test_file_name(), "node 'conv1'", "attribute 'kernel_size'",
                     "missing");
}

TEST(OnnxConvErrors, MissingRequiredAttributes) {
  for (const char* a : {"stride", "padding", "dilation", "subm", "activation"}) {
    ModelDef m = small_centerpoint();
    m.node("conv1").erase(a);
    EXPECT_MESSAGE_HAS(parse_error(m), "node 'conv1'", std::string("attribute '") + a + "'",
                       "missing");
  }
}

TEST(OnnxConvErrors, WrongCountInStride) {
  ModelDef m = small_centerpoint();
  m.node("conv3").set(attr_ints("stride", {2, 2}));
  EXPECT_MESSAGE_HAS(parse_error(m), "node 'conv3'", "attribute 'stride'", "expected ints[3]",
                     "found 2 ints");
}

TEST(OnnxConvErrors, AttributeTypeMismatch) {
  ModelDef m = small_centerpoint();
  m.node("conv1").set(attr_string("subm", "1"));
  EXPECT_MESSAGE_HAS(parse_error(m), "node 'conv1'", "attribute 'subm'", "expected an int",
                     "found a string");
  m = small_centerpoint();
  m.node("conv1").set(attr_float("kernel_size", 3.f));
  EXPECT_MESSAGE_HAS(parse_error(m), "attribute 'kernel_size'", "expected ints", "found a float");
  m = small_centerpoint();
  m.node("conv1").set(attr_int("activation", 1));
  EXPECT_MESSAGE_HAS(parse_error(m), "attribute 'activation'", "expected a string", "found an int");
}

// A declared type whose value field is missing or accompanied by another one (ONNX's checker: exactly the declared
// type's field) is an error naming the attribute: through a.i() such a `subm` read as 0, a submanifold conv imported
// as a strided one, and a LeakyReLU's alpha as 0 (a plain ReLU).
TEST(OnnxConvErrors, DeclaredTypeWithoutItsValue) {
  auto declared = [](Attr a, int type) {
    a.declared_type = type;
    return a;
  };
  ModelDef m = small_centerpoint();
  m.node("conv1").set(declared(attr_ints("subm", {1}), Attr::kInt));
  EXPECT_MESSAGE_HAS(parse_error(m), test_file_name(), "node 'conv1'", "attribute 'subm'", "declared int",
                     "holds no such value", "1 ints [1]");
  m = small_centerpoint();
  m.node("conv1").set(declared(attr_ints("subm", {}), Attr::kInt));
  EXPECT_MESSAGE_HAS(parse_error(m), "attribute 'subm'", "declared int", "holds no such value");
  m = small_centerpoint();
  m.node("conv1").set(attr_string("activation", "LeakyReLU"));
  m.node("conv1").set(declared(attr_int("alpha", 1), Attr::kFloat));
  EXPECT_MESSAGE_HAS(parse_error(m), "node 'conv1'", "attribute 'alpha'", "declared float", "an int (1)");
  m = small_centerpoint();
  m.node("conv1").set(declared(attr_float("rulebook", 2.f), Attr::kString));
  EXPECT_MESSAGE_HAS(parse_error(m), "attribute 'rulebook'", "declared string", "a float (2)");
  m = small_centerpoint();
  m.node("conv1").set(declared(attr_ints("weight_dynamic_ranges", {1, 2}), Attr::kFloats));
  EXPECT_MESSAGE_HAS(parse_error(m), "attribute 'weight_dynamic_ranges'", "declared floats", "also holds",
                     "2 ints [1, 2]");
}

TEST(OnnxConvErrors, SubmNotBoolean) {
  ModelDef m = small_centerpoint();
  m.node("conv1").set(attr_int("subm", 2));
  EXPECT_MESSAGE_HAS(parse_error(m), "attribute 'subm'", "0 or 1");
}

TEST(OnnxConvErrors, OutOfRangeKernel) {
  ModelDef m = small_centerpoint();
  m.node("conv1").set(attr_ints("dilation", {1, int64_t(1) << 33, 1}));
  EXPECT_MESSAGE_HAS(parse_error(m), "attribute 'dilation'", "out of range");
}

// output_bound plans int32 device rows: a bound beyond 2^31 - 1 once wrapped the byte sizes of the buffers to 0
TEST(OnnxConvErrors, OutputBoundAboveTheRowLimit) {
  for (int64_t bound : {int64_t(1) << 62, int64_t(2147483648)}) {
    ModelDef m = small_centerpoint();
    m.node("conv3").set(attr_int("output_bound", bound));
    EXPECT_MESSAGE_HAS(parse_error(m), test_file_name(), "node 'conv3'", "attribute 'output_bound'", "[0, 2147483647]",
                       std::to_string(bound));
  }
  ModelDef m = small_centerpoint();
  m.node("conv3").set(attr_int("output_bound", 2147483647));
  EXPECT_NO_THROW(parse_onnx(write_model(m, test_file_name()))) << "the largest bound is accepted";
}

TEST(OnnxConvErrors, UnknownActivation) {
  ModelDef m = small_centerpoint();
  m.node("conv1").set(attr_string("activation", "relu"));
  EXPECT_MESSAGE_HAS(parse_error(m), "node 'conv1'", "attribute 'activation'", "\"relu\"",
                     "\"ReLU\"");
}

TEST(OnnxConvErrors, LeakyReluNeedsAlpha) {
  ModelDef m = small_centerpoint();
  m.node("conv1").set(attr_string("activation", "LeakyReLU"));
  EXPECT_MESSAGE_HAS(parse_error(m), "node 'conv1'", "attribute 'alpha'", "missing");
}

TEST(OnnxConvErrors, UnknownPrecision) {
  ModelDef m = small_centerpoint();
  m.node("conv1").set(attr_string("precision", "fp32"));
  EXPECT_MESSAGE_HAS(parse_error(m), "node 'conv1'", "attribute 'precision'", "\"fp32\"");
  m = small_centerpoint();
  m.node("add0").set(attr_string("output_precision", "int4"));
  EXPECT_MESSAGE_HAS(parse_error(m), "node 'add0'", "attribute 'output_precision'", "\"int4\"");
}

TEST(OnnxConvErrors, BadDynamicRanges) {
  ModelDef m = small_centerpoint();
  m.node("conv1").set(attr_float("input_dynamic_range", -1.f));
  EXPECT_MESSAGE_HAS(parse_error(m), "node 'conv1'", "attribute 'input_dynamic_range'", "positive");
  m = small_centerpoint();
  m.node("conv1").set(attr_floats("weight_dynamic_ranges", {1.f, 2.f}));
  EXPECT_MESSAGE_HAS(parse_error(m), "node 'conv1'", "weight_dynamic_ranges", "2 values", "8");
}

TEST(OnnxConvErrors, WrongInputCount) {
  ModelDef m = small_centerpoint();
  m.node("conv1").inputs = {"1"};
  EXPECT_MESSAGE_HAS(parse_error(m), "node 'conv1'", "expected 2 to 3 inputs", "got 1");
  m = small_centerpoint();
  m.node("conv1").inputs.push_back("conv1.bias");
  EXPECT_MESSAGE_HAS(parse_error(m), "node 'conv1'", "got 4");
}

TEST(OnnxConvErrors, SpatialShapesDisagree) {
  ModelDef m = small_centerpoint();
  m.node("conv3").set(attr_ints("output_spatial_shape", {5, 4, 3}));
  EXPECT_MESSAGE_HAS(parse_error(m), "node 'conv3'", "attribute 'output_spatial_shape'", "5x4x3",
                     "5x4x4");
  m = small_centerpoint();
  m.node("conv1").set(attr_ints("input_spatial_shape", {9, 8}));
  EXPECT_MESSAGE_HAS(parse_error(m), "node 'conv1'", "attribute 'input_spatial_shape'",
                     "expected ints[3]");
}

TEST(OnnxConvErrors, InverseConvRulebookNamesNoStridedConv) {
  ModelDef m = small_centerpoint();
  // "subm1" belongs to submanifold convs: no strided kernel map to reverse.
  m.node("conv2").set(attr_int("inverse", 1)).set(attr_int("subm", 0));
  EXPECT_MESSAGE_HAS(parse_error(m), "node 'conv2'", "attribute 'rulebook'", "'subm1'",
                     "no earlier strided");
  m.node("conv2").erase("rulebook");
  EXPECT_MESSAGE_HAS(parse_error(m), "node 'conv2'", "attribute 'rulebook'", "inverse");
}

TEST(OnnxConvErrors, SubmAndInverseTogether) {
  ModelDef m = small_centerpoint();
  m.node("conv2").set(attr_int("inverse", 1));  // still subm=1
  EXPECT_MESSAGE_HAS(parse_error(m), "node 'conv2'", "attribute 'inverse'", "subm=1");
}

// ---- the other ops ---------------------------------------------------------------------------

TEST(OnnxOpErrors, AddInputs) {
  ModelDef m = small_centerpoint();
  m.node("add0").inputs = {"3"};
  EXPECT_MESSAGE_HAS(parse_error(m), "node 'add0' (Add)", "expected 2 inputs", "got 1");
}

TEST(OnnxOpErrors, AddChannelsDiffer) {
  ModelDef m = small_centerpoint();
  m.node("add0").inputs = {"3", "0"};
  EXPECT_MESSAGE_HAS(parse_error(m), "node 'add0'", "8", "5", "channels");
}

TEST(OnnxOpErrors, ReluInputs) {
  ModelDef m = small_centerpoint();
  m.node("relu0").inputs = {"4", "4"};
  EXPECT_MESSAGE_HAS(parse_error(m), "node 'relu0' (Relu)", "expected 1 input");
}

TEST(OnnxOpErrors, ReshapeWithoutDims) {
  ModelDef m = small_centerpoint();
  m.node("reshape0").erase("dims");
  EXPECT_MESSAGE_HAS(parse_error(m), test_file_name(), "node 'reshape0' (Reshape)",
                     "attribute 'dims'", "missing");
}

TEST(OnnxOpErrors, StandardOnnxReshape) {
  ModelDef m = small_centerpoint();
  m.initializers.push_back({"shape", 7, {4}, true, std::string(32, '\0'), {}});
  m.node("reshape0").inputs.push_back("shape");
  m.node("reshape0").erase("dims");
  EXPECT_MESSAGE_HAS(parse_error(m), "node 'reshape0'", "attribute 'dims'", "not from standard");
}

TEST(OnnxOpErrors, ReshapeWrongElementCount) {
  ModelDef m = small_centerpoint();
  m.node("reshape0").set(attr_ints("dims", {1, 16, 4, 4}));
  EXPECT_MESSAGE_HAS(parse_error(m), "node 'reshape0'", "512", "256");
}

TEST(OnnxOpErrors, TransposeBadPerm) {
  ModelDef m = small_centerpoint();
  m.node("reshape0") = {
      "Transpose", "transpose0", {"8"}, {"9"}, {attr_ints("dims", {0, 1, 4, 2, 4})}, ""};
  EXPECT_MESSAGE_HAS(parse_error(m), "node 'transpose0' (Transpose)", "attribute 'dims'",
                     "[0, 1, 4, 2, 4]", "not a permutation");
  m.node("transpose0").set(attr_ints("dims", {0, 1, 3, 2}));
  EXPECT_MESSAGE_HAS(parse_error(m), "node 'transpose0'", "attribute 'dims'", "4 axes", "5");
  m.node("transpose0").erase("dims").set(attr_ints("perm", {0, 1, 2, 4, 3}));
  EXPECT_MESSAGE_HAS(parse_error(m), "node 'transpose0'", "attribute 'dims'", "missing", "'perm'");
}

TEST(OnnxOpErrors, ScatterDenseAttributes) {
  ModelDef m = small_centerpoint();
  m.node("scatter0").set(attr_string("format", "yxz"));
  EXPECT_MESSAGE_HAS(parse_error(m), "node 'scatter0'", "attribute 'format'", "\"yxz\"");
  m = small_centerpoint();
  m.node("scatter0").set(attr_string("output_layout", "NCHW32"));
  EXPECT_MESSAGE_HAS(parse_error(m), "node 'scatter0'", "NCHW32");
  m = small_centerpoint();
  m.node("scatter0").set(attr_ints("output_shape", {1, 16, 2, 4}));
  EXPECT_MESSAGE_HAS(parse_error(m), "node 'scatter0'", "attribute 'output_shape'",
                     "expected ints[5]");
  m = small_centerpoint();
  m.node("scatter0").erase("input_spatial_shape");
  EXPECT_MESSAGE_HAS(parse_error(m), "node 'scatter0'", "attribute 'input_spatial_shape'",
                     "missing");
}

TEST(OnnxOpErrors, ConcatAxis) {
  ModelDef m = small_centerpoint();
  m.node("add0").op_type = "Concat";
  m.node("add0").set(attr_int("axis", 0));
  EXPECT_MESSAGE_HAS(parse_error(m), "node 'add0' (Concat)", "attribute 'axis'", "found 0");
}

TEST(OnnxOpErrors, DenseInputToSparseOp) {
  ModelDef m = small_centerpoint();
  m.nodes.push_back({"Relu", "relu_dense", {"8"}, {"10"}, {}, ""});
  m.outputs.push_back({"10", 10, {}});
  EXPECT_MESSAGE_HAS(parse_error(m), "node 'relu_dense'", "sparse");
}

}  // namespace
}  // namespace scn::test

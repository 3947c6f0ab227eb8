// The catalogue of hostile inputs, ONNX files (O): each bad model file with the error it must give, under the id
// docs/errors.md gives it (catalogue_util.h: what every case checks).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "robustness/catalogue_util.h"

namespace scn::test {
namespace {

using namespace catalogue;

// ---- O: ONNX files ----------------------------------------------------------------------------

TEST(Catalogue, O01_OnnxTruncated) {
  const std::string full = encode_model(small_centerpoint());
  for (size_t cut : {full.size() / 2, full.size() - 1, size_t(3)}) {
    EXPECT_HAS(onnx_bytes_error(full.substr(0, cut)), case_file(".onnx"), "not a valid ONNX model", "truncated");
  }
}

TEST(Catalogue, O02_OnnxForgedLength) {
  // The graph field (7, length-delimited) claims 2 GiB but three bytes follow.
  Wire w;
  w.int_field(1, 7).tag(7, 2).raw(Wire::varint(0x7fffffffu)).raw("abc");
  EXPECT_HAS(onnx_bytes_error(w.bytes()), "not a valid ONNX model");
  // A length varint longer than 10 bytes.
  Wire v;
  v.int_field(1, 7).tag(7, 2).raw(std::string(12, '\xff')).raw("x");
  EXPECT_HAS(onnx_bytes_error(v.bytes()), "not a valid ONNX model");
  // A raw_data length inside an initializer that runs past the end of the graph.
  std::string good = encode_model(small_centerpoint());
  const std::string tail = good.substr(good.size() / 3);
  std::string forged = good.substr(0, good.size() / 3);
  forged += Wire().tag(9, 2).raw(Wire::varint(1u << 30)).bytes() + tail;
  EXPECT_HAS(onnx_bytes_error(forged), "not a valid ONNX model");
}

TEST(Catalogue, O03_OnnxNotAModel) {
  EXPECT_HAS(onnx_bytes_error(""), "not a valid ONNX model", "empty");
  std::string noise;
  uint32_t x = 99;
  for (int i = 0; i < 4096; ++i) noise.push_back(char((x = x * 1103515245u + 12345u) >> 24));
  EXPECT_HAS(onnx_bytes_error(noise), "not a valid ONNX model");
  // A valid protobuf message without a graph.
  EXPECT_HAS(onnx_bytes_error(Wire().int_field(1, 7).bytes()), "no graph");
  const std::string missing = temp_dir() + "/no_such_model.onnx";
  EXPECT_HAS(error_of([&] { parse_onnx(missing); }), missing, "cannot open");
  EXPECT_HAS(error_of([&] { parse_onnx(temp_dir()); }), "cannot open", "directory");
}

TEST(Catalogue, O04_OnnxGraphInputCount) {
  ModelDef m = small_centerpoint();
  m.inputs.push_back({"extra", 10, {-1, 5}});
  EXPECT_HAS(onnx_error(m), "the graph has 2 inputs", "'0'", "'extra'", "exactly one");
  m.inputs.clear();
  EXPECT_HAS(onnx_error(m), "the graph has no input");
}

TEST(Catalogue, O05_OnnxGraphInputType) {
  ModelDef m = small_centerpoint();
  m.inputs[0].dims = {-1, -1};
  EXPECT_HAS(onnx_error(m), "graph input '0'", "channel count", "'N'");
  m = small_centerpoint();
  m.inputs[0].elem_type = 6;
  EXPECT_HAS(onnx_error(m), "graph input '0'", "INT32", "FLOAT16");
}

TEST(Catalogue, O06_OnnxCycle) {
  ModelDef m = small_centerpoint();
  m.node("add0").inputs = {"3", "5"};  // add0 reads relu0, which reads add0
  EXPECT_HAS(onnx_error(m), "the graph has a cycle", "node 'add0' (Add)", "node 'relu0' (Relu)");
}

TEST(Catalogue, O07_OnnxDanglingName) {
  ModelDef m = small_centerpoint();
  m.node("relu0").inputs = {"missing_tensor"};
  EXPECT_HAS(onnx_error(m), "node 'relu0' (Relu)", "input 'missing_tensor'", "not produced by any node");
}

TEST(Catalogue, O08_OnnxDuplicateOutputName) {
  ModelDef m = small_centerpoint();
  m.node("conv2").outputs = {"2"};  // conv1 already produces "2"
  EXPECT_HAS(onnx_error(m), "node 'conv2'", "output '2' is also produced by node 'conv1'");
}

TEST(Catalogue, O09_OnnxUnknownOp) {
  ModelDef m = small_centerpoint();
  m.node("relu0").op_type = "Gelu";
  EXPECT_HAS(onnx_error(m), "node 'relu0' (Gelu)", "unknown op type 'Gelu'", "SparseConvolution");
}

TEST(Catalogue, O10_OnnxMissingInitializer) {
  ModelDef m = small_centerpoint();
  m.node("conv1").inputs[1] = "no_such_weight";
  EXPECT_HAS(onnx_error(m), "node 'conv1' (SparseConvolution)", "'no_such_weight'");
}

TEST(Catalogue, O11_OnnxNonFp16Initializer) {
  ModelDef m = small_centerpoint();
  InitDef& w = m.init("conv1.weight");
  w.data_type = 1;  // FLOAT
  w.raw_data += w.raw_data;
  EXPECT_HAS(onnx_error(m), "node 'conv1'", "weight initializer 'conv1.weight'", "FLOAT (1)", "FLOAT16 (10)");
}

TEST(Catalogue, O12_OnnxInitializerWrongSize) {
  ModelDef m = small_centerpoint();
  m.init("conv1.weight").raw_data.pop_back();
  EXPECT_HAS(onnx_error(m), "node 'conv1'", "'conv1.weight'", "bytes of raw_data", "needs");
  m = small_centerpoint();
  m.init("conv1.bias").raw_data += "xx";
  EXPECT_HAS(onnx_error(m), "node 'conv1'", "'conv1.bias'", "raw_data");
}

TEST(Catalogue, O13_OnnxInitializerForgedDims) {
  ModelDef m = small_centerpoint();
  m.init("conv0.weight").dims = {int64_t(1) << 40, int64_t(1) << 40, 3, 3, 5};
  EXPECT_HAS(onnx_error(m), "node 'conv0'", "'conv0.weight'", "impossibly large shape");
  m.init("conv0.weight").dims = {8, -3, 3, 3, 5};
  EXPECT_HAS(onnx_error(m), "node 'conv0'", "'conv0.weight'", "negative dimension");
}

TEST(Catalogue, O14_OnnxWeightVsKernelSize) {
  ModelDef m = small_centerpoint();
  m.node("conv1").set(attr_ints("kernel_size", {3, 3, 1}));
  EXPECT_HAS(onnx_error(m), "node 'conv1' (SparseConvolution)", "attribute 'kernel_size'", "3x3x1", "'conv1.weight'",
             "[8, 3, 3, 3, 8]");
}

TEST(Catalogue, O15_OnnxWeightVsChannels) {
  ModelDef m = small_centerpoint();
  m.node("conv1").set(attr_int("in_channels", 16));
  EXPECT_HAS(onnx_error(m), "node 'conv1'", "attribute 'in_channels'", "16 disagrees", "[8, 3, 3, 3, 8]");
  // The weight's Cin against the channels of the tensor the conv reads.
  m = small_centerpoint();
  m.init("conv0.weight") = fp16_init("conv0.weight", {8, 3, 3, 3, 4}, 1);
  m.node("conv0").set(attr_int("in_channels", 4));
  EXPECT_HAS(onnx_error(m), "node 'conv0'", "weight has 4 input channels but input '0' has 5");
}

TEST(Catalogue, O16_OnnxEvenKernelSubm) {
  ModelDef m = small_centerpoint();
  m.node("conv1").set(attr_ints("kernel_size", {2, 3, 3}));
  m.init("conv1.weight") = fp16_init("conv1.weight", {8, 2, 3, 3, 8}, 2);
  EXPECT_HAS(onnx_error(m), "node 'conv1' (SparseConvolution)", "submanifold conv needs an odd kernel", "2x3x3");
}

TEST(Catalogue, O17_OnnxStrideZero) {
  ModelDef m = small_centerpoint();
  m.node("conv3").set(attr_ints("stride", {0, 2, 2}));
  EXPECT_HAS(onnx_error(m), "node 'conv3' (SparseConvolution)", "attribute 'stride'", "0x2x2", ">= 1");
  m.node("conv3").set(attr_ints("stride", {2, -2, 2}));
  EXPECT_HAS(onnx_error(m), "node 'conv3'", "attribute 'stride'", ">= 1");
  m = small_centerpoint();
  m.node("conv1").set(attr_ints("dilation", {1, 0, 1}));
  EXPECT_HAS(onnx_error(m), "node 'conv1'", "attribute 'dilation'", ">= 1");
}

TEST(Catalogue, O18_OnnxNegativePadding) {
  ModelDef m = small_centerpoint();
  m.node("conv3").set(attr_ints("padding", {-1, 1, 1}));
  EXPECT_HAS(onnx_error(m), "node 'conv3' (SparseConvolution)", "attribute 'padding'", "-1x1x1", ">= 0");
}

TEST(Catalogue, O19_OnnxInverseConvUnknownRulebook) {
  ModelDef m = small_centerpoint();
  // conv4 becomes an inverse conv of a rulebook no strided conv has.
  m.node("conv4").set(attr_int("inverse", 1)).set(attr_string("rulebook", "spconv9"));
  EXPECT_HAS(onnx_error(m), "node 'conv4' (SparseConvolution)", "attribute 'rulebook'", "'spconv9'",
             "names no earlier strided");
  // A rulebook that only a submanifold conv carries.
  m.node("conv4").set(attr_string("rulebook", "subm1"));
  EXPECT_HAS(onnx_error(m), "node 'conv4'", "'subm1'", "names no earlier strided");
}

TEST(Catalogue, O20_OnnxAddOnDifferentSites) {
  ModelDef m = small_centerpoint();
  // conv3's output (16 ch, 5x4x4 sites) + conv4's output (16 ch, 2x4x4 sites).
  m.nodes.push_back({"Add", "add_bad", {"6", "7"}, {"10"}, {}, ""});
  m.outputs.push_back({"10", 10, {}});
  EXPECT_HAS(onnx_error(m), "node 'add_bad' (Add)", "input '7' lives on other voxel sites than input '6'");
}

TEST(Catalogue, O21_OnnxReshapeElementCount) {
  ModelDef m = small_centerpoint();
  m.node("reshape0").set(attr_ints("dims", {1, 16, 4, 4}));
  EXPECT_HAS(onnx_error(m), "node 'reshape0' (Reshape)", "cannot reshape 512 elements", "to 256");
}

TEST(Catalogue, O22_OnnxReshapeOverflowingDims) {
  // 1536 * 12009599006321323 = 2^64 + 512: wraps to the input's 512 elements in int64.
  ModelDef m = small_centerpoint();
  m.node("reshape0").set(attr_ints("dims", {1536, 12009599006321323LL}));
  EXPECT_HAS(onnx_error(m), "node 'reshape0' (Reshape)", "overflow");
}

TEST(Catalogue, O23_OnnxTransposeBadPermutation) {
  ModelDef m = small_centerpoint();
  m.node("reshape0") = {"Transpose", "transpose0", {"8"}, {"9"}, {attr_ints("dims", {0, 1, 4, 2, 4})}, ""};
  EXPECT_HAS(onnx_error(m), "node 'transpose0' (Transpose)", "attribute 'dims'", "not a permutation");
  m.node("transpose0").set(attr_ints("dims", {0, 1, 2, 3}));
  EXPECT_HAS(onnx_error(m), "node 'transpose0'", "attribute 'dims'", "4 axes", "5");
  m.node("transpose0").set(attr_ints("dims", {1, 0, 2, 3, 4}));
  EXPECT_HAS(onnx_error(m), "node 'transpose0'", "batch axis must stay first");
}

TEST(Catalogue, O24_OnnxGraphOutputNotProduced) {
  ModelDef m = small_centerpoint();
  m.outputs[0].name = "99";
  EXPECT_HAS(onnx_error(m), "graph output '99' is not produced by any node");
  m.outputs.clear();
  EXPECT_HAS(onnx_error(m), "the graph has no output");
}

TEST(Catalogue, O25_OnnxNonFiniteWeights) {
  for (uint16_t bits : {uint16_t(0x7e00), uint16_t(0x7c00), uint16_t(0xfc00)}) {  // NaN, +Inf, -Inf
    ModelDef m = small_centerpoint();
    std::memcpy(&m.init("conv1.weight").raw_data[10], &bits, 2);
    EXPECT_HAS(onnx_error(m), "node 'conv1' (SparseConvolution)", "weight", "[5]", "finite");
    m = small_centerpoint();
    std::memcpy(&m.init("conv1.bias").raw_data[2], &bits, 2);
    EXPECT_HAS(onnx_error(m), "node 'conv1' (SparseConvolution)", "bias", "[1]", "finite");
  }
}

TEST(Catalogue, O26_OnnxAttributeProblems) {
  ModelDef m = small_centerpoint();
  m.node("conv1").erase("kernel_size");
  EXPECT_HAS(onnx_error(m), "node 'conv1'", "attribute 'kernel_size'", "required attribute is missing");
  m = small_centerpoint();
  m.node("conv1").set(attr_float("subm", 1.f));
  EXPECT_HAS(onnx_error(m), "node 'conv1'", "attribute 'subm'", "expected an int", "found a float");
  m = small_centerpoint();
  m.node("conv3").set(attr_int("transposed", 1));
  EXPECT_HAS(onnx_error(m), "node 'conv3'", "attribute 'transposed'", "not supported");
  m = small_centerpoint();
  m.node("conv1").set(attr_ints("dilation", {1, int64_t(1) << 40, 1}));
  EXPECT_HAS(onnx_error(m), "node 'conv1'", "attribute 'dilation'", "out of range");
}

TEST(Catalogue, O27_OnnxHugeGeometryAttributes) {
  // Values that fit int32 but whose arithmetic (padding + index, dilation * kernel) would not.
  ModelDef m = small_centerpoint();
  m.node("conv3").set(attr_ints("padding", {1, 2000000000, 1}));
  EXPECT_HAS(onnx_error(m), "node 'conv3'", "attribute 'padding'");
  m = small_centerpoint();
  m.node("conv1").set(attr_ints("dilation", {1, 2000000000, 1}));
  EXPECT_HAS(onnx_error(m), "node 'conv1'", "attribute 'dilation'");
}

}  // namespace
}  // namespace scn::test

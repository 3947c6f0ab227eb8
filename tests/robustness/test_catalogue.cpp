// The catalogue of hostile inputs: every bad file, bad frame and misuse scn is known to meet,
// each with the error it must give. docs/errors.md documents the same cases under the same ids
// (O = ONNX files, T = .tensor files, I = input frames, E = engine / API use, C = the `scn run`
// command line); the test Catalogue.EveryCaseIsDocumented keeps the two lists in step.
//
// Each case checks: an scn::Error (never another exception, never a crash), whose message names
// the file / node / attribute / input row at fault; for command-line cases an exit status != 0,
// the message on stderr and no output file (nor a temporary one) left behind.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "core/half.h"
#include "onnx_parser/onnx_writer.h"
#include "cli/cli_runner.h"
#include "scn/engine.h"
#include "scn/onnx.h"

namespace scn::test {
namespace {

namespace fs = std::filesystem;

// ---- helpers ----------------------------------------------------------------------------------

/// The message of the scn::Error that fn throws; a test failure when it throws nothing or
/// something else.
std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    std::printf("[message] %s\n", e.what());
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "threw a non-scn exception: " << e.what();
    return e.what();
  } catch (...) {
    ADD_FAILURE() << "threw a non-std exception";
    return "";
  }
  ADD_FAILURE() << "no error was raised";
  return "";
}

#define EXPECT_HAS(message, ...)                                                              \
  do {                                                                                        \
    const std::string cat_msg_ = (message);                                                   \
    for (const std::string& needle : std::vector<std::string>{__VA_ARGS__})                   \
      EXPECT_NE(cat_msg_.find(needle), std::string::npos)                                     \
          << "expected \"" << needle << "\" in the message:\n  " << cat_msg_;                 \
  } while (0)

std::string case_file(const std::string& ext) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  return temp_dir() + "/" + info->name() + ext;
}

std::string write_case_model(const ModelDef& m) {
  const std::string p = case_file(".onnx");
  write_bytes(p, encode_model(m));
  return p;
}

/// parse_onnx's error for the model, and the same error from inspect_onnx (which collects
/// instead of throwing): both paths must report it.
std::string onnx_error(const ModelDef& m) {
  const std::string path = write_case_model(m);
  const std::string msg = error_of([&] { parse_onnx(path); });
  const OnnxReport r = inspect_onnx(path);
  EXPECT_FALSE(r.errors.empty()) << "inspect_onnx found no error in " << path;
  EXPECT_EQ(r.builder, nullptr);
  return msg;
}

std::string onnx_bytes_error(const std::string& bytes) {
  const std::string path = case_file(".onnx");
  write_bytes(path, bytes);
  const std::string msg = error_of([&] { parse_onnx(path); });
  EXPECT_FALSE(inspect_onnx(path).errors.empty());
  return msg;
}

/// Writes a .tensor file word by word (header and payload as int32 words, plus extra bytes).
std::string write_tensor_words(const std::vector<int32_t>& words, size_t extra_bytes = 0) {
  const std::string p = case_file(".tensor");
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(words.data()), std::streamsize(words.size() * 4));
  for (size_t i = 0; i < extra_bytes; ++i) f.put(char(i * 13 + 5));
  return p;
}

constexpr int32_t kMagic = 0x33ff1101;

/// Distinct sites of the 9 x 8 x 8 grid of small_centerpoint (batch 0) and finite features.
struct Input {
  Tensor features, indices;
  Int3 grid{9, 8, 8};
};

Input good_input(int rows = 60, int channels = 5) {
  Input in;
  in.features = Tensor::empty({rows, channels}, DType::Float16);
  in.indices = Tensor::empty({rows, 4}, DType::Int32);
  std::vector<bool> used(9 * 8 * 8, false);
  uint32_t x = 777;
  for (int r = 0; r < rows;) {
    x = x * 1664525u + 1013904223u;
    const int cell = int((x >> 8) % (9 * 8 * 8));
    if (used[size_t(cell)]) continue;
    used[size_t(cell)] = true;
    int32_t* p = in.indices.ptr<int32_t>() + 4 * r;
    p[0] = 0, p[1] = cell / 64, p[2] = (cell / 8) % 8, p[3] = cell % 8;
    ++r;
  }
  for (int i = 0; i < rows * channels; ++i)
    in.features.ptr<uint16_t>()[i] = float_to_half(float((i * 37) % 23) / 7.f - 1.3f);
  return in;
}

BuildOptions cpu(Precision p = Precision::Fp16) {
  BuildOptions o;
  o.backend = Backend::Cpu;
  o.precision = p;
  o.num_threads = 2;
  return o;
}

std::unique_ptr<Engine> small_engine() {
  return parse_onnx(write_case_model(small_centerpoint())).build(cpu());
}

std::string set_input_error(const Input& in, int batch = 1) {
  auto e = small_engine();
  InputLabels labels;
  labels.features = "feats.tensor";
  labels.indices = "idx.tensor";
  return error_of([&] { e->set_input(0, in.features, in.indices, in.grid, batch, labels); });
}

std::string forward_error(const Input& in, int batch = 1) {
  auto e = small_engine();
  return error_of([&] {
    e->set_input(0, in.features, in.indices, in.grid, batch);
    e->forward();
  });
}

void set_index(Input& in, int row, std::array<int32_t, 4> v) {
  std::memcpy(in.indices.ptr<int32_t>() + 4 * row, v.data(), 16);
}

// ---- O: ONNX files ----------------------------------------------------------------------------

TEST(Catalogue, O01_OnnxTruncated) {
  const std::string full = encode_model(small_centerpoint());
  for (size_t cut : {full.size() / 2, full.size() - 1, size_t(3)}) {
    EXPECT_HAS(onnx_bytes_error(full.substr(0, cut)), case_file(".onnx"), "not a valid ONNX model",
               "truncated");
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
  EXPECT_HAS(onnx_error(m), "node 'conv1' (SparseConvolution)", "attribute 'kernel_size'", "3x3x1",
             "'conv1.weight'", "[8, 3, 3, 3, 8]");
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

// ---- T: .tensor files ---------------------------------------------------------------------------

std::string load_error(const std::string& path) {
  return error_of([&] { Tensor::load(path); });
}

TEST(Catalogue, T01_TensorWrongMagic) {
  const std::string p = write_tensor_words({0x12345678, 1, 3, 2}, 8);
  EXPECT_HAS(load_error(p), p, "not a .tensor file", "magic 0x12345678", "expected 0x33ff1101");
}

TEST(Catalogue, T02_TensorHugeNdim) {
  const std::string p = write_tensor_words({kMagic, 1000000, 3});
  EXPECT_HAS(load_error(p), p, "ndim 1000000 out of range 1..16");
  const std::string q = write_tensor_words({kMagic, 0, 3});
  EXPECT_HAS(load_error(q), q, "ndim 0 out of range");
}

TEST(Catalogue, T03_TensorNegativeDim) {
  const std::string p = write_tensor_words({kMagic, 2, 3, 4, -5});
  EXPECT_HAS(load_error(p), p, "negative dimension -5");
}

TEST(Catalogue, T04_TensorOverflowingDims) {
  const std::string p = write_tensor_words({kMagic, 3, 3, 0x7fffffff, 0x7fffffff, 0x7fffffff});
  EXPECT_HAS(load_error(p), p, "dimensions overflow");
}

TEST(Catalogue, T05_TensorTruncatedOrPaddedData) {
  const std::string p = write_tensor_words({kMagic, 2, 3, 4, 5}, 4 * 20 - 3);
  EXPECT_HAS(load_error(p), p, "data size 77 bytes does not match shape [4,5] of float32 (80 bytes)");
  const std::string q = write_tensor_words({kMagic, 2, 3, 4, 5}, 4 * 20 + 1);
  EXPECT_HAS(load_error(q), q, "data size 81 bytes does not match");
}

TEST(Catalogue, T06_TensorTruncatedHeader) {
  const std::string p = write_tensor_words({kMagic, 2});
  EXPECT_HAS(load_error(p), p, "truncated tensor header (8 bytes, need at least 12)");
  const std::string q = write_tensor_words({kMagic, 3, 3, 4});
  EXPECT_HAS(load_error(q), q, "truncated tensor header (dims)");
}

TEST(Catalogue, T07_TensorUnknownDtype) {
  const std::string p = write_tensor_words({kMagic, 1, 99, 4}, 16);
  EXPECT_HAS(load_error(p), p, "unknown dtype code 99");
}

TEST(Catalogue, T08_TensorNotAFile) {
  const std::string missing = temp_dir() + "/no_such.tensor";
  EXPECT_HAS(load_error(missing), missing, "cannot open tensor file");
  EXPECT_HAS(load_error(temp_dir()), temp_dir(), "cannot open tensor file (it is a directory)");
}

TEST(Catalogue, T09_TensorWrongDtypeForRole) {
  Input in = good_input();
  in.indices = Tensor::empty({60, 4}, DType::Float32);
  EXPECT_HAS(set_input_error(in), "idx.tensor", "input '0'", "indices must be int32, got float32");
  in = good_input();
  in.features = Tensor::empty({60, 5}, DType::Int32);
  EXPECT_HAS(set_input_error(in), "feats.tensor", "features must be float16 or float32, got int32");
}

TEST(Catalogue, T10_TensorWrongShapeForRole) {
  Input in = good_input();
  in.indices = Tensor::empty({60, 3}, DType::Int32);
  EXPECT_HAS(set_input_error(in), "idx.tensor", "indices must be [N, 4] (batch, i0, i1, i2), got [60, 3]");
  in = good_input();
  in.features = in.features.reshaped({60, 5, 1});
  EXPECT_HAS(set_input_error(in), "feats.tensor", "features must be [N, C], got [60, 5, 1]");
}

// ---- I: input frames ----------------------------------------------------------------------------

TEST(Catalogue, I01_IndexOutsideGrid) {
  Input in = good_input();
  set_index(in, 7, {0, 3, 8, 1});  // axis 1 has size 8
  EXPECT_HAS(set_input_error(in), "idx.tensor", "input '0'", "row 7 coordinate (3, 8, 1) lies outside the grid 9x8x8",
             "on axis 1");
}

TEST(Catalogue, I02_NegativeIndex) {
  Input in = good_input();
  set_index(in, 0, {0, -1, 2, 2});
  EXPECT_HAS(set_input_error(in), "idx.tensor", "row 0 coordinate (-1, 2, 2) lies outside the grid", "axis 0");
}

TEST(Catalogue, I03_BatchIndexOutOfRange) {
  Input in = good_input();
  set_index(in, 12, {1, 0, 0, 0});
  EXPECT_HAS(set_input_error(in), "idx.tensor", "row 12 has batch index 1, outside 0..0 for batch size 1");
  set_index(in, 12, {-1, 0, 0, 0});
  EXPECT_HAS(set_input_error(in, 2), "row 12 has batch index -1, outside 0..1 for batch size 2");
}

TEST(Catalogue, I04_DuplicateSites) {
  Input in = good_input();
  std::memcpy(in.indices.ptr<int32_t>() + 4 * 40, in.indices.ptr<int32_t>() + 4 * 3, 16);
  EXPECT_HAS(set_input_error(in), "idx.tensor", "rows 3 and 40 are the same site", "duplicate coordinates");
}

TEST(Catalogue, I05_NaNFeature) {
  Input in = good_input();
  in.features.ptr<uint16_t>()[5 * 9 + 2] = 0x7e00;
  EXPECT_HAS(set_input_error(in), "feats.tensor", "feature [9, 2] is nan", "finite");
  Input f32 = good_input();
  f32.features = f32.features.to_dtype(DType::Float32);
  f32.features.ptr<float>()[0] = std::nanf("");
  EXPECT_HAS(set_input_error(f32), "feature [0, 0] is nan");
}

TEST(Catalogue, I06_InfFeature) {
  Input in = good_input();
  in.features.ptr<uint16_t>()[5 * 59 + 4] = 0xfc00;
  EXPECT_HAS(set_input_error(in), "feats.tensor", "feature [59, 4] is -inf", "finite");
  Input f32 = good_input();
  f32.features = f32.features.to_dtype(DType::Float32);
  f32.features.ptr<float>()[7] = std::numeric_limits<float>::infinity();
  EXPECT_HAS(set_input_error(f32), "feature [1, 2] is inf");
}

TEST(Catalogue, I07_RowCountMismatch) {
  Input in = good_input();
  in.features = good_input(59).features;
  EXPECT_HAS(set_input_error(in), "feats.tensor", "59 feature rows but 60 index rows in idx.tensor");
}

TEST(Catalogue, I08_ChannelMismatch) {
  Input in = good_input(60, 4);
  EXPECT_HAS(set_input_error(in), "feats.tensor", "features have 4 channels, the model's input has 5");
}

TEST(Catalogue, I09_GridNotPositiveOrTooLarge) {
  Input in = good_input();
  in.grid = {9, 0, 8};
  EXPECT_HAS(set_input_error(in), "input '0'", "grid 9x0x8 must be positive on every axis");
  in.grid = {1 << 20, 1 << 20, 1 << 20};
  EXPECT_HAS(set_input_error(in), "grid 1048576x1048576x1048576 is too large");
  in.grid = {1 << 22, 1 << 21, 1 << 21};  // 2^64 cells: wraps to 0 in int64
  EXPECT_HAS(set_input_error(in), "grid 4194304x2097152x2097152 is too large");
}

TEST(Catalogue, I10_BatchTimesGridOverflows) {
  // Each alone is allowed; together the linear site keys (b, i0, i1, i2) would overflow int64.
  Input in = good_input();
  in.grid = {1 << 13, 1 << 13, 1 << 14};
  EXPECT_HAS(set_input_error(in, 1 << 24), "input '0'", "batch size 16777216", "grid 8192x8192x16384", "too large");
}

TEST(Catalogue, I11_GridTooSmallForTheModel) {
  Input in = good_input(1);
  set_index(in, 0, {0, 0, 0, 0});
  in.grid = {1, 1, 1};  // conv4: kernel 3x1x1, stride 2, no padding on a 1-deep input
  EXPECT_HAS(forward_error(in), "node 'conv4' (SparseConvolution)", "input spatial shape 1x1x1 is too small for kernel 3x1x1");
}

TEST(Catalogue, I12_GridDisagreesWithTheDenseTail) {
  Input in = good_input();
  in.grid = {9, 8, 10};  // the model's ScatterDense expects 2x4x4 from 9x8x8
  EXPECT_HAS(forward_error(in), "node 'scatter0' (ScatterDense)", "attribute 'input_spatial_shape' 2x4x4",
             "does not match the spatial shape 2x4x5 of its input");
}

TEST(Catalogue, I13_MoreVoxelsThanPlannedCapacityCpu) {
  // The CPU backend sizes every buffer for the frame it is given: max_input_voxels is a CUDA
  // capacity and is not a limit here. (The CUDA case is in tests/cuda.)
  const std::string path = write_case_model(small_centerpoint());
  BuildOptions small = cpu();
  small.max_input_voxels = 10;
  auto limited = parse_onnx(path).build(small);
  auto unlimited = parse_onnx(path).build(cpu());
  const Input in = good_input(300);
  limited->set_input(0, in.features, in.indices, in.grid);
  limited->forward();
  unlimited->set_input(0, in.features, in.indices, in.grid);
  unlimited->forward();
  const Tensor a = limited->output(0), b = unlimited->output(0);
  ASSERT_EQ(a.shape(), b.shape());
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.bytes()), 0);
}

TEST(Catalogue, I14_EmptyFrame) {
  // Zero voxels is a valid (if strange) frame: the map is all zeros, nothing throws.
  auto e = small_engine();
  const Tensor f = Tensor::empty({0, 5}, DType::Float16), idx = Tensor::empty({0, 4}, DType::Int32);
  e->set_input(0, f, idx, {9, 8, 8});
  e->forward();
  const Tensor out = e->output(0).to_dtype(DType::Float32);
  ASSERT_EQ(out.shape(), (std::vector<int64_t>{1, 32, 4, 4}));
  for (int64_t i = 0; i < out.numel(); ++i) ASSERT_EQ(out.ptr<float>()[i], 0.f);
}

TEST(Catalogue, I15_ForwardOrOutputOutOfOrder) {
  auto e = small_engine();
  EXPECT_HAS(error_of([&] { e->forward(); }), "forward() before set_input() for input '0'");
  EXPECT_HAS(error_of([&] { e->profile_layers(); }), "profile_layers() before set_input() for input '0'");
  EXPECT_HAS(error_of([&] { e->output(0); }), "output(0) requested before forward()");
  EXPECT_HAS(error_of([&] { e->output(3); }), "output index 3 out of range (1 outputs)");
  const Input in = good_input();
  EXPECT_HAS(error_of([&] { e->set_input(2, in.features, in.indices, in.grid); }),
             "input index 2 out of range (1 inputs)");
  EXPECT_HAS(error_of([&] { e->input_index("voxels"); }), "the model has no input named 'voxels'");
  e->set_input(0, in.features, in.indices, in.grid);
  e->forward();
  EXPECT_HAS(error_of([&] { e->output_indices(0); }), "output '9' is dense and has no indices");
}

// ---- E: engine and API use ------------------------------------------------------------------------

TEST(Catalogue, E01_DenseOutputTooLarge) {
  // A ScatterDense whose output_shape product overflows int64 / exceeds 2^60 elements.
  EngineBuilder b("api");
  const ValueId x = b.push_input("0", 16);
  DenseAttrs d;
  d.input_spatial_shape = {1 << 20, 1 << 20, 1 << 20};
  d.output_shape = {1, 16, 1 << 20, 1 << 20, 1 << 20};
  EXPECT_HAS(error_of([&] { b.push_dense("scatter0", x, d); }), "api: node 'scatter0' (ScatterDense)",
             "output_shape [1, 16, 1048576, 1048576, 1048576] is too large");
}

TEST(Catalogue, E02_CudaWithoutCuda) {
  if (cuda_available()) GTEST_SKIP() << "a CUDA device is present: this case is about builds / machines without one";
  BuildOptions o = cpu();
  o.backend = Backend::Cuda;
  const std::string msg = error_of([&] { parse_onnx(write_case_model(small_centerpoint())).build(o); });
  EXPECT_HAS(msg, "CUDA");
}

TEST(Catalogue, E03_BuilderBadValueAndDuplicateNames) {
  EngineBuilder b("api");
  const ValueId x = b.push_input("0", 5);
  EXPECT_HAS(error_of([&] { b.push_relu("r", 42); }), "api: node 'r'", "input refers to no value (id 42)");
  b.push_relu("r", x);
  EXPECT_HAS(error_of([&] { b.push_relu("r", x, "other"); }), "node name 'r' is used twice");
  EXPECT_HAS(error_of([&] { EngineBuilder("empty").build(cpu()); }), "empty: the graph has no input");
  EXPECT_HAS(error_of([&] { b.build(cpu()); }), "api: the graph has no output");
}

TEST(Catalogue, E04_ConcatChannelOverflow) {
  EngineBuilder b("api");
  const ValueId x = b.push_input("0", std::numeric_limits<int32_t>::max());
  EXPECT_HAS(error_of([&] { b.push_concat("cat", {x, x}); }), "node 'cat' (Concat)", "channel count overflows int32");
}

TEST(Catalogue, E05_TensorShapeOverflow) {
  EXPECT_HAS(error_of([&] { Tensor::empty({int64_t(1) << 40, int64_t(1) << 40}, DType::Float32); }),
             "[1099511627776, 1099511627776]", "too large");
  EXPECT_HAS(error_of([&] { Tensor::empty({4, -1}, DType::Float32); }), "negative tensor dimension -1");
}

TEST(Catalogue, E06_NonFiniteWeightsThroughTheApi) {
  EngineBuilder b("api");
  const ValueId x = b.push_input("0", 2);
  ConvAttrs c;
  c.kernel_size = {1, 1, 1};
  c.weight = Tensor::empty({2, 1, 1, 1, 2}, DType::Float32);
  for (int i = 0; i < 4; ++i) c.weight.ptr<float>()[i] = 0.5f;
  c.weight.ptr<float>()[3] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_HAS(error_of([&] { b.push_sparse_conv("c", x, c); }), "api: node 'c' (SparseConvolution)",
             "weight value [3] is nan", "finite");
}

// ---- C: the `scn run` command line ---------------------------------------------------------------

#ifdef SCN_CLI_EXE
using CliResult = test::CliResult;

std::string q(const std::string& s) { return test::shell_quote(s); }

CliResult scn_cli(const std::string& args) {
  const CliResult r = test::run_cli(SCN_CLI_EXE, args, "catalogue_cli");
  std::printf("[exit %d] %s", r.code, r.err.c_str());
  return r;
}

/// A fresh directory for one CLI case's inputs and outputs.
std::string case_dir() {
  const std::string d = case_file(".d");
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

struct CliCase {
  std::string dir, model, features, indices;
};

CliCase cli_case(const Input& in = good_input()) {
  CliCase c;
  c.dir = case_dir();
  c.model = c.dir + "/model.onnx";
  write_bytes(c.model, encode_model(small_centerpoint()));
  c.features = c.dir + "/features.tensor";
  c.indices = c.dir + "/indices.tensor";
  in.features.save(c.features);
  in.indices.save(c.indices);
  return c;
}

std::string run_args(const CliCase& c, const std::string& grid = "9x8x8") {
  return "run " + q(c.model) + " --features " + q(c.features) + " --indices " + q(c.indices) + " --grid " + grid +
         " --device cpu --threads 2 --output " + q(c.dir + "/out/map.tensor") + " --output-dir " + q(c.dir + "/out");
}

/// Nothing but the inputs is left in the case directory: no output, no temporary file.
void expect_no_output(const CliCase& c) {
  std::vector<std::string> left;
  for (const auto& e : fs::recursive_directory_iterator(c.dir)) {
    const std::string p = e.path().string();
    if (p != c.model && p != c.features && p != c.indices && p != c.dir + "/out") left.push_back(p);
  }
  EXPECT_TRUE(left.empty()) << "left behind: " << (left.empty() ? "" : left.front());
}

CliCase prepared(const Input& in = good_input()) {
  CliCase c = cli_case(in);
  fs::create_directories(c.dir + "/out");
  return c;
}

TEST(Catalogue, C01_CliGoodRunWritesOutputs) {
  // The control case: the same files and flags as the failing cases below, succeeding.
  const CliCase c = prepared();
  const CliResult r = scn_cli(run_args(c));
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(fs::exists(c.dir + "/out/map.tensor"));
  EXPECT_TRUE(fs::exists(c.dir + "/out/9.tensor"));
}

TEST(Catalogue, C02_CliBadModel) {
  const CliCase c = prepared();
  const std::string full = encode_model(small_centerpoint());
  write_bytes(c.model, full.substr(0, full.size() / 2));
  const CliResult r = scn_cli(run_args(c));
  EXPECT_EQ(r.code, 1);
  EXPECT_HAS(r.err, "scn run: " + c.model + ": not a valid ONNX model");
  expect_no_output(c);
  ModelDef m = small_centerpoint();
  m.node("conv3").set(attr_ints("stride", {0, 2, 2}));
  write_bytes(c.model, encode_model(m));
  const CliResult s = scn_cli(run_args(c));
  EXPECT_EQ(s.code, 1);
  EXPECT_HAS(s.err, c.model, "node 'conv3'", "attribute 'stride'");
  expect_no_output(c);
}

TEST(Catalogue, C03_CliBadTensorFile) {
  const CliCase c = prepared();
  write_bytes(c.features, std::string("\x01\x02\x03\x04garbage-not-a-tensor", 24));
  const CliResult r = scn_cli(run_args(c));
  EXPECT_EQ(r.code, 1);
  EXPECT_HAS(r.err, "scn run: " + c.features + ": not a .tensor file");
  expect_no_output(c);
}

TEST(Catalogue, C04_CliBadIndices) {
  Input in = good_input();
  set_index(in, 5, {0, 9, 0, 0});
  const CliCase c = prepared(in);
  const CliResult r = scn_cli(run_args(c));
  EXPECT_EQ(r.code, 1);
  EXPECT_HAS(r.err, c.indices, "row 5 coordinate (9, 0, 0) lies outside the grid 9x8x8");
  expect_no_output(c);
}

TEST(Catalogue, C05_CliNonFiniteFeatures) {
  Input in = good_input();
  in.features.ptr<uint16_t>()[17] = 0x7c00;
  const CliCase c = prepared(in);
  const CliResult r = scn_cli(run_args(c));
  EXPECT_EQ(r.code, 1);
  EXPECT_HAS(r.err, c.features, "feature [3, 2] is inf");
  expect_no_output(c);
}

TEST(Catalogue, C06_CliBadGridArgument) {
  const CliCase c = prepared();
  for (const char* g : {"9x8", "9x0x8", "9x8x-8", "ninexeight"}) {
    const CliResult r = scn_cli(run_args(c, g));
    EXPECT_NE(r.code, 0) << g;
    EXPECT_HAS(r.err, "grid");
    expect_no_output(c);
  }
  // A well-formed grid the model does not fit.
  const CliResult r = scn_cli(run_args(c, "9x8x10"));
  EXPECT_EQ(r.code, 1);
  EXPECT_HAS(r.err, "node 'scatter0' (ScatterDense)", "does not match the spatial shape");
  expect_no_output(c);
}

TEST(Catalogue, C07_CliMissingFiles) {
  const CliCase c = prepared();
  fs::remove(c.indices);
  const CliResult r = scn_cli(run_args(c));
  EXPECT_EQ(r.code, 1);
  EXPECT_HAS(r.err, c.indices, "cannot open");
  fs::remove(c.model);
  const CliResult s = scn_cli(run_args(c));
  EXPECT_NE(s.code, 0);
  EXPECT_HAS(s.err, c.model);
  expect_no_output(c);
}
#else
TEST(Catalogue, C01_CliGoodRunWritesOutputs) { GTEST_SKIP() << "the scn CLI is not built (SCN_BUILD_TOOLS=OFF)"; }
TEST(Catalogue, C02_CliBadModel) { GTEST_SKIP() << "the scn CLI is not built"; }
TEST(Catalogue, C03_CliBadTensorFile) { GTEST_SKIP() << "the scn CLI is not built"; }
TEST(Catalogue, C04_CliBadIndices) { GTEST_SKIP() << "the scn CLI is not built"; }
TEST(Catalogue, C05_CliNonFiniteFeatures) { GTEST_SKIP() << "the scn CLI is not built"; }
TEST(Catalogue, C06_CliBadGridArgument) { GTEST_SKIP() << "the scn CLI is not built"; }
TEST(Catalogue, C07_CliMissingFiles) { GTEST_SKIP() << "the scn CLI is not built"; }
#endif

// ---- the catalogue and docs/errors.md list the same cases ----------------------------------------

TEST(Catalogue, EveryCaseIsDocumented) {
  std::set<std::string> tested;
  const ::testing::UnitTest& ut = *::testing::UnitTest::GetInstance();
  const std::regex id_re("^([OTIEC][0-9][0-9])_.*");
  for (int s = 0; s < ut.total_test_suite_count(); ++s) {
    const ::testing::TestSuite& suite = *ut.GetTestSuite(s);
    if (std::string(suite.name()) != "Catalogue") continue;
    for (int t = 0; t < suite.total_test_count(); ++t) {
      std::smatch m;
      const std::string name = suite.GetTestInfo(t)->name();
      if (std::regex_match(name, m, id_re)) tested.insert(m[1]);
    }
  }
  const std::string doc_path = std::string(SCN_SOURCE_DIR) + "/docs/errors.md";
  std::ifstream f(doc_path);
  ASSERT_TRUE(f.good()) << doc_path;
  std::set<std::string> documented;
  const std::regex row_re("^\\| *\\*\\*([OTIEC][0-9][0-9])\\*\\* *\\|.*");
  for (std::string line; std::getline(f, line);) {
    std::smatch m;
    if (std::regex_match(line, m, row_re)) documented.insert(m[1]);
  }
  for (const std::string& id : tested) EXPECT_TRUE(documented.count(id)) << id << " is tested but not in docs/errors.md";
  for (const std::string& id : documented) EXPECT_TRUE(tested.count(id)) << id << " is in docs/errors.md but not tested";
  EXPECT_GE(tested.size(), 30u);
}

}  // namespace
}  // namespace scn::test

// Writes the seed corpus of the fuzz targets: small valid ONNX models (every op scn imports,
// both dense tails, an inverse conv, int32_data initializers) and .tensor files, plus a few
// malformed ones. Usage: scn_fuzz_seeds OUT_DIR  (writes OUT_DIR/onnx/* and OUT_DIR/tensor/*).
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "onnx_parser/onnx_writer.h"

namespace {

using namespace scn::test;

void put(const std::string& path, const std::string& bytes) {
  write_bytes(path, bytes);
  std::printf("%s (%zu bytes)\n", path.c_str(), bytes.size());
}

std::string tensor_bytes(int32_t dtype, const std::vector<int32_t>& dims, const std::string& payload) {
  std::string s;
  auto word = [&](int32_t v) { s.append(reinterpret_cast<const char*>(&v), 4); };
  word(0x33ff1101);
  word(int32_t(dims.size()));
  word(dtype);
  for (int32_t d : dims) word(d);
  return s + payload;
}

// Smaller variant of small_centerpoint: fewer channels keep the seeds (and executions) small.
ModelDef tiny_centerpoint() {
  ModelDef m;
  m.inputs.push_back({"0", 10, {-1, 5}});
  const std::vector<int64_t> g0{9, 8, 8}, g1{5, 4, 4}, g2{2, 4, 4};
  ConvSpec c;
  c.name = "conv0", c.x = "0", c.y = "1", c.cin = 5, c.cout = 4, c.rulebook = "subm1";
  c.in_shape = c.out_shape = g0;
  add_conv(m, c);
  c.name = "conv1", c.x = "1", c.y = "2", c.cin = 4, c.activation = "None", c.seed = 2;
  add_conv(m, c);
  m.nodes.push_back({"Add", "add0", {"2", "1"}, {"3"}, {}, ""});
  m.nodes.push_back({"Relu", "relu0", {"3"}, {"4"}, {}, ""});
  c = {};
  c.name = "conv2", c.x = "4", c.y = "5", c.cin = 4, c.cout = 4, c.stride = {2, 2, 2};
  c.subm = false, c.rulebook = "spconv2", c.in_shape = g0, c.out_shape = g1, c.seed = 3;
  add_conv(m, c);
  c = {};
  c.name = "conv3", c.x = "5", c.y = "6", c.cin = 4, c.cout = 4, c.kernel = {3, 1, 1};
  c.stride = {2, 1, 1}, c.padding = {0, 0, 0}, c.subm = false, c.in_shape = g1, c.out_shape = g2;
  c.seed = 4;
  add_conv(m, c);
  m.nodes.push_back({"ScatterDense", "scatter0", {"6"}, {"7"},
                     {attr_string("format", "zyx"), attr_ints("input_spatial_shape", g2),
                      attr_ints("output_shape", {1, 4, 2, 4, 4})}, ""});
  m.nodes.push_back({"Reshape", "reshape0", {"7"}, {"8"}, {attr_ints("dims", {1, 8, 4, 4})}, ""});
  m.outputs.push_back({"8", 10, {1, 8, 4, 4}});
  return m;
}

// U-Net-like: strided conv with a rulebook, the inverse conv that reuses it, Concat, a sparse
// output next to a dense one with the xyz tail (Transpose, then Reshape).
ModelDef tiny_unet() {
  ModelDef m;
  m.inputs.push_back({"0", 10, {-1, 3}});
  const std::vector<int64_t> g0{9, 8, 8}, g1{5, 4, 4};
  ConvSpec c;
  c.name = "conv0", c.x = "0", c.y = "1", c.cin = 3, c.cout = 4, c.in_shape = c.out_shape = g0;
  c.activation = "LeakyReLU";
  add_conv(m, c).set(attr_float("alpha", 0.1f));
  c = {};
  c.name = "down", c.x = "1", c.y = "2", c.cin = 4, c.cout = 4, c.stride = {2, 2, 2}, c.subm = false;
  c.rulebook = "spconv1", c.in_shape = g0, c.out_shape = g1, c.seed = 2;
  add_conv(m, c);
  c = {};
  c.name = "up", c.x = "2", c.y = "3", c.cin = 4, c.cout = 4, c.subm = false, c.rulebook = "spconv1";
  c.seed = 3, c.activation = "Sigmoid";
  add_conv(m, c).set(attr_int("inverse", 1));
  m.nodes.push_back({"Concat", "cat0", {"3", "1"}, {"4"}, {attr_int("axis", 1)}, ""});
  m.nodes.push_back({"QuantAdd", "qadd0", {"3", "1"}, {"5"},
                     {attr_string("precision", "fp16"), attr_float("input0_dynamic_range", 2.f)}, ""});
  m.nodes.push_back({"ScatterDense", "scatter0", {"5"}, {"6"},
                     {attr_string("format", "xyz"), attr_ints("input_spatial_shape", g0),
                      attr_ints("output_shape", {1, 4, 9, 8, 8})}, ""});
  m.nodes.push_back({"Transpose", "tr0", {"6"}, {"7"}, {attr_ints("dims", {0, 1, 4, 2, 3})}, ""});
  m.nodes.push_back({"Reshape", "rs0", {"7"}, {"8"}, {attr_ints("dims", {1, -1, 9, 8})}, ""});
  m.outputs.push_back({"8", 10, {}});
  m.outputs.push_back({"4", 10, {}});
  return m;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUT_DIR\n", argv[0]);
    return 2;
  }
  namespace fs = std::filesystem;
  const std::string onnx = std::string(argv[1]) + "/onnx", tensor = std::string(argv[1]) + "/tensor";
  fs::create_directories(onnx);
  fs::create_directories(tensor);

  // ---- ONNX: valid models
  const std::string cp = encode_model(tiny_centerpoint());
  put(onnx + "/valid_centerpoint_tiny.onnx", cp);
  put(onnx + "/valid_unet_tiny.onnx", encode_model(tiny_unet()));
  {
    ModelDef m = tiny_centerpoint();  // initializers as int32_data, attributes without `type`
    for (InitDef& t : m.initializers) {
      for (size_t i = 0; i + 1 < t.raw_data.size(); i += 2) {
        uint16_t h;
        std::memcpy(&h, &t.raw_data[i], 2);
        t.int32_data.push_back(h);
      }
      t.has_raw = false;
    }
    for (NodeDef& n : m.nodes)
      for (Attr& a : n.attrs) a.write_type = false, a.packed = true;
    put(onnx + "/valid_int32_data_untyped.onnx", encode_model(m));
  }
  // ---- ONNX: malformed
  put(onnx + "/bad_truncated.onnx", cp.substr(0, cp.size() * 2 / 3));
  {
    ModelDef m = tiny_centerpoint();
    m.node("relu0").inputs = {"3", "9"};
    m.node("add0").inputs = {"2", "4"};  // a cycle and a dangling name
    put(onnx + "/bad_cycle.onnx", encode_model(m));
  }
  {
    ModelDef m = tiny_centerpoint();
    m.node("conv2").set(attr_ints("stride", {0, 2, 2})).set(attr_ints("padding", {-1, 1, 1}));
    put(onnx + "/bad_stride_padding.onnx", encode_model(m));
  }
  {
    ModelDef m = tiny_unet();
    m.node("up").set(attr_string("rulebook", "nope"));
    m.node("rs0").set(attr_ints("dims", {1, 3, 9, 8}));
    put(onnx + "/bad_rulebook_reshape.onnx", encode_model(m));
  }

  // Regression seeds of the bugs the robustness catalogue found (see docs/errors.md O17, O22,
  // O25, O27): stride 0 (was a division by zero), dims whose product wraps around int64 (was
  // accepted), a NaN weight (was accepted), huge padding without spatial-shape attributes (int32
  // overflow in the kernel map).
  {
    ModelDef m = tiny_centerpoint();
    m.node("reshape0").set(attr_ints("dims", {384, 48038396025285291LL}));  // 384 * d = 2^64 + 128
    put(onnx + "/bad_reshape_wraps.onnx", encode_model(m));
  }
  {
    ModelDef m = tiny_centerpoint();
    m.init("conv1.weight").raw_data[7] = char(0x7e);  // element 3 becomes a NaN pattern
    put(onnx + "/bad_nan_weight.onnx", encode_model(m));
  }
  {
    ModelDef m = tiny_centerpoint();
    m.node("conv2").erase("input_spatial_shape").erase("output_spatial_shape");
    m.node("conv2").set(attr_ints("padding", {1, 2000000000, 1}));
    put(onnx + "/bad_huge_padding.onnx", encode_model(m));
  }

  // ---- .tensor
  std::string f16, i32, f32;
  for (int r = 0; r < 24; ++r) {
    const int c = (r * 211) % 576;
    const int32_t row[4] = {0, c / 64, (c / 8) % 8, c % 8};
    i32.append(reinterpret_cast<const char*>(row), 16);
    for (int k = 0; k < 5; ++k) {
      const uint16_t h = uint16_t(0x3800 + ((r * 5 + k) * 97) % 0x800);
      f16.append(reinterpret_cast<const char*>(&h), 2);
      const float v = float(r - k) * 0.25f;
      f32.append(reinterpret_cast<const char*>(&v), 4);
    }
  }
  put(tensor + "/valid_features_f16.tensor", tensor_bytes(2, {24, 5}, f16));
  put(tensor + "/valid_features_f32.tensor", tensor_bytes(3, {24, 5}, f32));
  put(tensor + "/valid_indices_i32.tensor", tensor_bytes(1, {24, 4}, i32));
  put(tensor + "/valid_empty.tensor", tensor_bytes(2, {0, 5}, ""));
  std::string dup = i32;
  std::memcpy(&dup[16 * 7], &dup[16 * 2], 16);
  put(tensor + "/bad_duplicate_indices.tensor", tensor_bytes(1, {24, 4}, dup));
  std::string nan = f16;
  nan[2 * 13] = 0x00, nan[2 * 13 + 1] = 0x7e;
  put(tensor + "/bad_nan_features.tensor", tensor_bytes(2, {24, 5}, nan));
  put(tensor + "/bad_truncated.tensor", tensor_bytes(2, {24, 5}, f16.substr(0, 100)));
  put(tensor + "/bad_dims_overflow.tensor", tensor_bytes(1, {0x7fffffff, 0x7fffffff, 4}, ""));
  return 0;
}

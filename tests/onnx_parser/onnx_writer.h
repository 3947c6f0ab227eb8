// Writes ONNX models for the importer tests with a hand-rolled protobuf wire encoder (field
// numbers from onnx.proto). The tests link no protobuf code of their own, so libscn's generated
// onnx classes stay the only ones registered in the process, and forged or truncated files are
// easy to make byte by byte.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace scn::test {

/// Protobuf wire format: varints, length-delimited fields, fixed32 floats.
class Wire {
 public:
  static std::string varint(uint64_t v);
  Wire& tag(int field, int wire_type);
  Wire& varint_field(int field, uint64_t v);
  Wire& int_field(int field, int64_t v) { return varint_field(field, uint64_t(v)); }
  Wire& bytes_field(int field, const std::string& bytes);
  Wire& message_field(int field, const Wire& m) { return bytes_field(field, m.bytes()); }
  Wire& float_field(int field, float v);
  Wire& raw(const std::string& bytes);
  const std::string& bytes() const { return buf_; }

 private:
  std::string buf_;
};

struct Attr {
  enum Type { kFloat = 1, kInt = 2, kString = 3, kFloats = 6, kInts = 7 };
  std::string name;
  int type = kInt;
  int64_t i = 0;
  float f = 0.f;
  std::string s;
  std::vector<int64_t> ints;
  std::vector<float> floats;
  bool write_type = true;  ///< false: leave `type` unset, as files before IR 3 did
  int declared_type = 0;   ///< nonzero: written as `type` instead of the type of the value written (a mismatch)
  bool packed = false;     ///< write ints / floats packed (onnx's Python writes them unpacked)
};
Attr attr_int(const std::string& name, int64_t v);
Attr attr_ints(const std::string& name, std::vector<int64_t> v);
Attr attr_float(const std::string& name, float v);
Attr attr_floats(const std::string& name, std::vector<float> v);
Attr attr_string(const std::string& name, const std::string& v);

struct NodeDef {
  std::string op_type;
  std::string name;
  std::vector<std::string> inputs;
  std::vector<std::string> outputs;
  std::vector<Attr> attrs;
  std::string domain;

  /// Replaces the attribute of that name, or appends it.
  NodeDef& set(const Attr& a);
  NodeDef& erase(const std::string& attr);
};

struct InitDef {
  std::string name;
  int32_t data_type = 10;  ///< FLOAT16
  std::vector<int64_t> dims;
  bool has_raw = true;
  std::string raw_data;
  std::vector<int32_t> int32_data;
};

struct ValueDef {
  std::string name;
  int32_t elem_type = 10;
  std::vector<int64_t> dims;  ///< -1: symbolic ("N"), -2: a dimension with no value
  bool has_type = true;
};

struct ModelDef {
  std::vector<NodeDef> nodes;
  std::vector<InitDef> initializers;
  std::vector<ValueDef> inputs;
  std::vector<ValueDef> outputs;
  int64_t ir_version = 7;
  int64_t opset = 11;

  NodeDef& node(const std::string& name);  ///< aborts the test binary when absent
  InitDef& init(const std::string& name);
};

Wire encode_node(const NodeDef& n);
Wire encode_initializer(const InitDef& t);
Wire encode_value_info(const ValueDef& v);
Wire encode_graph(const ModelDef& m);
std::string encode_model(const ModelDef& m);

/// Deterministic finite float16 bit patterns.
std::vector<uint16_t> fp16_pattern(int64_t numel, uint32_t seed);
/// A FLOAT16 initializer with raw_data = fp16_pattern(numel, seed).
InitDef fp16_init(const std::string& name, const std::vector<int64_t>& dims, uint32_t seed);

struct ConvSpec {
  std::string name, x, y;
  int cin = 0, cout = 0;
  std::vector<int64_t> kernel{3, 3, 3}, stride{1, 1, 1}, padding{1, 1, 1}, dilation{1, 1, 1};
  bool subm = true;
  std::string activation = "ReLU";
  std::string rulebook;                      ///< empty: no rulebook attribute
  std::vector<int64_t> in_shape, out_shape;  ///< spatial shapes; empty: not written
  bool bias = true;
  uint32_t seed = 1;
};
/// Adds a SparseConvolution written the way NVIDIA's exporter writes it (every attribute it
/// writes, weight "<name>.weight" [Cout, k0, k1, k2, Cin], bias "<name>.bias") to the model.
NodeDef& add_conv(ModelDef& m, const ConvSpec& spec);

/// A CenterPoint-like backbone on a (z, y, x) = 9 x 8 x 8 grid with 5 input channels:
///   conv0 subm 5->8 ReLU (subm1) -> conv1 subm ReLU -> conv2 subm None -> add0(conv2, conv0)
///   -> relu0 -> conv3 8->16 k3 s2 p1 ReLU (spconv3) -> conv4 16->16 k(3,1,1) s(2,1,1) p0
///   -> scatter0 (zyx, [1, 16, 2, 4, 4]) -> reshape0 [1, 32, 4, 4] = graph output "9".
/// Tensor names are "0".."9" as in NVIDIA's files.
ModelDef small_centerpoint();

/// A fresh directory for this test process's files.
std::string temp_dir();
void write_bytes(const std::string& path, const std::string& bytes);
/// Encodes the model and writes it to temp_dir()/file_name; returns the path.
std::string write_model(const ModelDef& m, const std::string& file_name);

}  // namespace scn::test

#include "onnx_parser/onnx_writer.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace scn::test {

namespace {
constexpr int kVarint = 0, kLengthDelimited = 2, kFixed32 = 5;
}

std::string Wire::varint(uint64_t v) {
  std::string s;
  while (v >= 0x80) {
    s.push_back(char(uint8_t(v) | 0x80));
    v >>= 7;
  }
  s.push_back(char(uint8_t(v)));
  return s;
}

Wire& Wire::tag(int field, int wire_type) {
  buf_ += varint((uint64_t(field) << 3) | uint64_t(wire_type));
  return *this;
}

Wire& Wire::varint_field(int field, uint64_t v) {
  tag(field, kVarint);
  buf_ += varint(v);
  return *this;
}

Wire& Wire::bytes_field(int field, const std::string& bytes) {
  tag(field, kLengthDelimited);
  buf_ += varint(bytes.size());
  buf_ += bytes;
  return *this;
}

Wire& Wire::float_field(int field, float v) {
  tag(field, kFixed32);
  char b[4];
  std::memcpy(b, &v, 4);  // little-endian host, as the wire format
  buf_.append(b, 4);
  return *this;
}

Wire& Wire::raw(const std::string& bytes) {
  buf_ += bytes;
  return *this;
}

Attr attr_int(const std::string& name, int64_t v) {
  Attr a;
  a.name = name;
  a.type = Attr::kInt;
  a.i = v;
  return a;
}

Attr attr_ints(const std::string& name, std::vector<int64_t> v) {
  Attr a;
  a.name = name;
  a.type = Attr::kInts;
  a.ints = std::move(v);
  return a;
}

Attr attr_float(const std::string& name, float v) {
  Attr a;
  a.name = name;
  a.type = Attr::kFloat;
  a.f = v;
  return a;
}

Attr attr_floats(const std::string& name, std::vector<float> v) {
  Attr a;
  a.name = name;
  a.type = Attr::kFloats;
  a.floats = std::move(v);
  return a;
}

Attr attr_string(const std::string& name, const std::string& v) {
  Attr a;
  a.name = name;
  a.type = Attr::kString;
  a.s = v;
  return a;
}

NodeDef& NodeDef::set(const Attr& a) {
  for (Attr& x : attrs)
    if (x.name == a.name) {
      x = a;
      return *this;
    }
  attrs.push_back(a);
  return *this;
}

NodeDef& NodeDef::erase(const std::string& attr) {
  for (size_t i = 0; i < attrs.size(); ++i)
    if (attrs[i].name == attr) {
      attrs.erase(attrs.begin() + long(i));
      break;
    }
  return *this;
}

NodeDef& ModelDef::node(const std::string& name) {
  for (NodeDef& n : nodes)
    if (n.name == name) return n;
  std::fprintf(stderr, "test model has no node '%s'\n", name.c_str());
  std::abort();
}

InitDef& ModelDef::init(const std::string& name) {
  for (InitDef& t : initializers)
    if (t.name == name) return t;
  std::fprintf(stderr, "test model has no initializer '%s'\n", name.c_str());
  std::abort();
}

namespace {

Wire encode_attr(const Attr& a) {
  Wire w;
  w.bytes_field(1, a.name);
  switch (a.type) {
    case Attr::kFloat: w.float_field(2, a.f); break;
    case Attr::kInt: w.int_field(3, a.i); break;
    case Attr::kString: w.bytes_field(4, a.s); break;
    case Attr::kFloats:
      if (a.packed) {
        std::string body(a.floats.size() * 4, '\0');
        if (!a.floats.empty()) std::memcpy(&body[0], a.floats.data(), body.size());
        w.bytes_field(7, body);
      } else {
        for (float f : a.floats) w.float_field(7, f);
      }
      break;
    case Attr::kInts:
      if (a.packed) {
        std::string body;
        for (int64_t v : a.ints) body += Wire::varint(uint64_t(v));
        w.bytes_field(8, body);
      } else {
        for (int64_t v : a.ints) w.int_field(8, v);
      }
      break;
  }
  if (a.write_type) w.int_field(20, a.declared_type != 0 ? a.declared_type : a.type);
  return w;
}

}  // namespace

Wire encode_node(const NodeDef& n) {
  Wire w;
  for (const auto& s : n.inputs) w.bytes_field(1, s);
  for (const auto& s : n.outputs) w.bytes_field(2, s);
  if (!n.name.empty()) w.bytes_field(3, n.name);
  w.bytes_field(4, n.op_type);
  for (const Attr& a : n.attrs) w.message_field(5, encode_attr(a));
  if (!n.domain.empty()) w.bytes_field(7, n.domain);
  return w;
}

Wire encode_initializer(const InitDef& t) {
  Wire w;
  for (int64_t d : t.dims) w.int_field(1, d);
  w.int_field(2, t.data_type);
  if (!t.int32_data.empty()) {
    std::string body;
    for (int32_t v : t.int32_data) body += Wire::varint(uint64_t(int64_t(v)));
    w.bytes_field(5, body);
  }
  w.bytes_field(8, t.name);
  if (t.has_raw) w.bytes_field(9, t.raw_data);
  return w;
}

Wire encode_value_info(const ValueDef& v) {
  Wire w;
  w.bytes_field(1, v.name);
  if (v.has_type) {
    Wire shape;
    for (int64_t d : v.dims) {
      Wire dim;
      if (d >= 0) dim.int_field(1, d);
      if (d == -1) dim.bytes_field(2, "N");
      shape.message_field(1, dim);
    }
    Wire tensor;
    tensor.int_field(1, v.elem_type);
    tensor.message_field(2, shape);
    Wire type;
    type.message_field(1, tensor);
    w.message_field(2, type);
  }
  return w;
}

Wire encode_graph(const ModelDef& m) {
  Wire g;
  for (const NodeDef& n : m.nodes) g.message_field(1, encode_node(n));
  g.bytes_field(2, "scn");
  for (const InitDef& t : m.initializers) g.message_field(5, encode_initializer(t));
  for (const ValueDef& v : m.inputs) g.message_field(11, encode_value_info(v));
  for (const ValueDef& v : m.outputs) g.message_field(12, encode_value_info(v));
  return g;
}

std::string encode_model(const ModelDef& m) {
  Wire model;
  model.int_field(1, m.ir_version);
  model.bytes_field(2, "pytorch");
  model.message_field(7, encode_graph(m));
  Wire opset;
  opset.bytes_field(1, "ai.onnx");
  opset.int_field(2, m.opset);
  model.message_field(8, opset);
  return model.bytes();
}

std::vector<uint16_t> fp16_pattern(int64_t numel, uint32_t seed) {
  std::vector<uint16_t> v(static_cast<size_t>(numel));
  uint32_t x = seed * 2654435761u + 12345u;
  for (auto& h : v) {
    x = x * 1664525u + 1013904223u;
    // sign, exponent 9..17 (about 2^-6 .. 2^2), any mantissa: finite, normal
    h = uint16_t(((x >> 31) << 15) | ((9 + (x >> 20) % 9) << 10) | ((x >> 4) & 0x3ff));
  }
  return v;
}

InitDef fp16_init(const std::string& name, const std::vector<int64_t>& dims, uint32_t seed) {
  int64_t numel = 1;
  for (int64_t d : dims) numel *= d;
  const std::vector<uint16_t> bits = fp16_pattern(numel, seed);
  InitDef t;
  t.name = name;
  t.dims = dims;
  t.raw_data.assign(reinterpret_cast<const char*>(bits.data()), bits.size() * 2);
  return t;
}

NodeDef& add_conv(ModelDef& m, const ConvSpec& c) {
  NodeDef n;
  n.op_type = "SparseConvolution";
  n.name = c.name;
  const std::string w = c.name + ".weight", b = c.name + ".bias";
  n.inputs = {c.x, w};
  m.initializers.push_back(
      fp16_init(w, {c.cout, c.kernel[0], c.kernel[1], c.kernel[2], c.cin}, c.seed));
  if (c.bias) {
    n.inputs.push_back(b);
    m.initializers.push_back(fp16_init(b, {c.cout}, c.seed + 1000));
  }
  n.outputs = {c.y};
  // The attributes of NVIDIA's exporter, in its (sorted) order.
  n.set(attr_string("activation", c.activation));
  n.set(attr_ints("dilation", c.dilation));
  n.set(attr_int("groups", 1));
  n.set(attr_int("in_channels", c.cin));
  n.set(attr_ints("input_shape", {1000, c.cin}));
  if (!c.in_shape.empty()) n.set(attr_ints("input_spatial_shape", c.in_shape));
  n.set(attr_int("inverse", 0));
  n.set(attr_ints("kernel_size", c.kernel));
  n.set(attr_int("ndim", 3));
  n.set(attr_int("out_channels", c.cout));
  n.set(attr_int("output_bound", 200000));
  n.set(attr_ints("output_padding", {0, 0, 0}));
  n.set(attr_ints("output_shape", {1000, c.cout}));
  if (!c.out_shape.empty()) n.set(attr_ints("output_spatial_shape", c.out_shape));
  n.set(attr_ints("padding", c.padding));
  if (!c.rulebook.empty()) n.set(attr_string("rulebook", c.rulebook));
  n.set(attr_ints("stride", c.stride));
  n.set(attr_int("subm", c.subm ? 1 : 0));
  n.set(attr_int("transposed", 0));
  m.nodes.push_back(n);
  return m.nodes.back();
}

ModelDef small_centerpoint() {
  ModelDef m;
  m.inputs.push_back({"0", 10, {-1, 5}});
  const std::vector<int64_t> g0{9, 8, 8}, g1{5, 4, 4}, g2{2, 4, 4};
  ConvSpec c;
  c = {};
  c.name = "conv0", c.x = "0", c.y = "1", c.cin = 5, c.cout = 8, c.rulebook = "subm1";
  c.in_shape = c.out_shape = g0, c.seed = 1;
  add_conv(m, c);
  c.name = "conv1", c.x = "1", c.y = "2", c.cin = 8, c.seed = 2;
  add_conv(m, c);
  c.name = "conv2", c.x = "2", c.y = "3", c.activation = "None", c.seed = 3;
  add_conv(m, c);
  m.nodes.push_back({"Add", "add0", {"3", "1"}, {"4"}, {}, ""});
  m.nodes.push_back({"Relu", "relu0", {"4"}, {"5"}, {}, ""});
  c = {};
  c.name = "conv3", c.x = "5", c.y = "6", c.cin = 8, c.cout = 16, c.stride = {2, 2, 2};
  c.subm = false, c.rulebook = "spconv3", c.in_shape = g0, c.out_shape = g1, c.seed = 4;
  add_conv(m, c);
  c = {};
  c.name = "conv4", c.x = "6", c.y = "7", c.cin = 16, c.cout = 16, c.kernel = {3, 1, 1};
  c.stride = {2, 1, 1}, c.padding = {0, 0, 0}, c.subm = false, c.in_shape = g1, c.out_shape = g2;
  c.seed = 5;
  add_conv(m, c);
  m.nodes.push_back({"ScatterDense",
                     "scatter0",
                     {"7"},
                     {"8"},
                     {attr_string("format", "zyx"), attr_ints("input_spatial_shape", g2),
                      attr_ints("output_shape", {1, 16, 2, 4, 4})},
                     ""});
  m.nodes.push_back({"Reshape", "reshape0", {"8"}, {"9"}, {attr_ints("dims", {1, 32, 4, 4})}, ""});
  m.outputs.push_back({"9", 10, {1, 32, 4, 4}});
  return m;
}

std::string temp_dir() {
  // Leaked on purpose: the exit handler below must still be able to read it.
  static const std::string* dir = [] {
    const char* base = std::getenv("TMPDIR");
    auto* d = new std::string(std::string(base && *base ? base : "/tmp") +
                              "/scn_onnx_parser_test." + std::to_string(::getpid()));
    ::mkdir(d->c_str(), 0700);
    return d;
  }();
  static const bool cleanup = [] {
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(*dir, ec);
    });
    return true;
  }();
  (void)cleanup;
  return *dir;
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), std::streamsize(bytes.size()));
  if (!f) {
    std::fprintf(stderr, "cannot write %s\n", path.c_str());
    std::abort();
  }
}

std::string write_model(const ModelDef& m, const std::string& file_name) {
  const std::string path = temp_dir() + "/" + file_name;
  write_bytes(path, encode_model(m));
  return path;
}

}  // namespace scn::test

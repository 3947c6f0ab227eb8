#include "importers.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "onnx.pb.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the ONNX importer reads raw_data (little-endian) directly and needs a little-endian host"
#endif

namespace scn::onnx_import {

NodeImport::NodeImport(ImportContext& ctx, const onnx::NodeProto& node, std::string name)
    : ctx_(ctx),
      node_(node),
      name_(std::move(name)),
      where_{ctx.file, name_, node.op_type(), "", ""},
      attrs_(node, where_) {}

const std::string& NodeImport::op_type() const { return node_.op_type(); }
const std::string& NodeImport::output() const { return node_.output(0); }
int NodeImport::num_inputs() const { return node_.input_size(); }

void NodeImport::expect_inputs(int min, int max, const char* signature) const {
  const int n = node_.input_size();
  if (n >= min && n <= max) return;
  if (min == max)
    fail("expected ", min, " input", min == 1 ? "" : "s", " ", signature, ", got ", n);
  if (max == std::numeric_limits<int>::max())
    fail("expected at least ", min, " inputs ", signature, ", got ", n);
  fail("expected ", min, " to ", max, " inputs ", signature, ", got ", n);
}

bool NodeImport::has_input(int i) const {
  return i < node_.input_size() && !node_.input(i).empty();
}

ValueId NodeImport::value(int i, const char* role) const {
  if (!has_input(i)) fail("input ", i, " (", role, ") is missing");
  const std::string& s = node_.input(i);
  const auto v = ctx_.values.find(s);
  if (v != ctx_.values.end()) return v->second;
  const auto f = ctx_.failed.find(s);
  if (f != ctx_.failed.end()) fail("input '", s, "' was not produced (", f->second, ")");
  if (ctx_.initializers.count(s))
    fail("input ", i, " '", s, "' (", role,
         ") is an initializer; it must be a tensor computed by the graph");
  fail("input '", s,
       "' was not produced by any node, and is neither an initializer nor the graph "
       "input");
}

const onnx::TensorProto& NodeImport::initializer(int i, const char* role) const {
  if (!has_input(i)) fail("input ", i, " (", role, ") is missing");
  const std::string& s = node_.input(i);
  const auto it = ctx_.initializers.find(s);
  if (it != ctx_.initializers.end()) return *it->second;
  if (ctx_.values.count(s) || ctx_.failed.count(s))
    fail("input ", i, " '", s, "' (", role,
         ") is computed by the graph; scn needs it as an initializer (constant)");
  fail("input ", i, " '", s, "' (", role, "): there is no initializer of that name");
}

// ---- registry -------------------------------------------------------------------------------

const ImporterRegistry& importer_registry() {
  // A duplicate registration throws here on every use: a programming error no file can hide.
  static const ImporterRegistry registry = [] {
    ImporterRegistry r;
    register_sparse_conv_importers(r);
    register_elementwise_importers(r);
    register_dense_importers(r);
    return r;
  }();
  return registry;
}

// ---- helpers --------------------------------------------------------------------------------

std::string onnx_data_type_name(int32_t t) {
  static const char* const names[] = {"UNDEFINED",  "FLOAT",   "UINT8",  "INT8",   "UINT16",
                                      "INT16",      "INT32",   "INT64",  "STRING", "BOOL",
                                      "FLOAT16",    "DOUBLE",  "UINT32", "UINT64", "COMPLEX64",
                                      "COMPLEX128", "BFLOAT16"};
  const char* name = t >= 0 && t < int32_t(sizeof(names) / sizeof(names[0])) ? names[t] : "unknown";
  return detail::concat(name, " (", t, ")");
}

std::string dims_text(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

Tensor fp16_initializer(const NodeImport& n, const onnx::TensorProto& t, const char* role) {
  const std::string what = detail::concat(role, " initializer '", t.name(), "'");
  if (t.data_location() == onnx::TensorProto::EXTERNAL)
    n.fail(what, " stores its data in an external file, which scn does not read");
  if (t.data_type() != onnx::TensorProto::FLOAT16)
    n.fail(what, " has data type ", onnx_data_type_name(t.data_type()), "; expected ",
           onnx_data_type_name(onnx::TensorProto::FLOAT16));
  if (t.has_segment()) n.fail(what, " is segmented, which scn does not read");
  std::vector<int64_t> dims(t.dims().begin(), t.dims().end());
  // Element count without overflow: forged dims must give an error, not a huge allocation.
  int64_t numel = 1;
  for (int64_t d : dims) {
    if (d < 0) n.fail(what, " has a negative dimension: shape ", dims_text(dims));
    if (d != 0 && numel > std::numeric_limits<int64_t>::max() / 2 / d)
      n.fail(what, " has an impossibly large shape ", dims_text(dims));
    numel *= d;
  }
  if (t.has_raw_data()) {
    const std::string& raw = t.raw_data();
    if (uint64_t(raw.size()) != uint64_t(numel) * 2)
      n.fail(what, " has ", raw.size(), " bytes of raw_data, but its shape ", dims_text(dims),
             " needs ", numel, " float16 values = ", numel * 2, " bytes");
    return Tensor::from_host(raw.data(), dims, DType::Float16);
  }
  if (t.int32_data_size() > 0 || numel == 0) {
    // ONNX stores float16 outside raw_data as one bit pattern per int32.
    if (int64_t(t.int32_data_size()) != numel)
      n.fail(what, " has ", t.int32_data_size(), " values in int32_data, but its shape ",
             dims_text(dims), " needs ", numel);
    Tensor out = Tensor::empty(dims, DType::Float16);
    uint16_t* p = out.ptr<uint16_t>();
    for (int64_t i = 0; i < numel; ++i) {
      const int32_t v = t.int32_data(int(i));
      if (v < 0 || v > 0xffff)
        n.fail(what, " int32_data[", i, "] = ", v, " is not a float16 bit pattern");
      p[i] = uint16_t(v);
    }
    return out;
  }
  n.fail(what, " has no data (neither raw_data nor int32_data)");
}

Precision read_precision(const OnnxAttrs& attrs, const std::string& name) {
  if (!attrs.has(name)) return Precision::Fp16;
  const std::string s = attrs.get_string(name);
  if (s == "fp16") return Precision::Fp16;
  if (s == "int8") return Precision::Int8;
  attrs.fail(name, detail::concat("expected \"fp16\" or \"int8\", found \"", s, "\""));
}

float read_dynamic_range(const OnnxAttrs& attrs, const std::string& name) {
  if (!attrs.has(name)) return -1.f;
  const float r = attrs.get_float(name);
  if (!(std::isfinite(r) && r > 0.f))
    attrs.fail(name, detail::concat("a dynamic range must be positive and finite, found ", r));
  return r;
}

}  // namespace scn::onnx_import

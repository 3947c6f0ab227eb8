// write_onnx_with_quant: a copy of an ONNX model with the INT8 attributes of named nodes replaced
// (used by `scn calibrate`). Everything else in the file (other nodes, initializers, metadata,
// attribute order of untouched attributes) is kept as protobuf parsed it.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include "onnx.pb.h"
#include "scn/file_io.h"
#include "scn/onnx.h"

namespace scn {

namespace {

std::string load_bytes(const std::string& path) {
  struct stat st {};
  SCN_CHECK(::stat(path.c_str(), &st) == 0, path, ": cannot open (", std::strerror(errno), ")");
  SCN_CHECK(!S_ISDIR(st.st_mode), path, ": cannot open (it is a directory)");
  std::ifstream f(path, std::ios::binary);
  SCN_CHECK(f.good(), path, ": cannot open (", std::strerror(errno), ")");
  std::ostringstream os;
  os << f.rdbuf();
  SCN_CHECK(!f.bad(), path, ": read error");
  std::string data = os.str();
  SCN_CHECK(!data.empty(), path, ": not a valid ONNX model (the file is empty)");
  SCN_CHECK(data.size() <= size_t(INT_MAX), path, ": not a valid ONNX model (larger than 2 GiB)");
  return data;
}

onnx::AttributeProto& attribute(onnx::NodeProto& node, const std::string& name) {
  for (onnx::AttributeProto& a : *node.mutable_attribute())
    if (a.name() == name) {
      a.Clear();
      a.set_name(name);
      return a;
    }
  onnx::AttributeProto* a = node.add_attribute();
  a->set_name(name);
  return *a;
}

void remove_attribute(onnx::NodeProto& node, const std::string& name) {
  auto* attrs = node.mutable_attribute();
  for (int i = attrs->size() - 1; i >= 0; --i)
    if (attrs->Get(i).name() == name) attrs->DeleteSubrange(i, 1);
}

void set_precision(onnx::NodeProto& node, const std::string& name, Precision p, const ErrorContext& where) {
  SCN_CHECK(p == Precision::Fp16 || p == Precision::Int8, where, ": attribute '", name,
            "' can only be fp16 or int8 in an ONNX file, not ", precision_name(p));
  onnx::AttributeProto& a = attribute(node, name);
  a.set_type(onnx::AttributeProto::STRING);
  a.set_s(p == Precision::Int8 ? "int8" : "fp16");
}

/// A range < 0 removes the attribute (absent); otherwise it must be positive and finite.
void set_range(onnx::NodeProto& node, const std::string& name, float r, const ErrorContext& where) {
  if (r < 0.f && !std::isnan(r)) {
    remove_attribute(node, name);
    return;
  }
  SCN_CHECK(std::isfinite(r) && r > 0.f, where.with_attribute(name), " must be a positive finite range, got ", r);
  onnx::AttributeProto& a = attribute(node, name);
  a.set_type(onnx::AttributeProto::FLOAT);
  a.set_f(r);
}

void set_ranges(onnx::NodeProto& node, const std::string& name, const std::vector<float>& r, const ErrorContext& where) {
  if (r.empty()) {
    remove_attribute(node, name);
    return;
  }
  for (size_t i = 0; i < r.size(); ++i)
    SCN_CHECK(std::isfinite(r[i]) && r[i] > 0.f, where.with_attribute(name), "[", i,
              "] must be a positive finite range, got ", r[i]);
  onnx::AttributeProto& a = attribute(node, name);
  a.set_type(onnx::AttributeProto::FLOATS);
  for (float v : r) a.add_floats(v);
}

std::string node_name(const onnx::NodeProto& n, int i) {
  if (!n.name().empty()) return n.name();
  if (n.output_size() > 0 && !n.output(0).empty()) return "node_of_" + n.output(0);
  return detail::concat("node_", i);
}

}  // namespace

void write_onnx_with_quant(const std::string& src, const std::string& dst,
                           const std::map<std::string, QuantAttrs>& quant) {
  const std::string data = load_bytes(src);
  onnx::ModelProto model;
  SCN_CHECK(model.ParseFromArray(data.data(), int(data.size())), src,
            ": not a valid ONNX model (protobuf parse failed)");
  SCN_CHECK(model.has_graph(), src, ": not a valid ONNX model (it has no graph)");
  onnx::GraphProto& g = *model.mutable_graph();
  std::set<std::string> seen, done;
  for (int i = 0; i < g.node_size(); ++i) {
    onnx::NodeProto& node = *g.mutable_node(i);
    const std::string name = node_name(node, i);
    SCN_CHECK(seen.insert(name).second, src, ": node name '", name, "' is used twice");
    const auto it = quant.find(name);
    if (it == quant.end()) continue;
    const QuantAttrs& q = it->second;
    const ErrorContext where{src, name, node.op_type(), "", ""};
    const std::string& op = node.op_type();
    if (op == "SparseConvolution") {
      set_precision(node, "precision", q.precision, where);
      set_precision(node, "output_precision", q.output_precision, where);
      set_range(node, "input_dynamic_range", q.input_dynamic_range, where);
      set_ranges(node, "weight_dynamic_ranges", q.weight_dynamic_ranges, where);
    } else if (op == "Add" || op == "QuantAdd") {
      set_precision(node, "precision", q.precision, where);
      set_precision(node, "output_precision", q.output_precision, where);
      set_range(node, "input0_dynamic_range", q.input0_dynamic_range, where);
      set_range(node, "input1_dynamic_range", q.input1_dynamic_range, where);
    } else if (op == "ScatterDense") {
      set_range(node, "input_dynamic_range", q.input_dynamic_range, where);
    } else {
      SCN_FAIL(where, ": has no INT8 attributes (only SparseConvolution, Add / QuantAdd and ScatterDense do)");
    }
    done.insert(name);
  }
  for (const auto& kv : quant)
    SCN_CHECK(done.count(kv.first), src, ": no node named '", kv.first, "' to set INT8 attributes on");
  std::string out;
  SCN_CHECK(model.SerializeToString(&out), dst, ": cannot serialize the model");
  write_file_atomic(dst, out);
}

}  // namespace scn

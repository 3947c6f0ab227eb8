#include "scn/types.h"

#include "scn/error.h"
#include "scn/graph.h"

namespace scn {

const char* backend_name(Backend b) {
  switch (b) {
    case Backend::Cpu: return "cpu";
    case Backend::Cuda: return "cuda";
    case Backend::Auto: return "auto";
  }
  return "?";
}

const char* precision_name(Precision p) {
  switch (p) {
    case Precision::Fp32: return "fp32";
    case Precision::Fp16: return "fp16";
    case Precision::Int8: return "int8";
  }
  return "?";
}

const char* activation_name(Activation a) {
  switch (a) {
    case Activation::None: return "None";
    case Activation::ReLU: return "ReLU";
    case Activation::Sigmoid: return "Sigmoid";
    case Activation::LeakyReLU: return "LeakyReLU";
  }
  return "?";
}

Backend parse_backend(const std::string& s) {
  if (s == "cpu") return Backend::Cpu;
  if (s == "cuda") return Backend::Cuda;
  if (s == "auto") return Backend::Auto;
  SCN_FAIL("unknown device '", s, "' (expected cpu, cuda or auto)");
}

Precision parse_precision(const std::string& s) {
  if (s == "fp32") return Precision::Fp32;
  if (s == "fp16") return Precision::Fp16;
  if (s == "int8") return Precision::Int8;
  SCN_FAIL("unknown precision '", s, "' (expected fp32, fp16 or int8)");
}

std::string int3_string(const Int3& v, char sep) {
  return detail::concat(v[0], sep, v[1], sep, v[2]);
}

const char* op_type_name(OpType op) {
  switch (op) {
    case OpType::Input: return "Input";
    case OpType::SparseConv: return "SparseConvolution";
    case OpType::Add: return "Add";
    case OpType::Relu: return "Relu";
    case OpType::Concat: return "Concat";
    case OpType::ScatterDense: return "ScatterDense";
    case OpType::Reshape: return "Reshape";
    case OpType::Transpose: return "Transpose";
  }
  return "?";
}

int Graph::find_value(const std::string& name) const {
  for (size_t i = 0; i < values.size(); ++i)
    if (values[i].name == name) return int(i);
  return -1;
}

std::string Graph::describe(int node) const {
  const Node& n = nodes.at(size_t(node));
  return format_context({"", n.name, op_type_name(n.op), "", ""});
}

}  // namespace scn

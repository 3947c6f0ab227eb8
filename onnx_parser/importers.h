// The op importers: one function per ONNX op type, looked up by op_type in a registry.
// An importer reads its node (inputs, attributes, initializers), validates what the builder
// cannot know (attribute names, initializer encodings) and pushes one node into the builder.
#pragma once

#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "importer_registry.h"
#include "onnx_attrs.h"
#include "scn/engine.h"

namespace onnx {
class NodeProto;
class TensorProto;
}  // namespace onnx

namespace scn::onnx_import {

/// State shared by all importers of one file.
struct ImportContext {
  std::string file;
  EngineBuilder* builder = nullptr;
  std::unordered_map<std::string, ValueId> values;  ///< ONNX value name -> builder value
  std::unordered_map<std::string, const onnx::TensorProto*> initializers;
  /// Values that will never exist because their producer failed (inspect), with the reason.
  std::unordered_map<std::string, std::string> failed;
  /// Rulebook names of the strided convolutions imported so far (for inverse convolutions).
  std::set<std::string> strided_rulebooks;
};

/// One node being imported: its name, message prefix, attributes and input lookups.
class NodeImport {
 public:
  NodeImport(ImportContext& ctx, const onnx::NodeProto& node, std::string name);

  ImportContext& ctx() { return ctx_; }
  EngineBuilder& builder() { return *ctx_.builder; }
  const onnx::NodeProto& node() const { return node_; }
  const std::string& name() const { return name_; }
  /// "<file>: node '<name>' (<op_type>)"
  const ErrorContext& where() const { return where_; }
  const OnnxAttrs& attrs() const { return attrs_; }
  const std::string& op_type() const;
  const std::string& output() const;  ///< the node's (single) output name

  int num_inputs() const;
  /// Throws unless min <= number of inputs <= max; `signature` says what they are: "(x, weight[,
  /// bias])".
  void expect_inputs(int min, int max, const char* signature) const;
  /// True when input i exists and is not the empty name (ONNX's "absent optional input").
  bool has_input(int i) const;
  /// The builder value of input i (a graph input or another node's output).
  ValueId value(int i, const char* role) const;
  /// Input i as an initializer; errors when it is computed by the graph or missing.
  const onnx::TensorProto& initializer(int i, const char* role) const;

  template <typename... Args>
  [[noreturn]] void fail(const Args&... args) const {
    throw Error(where_, detail::concat(": ", args...));
  }

 private:
  ImportContext& ctx_;
  const onnx::NodeProto& node_;
  std::string name_;
  ErrorContext where_;
  OnnxAttrs attrs_;
};

/// The built-in importers (a function-local static, filled on first use).
const ImporterRegistry& importer_registry();

// Each importers/*.cpp adds its ops here.
void register_sparse_conv_importers(ImporterRegistry& r);
void register_elementwise_importers(ImporterRegistry& r);
void register_dense_importers(ImporterRegistry& r);

// ---- helpers shared by importers ----------------------------------------------------------

/// A FLOAT16 initializer (raw_data, or int32_data holding one fp16 bit pattern per element) as a
/// host float16 tensor with the initializer's dims. `role` names it in messages ("weight").
Tensor fp16_initializer(const NodeImport& n, const onnx::TensorProto& t, const char* role);
/// "FLOAT16 (10)" for data type codes.
std::string onnx_data_type_name(int32_t data_type);
/// "precision" / "output_precision": absent or "fp16" -> Fp16, "int8" -> Int8, else an error.
Precision read_precision(const OnnxAttrs& attrs, const std::string& name);
/// An optional dynamic range (INT8 absmax): absent -> -1, present -> must be positive and finite.
float read_dynamic_range(const OnnxAttrs& attrs, const std::string& name);
/// "[1, 2, 3]"
std::string dims_text(const std::vector<int64_t>& dims);

}  // namespace scn::onnx_import

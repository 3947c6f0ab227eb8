// Typed access to the attributes of one ONNX node. Every error names the file, the node and the
// attribute, and says what was expected and what was found:
//   "m.onnx: node 'conv3' (SparseConvolution): attribute 'stride': expected ints[3], found 2 ints"
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "scn/error.h"
#include "scn/types.h"

namespace onnx {
class AttributeProto;
class NodeProto;
}  // namespace onnx

namespace scn::onnx_import {

class OnnxAttrs {
 public:
  static constexpr int kAnyCount = -1;

  /// `where` is the message prefix of the node: "<file>: node '<name>' (<op>)". Throws when an
  /// attribute name appears twice.
  OnnxAttrs(const onnx::NodeProto& node, ErrorContext where);

  bool has(const std::string& name) const;

  // Required: throw when absent. Optional (with a fallback): absent gives the fallback; present
  // with the wrong type is still an error.
  int64_t get_int(const std::string& name) const;
  int64_t get_int(const std::string& name, int64_t fallback) const;
  float get_float(const std::string& name) const;
  float get_float(const std::string& name, float fallback) const;
  std::string get_string(const std::string& name) const;
  std::string get_string(const std::string& name, const std::string& fallback) const;
  std::vector<int64_t> get_ints(const std::string& name, int count = kAnyCount) const;
  std::vector<int64_t> get_ints_or(const std::string& name, std::vector<int64_t> fallback,
                                   int count = kAnyCount) const;
  std::vector<float> get_floats(const std::string& name, int count = kAnyCount) const;
  std::vector<float> get_floats_or(const std::string& name, std::vector<float> fallback,
                                   int count = kAnyCount) const;

  /// An int that must be 0 or 1.
  bool get_bool(const std::string& name) const;
  bool get_bool(const std::string& name, bool fallback) const;
  /// ints[3] whose values fit in int32.
  Int3 get_int3(const std::string& name) const;

  /// Every getter marks its attribute as consumed. show() undoes that for attributes that were
  /// only read for validation, so that they are listed by annotate_unused's caller.
  void show(const std::string& name) const { used_.erase(name); }
  /// The attributes no getter consumed, as (name, text) pairs in file order.
  std::vector<std::pair<std::string, std::string>> unused() const;

  /// Throws "<where>: attribute '<name>': <what>".
  [[noreturn]] void fail(const std::string& name, const std::string& what) const;
  const ErrorContext& where() const { return where_; }

 private:
  const onnx::AttributeProto* find(const std::string& name) const;
  const onnx::AttributeProto& require(const std::string& name) const;
  /// Checks the attribute has the wanted type (1 = FLOAT, 2 = INT, 3 = STRING, 6 = FLOATS,
  /// 7 = INTS as in onnx.proto) and marks it consumed.
  void expect_type(const onnx::AttributeProto& a, int type) const;

  const onnx::NodeProto& node_;
  ErrorContext where_;
  mutable std::set<std::string> used_;
};

/// The effective type of an attribute (onnx::AttributeProto::AttributeType value); files written
/// before `type` existed leave it UNDEFINED, then it is inferred from the field that is set.
int attribute_type(const onnx::AttributeProto& a);
/// "int", "ints", "string", ... for messages.
const char* attribute_type_name(int type);
/// The value as text for `scn inspect`: 5, [1, 2, 3], 0.5, ReLU, <tensor>.
std::string attribute_text(const onnx::AttributeProto& a);

}  // namespace scn::onnx_import

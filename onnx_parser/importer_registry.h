// The op-type -> importer map. Header-only and free of protobuf so the tests can exercise it.
#pragma once

#include <map>
#include <string>

#include "scn/engine.h"

namespace scn::onnx_import {

class NodeImport;

/// Pushes the node and returns the builder value of its output.
using ImporterFn = ValueId (*)(NodeImport& n);

class ImporterRegistry {
 public:
  /// Throws scn::Error when op_type already has an importer: two importers for one op type are
  /// a programming error that must not depend on registration order.
  void add(const std::string& op_type, ImporterFn fn) {
    SCN_CHECK(fn != nullptr, "ONNX importer registry: null importer for op type '", op_type, "'");
    SCN_CHECK(map_.emplace(op_type, fn).second, "ONNX importer registry: op type '", op_type,
              "' is registered twice");
  }
  /// nullptr when op_type has no importer.
  ImporterFn find(const std::string& op_type) const {
    const auto it = map_.find(op_type);
    return it == map_.end() ? nullptr : it->second;
  }
  /// "Add, Concat, QuantAdd, ..." for messages.
  std::string op_types() const {
    std::string s;
    for (const auto& kv : map_) s += (s.empty() ? "" : ", ") + kv.first;
    return s;
  }

 private:
  std::map<std::string, ImporterFn> map_;
};

}  // namespace scn::onnx_import

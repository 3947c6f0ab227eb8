// scn — loading NVIDIA-schema ONNX files (implemented in onnx_parser/).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "scn/engine.h"

namespace scn {

/// Parses the ONNX file into a builder graph. Throws scn::Error naming the file and the node /
/// attribute at fault.
EngineBuilder parse_onnx(const std::string& path);

/// parse_onnx(path) followed by build(options).
std::unique_ptr<Engine> load_engine_from_onnx(const std::string& path, const BuildOptions& options);

/// What inspect_onnx found in a file.
struct OnnxReport {
  /// Every problem, one message each ("<file>: node '<name>' (<op>): ..."), in graph order.
  std::vector<std::string> errors;
  /// The complete graph; null when `errors` is not empty.
  std::unique_ptr<EngineBuilder> builder;
  /// The nodes that imported cleanly (all of them when there are no errors), for listing next to
  /// the errors; null only when the file is not a readable ONNX model. Never build it when
  /// `errors` is not empty.
  std::unique_ptr<EngineBuilder> partial;
};

/// Imports like parse_onnx but does not stop at the first problem: a bad node is recorded and
/// skipped, and nodes reading its output report that input as not produced, so `scn inspect`
/// can list every validation error at once. Problems in the file never throw; they are in
/// `errors` (an unreadable file gives one error and null builders).
OnnxReport inspect_onnx(const std::string& path);

/// Writes a copy of the ONNX model `src` to `dst` (atomically: a temporary file renamed into
/// place; `dst` may equal `src`) in which the INT8 attributes of every node named in `quant` are
/// replaced by its QuantAttrs:
///  - SparseConvolution: precision, output_precision, input_dynamic_range, weight_dynamic_ranges;
///  - Add / QuantAdd: precision, output_precision, input0_dynamic_range, input1_dynamic_range;
///  - ScatterDense: input_dynamic_range.
/// A range < 0 (or an empty weight_dynamic_ranges) removes the attribute. Everything else in the
/// file is kept. Throws scn::Error naming the file and node when a name matches no node, the node
/// has no INT8 attributes, a precision is fp32 or a range is not positive and finite.
/// (Implemented in onnx_parser/onnx_rewrite.cpp, for `scn calibrate`.)
void write_onnx_with_quant(const std::string& src, const std::string& dst,
                           const std::map<std::string, QuantAttrs>& quant);

}  // namespace scn

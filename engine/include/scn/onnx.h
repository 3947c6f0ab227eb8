// scn — loading NVIDIA-schema ONNX files (implemented in onnx_parser/).
#pragma once

#include <memory>
#include <string>

#include "scn/engine.h"

namespace scn {

/// Parses the ONNX file into a builder graph. Throws scn::Error naming the file and the node /
/// attribute at fault.
EngineBuilder parse_onnx(const std::string& path);

/// parse_onnx(path) followed by build(options).
std::unique_ptr<Engine> load_engine_from_onnx(const std::string& path, const BuildOptions& options);

}  // namespace scn

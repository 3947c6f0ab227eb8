// `scn compare --layers MODEL.onnx VALUES_DIR`: bisects where an engine departs from a reference.
// Builds the model with every intermediate value exposed (EngineBuilder::expose_all_values), runs
// one forward and compares each value, in graph order, with the reference the exporter wrote for
// it (tools/python spconv_export, intermediates_dir: <value>.tensor [+ <value>.indices.tensor],
// values.txt naming the PyTorch module). Sparse values are matched by site.
#pragma once

#include "commands.h"

namespace scn::cli {

/// Prints one line per node and the first node outside the bounds; returns the exit code (1 when a
/// value is outside the bounds).
int run_compare_layers(const CompareArgs& a);

}  // namespace scn::cli

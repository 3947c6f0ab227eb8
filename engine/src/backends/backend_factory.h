// The one place the builder meets the backends. Each backend lives in its own folder and
// implements scn::Engine; adding a backend touches neither the importer nor the CLI.
#pragma once

#include <memory>

#include "scn/engine.h"

namespace scn {

std::unique_ptr<Engine> create_cpu_engine(std::shared_ptr<const Graph> graph, const BuildOptions& options);
/// Defined by backends/cuda when scn is built with CUDA; otherwise throws a clear error.
std::unique_ptr<Engine> create_cuda_engine(std::shared_ptr<const Graph> graph, const BuildOptions& options);

}  // namespace scn

// The one place the builder meets the backends. Each backend lives in its own folder and
// implements scn::Engine from the shared plan (plan/engine_plan.h: one graph analysis, fusion,
// capacities, steps, INT8 storage plan); adding a backend touches neither the importer nor the CLI.
#pragma once

#include <memory>

#include "plan/engine_plan.h"
#include "scn/engine.h"

namespace scn {

/// A GPU the CUDA backend cannot run on (below compute capability 8.0, or no compiled image for
/// its architecture). Backend::Auto catches it and builds the CPU engine instead, with a notice.
class UnusableGpu : public Error {
 public:
  using Error::Error;
};

std::unique_ptr<Engine> create_cpu_engine(std::shared_ptr<const EnginePlan> plan, const BuildOptions& options);
/// Defined by backends/cuda when scn is built with CUDA; otherwise throws a clear error.
std::unique_ptr<Engine> create_cuda_engine(std::shared_ptr<const EnginePlan> plan, const BuildOptions& options);

}  // namespace scn

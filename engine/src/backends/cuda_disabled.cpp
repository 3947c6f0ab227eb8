// Built when scn is configured without CUDA: the CUDA backend is absent and says so.
#include "backends/backend_factory.h"

namespace scn {

bool cuda_available() { return false; }

std::vector<std::string> cuda_tile_configs(Precision) { return {}; }

std::vector<std::string> cuda_osplit_configs() { return {}; }

std::unique_ptr<Engine> create_cuda_engine(std::shared_ptr<const EnginePlan>, const BuildOptions&) {
  SCN_FAIL(
      "the CUDA backend was requested but this build of scn has no CUDA (configure with a CUDA "
      "toolkit and -DSCN_WITH_CUDA=ON)");
}

}  // namespace scn

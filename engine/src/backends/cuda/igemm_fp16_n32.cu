// Implicit-GEMM tile instances: fp16 tiles of 32 output channels (128-row tiles). Names are derived from the template arguments
// (igemm_config_name in tile_names.cpp).
#include "backends/cuda/implicit_gemm.cuh"

namespace scn::cuda::igemm {

void add_instances_fp16_n32(std::vector<Instance>& v) {
  v.push_back(make_instance<128, 32, 32, 4, 1, 4, false, 1, 1>());
  v.push_back(make_instance<128, 32, 16, 4, 1, 4, false, 1, 1>());
  v.push_back(make_instance<128, 32, 16, 4, 1, 3, false, 2, 1>());
  v.push_back(make_instance<128, 32, 32, 4, 1, 4, true, 1, 1>());
}

}  // namespace scn::cuda::igemm

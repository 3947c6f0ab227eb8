// Implicit-GEMM tile instances: fp16 tiles of 128 output channels. Names are derived from the template arguments
// (igemm_config_name in tile_names.cpp).
#include "backends/cuda/implicit_gemm.cuh"

namespace scn::cuda::igemm {

void add_instances_fp16_n128(std::vector<Instance>& v) {
  v.push_back(make_instance<32, 128, 64, 1, 4, 3, true, 1, 1>());
  v.push_back(make_instance<32, 128, 64, 1, 4, 4, true, 1, 1>());
  v.push_back(make_instance<32, 128, 32, 1, 4, 4, true, 1, 1>());
  v.push_back(make_instance<64, 128, 16, 2, 2, 3, false, 1, 1>());
  v.push_back(make_instance<64, 128, 64, 2, 2, 3, false, 1, 1>());
}

}  // namespace scn::cuda::igemm
